//! TAP devices: created by this process (so they vanish when it exits and the
//! link goes down with it), optionally moved into a network namespace.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::process::Command;

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TAP: libc::c_short = 0x0002;
const IFF_NO_PI: libc::c_short = 0x1000;
const SIOCGIFHWADDR: libc::c_ulong = 0x8927;

pub struct Tap {
    pub fd: RawFd,
    pub name: String,
}

impl Tap {
    pub fn create(name: &str) -> Result<Tap, String> {
        let path = CString::new("/dev/net/tun").unwrap();
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(format!("open /dev/net/tun: {}", io::Error::last_os_error()));
        }
        // struct ifreq: 16-byte name, then the flags (short) at offset 16
        let mut ifr = [0u8; 40];
        let bytes = name.as_bytes();
        if bytes.is_empty() || bytes.len() > 15 {
            return Err(format!("tap name {name:?}: 1 to 15 characters"));
        }
        ifr[..bytes.len()].copy_from_slice(bytes);
        let flags = (IFF_TAP | IFF_NO_PI).to_ne_bytes();
        ifr[16..18].copy_from_slice(&flags);
        let rc = unsafe { libc::ioctl(fd, TUNSETIFF as _, ifr.as_mut_ptr()) };
        if rc < 0 {
            let err = io::Error::last_os_error();
            unsafe { libc::close(fd) };
            return Err(format!("create tap {name}: {err}"));
        }
        Ok(Tap { fd, name: name.to_string() })
    }

    /// The device's MAC address (asked of the TAP's own file: tun.c answers
    /// SIOCGIFHWADDR whatever namespace the device is in).
    pub fn mac(&self) -> Option<[u8; 6]> {
        // struct ifreq: the name, then struct sockaddr ifr_hwaddr: family (2 bytes), data
        let mut ifr = [0u8; 40];
        let rc = unsafe { libc::ioctl(self.fd, SIOCGIFHWADDR as _, ifr.as_mut_ptr()) };
        (rc == 0).then(|| ifr[18..24].try_into().unwrap())
    }

    pub fn move_to(&self, netns: &str) -> Result<(), String> {
        let status = Command::new("ip")
            .args(["link", "set", "dev", &self.name, "netns", netns])
            .status()
            .map_err(|e| format!("run ip: {e}"))?;
        if !status.success() {
            return Err(format!("ip link set dev {} netns {netns} failed", self.name));
        }
        Ok(())
    }

    /// Read one frame; Ok(0) when nothing is waiting.
    #[inline]
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let n = unsafe { libc::read(self.fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::WouldBlock {
                return Ok(0);
            }
            return Err(err);
        }
        Ok(n as usize)
    }

    #[inline]
    pub fn write(&self, frame: &[u8]) -> bool {
        let n = unsafe { libc::write(self.fd, frame.as_ptr() as *const libc::c_void, frame.len()) };
        n == frame.len() as isize
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        unsafe { libc::close(self.fd) };
    }
}
