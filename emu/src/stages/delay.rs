//! Constant delay plus jitter (netem `delay D J distribution X`).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::fs::File;
use std::io::{BufWriter, Write};

use super::{open_log, Counters};
use crate::config::Params;
use crate::packet::Packet;
use crate::rng::{jitter_sample, Distribution, Rng};

struct Timed {
    due: u64,
    seq: u64,
    packet: Packet,
}
impl PartialEq for Timed {
    fn eq(&self, other: &Self) -> bool {
        self.due == other.due && self.seq == other.seq
    }
}
impl Eq for Timed {}
impl PartialOrd for Timed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Timed {
    // BinaryHeap is a max-heap: the earliest (due, seq) must compare greatest.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.due, other.seq).cmp(&(self.due, self.seq))
    }
}

/// Constant delay plus jitter (netem `delay D J distribution X`). By default
/// frames keep their order: a frame never leaves before the one ahead of it
/// (its delay becomes max(own, previous)); `reorder=1` lets each frame leave at
/// its own time, so jitter reorders as on a multi-path link.
pub struct Delay {
    delay_ns: f64,
    jitter_ns: f64,
    dist: Distribution,
    reorder: bool,
    rng: Rng,
    fifo: VecDeque<(u64, Packet)>,
    heap: BinaryHeap<Timed>,
    seq: u64,
    last_due: u64,
    log: Option<BufWriter<File>>,
}

impl Delay {
    pub(super) fn build(params: &Params, line: usize, rng: Rng) -> Result<Delay, String> {
        params.unknown_keys(&["delay_ns", "jitter_ns", "dist", "reorder", "log"])?;
        let dist_name = params.str_or("dist", "uniform");
        let dist = Distribution::parse(dist_name).ok_or_else(|| {
            format!("config line {line}: dist must be uniform, normal, pareto or paretonormal")
        })?;
        Ok(Delay {
            delay_ns: params.f64_or("delay_ns", 0.0)?.max(0.0),
            jitter_ns: params.f64_or("jitter_ns", 0.0)?.max(0.0),
            dist,
            reorder: params.bool_or("reorder", false)?,
            rng,
            fifo: VecDeque::new(),
            heap: BinaryHeap::new(),
            seq: 0,
            last_due: 0,
            log: open_log(params.str_or("log", ""))?,
        })
    }

    pub(super) fn flush_log(&mut self) {
        if let Some(log) = self.log.as_mut() {
            let _ = log.flush();
        }
    }

    fn sample_ns(&mut self) -> u64 {
        let mut d = self.delay_ns;
        if self.jitter_ns > 0.0 {
            d += self.jitter_ns * jitter_sample(&mut self.rng, self.dist);
        }
        if d < 0.0 {
            0
        } else {
            d.round() as u64
        }
    }

    pub(super) fn push(&mut self, c: &mut Counters, p: Packet, now: u64) {
        let drawn = self.sample_ns();
        if let Some(log) = self.log.as_mut() {
            let _ = log.write_all(&drawn.to_le_bytes());
        }
        let mut due = now + drawn;
        c.enqueued(p.len);
        if self.reorder {
            self.seq += 1;
            self.heap.push(Timed { due, seq: self.seq, packet: p });
        } else {
            due = due.max(self.last_due);
            self.last_due = due;
            self.fifo.push_back((due, p));
        }
    }

    pub(super) fn release(&mut self, c: &mut Counters, now: u64, out: &mut Vec<Packet>) {
        if self.reorder {
            while self.heap.peek().is_some_and(|t| t.due <= now) {
                let t = self.heap.pop().unwrap();
                c.dequeued(t.packet.len);
                c.emit(t.packet, out);
            }
        } else {
            while self.fifo.front().is_some_and(|(due, _)| *due <= now) {
                let (_, p) = self.fifo.pop_front().unwrap();
                c.dequeued(p.len);
                c.emit(p, out);
            }
        }
    }

    pub(super) fn next_due(&self) -> Option<u64> {
        if self.reorder {
            self.heap.peek().map(|t| t.due)
        } else {
            self.fifo.front().map(|(due, _)| *due)
        }
    }
}
