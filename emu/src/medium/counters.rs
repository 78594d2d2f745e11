//! What the medium counts: per station frames, drops, collisions and MAC delay, and a
//! log-linear histogram for the delay and the relay's lag quantiles (no allocation
//! after construction).

use std::fmt::Write as _;

/// Values below 64 have a bucket each; above, 32 buckets per power of two (a bucket
/// is at most 1/32 = 3.1 % of its value wide).
const LINEAR: u64 = 64;
const SUB_BITS: u32 = 5;
const BUCKETS: usize = 64 + (64 - 6) * 32;

pub struct Histogram {
    counts: Box<[u64; BUCKETS]>,
    pub count: u64,
    pub sum: u128,
    pub max: u64,
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram { counts: Box::new([0; BUCKETS]), count: 0, sum: 0, max: 0 }
    }

    #[inline]
    fn index(v: u64) -> usize {
        if v < LINEAR {
            return v as usize;
        }
        let exp = 63 - v.leading_zeros(); // >= 6
        let top = v >> (exp - SUB_BITS); // 32..63
        (LINEAR + (exp as u64 - 6) * 32 + (top - 32)) as usize
    }

    /// The middle of bucket `i`.
    fn value_of(i: usize) -> u64 {
        if (i as u64) < LINEAR {
            return i as u64;
        }
        let k = i as u64 - LINEAR;
        let exp = k / 32 + 6;
        let top = k % 32 + 32;
        let low = top << (exp - SUB_BITS as u64);
        low + (1u64 << (exp - SUB_BITS as u64)) / 2
    }

    #[inline]
    pub fn record(&mut self, v: u64) {
        self.counts[Self::index(v)] += 1;
        self.count += 1;
        self.sum += v as u128;
        self.max = self.max.max(v);
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The q-quantile (0 < q <= 1) to within a bucket, never above the maximum seen.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        if rank == self.count {
            return self.max;
        }
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Self::value_of(i).min(self.max);
            }
        }
        self.max
    }
}

/// One station's counters (IP bytes: what the TAP frame carries after its 14-byte
/// Ethernet header).
pub struct StationCounters {
    pub offered_frames: u64,
    pub offered_bytes: u64,
    pub delivered_frames: u64,
    pub delivered_bytes: u64,
    pub drops_retry: u64,
    pub drops_queue: u64,
    /// group-addressed frames lost (collision or multicast_per), never retried
    pub multicast_lost: u64,
    /// PPDUs this station sent, and those that overlapped another station's
    pub transmissions: u64,
    pub collisions: u64,
    /// MPDUs sent (first transmissions and retries)
    pub mpdus_sent: u64,
    pub retries: u64,
    /// arrival at the station's queue -> handed to the destination (ns)
    pub mac_delay: Histogram,
    /// a star's AP only (one entry per robot, else empty): frames handed to each robot,
    /// and those lost on the way (queue, retry limit, a group frame a robot missed)
    pub delivered_to: Vec<u64>,
    pub dropped_to: Vec<u64>,
    /// a star's AP: copies of a group-addressed frame its bridge gave it for several
    /// robots, sent as the one frame the first copy is
    pub multicast_merged: u64,
    /// a star's AP: unicast frames its bridge gave it for a robot they are not addressed
    /// to (flooded before the bridge learned where the address is); an AP sends a unicast
    /// frame only to the station it is for, so they are not sent
    pub not_addressed: u64,
}

impl StationCounters {
    /// `destinations`: a star AP's robots (0: any other station).
    pub fn new(destinations: usize) -> StationCounters {
        StationCounters {
            offered_frames: 0,
            offered_bytes: 0,
            delivered_frames: 0,
            delivered_bytes: 0,
            drops_retry: 0,
            drops_queue: 0,
            multicast_lost: 0,
            transmissions: 0,
            collisions: 0,
            mpdus_sent: 0,
            retries: 0,
            mac_delay: Histogram::new(),
            delivered_to: vec![0; destinations],
            dropped_to: vec![0; destinations],
            multicast_merged: 0,
            not_addressed: 0,
        }
    }

    /// As a JSON object; rates over `seconds`.
    pub fn json(&self, seconds: f64, queued: usize) -> String {
        let per_s = |bytes: u64| if seconds > 0.0 { 8.0 * bytes as f64 / seconds } else { 0.0 };
        let mut s = String::with_capacity(400);
        let _ = write!(
            s,
            "{{\"offered_frames\":{},\"offered_bps\":{:.1},\"delivered_frames\":{},\"delivered_bps\":{:.1},\
             \"drops_retry\":{},\"drops_queue\":{},\"multicast_lost\":{},\"transmissions\":{},\"collisions\":{},\
             \"mpdus_sent\":{},\"retries\":{},\"queue_packets\":{},\"mac_delay_mean_ns\":{:.0},\"mac_delay_p95_ns\":{},\
             \"mac_delay_max_ns\":{}}}",
            self.offered_frames,
            per_s(self.offered_bytes),
            self.delivered_frames,
            per_s(self.delivered_bytes),
            self.drops_retry,
            self.drops_queue,
            self.multicast_lost,
            self.transmissions,
            self.collisions,
            self.mpdus_sent,
            self.retries,
            queued,
            self.mac_delay.mean(),
            self.mac_delay.quantile(0.95),
            self.mac_delay.max,
        );
        if !self.delivered_to.is_empty() {
            s.pop();
            let list = |v: &[u64]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",");
            let _ = write!(
                s,
                ",\"delivered_to\":[{}],\"dropped_to\":[{}],\"multicast_merged\":{},\"not_addressed\":{}}}",
                list(&self.delivered_to),
                list(&self.dropped_to),
                self.multicast_merged,
                self.not_addressed
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_within_a_bucket() {
        let mut h = Histogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        for (q, want) in [(0.5, 50_000_000.0), (0.95, 95_000_000.0), (0.99, 99_000_000.0)] {
            let got = h.quantile(q) as f64;
            assert!((got - want).abs() / want < 0.032, "q {q}: {got}");
        }
        assert_eq!(h.quantile(1.0), 100_000_000);
        assert!((h.mean() - 50_000_500.0).abs() < 1.0);
        let mut small = Histogram::new();
        small.record(3);
        assert_eq!(small.quantile(0.99), 3);
    }
}
