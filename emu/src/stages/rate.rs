//! Rate limit with a drop-tail queue: a serializer, or a token bucket.

use std::collections::VecDeque;

use super::{limits, Counters};
use crate::config::Params;
use crate::packet::{Packet, Pool};

/// Rate limit with a drop-tail queue. Without `burst` the link is a serializer:
/// a frame leaves when its last bit has been sent at `rate_bps` (netem `rate`,
/// Mahimahi's fixed-rate link). With `burst` it is a token bucket of that many
/// bytes (tbf). `overhead` bytes are charged per frame on top of its length
/// (e.g. 24 for Ethernet preamble + FCS + inter-frame gap).
pub struct Rate {
    ns_per_byte: f64,
    overhead: i64,
    burst: f64,
    limit_packets: u64,
    limit_bytes: u64,
    queue: VecDeque<Packet>,
    head_due: u64,
    last_departure: u64,
    tokens: f64,
    tokens_at: u64,
}

impl Rate {
    pub(super) fn build(params: &Params, epoch: u64) -> Result<Rate, String> {
        params.unknown_keys(&["rate_bps", "overhead", "burst", "limit_packets", "limit_bytes"])?;
        let rate = params.positive("rate_bps")?;
        let (limit_packets, limit_bytes) = limits(params)?;
        let burst = params.f64_or("burst", 0.0)?.max(0.0);
        Ok(Rate {
            ns_per_byte: 8e9 / rate,
            overhead: params.f64_or("overhead", 0.0)? as i64,
            burst,
            limit_packets,
            limit_bytes,
            queue: VecDeque::new(),
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

    fn tx_ns(&self, p: &Packet) -> u64 {
        (self.charge(p) * self.ns_per_byte).round() as u64
    }

    fn refill(&mut self, now: u64) {
        if now > self.tokens_at {
            self.tokens = (self.tokens + (now - self.tokens_at) as f64 / self.ns_per_byte)
                .min(self.burst);
            self.tokens_at = now;
        }
    }

    fn schedule_head(&mut self, now: u64) {
        if let Some(p) = self.queue.front() {
            if self.burst > 0.0 {
                let need = self.charge(p) - self.tokens;
                self.head_due = if need <= 0.0 {
                    now
                } else {
                    now + (need * self.ns_per_byte).ceil() as u64
                };
            } else {
                self.head_due = now.max(self.last_departure) + self.tx_ns(p);
            }
        }
    }

    pub(super) fn push(&mut self, c: &mut Counters, p: Packet, now: u64, pool: &mut Pool) {
        if c.queue_packets + 1 > self.limit_packets
            || c.queue_bytes + p.len as u64 > self.limit_bytes
        {
            c.drop(p, pool);
            return;
        }
        c.enqueued(p.len);
        self.queue.push_back(p);
        if self.queue.len() == 1 {
            self.refill(now);
            self.schedule_head(now);
        }
    }

    pub(super) fn release(&mut self, c: &mut Counters, now: u64, out: &mut Vec<Packet>) {
        while !self.queue.is_empty() && self.head_due <= now {
            let p = self.queue.pop_front().unwrap();
            if self.burst > 0.0 {
                self.refill(now);
                self.tokens -= self.charge(&p);
            } else {
                self.last_departure = self.head_due;
            }
            c.dequeued(p.len);
            c.emit(p, out);
            if self.burst > 0.0 {
                self.schedule_head(now);
            } else {
                // the next frame has been waiting: it starts when this one ended
                let start = self.last_departure;
                self.schedule_head(start);
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
