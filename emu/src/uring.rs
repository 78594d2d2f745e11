//! Batched TAP reads and writes through io_uring (raw syscalls; the crate depends on libc only).
//!
//! A TAP device gives one frame per read(2) and takes one per write(2). The profile of the relay (docs/RESULTS.md,
//! where the relay's time goes) put 17-19 % of its CPU in entering and leaving those
//! system calls (entry/exit, fd lookup and the VFS layer, libc's wrappers), not in the
//! TAP. Here the frames a loop iteration sends are queued as IORING_OP_WRITE entries and
//! handed to the kernel by one io_uring_enter(2): the TAP's own work per frame is the
//! same, the syscall around it is paid once per batch; reads likewise (RWF_NOWAIT: a read
//! that finds no frame completes at once with -EAGAIN). The TAP's fds are registered
//! (IOSQE_FIXED_FILE), so no entry looks its file up. A TAP write never waits (the fd is
//! O_NONBLOCK and the device takes every frame), so each entry is done when
//! io_uring_enter returns: the frames' buffers are free to reuse then.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, Ordering};

const IORING_OP_READ: u8 = 22;
const IORING_OP_WRITE: u8 = 23;
/// A read that finds nothing completes with -EAGAIN instead of waiting (a TAP allows it).
pub const RWF_NOWAIT: u32 = 8;
const IOSQE_FIXED_FILE: u8 = 1;
const IORING_ENTER_GETEVENTS: u32 = 1;
const IORING_REGISTER_FILES: u32 = 2;
const IORING_OFF_CQ_RING: i64 = 0x800_0000;
const IORING_OFF_SQES: i64 = 0x1000_0000;

#[repr(C)]
#[derive(Default)]
struct SqOffsets {
    head: u32,
    tail: u32,
    ring_mask: u32,
    ring_entries: u32,
    flags: u32,
    dropped: u32,
    array: u32,
    resv1: u32,
    user_addr: u64,
}

#[repr(C)]
#[derive(Default)]
struct CqOffsets {
    head: u32,
    tail: u32,
    ring_mask: u32,
    ring_entries: u32,
    overflow: u32,
    cqes: u32,
    flags: u32,
    resv1: u32,
    user_addr: u64,
}

#[repr(C)]
#[derive(Default)]
struct Params {
    sq_entries: u32,
    cq_entries: u32,
    flags: u32,
    sq_thread_cpu: u32,
    sq_thread_idle: u32,
    features: u32,
    wq_fd: u32,
    resv: [u32; 3],
    sq_off: SqOffsets,
    cq_off: CqOffsets,
}

#[repr(C)]
struct Sqe {
    opcode: u8,
    flags: u8,
    ioprio: u16,
    fd: i32,
    off: u64,
    addr: u64,
    len: u32,
    rw_flags: u32,
    user_data: u64,
    buf_index: u16,
    personality: u16,
    splice_fd_in: i32,
    addr3: u64,
    pad: u64,
}

#[repr(C)]
struct Cqe {
    user_data: u64,
    res: i32,
    flags: u32,
}

struct Map {
    ptr: *mut u8,
    len: usize,
}

impl Map {
    fn new(fd: RawFd, len: usize, offset: i64) -> io::Result<Map> {
        let ptr = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE,
                       libc::MAP_SHARED | libc::MAP_POPULATE, fd, offset)
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Map { ptr: ptr as *mut u8, len })
    }

    fn at<T>(&self, offset: u32) -> *mut T {
        unsafe { self.ptr.add(offset as usize) as *mut T }
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

pub struct Uring {
    fd: RawFd,
    _sq: Map,
    _cq: Map,
    sqes_map: Map,
    sq_tail: *const AtomicU32,
    sq_mask: u32,
    sq_array: *mut u32,
    cq_head: *const AtomicU32,
    cq_tail: *const AtomicU32,
    cq_mask: u32,
    cqes: *const Cqe,
    /// How many writes one batch holds.
    pub entries: u32,
    queued: u32,
}

impl Uring {
    /// A ring of `entries` (a power of two) writes to `files` (addressed by index).
    pub fn new(entries: u32, files: &[RawFd]) -> io::Result<Uring> {
        // (IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN made no measurable difference here)
        let mut p = Params::default();
        let fd = unsafe { libc::syscall(libc::SYS_io_uring_setup, entries, &mut p as *mut Params) } as RawFd;
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let close_on_err = |e: io::Error| {
            unsafe { libc::close(fd) };
            e
        };
        let sq = Map::new(fd, (p.sq_off.array + p.sq_entries * 4) as usize, 0).map_err(close_on_err)?;
        let cq_len = p.cq_off.cqes as usize + p.cq_entries as usize * std::mem::size_of::<Cqe>();
        let cq = Map::new(fd, cq_len, IORING_OFF_CQ_RING).map_err(close_on_err)?;
        let sqes_len = p.sq_entries as usize * std::mem::size_of::<Sqe>();
        let sqes_map = Map::new(fd, sqes_len, IORING_OFF_SQES).map_err(close_on_err)?;
        let rc = unsafe {
            libc::syscall(libc::SYS_io_uring_register, fd, IORING_REGISTER_FILES, files.as_ptr(), files.len() as u32)
        };
        if rc < 0 {
            return Err(close_on_err(io::Error::last_os_error()));
        }
        let sq_mask = unsafe { *sq.at::<u32>(p.sq_off.ring_mask) };
        let cq_mask = unsafe { *cq.at::<u32>(p.cq_off.ring_mask) };
        Ok(Uring {
            fd,
            sq_tail: sq.at(p.sq_off.tail),
            sq_mask,
            sq_array: sq.at(p.sq_off.array),
            cq_head: cq.at(p.cq_off.head),
            cq_tail: cq.at(p.cq_off.tail),
            cq_mask,
            cqes: cq.at(p.cq_off.cqes),
            entries: p.sq_entries,
            queued: 0,
            _sq: sq,
            _cq: cq,
            sqes_map,
        })
    }

    /// Queue a write of `data` to registered file `file`; `tag` comes back with its
    /// result. `data` must stay untouched until submit_wait returns. At most `entries`
    /// per batch (the caller splits larger ones).
    pub fn queue_write(&mut self, file: u32, data: &[u8], tag: u64) {
        self.queue(IORING_OP_WRITE, file, data.as_ptr() as u64, data.len() as u32, 0, tag)
    }

    /// Queue a read into `data` (same rules as queue_write).
    pub fn queue_read(&mut self, file: u32, data: &mut [u8], rw_flags: u32, tag: u64) {
        self.queue(IORING_OP_READ, file, data.as_mut_ptr() as u64, data.len() as u32, rw_flags, tag)
    }

    fn queue(&mut self, opcode: u8, file: u32, addr: u64, len: u32, rw_flags: u32, tag: u64) {
        assert!(self.queued < self.entries, "io_uring batch over {} entries", self.entries);
        unsafe {
            let tail = (*self.sq_tail).load(Ordering::Relaxed).wrapping_add(self.queued);
            let index = tail & self.sq_mask;
            let sqe = self.sqes_map.at::<Sqe>(0).add(index as usize);
            sqe.write(Sqe {
                opcode,
                flags: IOSQE_FIXED_FILE,
                ioprio: 0,
                fd: file as i32,
                off: u64::MAX, // the file's position: a TAP has none
                addr,
                len,
                rw_flags,
                user_data: tag,
                buf_index: 0,
                personality: 0,
                splice_fd_in: 0,
                addr3: 0,
                pad: 0,
            });
            *self.sq_array.add(index as usize) = index;
        }
        self.queued += 1;
    }

    /// Hand the queued entries to the kernel and wait until all of them are done;
    /// then `result(tag, res)` for each (res: bytes written or -errno).
    pub fn submit_wait(&mut self, mut result: impl FnMut(u64, i32)) -> io::Result<()> {
        let n = std::mem::take(&mut self.queued);
        unsafe {
            let tail = (*self.sq_tail).load(Ordering::Relaxed).wrapping_add(n);
            (*self.sq_tail).store(tail, Ordering::Release);
        }
        let (mut submitted, mut done) = (0u32, 0u32);
        while done < n {
            let to_submit = n - submitted;
            let rc = unsafe {
                libc::syscall(libc::SYS_io_uring_enter, self.fd, to_submit, n - done, IORING_ENTER_GETEVENTS,
                              std::ptr::null::<libc::c_void>(), 0usize)
            };
            if rc < 0 {
                let err = io::Error::last_os_error();
                if err.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(err);
            }
            submitted += rc as u32;
            done += self.reap(&mut result);
        }
        Ok(())
    }

    fn reap(&mut self, result: &mut impl FnMut(u64, i32)) -> u32 {
        let mut count = 0;
        unsafe {
            let mut head = (*self.cq_head).load(Ordering::Relaxed);
            let tail = (*self.cq_tail).load(Ordering::Acquire);
            while head != tail {
                let cqe = &*self.cqes.add((head & self.cq_mask) as usize);
                result(cqe.user_data, cqe.res);
                head = head.wrapping_add(1);
                count += 1;
            }
            (*self.cq_head).store(head, Ordering::Release);
        }
        count
    }
}

impl Drop for Uring {
    fn drop(&mut self) {
        unsafe { libc::close(self.fd) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nowait_read_of_an_empty_tap_says_eagain_at_once() {
        // what the relay's batched reads rely on: no poll is armed, the entry completes
        let Ok(tap) = crate::tap::Tap::create("llurtest0") else {
            return eprintln!("no TAP here (not root?): skipped");
        };
        let Ok(mut ring) = Uring::new(8, &[tap.fd]) else { return eprintln!("no io_uring here: skipped") };
        let mut buf = vec![0u8; 2048];
        ring.queue_read(0, &mut buf, RWF_NOWAIT, 7);
        let mut got = vec![];
        ring.submit_wait(|tag, res| got.push((tag, res))).unwrap();
        assert_eq!(got, vec![(7, -libc::EAGAIN)]);
    }

    #[test]
    fn batched_writes_reach_the_file_in_order() {
        let mut fds = [0 as RawFd; 2];
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK) }, 0);
        let mut ring = match Uring::new(8, &[fds[1]]) {
            Ok(r) => r,
            Err(e) => return eprintln!("io_uring unavailable here ({e}): the relay writes one frame per write(2)"),
        };
        let frames: Vec<Vec<u8>> = (0..8u8).map(|i| vec![i; 3 + i as usize]).collect();
        for (i, f) in frames.iter().enumerate() {
            ring.queue_write(0, f, i as u64);
        }
        let mut results = vec![];
        ring.submit_wait(|tag, res| results.push((tag, res))).unwrap();
        results.sort();
        assert_eq!(results, (0..8).map(|i| (i as u64, 3 + i)).collect::<Vec<_>>());
        let mut got = vec![0u8; 256];
        let n = unsafe { libc::read(fds[0], got.as_mut_ptr() as *mut libc::c_void, got.len()) };
        assert_eq!(got[..n as usize], frames.concat()[..]);
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
    }
}
