//! The probe's stream as probes/common has it (and zenoh_stream.py in Python): the
//! clock, the stop flag the signals set, the publish pacing, the records file and the
//! sample payload (seq and send time first).

use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

use crate::cdr::{self, CdrSample};
use crate::types::Kind;

pub const WARMUP_FLAG: u64 = 1 << 63;
pub const END_OF_STREAM: u64 = u64::MAX;
const MAGIC: &[u8; 8] = b"LLREC1\0\0";
const RECORD_SIZE: u32 = 28; // <QqqI: seq, t_send_ns, t_recv_ns, bytes
const FLUSH_EVERY_NS: i64 = 250_000_000; // records unwritten at most this long
const HEADER: usize = 16; // seq u64 + t_send_ns i64 at the start of a framed sample

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(number: libc::c_int) {
    SIGNAL.store(number, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
}

/// SIGINT and SIGTERM end either role cleanly (records flushed, summary printed).
pub fn catch_signals() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to atomics (async-signal-safe)
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

pub fn stopped() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// The signal that stopped the probe, if one did.
pub fn received_signal() -> Option<i32> {
    Some(SIGNAL.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// Sleeps up to `s` seconds; true when a signal stopped the probe (at once or meanwhile).
pub fn stop_wait(s: f64) -> bool {
    let end = now_ns() + (s * 1e9) as i64;
    while !stopped() {
        let left = end - now_ns();
        if left <= 0 {
            return false;
        }
        std::thread::sleep(Duration::from_nanos(left.min(50_000_000) as u64));
    }
    true
}

fn clock(id: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec for the call to fill
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64
}

/// CLOCK_MONOTONIC in ns: every host is a namespace of one kernel, so a receive time
/// minus a send time is the one-way latency.
pub fn now_ns() -> i64 {
    clock(libc::CLOCK_MONOTONIC)
}

/// CPU seconds this process has used (user + system).
pub fn process_cpu_s() -> f64 {
    clock(libc::CLOCK_PROCESS_CPUTIME_ID) as f64 / 1e9
}

pub struct RecordWriter {
    file: File,
    pending: Vec<u8>,
    flushed_at: i64,
}

impl RecordWriter {
    pub fn create(path: &str, publisher: bool) -> std::io::Result<RecordWriter> {
        let mut file = File::create(path)?;
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&RECORD_SIZE.to_le_bytes());
        header.extend_from_slice(&u32::from(publisher).to_le_bytes());
        file.write_all(&header)?;
        Ok(RecordWriter { file, pending: Vec::new(), flushed_at: now_ns() })
    }

    pub fn add(&mut self, seq: u64, t_send: i64, t_recv: i64, bytes: u32) {
        for part in [&seq.to_le_bytes()[..], &t_send.to_le_bytes(), &t_recv.to_le_bytes(),
                     &bytes.to_le_bytes()] {
            self.pending.extend_from_slice(part);
        }
        // as the C++ probes: at most a quarter second of records is unwritten, so a probe
        // the runner has to SIGKILL keeps the rest (timed by the record's own local time)
        let local = if t_recv != 0 { t_recv } else { t_send };
        if self.pending.len() >= 4096 * RECORD_SIZE as usize
            || local - self.flushed_at >= FLUSH_EVERY_NS
        {
            self.flush();
        }
    }

    pub fn flush(&mut self) {
        let _ = self.file.write_all(&self.pending);
        self.pending.clear();
        self.flushed_at = now_ns();
    }
}

impl Drop for RecordWriter {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Absolute deadlines start + k/rate; a tick late by more than a period skips the
/// missed deadlines (like an rcl timer), as probes/common/probe.cpp does.
pub struct Pacer {
    start: i64,
    period: i64,
    k: i64,
    pub skipped: i64,
}

impl Pacer {
    pub fn new(rate_hz: f64) -> Pacer {
        Pacer { start: now_ns(), period: (1e9 / rate_hz).round() as i64, k: 0, skipped: 0 }
    }

    /// Waits for the next deadline; false when a signal stopped the probe.
    pub fn wait_next(&mut self) -> bool {
        let mut deadline = self.start + self.k * self.period;
        let late = now_ns() - deadline;
        if late > self.period {
            let missed = late / self.period;
            self.skipped += missed;
            self.k += missed;
            deadline = self.start + self.k * self.period;
        }
        loop {
            let left = deadline - now_ns();
            if left <= 0 {
                break;
            }
            if stop_wait(left.min(50_000_000) as f64 / 1e9) {
                return false;
            }
        }
        self.k += 1;
        !stopped()
    }
}

/// What the publisher sends: a buffer built once; only seq and send time change.
pub enum Sample {
    /// Bytes and performance_test's types: seq u64 + t_send_ns i64 + payload
    Framed(Vec<u8>),
    /// ROS 2's types: the CDR-serialized sample
    Cdr(CdrSample),
}

impl Sample {
    pub fn new(kind: Kind, size: u32) -> Sample {
        if kind.is_ros() {
            return Sample::Cdr(CdrSample::new(kind, size));
        }
        // the Python probe's fill: 0, 1, ... 255, 0, 1, ... then the header over it
        let n = HEADER + size as usize;
        let mut buffer: Vec<u8> = (0..n).map(|i| i as u8).collect();
        buffer[n - n % 256..].fill(0);
        Sample::Framed(buffer)
    }

    pub fn stamp(&mut self, seq: u64, t_send_ns: i64) {
        match self {
            Sample::Framed(b) => {
                b[..8].copy_from_slice(&seq.to_le_bytes());
                b[8..16].copy_from_slice(&t_send_ns.to_le_bytes());
            }
            Sample::Cdr(s) => s.stamp(seq, t_send_ns),
        }
    }

    pub fn bytes(&self) -> &[u8] {
        match self {
            Sample::Framed(b) => b,
            Sample::Cdr(s) => &s.buffer,
        }
    }
}

/// payload -> (seq, t_send_ns, payload bytes), or None when it is not a sample.
pub fn decode(kind: Kind, payload: &[u8]) -> Option<(u64, i64, u32)> {
    if kind.is_ros() {
        return cdr::read(kind, payload);
    }
    if payload.len() < HEADER {
        return None;
    }
    let seq = u64::from_le_bytes(payload[..8].try_into().ok()?);
    let t_send = i64::from_le_bytes(payload[8..16].try_into().ok()?);
    Some((seq, t_send, (payload.len() - HEADER) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_framed_sample_is_the_python_probes() {
        let mut s = Sample::new(Kind::Bytes, 300);
        s.stamp(7, -5);
        let b = s.bytes();
        assert_eq!(b.len(), 316);
        assert_eq!((b[16], b[255], b[256], b[315]), (16, 255, 0, 0));
        assert_eq!(decode(Kind::Bytes, b), Some((7, -5, 300)));
        assert_eq!(decode(Kind::Bytes, &b[..15]), None);
    }

    #[test]
    fn the_pacer_skips_missed_deadlines() {
        let mut p = Pacer::new(1000.0);
        p.start -= 5_500_000; // 5.5 periods late
        assert!(p.wait_next());
        assert_eq!(p.skipped, 5);
    }
}
