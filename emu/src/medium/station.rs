//! One station of the medium: its transmit queue (drop-tail), the A-MPDU it sends at
//! its turn, what becomes of each MPDU, and the receiver's in-order release.
//!
//! The queue holds every MPDU from its arrival until it is released to the destination:
//! `Waiting` ones (new, or lost and waiting for their retransmission) and those already
//! acknowledged or dropped but held behind an older one still waiting. That is the
//! receiver's BlockAck reordering buffer (802.11-2016 10.24.4, 10.25 in 802.11-2020):
//! MPDUs leave in the order they entered the queue; one received after a lost one waits
//! for it or for its drop. Retransmissions go first because they are the oldest.
//!
//! A star's AP (several robots on one medium) keeps a queue per robot and one for
//! group-addressed frames, as Linux's mac80211 keeps a TXQ per station and one for the
//! interface's multicast: an A-MPDU has one receiver, the BlockAck window and the
//! reordering buffer are per receiver, so a frame lost to one robot never holds another
//! robot's. It contends as one station (one backoff) and serves its queues in turn, one
//! PPDU each (round robin: mac80211's airtime fairness shares by airtime, a
//! simplification). A group frame is sent once at the basic rate and each robot receives
//! it or not on its own; the copies the AP's bridge gives it for each robot port are
//! merged into that one frame (`multicast_merged`).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write as _};

use super::airtime::Airtime;
use super::counters::StationCounters;
use super::spec::MediumSpec;
use crate::packet::{Packet, Pool};
use crate::rng::Rng;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Fate {
    Waiting,
    Acked,
    Dropped,
}

pub struct Mpdu {
    /// the relay's frame (None for the simulated and background stations' frames)
    pub packet: Option<Packet>,
    pub ip_bytes: u32,
    pub arrival: u64,
    pub seq: u64,
    /// failed transmissions so far (the retry count)
    pub retries: u32,
    pub multicast: bool,
    pub fate: Fate,
    /// a star AP's frame: the robots it is for (bit k: robot k; a group frame, after its
    /// exchange, those that received it); 0 elsewhere (one destination)
    pub dests: u64,
}

/// Group frames from the AP's bridge ports this close in time, with the same bytes, are
/// the bridge's copies of one frame (it floods a group frame to every port at once).
const MERGE_NS: u64 = 1_000_000;

/// One transmit queue: MPDUs in arrival order, numbered per queue (a receiver's BlockAck
/// sequence space).
struct Lane {
    queue: VecDeque<Mpdu>,
    next_seq: u64,
    waiting: u32,
}

impl Lane {
    fn new(capacity: usize) -> Lane {
        Lane { queue: VecDeque::with_capacity(capacity), next_seq: 0, waiting: 0 }
    }
}

/// What an exchange does to the contention window (10.23.2.2): a failure (no ACK or
/// BlockAck) doubles it; a success resets it, and so does a discard at the retry limit
/// ("CW shall be reset to CWmin ... when the retry counter reaches its limit");
/// a group-addressed frame leaves it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Outcome {
    Failed,
    Reset,
    Unacknowledged,
}

/// Where a station's frames come from.
#[derive(Clone, Copy, Debug)]
pub enum Source {
    /// the relay's pipeline (a and b), or nothing
    Relay,
    /// Poisson arrivals of `frame_bytes` with this mean gap
    Poisson { mean_gap_ns: f64, next: u64 },
    /// always a frame waiting
    Saturated,
}

/// The limits a station's queue and A-MPDUs obey (from the directive).
pub struct Limits {
    pub ampdu_frames: usize,
    pub ampdu_bytes: u64,
    pub ppdu_max_ns: u64,
    pub queue_packets: u32,
    pub queue_bytes: u64,
}

pub struct Station {
    pub name: String,
    pub source: Source,
    pub frame_bytes: u32,
    /// one queue, or a star AP's: one per robot, then the group-addressed one
    lanes: Vec<Lane>,
    /// the queue of the PPDU on the air (or last sent), and the next one to serve
    current: usize,
    next_lane: usize,
    waiting_packets: u32,
    waiting_bytes: u64,
    /// EDCA state: the contention window, the backoff counter (slots still to count
    /// from `count_from`), and whether a backoff is pending
    pub cw: u32,
    pub backoff: u32,
    pub backoff_pending: bool,
    pub count_from: u64,
    /// the PPDU on the air: indexes into the queue, its duration, its response's
    /// duration (0: none expected, a group-addressed frame)
    inflight: Vec<usize>,
    pub ppdu_ns: u64,
    pub response_ns: u64,
    pub counters: StationCounters,
}

/// One more in `counts[k]` for each robot k whose bit is set in `dests` (a star AP's
/// per-robot counters; empty elsewhere).
fn count_each(counts: &mut [u64], dests: u64) {
    for (k, n) in counts.iter_mut().enumerate() {
        *n += dests >> k & 1;
    }
}

/// What the log says happened to an MPDU.
fn log_line(log: &mut Option<BufWriter<File>>, t: u64, name: &str, what: &str, m: &Mpdu) {
    if let Some(log) = log.as_mut() {
        let _ = writeln!(log, "{t} {name} {what} {} {} {}", m.ip_bytes, t.saturating_sub(m.arrival), m.retries);
    }
}

impl Station {
    pub fn new(name: String, source: Source, frame_bytes: u32, cw_min: u32, capacity: usize) -> Station {
        Station::with_robots(name, source, frame_bytes, cw_min, capacity, 0)
    }

    /// A star's AP for `robots` robots (a queue each and a group one); 0: one queue.
    pub fn with_robots(name: String, source: Source, frame_bytes: u32, cw_min: u32, capacity: usize, robots: usize) -> Station {
        let lanes = if robots == 0 { 1 } else { robots + 1 };
        Station {
            name,
            source,
            frame_bytes,
            lanes: (0..lanes).map(|_| Lane::new(if lanes == 1 { capacity } else { 64 })).collect(),
            current: 0,
            next_lane: 0,
            waiting_packets: 0,
            waiting_bytes: 0,
            cw: cw_min,
            backoff: 0,
            backoff_pending: false,
            count_from: 0,
            inflight: Vec::with_capacity(64),
            ppdu_ns: 0,
            response_ns: 0,
            counters: StationCounters::new(robots),
        }
    }

    /// A star's AP (a queue per robot).
    fn per_robot(&self) -> bool {
        self.lanes.len() > 1
    }

    #[inline]
    pub fn has_frame(&self) -> bool {
        self.waiting_packets > 0
    }

    /// MPDUs in the transmit queue (waiting for their first or next transmission).
    pub fn queued(&self) -> usize {
        self.waiting_packets as usize
    }

    /// A frame arrives at `now`: queued (true) or dropped at the tail (false).
    #[allow(clippy::too_many_arguments)]
    pub fn enqueue(&mut self, packet: Option<Packet>, ip_bytes: u32, multicast: bool, now: u64,
                   limits: &Limits, pool: &mut Pool, log: &mut Option<BufWriter<File>>) -> bool {
        self.enqueue_to(None, packet, ip_bytes, multicast, now, limits, pool, log)
    }

    /// A frame for robot `dest` (a star's AP; None: the station's one destination)
    /// arrives at `now`: queued or merged into the same group frame queued for other
    /// robots (true), or dropped at the tail (false).
    #[allow(clippy::too_many_arguments)]
    pub fn enqueue_to(&mut self, dest: Option<usize>, packet: Option<Packet>, ip_bytes: u32, multicast: bool, now: u64,
                      limits: &Limits, pool: &mut Pool, log: &mut Option<BufWriter<File>>) -> bool {
        let (lane, dests) = match dest {
            Some(k) if self.per_robot() => (if multicast { self.lanes.len() - 1 } else { k }, 1u64 << k),
            _ => (0, 0),
        };
        if multicast && dests != 0 {
            if let Some(p) = packet.as_ref() {
                if self.merge_group(lane, dests, p, now) {
                    self.counters.multicast_merged += 1;
                    pool.recycle(packet.unwrap());
                    return true;
                }
            }
        }
        self.counters.offered_frames += 1;
        self.counters.offered_bytes += ip_bytes as u64;
        let seq = self.lanes[lane].next_seq;
        let mpdu = Mpdu { packet, ip_bytes, arrival: now, seq, retries: 0, multicast, fate: Fate::Waiting, dests };
        let full = self.waiting_packets >= limits.queue_packets
            || (limits.queue_bytes > 0 && self.waiting_bytes + ip_bytes as u64 > limits.queue_bytes);
        if full {
            self.counters.drops_queue += 1;
            self.count_lost(dests);
            log_line(log, now, &self.name, "drop_queue", &mpdu);
            if let Some(p) = mpdu.packet {
                pool.recycle(p);
            }
            return false;
        }
        self.waiting_packets += 1;
        self.waiting_bytes += ip_bytes as u64;
        let l = &mut self.lanes[lane];
        l.next_seq += 1;
        l.waiting += 1;
        l.queue.push_back(mpdu);
        true
    }

    /// A copy of a group frame already waiting in `lane` (same bytes, within MERGE_NS,
    /// not yet for these robots, not on the air): it is now for them too.
    fn merge_group(&mut self, lane: usize, dests: u64, p: &Packet, now: u64) -> bool {
        let on_air = if self.current == lane { self.inflight.as_slice() } else { &[] };
        let queue = &mut self.lanes[lane].queue;
        for i in (0..queue.len()).rev() {
            let m = &mut queue[i];
            if now.saturating_sub(m.arrival) > MERGE_NS {
                break;
            }
            let same = m.packet.as_ref().is_some_and(|q| q.bytes() == p.bytes());
            if same && m.fate == Fate::Waiting && m.dests & dests == 0 && !on_air.contains(&i) {
                m.dests |= dests;
                return true;
            }
        }
        false
    }

    /// Robots (bits of `dests`) a frame for them did not reach.
    fn count_lost(&mut self, dests: u64) {
        count_each(&mut self.counters.dropped_to, dests);
    }

    /// The next queue to serve (in turn from the one after the last served) with a frame
    /// waiting.
    fn choose_lane(&mut self) -> Option<usize> {
        let n = self.lanes.len();
        let lane = (0..n).map(|j| (self.next_lane + j) % n).find(|&l| self.lanes[l].waiting > 0)?;
        self.current = lane;
        self.next_lane = (lane + 1) % n;
        Some(lane)
    }

    /// A saturated station's queue topped up at `now` to what one A-MPDU can take.
    pub fn top_up(&mut self, now: u64, limits: &Limits, pool: &mut Pool, log: &mut Option<BufWriter<File>>) {
        let target = (limits.ampdu_frames as u32).min(limits.queue_packets);
        while self.waiting_packets < target {
            self.enqueue(None, self.frame_bytes, false, now, limits, pool, log);
        }
    }

    /// Its turn: the MPDUs of the PPDU it sends, from the head of the queue (the oldest
    /// waiting first), up to `ampdu_frames` inside the BlockAck window (10.24 Block Ack: the
    /// window starts at the oldest MPDU not yet released), within `ampdu_bytes` and a
    /// PPDU of at most `ppdu_max_ns`; a group-addressed frame goes alone. Sets the PPDU's
    /// duration and its response's; the station's counters count the transmission.
    pub fn select(&mut self, air: &Airtime, limits: &Limits) {
        self.inflight.clear();
        let Some(lane) = self.choose_lane() else { return };
        let queue = &self.lanes[lane].queue;
        let Some(head_seq) = queue.front().map(|m| m.seq) else { return };
        let window_end = head_seq + limits.ampdu_frames as u64;
        let mut psdu = 0u64;
        let mut multicast = false;
        for (i, m) in queue.iter().enumerate() {
            if m.seq >= window_end {
                break;
            }
            if m.fate != Fate::Waiting {
                continue;
            }
            if m.multicast {
                if self.inflight.is_empty() {
                    self.inflight.push(i);
                    multicast = true;
                }
                break;
            }
            let sub = air.subframe_bytes(m.ip_bytes) as u64;
            if !self.inflight.is_empty()
                && (self.inflight.len() >= limits.ampdu_frames
                    || psdu + sub > limits.ampdu_bytes
                    || air.data_ppdu_ns(psdu + sub) > limits.ppdu_max_ns)
            {
                break;
            }
            self.inflight.push(i);
            psdu += sub;
        }
        let first = &queue[self.inflight[0]];
        if multicast {
            self.ppdu_ns = air.multicast_ppdu_ns(first.ip_bytes);
            self.response_ns = 0;
        } else {
            if !air.delimited(self.inflight.len()) {
                psdu = air.mpdu_bytes(first.ip_bytes) as u64;
            }
            self.ppdu_ns = air.data_ppdu_ns(psdu);
            // one MPDU: a normal ACK; an A-MPDU: a compressed BlockAck (10.24.7, HT-immediate BlockAck)
            self.response_ns = if self.inflight.len() > 1 { air.block_ack_ns() } else { air.ack_ns() };
        }
        let c = &mut self.counters;
        c.transmissions += 1;
        c.mpdus_sent += self.inflight.len() as u64;
        c.retries += self.inflight.iter().filter(|&&i| queue[i].retries > 0).count() as u64;
    }

    pub fn inflight_len(&self) -> usize {
        self.inflight.len()
    }

    pub fn sent_multicast(&self) -> bool {
        self.response_ns == 0 && !self.inflight.is_empty()
    }

    /// The PPDU's outcome at `t`, the end of its exchange. A collision loses every MPDU;
    /// otherwise each unicast MPDU is lost with `spec.mpdu_per` of its size, a
    /// group-addressed one with `spec.multicast_mpdu_per`. A lost unicast MPDU waits for
    /// its retransmission, or is dropped past `retry_limit` retries (10.3.4.4 retransmit
    /// limits, the short and long retry counters as one); a group-addressed one is never
    /// retried.
    /// Returns the exchange's effect on CW (10.23.2.2).
    pub fn finish(&mut self, t: u64, collided: bool, spec: &MediumSpec,
                  rng: &mut Rng, pool: &mut Pool, log: &mut Option<BufWriter<File>>) -> Outcome {
        if collided {
            self.counters.collisions += 1;
        }
        let (mut received, mut discarded) = (0, false);
        let lane = self.current;
        for k in 0..self.inflight.len() {
            let i = self.inflight[k];
            let m = &mut self.lanes[lane].queue[i];
            if m.multicast && m.dests != 0 {
                // each robot receives the AP's group frame or not on its own
                let p = spec.multicast_mpdu_per(m.ip_bytes);
                let mut got = 0u64;
                let mut left = m.dests;
                while left != 0 {
                    let bit = left & left.wrapping_neg(); // the lowest robot left
                    left &= !bit;
                    if !collided && !rng.chance(p) {
                        got |= bit;
                    }
                }
                let missed = m.dests & !got;
                self.counters.multicast_lost += missed.count_ones() as u64;
                count_each(&mut self.counters.dropped_to, missed);
                if missed != 0 {
                    log_line(log, t, &self.name, "multicast_lost", m);
                }
                m.dests = got;
                m.fate = if got != 0 { Fate::Acked } else { Fate::Dropped };
            } else if m.multicast {
                let lost = collided || rng.chance(spec.multicast_mpdu_per(m.ip_bytes));
                if lost {
                    m.fate = Fate::Dropped;
                    self.counters.multicast_lost += 1;
                    log_line(log, t, &self.name, "multicast_lost", m);
                } else {
                    m.fate = Fate::Acked;
                }
            } else if !collided && !rng.chance(spec.mpdu_per(m.ip_bytes)) {
                m.fate = Fate::Acked;
                received += 1;
            } else {
                m.retries += 1;
                if m.retries > spec.retry_limit {
                    m.fate = Fate::Dropped;
                    discarded = true;
                    self.counters.drops_retry += 1;
                    log_line(log, t, &self.name, "drop_retry", m);
                    let dests = m.dests;
                    self.count_lost(dests);
                }
            }
            let l = &mut self.lanes[lane];
            let m = &mut l.queue[i];
            if m.fate != Fate::Waiting {
                l.waiting -= 1;
                self.waiting_packets -= 1;
                self.waiting_bytes -= m.ip_bytes as u64;
                if m.fate == Fate::Dropped {
                    if let Some(p) = m.packet.take() {
                        pool.recycle(p);
                    }
                }
            }
        }
        let multicast = self.sent_multicast();
        self.inflight.clear();
        if multicast {
            Outcome::Unacknowledged
        } else if received > 0 || discarded {
            Outcome::Reset
        } else {
            Outcome::Failed
        }
    }

    /// Hand every MPDU at the head of the queue just served that is done to its
    /// destination, in order (the reordering buffer, module comment): delivered ones
    /// into `outs` (the relay's frames: `outs[0]`, or a star AP's `outs[k]` for robot k,
    /// a copy each for a group frame) with their MAC delay counted, dropped ones only
    /// removed. `keep` false: the frames are not the relay's (recycled).
    pub fn release(&mut self, t: u64, outs: &mut [Vec<Packet>], pool: &mut Pool, log: &mut Option<BufWriter<File>>, keep: bool) {
        let queue = &mut self.lanes[self.current].queue;
        while queue.front().is_some_and(|m| m.fate != Fate::Waiting) {
            let mut m = queue.pop_front().unwrap();
            if m.fate != Fate::Acked {
                continue;
            }
            let c = &mut self.counters;
            c.delivered_frames += 1;
            c.delivered_bytes += m.ip_bytes as u64;
            c.mac_delay.record(t - m.arrival);
            log_line(log, t, &self.name, "delivered", &m);
            count_each(&mut c.delivered_to, m.dests);
            let Some(p) = m.packet.take() else { continue };
            if !keep {
                pool.recycle(p);
            } else if m.dests == 0 {
                outs[0].push(p);
            } else {
                let last = 63 - m.dests.leading_zeros() as usize;
                for (k, out) in outs.iter_mut().enumerate().take(last) {
                    if m.dests >> k & 1 == 1 {
                        out.push(pool.copy_of(&p));
                    }
                }
                outs[last].push(p);
            }
        }
    }
}
