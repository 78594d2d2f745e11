//! Frames in from a veth pair's inner end and out to the other's (`io veth`;
//! vethpair.rs): an AF_PACKET socket per end, reading from a TPACKET_V2 receive ring
//! (the kernel copies each arriving frame into a slot; reading it is no system call)
//! and sending a batch with one sendmmsg(2), past the qdisc layer.
//!
//! A frame too large for a slot (jumbo frames: slots are sized for 1500-byte MTUs) takes
//! the socket's queue instead (PACKET_COPY_THRESH) and is read with recv(2), in order. A
//! VLAN tag the kernel took into the frame's metadata is put back into the frame. A full
//! ring drops at the kernel, counted per direction as `rx_dropped`.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::packet::{Packet, Pool};
use crate::pipeline::Pipeline;
use crate::tapio::BATCH;

const SOL_PACKET: libc::c_int = 263;
const PACKET_RX_RING: libc::c_int = 5;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_COPY_THRESH: libc::c_int = 7;
const PACKET_VERSION: libc::c_int = 10;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const TPACKET_V2: libc::c_int = 1;
const ETH_P_ALL: u16 = 0x0003;

const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_COPY: u32 = 2;
const TP_STATUS_VLAN_VALID: u32 = 0x10;
const TP_STATUS_VLAN_TPID_VALID: u32 = 0x40;

/// A slot: struct tpacket2_hdr, sockaddr_ll, and a 1500-byte MTU's frame with a VLAN tag.
const SLOT_BYTES: usize = 2048;
/// Slots per ring: 4 MiB per side, about what a TAP's queue holds in 1500-byte frames
/// (txqueuelen 1000) twice over.
const SLOTS: usize = 2048;
const BLOCK_BYTES: usize = 64 << 10;

/// One inner end: its socket, its receive ring, the next slot to read, and what a
/// batch of sends needs.
pub struct PacketPort {
    fd: RawFd,
    ring: *mut u8,
    head: usize,
    /// frames too large for a slot arrive here (recv)
    big: Vec<u8>,
    msgs: Vec<libc::mmsghdr>,
    iovs: Vec<libc::iovec>,
}

impl PacketPort {
    /// A socket bound to `ifindex` with its ring; `max_frame`: the largest frame.
    pub fn open(ifindex: i32, max_frame: usize) -> Result<PacketPort, String> {
        let err = |what: &str| format!("AF_PACKET {what}: {}", std::io::Error::last_os_error());
        // protocol 0: nothing arrives until bind, when the ring is there
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(err("socket"));
        }
        setsockopt(fd, PACKET_VERSION, TPACKET_V2).map_err(|_| err("TPACKET_V2"))?;
        setsockopt(fd, PACKET_COPY_THRESH, 1).map_err(|_| err("copy threshold"))?;
        setsockopt(fd, PACKET_QDISC_BYPASS, 1).map_err(|_| err("qdisc bypass"))?;
        // our own sends are not looped to us anyway (kernels since 4.20 say so explicitly)
        let _ = setsockopt(fd, PACKET_IGNORE_OUTGOING, 1);
        sol_socket(fd, libc::SO_RCVBUF, (64 * max_frame) as libc::c_int);
        sol_socket(fd, libc::SO_SNDBUF, (4 << 20) as libc::c_int);
        let req: [u32; 4] = [BLOCK_BYTES as u32, (SLOTS * SLOT_BYTES / BLOCK_BYTES) as u32, SLOT_BYTES as u32, SLOTS as u32];
        let rc = unsafe {
            libc::setsockopt(fd, SOL_PACKET, PACKET_RX_RING, req.as_ptr() as *const libc::c_void, 16)
        };
        if rc != 0 {
            return Err(err("receive ring"));
        }
        let ring = unsafe {
            libc::mmap(std::ptr::null_mut(), SLOTS * SLOT_BYTES, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
        };
        if ring == libc::MAP_FAILED {
            return Err(err("mmap of the ring"));
        }
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = ETH_P_ALL.to_be();
        addr.sll_ifindex = ifindex;
        let len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        if unsafe { libc::bind(fd, &addr as *const libc::sockaddr_ll as *const libc::sockaddr, len) } != 0 {
            return Err(err("bind"));
        }
        let empty_iov = libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 };
        Ok(PacketPort {
            fd,
            ring: ring as *mut u8,
            head: 0,
            big: vec![0u8; max_frame],
            msgs: (0..BATCH).map(|_| unsafe { std::mem::zeroed() }).collect(),
            iovs: vec![empty_iov; BATCH],
        })
    }

    pub fn fd(&self) -> RawFd {
        self.fd
    }

    /// Up to BATCH frames into `into`, oldest first. Err when the device is gone (its
    /// namespace was deleted): the relay then stops, and with it the link.
    pub fn read_batch(&mut self, pool: &mut Pool, into: &mut Vec<Packet>) -> Result<(), String> {
        let before = into.len();
        for _ in 0..BATCH {
            let slot = unsafe { self.ring.add(self.head * SLOT_BYTES) };
            let status = unsafe { &*(slot as *const AtomicU32) };
            let flags = status.load(Ordering::Acquire);
            if flags & TP_STATUS_USER == 0 {
                break;
            }
            let frame = if flags & TP_STATUS_COPY != 0 { self.take_big(pool) } else { Some(frame_in(slot, pool)) };
            if let Some(mut p) = frame {
                if flags & TP_STATUS_VLAN_VALID != 0 {
                    p = with_vlan_tag(slot, flags, p, pool);
                }
                into.push(p);
            }
            status.store(TP_STATUS_KERNEL, Ordering::Release);
            self.head = (self.head + 1) % SLOTS;
        }
        if into.len() == before {
            // woken with nothing to read: an error, or nothing (poll said readable)
            return self.device_error();
        }
        Ok(())
    }

    /// Frames the ring had no room for since the last call (the kernel dropped them).
    pub fn dropped(&self) -> u64 {
        let mut st = [0u32; 2]; // struct tpacket_stats: packets, drops (reset on read)
        let mut len = 8 as libc::socklen_t;
        let rc = unsafe {
            libc::getsockopt(self.fd, SOL_PACKET, PACKET_STATISTICS, st.as_mut_ptr() as *mut libc::c_void, &mut len)
        };
        if rc == 0 { st[1] as u64 } else { 0 }
    }

    /// Send `out` in order, count what was sent in `pipe`, and give the buffers back.
    pub fn write_out(&mut self, pipe: &mut Pipeline, out: &mut Vec<Packet>, pool: &mut Pool) {
        for chunk in out.chunks(BATCH) {
            for (i, p) in chunk.iter().enumerate() {
                self.iovs[i] = libc::iovec { iov_base: p.buf.as_ptr() as *mut libc::c_void, iov_len: p.len };
                let hdr = &mut self.msgs[i].msg_hdr;
                hdr.msg_iov = &mut self.iovs[i];
                hdr.msg_iovlen = 1;
            }
            let mut sent = 0;
            while sent < chunk.len() {
                let rest = (chunk.len() - sent) as libc::c_uint;
                let n = unsafe { libc::sendmmsg(self.fd, self.msgs[sent..].as_mut_ptr(), rest, libc::MSG_DONTWAIT) };
                if n <= 0 {
                    // this frame could not go (e.g. no buffer): counted, and the next tried
                    pipe.tx_errors += 1;
                    sent += 1;
                    continue;
                }
                for p in &chunk[sent..sent + n as usize] {
                    pipe.tx_frames += 1;
                    pipe.tx_bytes += p.len as u64;
                }
                sent += n as usize;
            }
        }
        for p in out.drain(..) {
            pool.recycle(p);
        }
    }

    /// The frame of a TP_STATUS_COPY slot, from the socket's queue.
    fn take_big(&mut self, pool: &mut Pool) -> Option<Packet> {
        let n = unsafe { libc::recv(self.fd, self.big.as_mut_ptr() as *mut libc::c_void, self.big.len(), libc::MSG_DONTWAIT) };
        if n > 0 { Some(pool.frame_of(&self.big[..n as usize])) } else { None }
    }

    /// Ok when the socket has no error; the device's going shows as ENETDOWN.
    fn device_error(&self) -> Result<(), String> {
        let mut err: libc::c_int = 0;
        let mut len = 4 as libc::socklen_t;
        unsafe {
            libc::getsockopt(self.fd, libc::SOL_SOCKET, libc::SO_ERROR, &mut err as *mut libc::c_int as *mut libc::c_void, &mut len)
        };
        match err {
            0 => Ok(()),
            e => Err(std::io::Error::from_raw_os_error(e).to_string()),
        }
    }
}

impl Drop for PacketPort {
    fn drop(&mut self) {
        unsafe {
            libc::munmap(self.ring as *mut libc::c_void, SLOTS * SLOT_BYTES);
            libc::close(self.fd);
        }
    }
}

/// The frame in a ring slot (struct tpacket2_hdr: tp_snaplen at 8, tp_mac at 12).
#[inline]
fn frame_in(slot: *const u8, pool: &mut Pool) -> Packet {
    unsafe {
        let snaplen = (slot.add(8) as *const u32).read() as usize;
        let mac = (slot.add(12) as *const u16).read() as usize;
        pool.frame_of(std::slice::from_raw_parts(slot.add(mac), snaplen))
    }
}

/// `p` with the slot's VLAN tag (tp_vlan_tci at 24, tp_vlan_tpid at 26) after its MAC
/// addresses, where it was on the wire.
fn with_vlan_tag(slot: *const u8, flags: u32, p: Packet, pool: &mut Pool) -> Packet {
    let (tci, tpid) = unsafe { ((slot.add(24) as *const u16).read(), (slot.add(26) as *const u16).read()) };
    let tpid = if flags & TP_STATUS_VLAN_TPID_VALID != 0 && tpid != 0 { tpid } else { 0x8100 };
    let mut buf = pool.get(p.len + 4);
    buf[..12].copy_from_slice(&p.bytes()[..12]);
    buf[12..14].copy_from_slice(&tpid.to_be_bytes());
    buf[14..16].copy_from_slice(&tci.to_be_bytes());
    buf[16..p.len + 4].copy_from_slice(&p.bytes()[12..]);
    let len = p.len + 4;
    pool.recycle(p);
    Packet { buf, len }
}

fn setsockopt(fd: RawFd, opt: libc::c_int, value: libc::c_int) -> Result<(), ()> {
    let rc = unsafe {
        libc::setsockopt(fd, SOL_PACKET, opt, &value as *const libc::c_int as *const libc::c_void, 4)
    };
    if rc == 0 { Ok(()) } else { Err(()) }
}

fn sol_socket(fd: RawFd, opt: libc::c_int, value: libc::c_int) {
    unsafe {
        libc::setsockopt(fd, libc::SOL_SOCKET, opt, &value as *const libc::c_int as *const libc::c_void, 4);
    }
}
