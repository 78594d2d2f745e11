//! Mahimahi trace replay.

use super::queue::{self, Queue};
use super::{Counters, ETH_HEADER};
use crate::config::Params;
use crate::packet::{Packet, Pool};

/// One delivery opportunity of a Mahimahi trace line carries this many bytes
/// (Mahimahi's PACKET_SIZE: a 1500-byte MTU plus its 4-byte TUN header).
const TRACE_OPPORTUNITY_BYTES: u64 = 1504;

/// Mahimahi trace replay: each line of the trace is a millisecond timestamp at
/// which the link may deliver 1504 bytes; the trace repeats with the period of
/// its last timestamp. Opportunities with nothing queued are lost. A frame is
/// charged its IP length (frame minus the Ethernet header), as Mahimahi (on a TUN
/// device) charges IP packets; a frame larger than what is left of an
/// opportunity uses up the rest and continues in the next one.
pub struct Trace {
    times_ns: Vec<u64>,
    period_ns: u64,
    epoch: u64,
    index: usize,
    cycle: u64,
    queue: Queue,
    head_left: u64,
}

impl Trace {
    pub(super) fn build(params: &Params, line: usize, epoch: u64) -> Result<Trace, String> {
        let mut keys = vec!["file"];
        keys.extend(queue::KEYS);
        params.unknown_keys(&keys)?;
        let path = params.str_or("file", "");
        if path.is_empty() {
            return Err(format!("config line {line}: trace needs file=PATH"));
        }
        let times_ms = read_trace(path)?;
        Ok(Trace {
            period_ns: times_ms.last().unwrap() * 1_000_000,
            times_ns: times_ms.iter().map(|ms| ms * 1_000_000).collect(),
            epoch,
            index: 0,
            cycle: 0,
            queue: Queue::build(params, u64::MAX)?,
            head_left: 0,
        })
    }

    #[inline]
    fn opportunity(&self) -> u64 {
        self.epoch + self.cycle * self.period_ns + self.times_ns[self.index]
    }

    fn step(&mut self) {
        self.index += 1;
        if self.index == self.times_ns.len() {
            self.index = 0;
            self.cycle += 1;
        }
    }

    /// Move to the first opportunity at or after `now` (the queue was empty, so
    /// the ones before were wasted).
    fn skip_to(&mut self, now: u64) {
        if self.opportunity() >= now {
            return;
        }
        let rel = now - self.epoch;
        self.cycle = rel / self.period_ns;
        let within = rel - self.cycle * self.period_ns;
        self.index = self.times_ns.partition_point(|&t| t < within);
        if self.index == self.times_ns.len() {
            self.index = 0;
            self.cycle += 1;
        }
    }

    #[inline]
    fn charge(p: &Packet) -> u64 {
        (p.len.saturating_sub(ETH_HEADER)).max(1) as u64
    }

    pub(super) fn push(&mut self, c: &mut Counters, p: Packet, now: u64, pool: &mut Pool) {
        let was_empty = self.queue.is_empty();
        if self.queue.push(c, p, now, pool) {
            if was_empty {
                self.skip_to(now);
            }
            if let Some(head) = self.queue.front() {
                self.head_left = Self::charge(head);
            }
        }
    }

    pub(super) fn release(&mut self, c: &mut Counters, now: u64, out: &mut Vec<Packet>, pool: &mut Pool) {
        while !self.queue.is_empty() && self.opportunity() <= now {
            let at = self.opportunity();
            let mut budget = TRACE_OPPORTUNITY_BYTES;
            while budget > 0 && !self.queue.is_empty() {
                // a head not yet started is judged as it starts
                let fresh = self.queue.front().is_some_and(|p| self.head_left == Self::charge(p));
                if fresh && self.queue.admit_head(c, at, pool) {
                    match self.queue.front() {
                        Some(p) => self.head_left = Self::charge(p),
                        None => break,
                    }
                }
                if self.head_left <= budget {
                    budget -= self.head_left;
                    let p = self.queue.pop(c).unwrap();
                    c.emit(p, out);
                    if let Some(next) = self.queue.front() {
                        self.head_left = Self::charge(next);
                    }
                } else {
                    self.head_left -= budget;
                    budget = 0;
                }
            }
            self.step();
        }
    }

    pub(super) fn next_due(&self) -> Option<u64> {
        if self.queue.is_empty() {
            None
        } else {
            Some(self.opportunity())
        }
    }
}

fn read_trace(path: &str) -> Result<Vec<u64>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("trace {path}: {e}"))?;
    let mut times = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let ms: u64 = line
            .parse()
            .map_err(|_| format!("trace {path} line {}: expected a millisecond integer", i + 1))?;
        if times.last().is_some_and(|&last| ms < last) {
            return Err(format!("trace {path} line {}: timestamps must not decrease", i + 1));
        }
        times.push(ms);
    }
    match times.last() {
        None => Err(format!("trace {path}: no delivery opportunities")),
        Some(0) => Err(format!("trace {path}: the last timestamp must be > 0 ms")),
        Some(_) => Ok(times),
    }
}
