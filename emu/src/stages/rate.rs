//! Rate limit with a queue in front (queue.rs): a serializer, or a token bucket.

use super::queue::{self, Queue};
use super::Counters;
use crate::config::Params;
use crate::packet::{Packet, Pool};

/// netem's default queue limit in frames (the rate stage's, when none is given).
const DEFAULT_LIMIT_PACKETS: u64 = 1000;

/// Rate limit with a queue. Without `burst` the link is a serializer: a frame leaves
/// when its last bit has been sent at `rate_bps` (netem `rate`, Mahimahi's fixed-rate
/// link). With `burst` it is a token bucket of that many bytes (tbf). `overhead` bytes
/// are charged per frame on top of its length (e.g. 24 for Ethernet preamble + FCS +
/// inter-frame gap). A frame starts being sent when it is the head and the link is
/// free (serializer) or has the tokens (bucket); that is when CoDel judges it.
pub struct Rate {
    ns_per_byte: f64,
    overhead: i64,
    burst: f64,
    queue: Queue,
    head_due: u64,
    last_departure: u64,
    tokens: f64,
    tokens_at: u64,
}

impl Rate {
    pub(super) fn build(params: &Params, epoch: u64) -> Result<Rate, String> {
        let mut keys = vec!["rate_bps", "overhead", "burst"];
        keys.extend(queue::KEYS);
        params.unknown_keys(&keys)?;
        let rate = params.positive("rate_bps")?;
        let burst = params.f64_or("burst", 0.0)?.max(0.0);
        Ok(Rate {
            ns_per_byte: 8e9 / rate,
            overhead: params.f64_or("overhead", 0.0)? as i64,
            burst,
            queue: Queue::build(params, DEFAULT_LIMIT_PACKETS)?,
            head_due: 0,
            last_departure: 0,
            tokens: burst,
            tokens_at: epoch,
        })
    }

    #[inline]
    fn charge(&self, p: &Packet) -> f64 {
        (p.len as i64 + self.overhead).max(0) as f64
    }

    fn refill(&mut self, now: u64) {
        if now > self.tokens_at {
            self.tokens = (self.tokens + (now - self.tokens_at) as f64 / self.ns_per_byte)
                .min(self.burst);
            self.tokens_at = now;
        }
    }

    /// The head (a new one) starts at `start` at the earliest: when it leaves.
    fn schedule_head(&mut self, c: &mut Counters, start: u64, pool: &mut Pool) {
        if self.burst > 0.0 {
            if let Some(p) = self.queue.front() {
                let need = self.charge(p) - self.tokens;
                self.head_due =
                    if need <= 0.0 { start } else { start + (need * self.ns_per_byte).ceil() as u64 };
            }
        } else {
            let begin = start.max(self.last_departure);
            self.queue.admit_head(c, begin, pool);
            if let Some(p) = self.queue.front() {
                self.head_due = begin + (self.charge(p) * self.ns_per_byte).round() as u64;
            }
        }
    }

    pub(super) fn push(&mut self, c: &mut Counters, p: Packet, now: u64, pool: &mut Pool) {
        let was_empty = self.queue.is_empty();
        if self.queue.push(c, p, now, pool) && !self.queue.is_empty() {
            if was_empty {
                self.refill(now);
            }
            self.schedule_head(c, now, pool);
        }
    }

    pub(super) fn release(&mut self, c: &mut Counters, now: u64, out: &mut Vec<Packet>, pool: &mut Pool) {
        while !self.queue.is_empty() && self.head_due <= now {
            if self.burst > 0.0 {
                // the bucket has the tokens: the head starts now, if CoDel keeps it
                if self.queue.admit_head(c, self.head_due, pool) {
                    self.refill(now);
                    self.schedule_head(c, now, pool);
                    continue;
                }
                self.refill(now);
                let p = self.queue.pop(c).unwrap();
                self.tokens -= self.charge(&p);
                c.emit(p, out);
                self.schedule_head(c, now, pool);
            } else {
                self.last_departure = self.head_due;
                let p = self.queue.pop(c).unwrap();
                c.emit(p, out);
                // the next frame has been waiting: it starts when this one ended
                let start = self.last_departure;
                self.schedule_head(c, start, pool);
            }
        }
    }

    pub(super) fn next_due(&self) -> Option<u64> {
        if self.queue.is_empty() {
            None
        } else {
            Some(self.head_due)
        }
    }
}
