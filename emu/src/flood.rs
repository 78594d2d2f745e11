//! linklab-emu-flood: a UDP sender that offers more frames than a wire takes, for the
//! forwarding benchmark (python -m linklab.emu.bench_wires). One iperf3 sender on one
//! core was the limit of both wires (docs/RESULTS.md); this one hands the kernel
//! BATCH datagrams per sendmmsg(2) call, so the sender's cost per frame is the
//! kernel's alone.
//!
//! Usage: linklab-emu-flood ADDR PORT PAYLOAD SECONDS
//! Prints one line: `sent N failed F seconds S`.

use std::net::Ipv4Addr;

const BATCH: usize = 64;

fn die(message: &str) -> ! {
    eprintln!("linklab-emu-flood: error: {message}");
    std::process::exit(2);
}

fn mono_s() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize, name: &str) -> T {
    args.get(i).and_then(|v| v.parse().ok()).unwrap_or_else(|| {
        die(&format!("{name}: missing or malformed (usage: linklab-emu-flood ADDR PORT PAYLOAD SECONDS)"))
    })
}

/// A UDP socket connected to addr:port with a large send buffer.
fn connected_socket(addr: Ipv4Addr, port: u16) -> libc::c_int {
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        if fd < 0 {
            die(&format!("socket: {}", std::io::Error::last_os_error()));
        }
        let size: libc::c_int = 4 << 20;
        let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &size as *const _ as *const libc::c_void, len);
        let mut sa: libc::sockaddr_in = std::mem::zeroed();
        sa.sin_family = libc::AF_INET as libc::sa_family_t;
        sa.sin_port = port.to_be();
        sa.sin_addr.s_addr = u32::from(addr).to_be();
        let salen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        if libc::connect(fd, &sa as *const _ as *const libc::sockaddr, salen) < 0 {
            die(&format!("connect {addr}:{port}: {}", std::io::Error::last_os_error()));
        }
        fd
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr: Ipv4Addr = arg(&args, 0, "ADDR");
    let port: u16 = arg(&args, 1, "PORT");
    let payload: usize = arg(&args, 2, "PAYLOAD");
    let seconds: f64 = arg(&args, 3, "SECONDS");
    if payload > 65_507 || seconds <= 0.0 {
        die("PAYLOAD must be at most 65507 bytes and SECONDS positive");
    }
    let fd = connected_socket(addr, port);
    let mut data = vec![0u8; payload.max(1)];
    let mut iov = libc::iovec { iov_base: data.as_mut_ptr() as *mut libc::c_void, iov_len: payload };
    let mut msgs: Vec<libc::mmsghdr> = (0..BATCH)
        .map(|_| {
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = &mut iov;
            m.msg_hdr.msg_iovlen = 1;
            m
        })
        .collect();
    let (mut sent, mut failed) = (0u64, 0u64);
    let start = mono_s();
    let end = start + seconds;
    let mut now = start;
    while now < end {
        let n = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), BATCH as libc::c_uint, 0) };
        if n < 0 {
            // a full queue in front of the wire (ENOBUFS) drops the first datagram
            failed += 1;
        } else {
            sent += n as u64;
        }
        now = mono_s();
    }
    println!("sent {sent} failed {failed} seconds {:.3}", now - start);
}
