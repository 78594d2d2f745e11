//! Frames in from a TAP and out to the other: batches of reads and of writes, one
//! io_uring_enter(2) each (uring.rs), where the kernel allows io_uring; else one read(2)
//! or write(2) per frame.
//!
//! Tried instead and dropped (commit 94b8743, RESULTS "the relay at the wire's limit"):
//! veth pairs read through AF_PACKET rings. The kernel then copies each frame into the
//! ring on the sender's CPU, so the sender offered less, and the relay carried 0.78-0.80
//! of the best veth where the TAPs carry 1.05-1.11.

use crate::packet::{Packet, Pool};
use crate::pipeline::Pipeline;
use crate::tap::Tap;
use crate::uring::{Uring, RWF_NOWAIT};

/// Frames read per wake-up and side, at most.
pub const BATCH: usize = 256;
/// Entries per io_uring_enter: a batch of writes is split into chunks of this.
const RING_ENTRIES: u32 = 256;
/// Reads in flight per io_uring_enter, at most: each needs a buffer of the largest
/// frame, kept for the relay's life (32 x 9064 B).
const READS: usize = 32;
/// Reads in the first io_uring_enter of a wake-up; each further one doubles (up to
/// READS) while every read found a frame. A read that finds none costs a little; a
/// wake-up for one frame tries 4.
const FIRST_READS: usize = 4;

pub struct TapIo {
    ring: Option<Uring>,
    scratch: Vec<Vec<u8>>,
}

impl TapIo {
    /// `taps`: the devices, in the order the `index` arguments name them; `max_frame`:
    /// the largest frame a read may return.
    pub fn new(taps: &[&Tap], max_frame: usize) -> TapIo {
        let fds: Vec<i32> = taps.iter().map(|t| t.fd).collect();
        let ring = match Uring::new(RING_ENTRIES, &fds) {
            Ok(ring) => Some(ring),
            Err(e) => {
                eprintln!("linklab-emu: warning: io_uring: {e} (one read(2) or write(2) per frame)");
                None
            }
        };
        // filled now, so the buffers are resident from the start, not grown into
        let scratch = if ring.is_some() { (0..READS).map(|_| vec![1u8; max_frame]).collect() } else { vec![] };
        TapIo { ring, scratch }
    }

    /// Read up to BATCH frames from `tap` (the `index`th) into `into`, oldest first.
    /// Err when the device is gone (e.g. its namespace was deleted): the relay then
    /// stops, and with it the link.
    pub fn read_batch(&mut self, tap: &Tap, index: u32, pool: &mut Pool, into: &mut Vec<Packet>) -> Result<(), String> {
        let result = match self.ring.as_mut() {
            Some(ring) => read_batched(ring, &mut self.scratch, index, pool, into),
            None => read_plain(tap, pool, into),
        };
        result.map_err(|e| format!("read {}: {e}", tap.name))
    }

    /// Write `out` (in order) to `tap` (the `index`th of the taps given to new), count
    /// what was written in `pipe`, and give the buffers back to `pool`.
    pub fn write_out(&mut self, tap: &Tap, index: u32, pipe: &mut Pipeline, out: &mut Vec<Packet>, pool: &mut Pool) {
        match self.ring.as_mut() {
            Some(ring) => {
                if let Err(e) = write_batched(ring, index, pipe, out) {
                    // not seen with a ring that worked once: the frames of this batch are
                    // counted as errors, and later ones go one write(2) each
                    eprintln!("linklab-emu: warning: io_uring_enter: {e} (writing one frame per write(2))");
                    self.ring = None;
                }
            }
            None => {
                for p in out.iter() {
                    count(pipe, tap.write(p.bytes()), p.len);
                }
            }
        }
        for p in out.drain(..) {
            pool.recycle(p);
        }
    }
}

#[inline]
fn count(pipe: &mut Pipeline, written: bool, len: usize) {
    if written {
        pipe.tx_frames += 1;
        pipe.tx_bytes += len as u64;
    } else {
        pipe.tx_errors += 1;
    }
}

fn write_batched(ring: &mut Uring, index: u32, pipe: &mut Pipeline, out: &[Packet]) -> std::io::Result<()> {
    let mut chunks = out.chunks(ring.entries as usize);
    while let Some(chunk) = chunks.next() {
        for (i, p) in chunk.iter().enumerate() {
            ring.queue_write(index, p.bytes(), i as u64);
        }
        let outcome = ring.submit_wait(|tag, res| {
            let len = chunk[tag as usize].len;
            count(pipe, res >= 0 && res as usize == len, len);
        });
        if let Err(e) = outcome {
            pipe.tx_errors += (chunk.len() + chunks.map(|c| c.len()).sum::<usize>()) as u64;
            return Err(e);
        }
    }
    Ok(())
}

/// What a read's outcome means: Ok(true) go on, Ok(false) nothing more now, Err the
/// device is gone.
fn read_outcome(err: &std::io::Error) -> Result<bool, std::io::Error> {
    match err.raw_os_error() {
        // nothing waiting; the interface is down (EIO) or a signal came: try again later
        Some(libc::EAGAIN) | Some(libc::EIO) | Some(libc::EINTR) => Ok(false),
        _ => Err(std::io::Error::from_raw_os_error(err.raw_os_error().unwrap_or(libc::EIO))),
    }
}

fn read_plain(tap: &Tap, pool: &mut Pool, into: &mut Vec<Packet>) -> std::io::Result<()> {
    for _ in 0..BATCH {
        match pool.read_frame(|buf| tap.read(buf)) {
            Ok(None) => return Ok(()),
            Ok(Some(p)) => into.push(p),
            Err(e) => {
                read_outcome(&e)?;
                return Ok(());
            }
        }
    }
    Ok(())
}

fn read_batched(ring: &mut Uring, scratch: &mut [Vec<u8>], index: u32, pool: &mut Pool, into: &mut Vec<Packet>) -> std::io::Result<()> {
    let (mut total, mut want) = (0, FIRST_READS);
    let mut got = [0i32; READS];
    while total < BATCH {
        let k = want.min(BATCH - total).min(scratch.len());
        for (i, buf) in scratch[..k].iter_mut().enumerate() {
            ring.queue_read(index, buf, RWF_NOWAIT, i as u64);
        }
        ring.submit_wait(|tag, res| got[tag as usize] = res)?;
        // the reads ran in the order queued, so their frames are in the TAP's order
        let mut more = true;
        for (buf, &res) in scratch[..k].iter().zip(&got[..k]) {
            if res > 0 {
                into.push(pool.frame_of(&buf[..res as usize]));
            } else if res == 0 {
                more = false;
            } else {
                more = more && read_outcome(&std::io::Error::from_raw_os_error(-res))?;
            }
        }
        if !more {
            break;
        }
        total += k;
        want = (want * 2).min(READS);
    }
    Ok(())
}
