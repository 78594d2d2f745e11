//! The relay's devices as veth pairs (`io veth`, the default). The relay moves into a
//! network namespace of its own, makes one veth pair per side there, and moves each
//! pair's outer end into the side's namespace under the side's name (`tap a|b NAME
//! [netns NS]`; no NS: the namespace the relay was started in). It reads and writes the
//! inner ends through AF_PACKET rings (packetio.rs).
//!
//! Why not TAPs: a TAP takes one frame per read and write, and its write runs the far
//! side's whole receive stack in the relay's context. On a veth pair the kernel copies an
//! arriving frame into the relay's ring on the sender's CPU, and the relay sends a batch
//! per system call (RESULTS, "the relay at the wire's limit").
//!
//! Nothing outside the relay's namespace stays behind: the namespace has no name, only
//! the relay holds it, and when the relay exits it goes, and both pairs with it (the
//! link is down, as when a TAP's process exits). On a clean stop the pairs are deleted
//! first (delete_pairs), so the outer ends are gone when the relay's exit is seen.

use std::ffi::CString;
use std::os::fd::RawFd;
use std::process::Command;

use crate::config::TapSpec;

/// The inner ends' names (in the relay's own namespace, so they meet no other name).
const INNER: [&str; 2] = ["emu-inner-a", "emu-inner-b"];

const SIOCETHTOOL: libc::c_ulong = 0x8946;
// legacy ethtool set commands (linux/ethtool.h), each taking a struct ethtool_value
const ETHTOOL_STXCSUM: u32 = 0x17;
const ETHTOOL_SSG: u32 = 0x19;
const ETHTOOL_STSO: u32 = 0x1f;
const ETHTOOL_SGSO: u32 = 0x24;
const ETHTOOL_SGRO: u32 = 0x2c;

/// One side: the inner end the relay reads and writes, and the outer end's name.
pub struct VethSide {
    pub name: String,
    pub inner: &'static str,
    pub ifindex: i32,
}

/// Both sides' pairs, made; the relay is in its own namespace from here on.
pub fn open(specs: [&TapSpec; 2], inner_mtu: usize) -> Result<[VethSide; 2], String> {
    // the namespace the relay was started in: side a's outer end goes there unless named
    let home = open_ro("/proc/self/ns/net")?;
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(format!("unshare(CLONE_NEWNET): {}", std::io::Error::last_os_error()));
    }
    // the inner ends send nothing of their own (no IPv6 link-local, DAD, MLD or RS)
    for key in ["all", "default"] {
        let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{key}/disable_ipv6"), "1");
    }
    let home_path = format!("/proc/{}/fd/{home}", std::process::id());
    let ctl = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if ctl < 0 {
        return Err(format!("socket: {}", std::io::Error::last_os_error()));
    }
    let mut made = Vec::new();
    let mut result = Ok(());
    for (spec, inner) in specs.iter().zip(INNER) {
        if spec.name == INNER[0] || spec.name == INNER[1] {
            result = Err(format!("device name {}: reserved for the relay's inner ends", spec.name));
            break;
        }
        let target = spec.netns.clone().unwrap_or_else(|| home_path.clone());
        result = make_pair(ctl, &spec.name, inner, &target, inner_mtu);
        if result.is_err() {
            break;
        }
        made.push(VethSide { name: spec.name.clone(), inner, ifindex: ifindex_of(inner)? });
    }
    unsafe {
        libc::close(ctl);
        libc::close(home);
    }
    result?;
    let b = made.pop().unwrap();
    let a = made.pop().unwrap();
    Ok([a, b])
}

/// One pair in the relay's namespace, offloads off at both ends (so every frame is
/// whole, with its checksum, as on a wire), the inner end up, the outer end moved to
/// `target` (a namespace's name or path).
fn make_pair(ctl: RawFd, outer: &str, inner: &str, target: &str, inner_mtu: usize) -> Result<(), String> {
    ip(&["link", "add", inner, "mtu", &inner_mtu.to_string(), "type", "veth", "peer", "name", outer])?;
    for dev in [inner, outer] {
        // the segmentation offloads first: they depend on checksumming and scatter-gather
        for cmd in [ETHTOOL_STSO, ETHTOOL_SGSO, ETHTOOL_SGRO, ETHTOOL_STXCSUM, ETHTOOL_SSG] {
            ethtool_off(ctl, dev, cmd)?;
        }
    }
    ip(&["link", "set", "dev", inner, "up"])?;
    ip(&["link", "set", "dev", outer, "netns", target])
        .map_err(|e| format!("{e} (does namespace {target} exist?)"))
}

/// Both pairs deleted (each takes its outer end with it), at once rather than when the
/// kernel gets to the relay's namespace after the relay has exited.
pub fn delete_pairs(sides: &[VethSide]) {
    for side in sides {
        let _ = ip(&["link", "del", "dev", side.inner]);
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("run ip: {e}"))?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(format!("ip {}: {why}", args.join(" ")));
    }
    Ok(())
}

fn open_ro(path: &str) -> Result<RawFd, String> {
    let c = CString::new(path).unwrap();
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(format!("open {path}: {}", std::io::Error::last_os_error()));
    }
    Ok(fd)
}

fn ifindex_of(name: &str) -> Result<i32, String> {
    let c = CString::new(name).unwrap();
    match unsafe { libc::if_nametoindex(c.as_ptr()) } {
        0 => Err(format!("if_nametoindex {name}: {}", std::io::Error::last_os_error())),
        index => Ok(index as i32),
    }
}

/// One offload feature of `dev` off (SIOCETHTOOL, a legacy set command).
fn ethtool_off(ctl: RawFd, dev: &str, cmd: u32) -> Result<(), String> {
    #[repr(C)]
    struct EthtoolValue {
        cmd: u32,
        data: u32,
    }
    let mut value = EthtoolValue { cmd, data: 0 };
    // struct ifreq: the name (16 bytes), then ifr_data, a pointer
    let mut ifr = [0u8; 40];
    ifr[..dev.len()].copy_from_slice(dev.as_bytes());
    let ptr = &mut value as *mut EthtoolValue as usize;
    ifr[16..16 + std::mem::size_of::<usize>()].copy_from_slice(&ptr.to_ne_bytes());
    if unsafe { libc::ioctl(ctl, SIOCETHTOOL as _, ifr.as_mut_ptr()) } != 0 {
        return Err(format!("ethtool {dev} (command {cmd:#x}) off: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}
