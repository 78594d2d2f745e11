//! The queue in front of a link (rate and trace stages): a limit in frames and bytes,
//! and what happens at the limit or when frames wait too long, after Mahimahi's three
//! queues (mahimahi/src/packet/{drop_tail,drop_head,codel}_packet_queue.cc):
//!
//! - `droptail`: a frame that does not fit is dropped (netem, tbf, Mahimahi's default);
//! - `headdrop`: the oldest frames are dropped until the new one fits;
//! - `codel`: drop-tail at the limit, and CoDel (RFC 8289, its pseudocode of section 5)
//!   on the frame about to be sent: once frames have waited longer than `target` for
//!   at least `interval`, drop at the head, the next drop interval / sqrt(count) later.
//!
//! Every queue has a limit: without a byte limit given, it holds at most
//! DEFAULT_LIMIT_BYTES of memory -- its frames' buffers, their bookkeeping and its own
//! slots -- whatever the frames' size (a flood can never exhaust memory), and the rate
//! stage at most netem's 1000 frames. A byte limit given counts frame bytes, as tbf's and
//! Mahimahi's do.

use std::collections::VecDeque;

use super::Counters;
use crate::config::Params;
use crate::packet::{Packet, Pool};

/// The memory a queue holds at most when no byte limit is given: 64 MiB.
pub const DEFAULT_LIMIT_BYTES: u64 = 64 << 20;
/// Memory of one queued frame besides its buffer: the Vec's header (24 B), the
/// allocator's chunk header (16 B), rounded up.
const FRAME_BOOKKEEPING: u64 = 48;
const SLOT_BYTES: u64 = std::mem::size_of::<(u64, Packet)>() as u64;
/// CoDel's defaults (RFC 8289 section 4.2/4.3; Mahimahi's defaults too).
const CODEL_TARGET_NS: u64 = 5_000_000;
const CODEL_INTERVAL_NS: u64 = 100_000_000;

enum Discipline {
    DropTail,
    HeadDrop,
    Codel(Codel),
}

struct Codel {
    target_ns: u64,
    interval_ns: u64,
    first_above: u64,
    drop_next: u64,
    count: u64,
    last_count: u64,
    dropping: bool,
}

pub struct Queue {
    frames: VecDeque<(u64, Packet)>,
    limit_packets: u64,
    limit_bytes: u64,
    memory_limit: u64,
    held: u64, // memory of the queued frames: buffers and FRAME_BOOKKEEPING
    discipline: Discipline,
}

/// The parameters a queue reads from a stage's directive.
pub const KEYS: [&str; 5] = ["limit_packets", "limit_bytes", "queue", "target_ns", "interval_ns"];

impl Queue {
    /// `default_packets`: the frame limit when neither limit is given (u64::MAX: none).
    pub fn build(params: &Params, default_packets: u64) -> Result<Queue, String> {
        let packets = params.u64_or("limit_packets", 0)?;
        let bytes = params.u64_or("limit_bytes", 0)?;
        let (limit_packets, limit_bytes) = match (packets, bytes) {
            (0, 0) => (default_packets, u64::MAX),
            (0, b) => (u64::MAX, b),
            (p, 0) => (p, u64::MAX),
            (p, b) => (p, b),
        };
        let memory_limit = if bytes == 0 { DEFAULT_LIMIT_BYTES } else { u64::MAX };
        let discipline = match params.str_or("queue", "droptail") {
            "droptail" => Discipline::DropTail,
            "headdrop" => Discipline::HeadDrop,
            "codel" => Discipline::Codel(Codel {
                target_ns: positive(params.u64_or("target_ns", CODEL_TARGET_NS)?, "target_ns")?,
                interval_ns: positive(params.u64_or("interval_ns", CODEL_INTERVAL_NS)?, "interval_ns")?,
                first_above: 0,
                drop_next: 0,
                count: 0,
                last_count: 0,
                dropping: false,
            }),
            other => return Err(format!("queue={other}: expected droptail, headdrop or codel")),
        };
        if !matches!(discipline, Discipline::Codel(_))
            && (params.has("target_ns") || params.has("interval_ns"))
        {
            return Err("target_ns and interval_ns belong to queue=codel".to_string());
        }
        Ok(Queue {
            frames: VecDeque::new(),
            limit_packets,
            limit_bytes,
            memory_limit,
            held: 0,
            discipline,
        })
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    #[inline]
    pub fn front(&self) -> Option<&Packet> {
        self.frames.front().map(|(_, p)| p)
    }

    #[inline]
    fn cost(p: &Packet) -> u64 {
        p.buf.len() as u64 + FRAME_BOOKKEEPING
    }

    /// Whether a frame of `len` bytes costing `cost` fits beside what is queued.
    fn fits(&self, c: &Counters, len: usize, cost: u64) -> bool {
        let slots = self.frames.len() + 1;
        let capacity = if slots > self.frames.capacity() {
            (2 * self.frames.capacity()).max(slots) // VecDeque doubles
        } else {
            self.frames.capacity()
        };
        c.queue_packets < self.limit_packets
            && c.queue_bytes + len as u64 <= self.limit_bytes
            && self.held + cost + capacity as u64 * SLOT_BYTES <= self.memory_limit
    }

    /// Remove the head (sent, or dropped by the caller).
    fn take_front(&mut self, c: &mut Counters) -> Option<Packet> {
        let (_, p) = self.frames.pop_front()?;
        c.dequeued(p.len);
        self.held -= Self::cost(&p);
        Some(p)
    }

    /// Take a frame in at `now`, or drop it (or, head-drop, the oldest) at the limit.
    /// Returns whether the head changed (a new head, or the old one dropped).
    pub fn push(&mut self, c: &mut Counters, p: Packet, now: u64, pool: &mut Pool) -> bool {
        let cost = Self::cost(&p);
        let mut head_changed = self.frames.is_empty();
        if !self.fits(c, p.len, cost) {
            let could_fit = (p.len as u64) <= self.limit_bytes && self.limit_packets > 0
                && cost + SLOT_BYTES * 4 <= self.memory_limit;
            match self.discipline {
                Discipline::HeadDrop if could_fit => {
                    while !self.fits(c, p.len, cost) {
                        let Some(old) = self.take_front(c) else { break };
                        c.drop(old, pool);
                        head_changed = true;
                    }
                }
                _ => {
                    c.drop(p, pool);
                    return false;
                }
            }
        }
        c.enqueued(p.len);
        self.held += cost;
        self.frames.push_back((now, p));
        head_changed
    }

    /// The head leaves the queue (it has been sent).
    pub fn pop(&mut self, c: &mut Counters) -> Option<Packet> {
        self.take_front(c)
    }

    /// The head is about to be sent at `now`: CoDel drops what its control law says
    /// first (the other disciplines nothing). Returns whether the head changed.
    pub fn admit_head(&mut self, c: &mut Counters, now: u64, pool: &mut Pool) -> bool {
        let Discipline::Codel(codel) = &mut self.discipline else {
            return false;
        };
        let mut changed = false;
        let mut ok_to_drop = codel.judge(self.frames.front().map(|f| f.0), c.queue_bytes, now);
        if codel.dropping {
            if !ok_to_drop {
                codel.dropping = false;
            }
            while codel.dropping && now >= codel.drop_next {
                let Some((_, p)) = self.frames.pop_front() else { break };
                c.dequeued(p.len);
                self.held -= Self::cost(&p);
                c.drop(p, pool);
                changed = true;
                codel.count += 1;
                ok_to_drop = codel.judge(self.frames.front().map(|f| f.0), c.queue_bytes, now);
                if !ok_to_drop {
                    codel.dropping = false;
                } else {
                    codel.drop_next = codel.control_law(codel.drop_next);
                }
            }
        } else if ok_to_drop {
            if let Some((_, p)) = self.frames.pop_front() {
                c.dequeued(p.len);
                self.held -= Self::cost(&p);
                c.drop(p, pool);
                changed = true;
            }
            codel.judge(self.frames.front().map(|f| f.0), c.queue_bytes, now);
            codel.dropping = true;
            let delta = codel.count.saturating_sub(codel.last_count);
            codel.count = if delta > 1 && now.saturating_sub(codel.drop_next) < 16 * codel.interval_ns {
                delta
            } else {
                1
            };
            codel.drop_next = codel.control_law(now);
            codel.last_count = codel.count;
        }
        changed
    }
}

impl Codel {
    /// RFC 8289's dodequeue: may the head (enqueued at `head_in`) be dropped at `now`?
    fn judge(&mut self, head_in: Option<u64>, queue_bytes: u64, now: u64) -> bool {
        let Some(t_in) = head_in else {
            self.first_above = 0;
            return false;
        };
        let sojourn = now.saturating_sub(t_in);
        // one MTU or less queued: never drop (RFC 8289's maxpacket)
        if sojourn < self.target_ns || queue_bytes <= 1514 {
            self.first_above = 0;
            false
        } else if self.first_above == 0 {
            self.first_above = now + self.interval_ns;
            false
        } else {
            now >= self.first_above
        }
    }

    fn control_law(&self, t: u64) -> u64 {
        t + (self.interval_ns as f64 / (self.count.max(1) as f64).sqrt()) as u64
    }
}

fn positive(v: u64, key: &str) -> Result<u64, String> {
    if v == 0 {
        Err(format!("{key} must be > 0"))
    } else {
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StageSpec;
    use std::collections::HashMap;

    const MS: u64 = 1_000_000;

    fn queue(params: &[(&str, &str)]) -> Result<Queue, String> {
        let params: HashMap<String, String> =
            params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let spec = StageSpec { kind: "rate".into(), params, line: 1 };
        Queue::build(&Params::new(&spec), 1000)
    }

    fn frame(len: usize, tag: u8) -> Packet {
        let mut buf = vec![0u8; len.max(1)];
        buf[0] = tag;
        Packet { buf, len }
    }

    #[test]
    fn without_limits_a_queue_still_has_one() {
        let mut q = queue(&[]).unwrap();
        let (mut c, mut pool) = (Counters::default(), Pool::new(64));
        for i in 0..1500 {
            q.push(&mut c, frame(100, i as u8), 0, &mut pool);
        }
        assert_eq!((c.queue_packets, c.dropped_packets), (1000, 500));
        assert_eq!(q.memory_limit, DEFAULT_LIMIT_BYTES);
    }

    #[test]
    fn without_a_byte_limit_small_frames_cannot_hold_more_memory_than_the_default() {
        // a trace's queue (no frame limit): 64-byte frames cost a 128-byte buffer each
        // and their bookkeeping; the queue stops at DEFAULT_LIMIT_BYTES of all of it
        let mut q = queue(&[]).unwrap();
        q.limit_packets = u64::MAX;
        let (mut c, mut pool) = (Counters::default(), Pool::new(64));
        for _ in 0..600_000 {
            let p = pool.frame_of(&[0u8; 64]);
            q.push(&mut c, p, 0, &mut pool);
        }
        let memory = q.held + q.frames.capacity() as u64 * SLOT_BYTES;
        assert!(memory <= DEFAULT_LIMIT_BYTES, "{memory}");
        assert!(memory > DEFAULT_LIMIT_BYTES / 2, "{memory}");
        assert!(c.dropped_packets > 0);
    }

    #[test]
    fn droptail_drops_the_newcomer_headdrop_the_oldest() {
        for (kind, first_kept) in [("droptail", 0u8), ("headdrop", 2u8)] {
            let mut q = queue(&[("limit_bytes", "3000"), ("queue", kind)]).unwrap();
            let (mut c, mut pool) = (Counters::default(), Pool::new(64));
            for i in 0..5 {
                q.push(&mut c, frame(1000, i), 0, &mut pool);
            }
            assert_eq!((c.queue_packets, c.queue_bytes, c.dropped_packets), (3, 3000, 2), "{kind}");
            assert_eq!(q.front().unwrap().buf[0], first_kept, "{kind}");
        }
    }

    #[test]
    fn codel_holds_a_standing_queue_near_its_target() {
        // 1000 B frames arrive every 0.9 ms and leave every 1 ms (11 % more than the
        // link carries, unresponsive): drop-tail fills its 1000 frames (1 s of waiting);
        // CoDel's drops grow as interval / sqrt(count) until they match the excess
        // (measured: CoDel 28.5 ms; an unresponsive flow keeps re-entering the dropping state)
        for (kind, lo, hi) in [("codel", 0.0, 50.0), ("droptail", 900.0, 1001.0)] {
            let mut q = queue(&[("queue", kind)]).unwrap();
            let (mut c, mut pool) = (Counters::default(), Pool::new(64));
            let mut waits = Vec::new();
            let (mut next_arrival, mut next_departure) = (0u64, MS);
            let us = MS / 1000;
            for now in (0..60_000 * MS).step_by(100 * us as usize) {
                if now >= next_arrival {
                    q.push(&mut c, frame(1000, 0), now, &mut pool);
                    next_arrival += 900 * us;
                }
                if now >= next_departure {
                    q.admit_head(&mut c, now, &mut pool);
                    if let Some((t_in, _)) = q.frames.front() {
                        waits.push(now - t_in);
                        q.pop(&mut c);
                    }
                    next_departure += MS;
                }
            }
            // the last 10 s of 60
            let tail = &waits[waits.len() - 10_000..];
            let mean = tail.iter().sum::<u64>() as f64 / tail.len() as f64 / MS as f64;
            assert!(lo <= mean && mean <= hi, "{kind}: mean wait {mean} ms");
        }
    }

    #[test]
    fn bad_queue_settings_are_refused() {
        assert!(queue(&[("queue", "red")]).err().unwrap().contains("droptail, headdrop or codel"));
        assert!(queue(&[("target_ns", "5")]).err().unwrap().contains("queue=codel"));
        assert!(queue(&[("queue", "codel"), ("interval_ns", "0")]).is_err());
    }
}
