//! The channel: EDCA contention between the stations (802.11-2020 10.23.2, one access
//! category, AC_BE by default; 802.11a DCF is the same rules with AIFSN 2, 10.3.4.3)
//! as a discrete-event simulation in nanoseconds.
//!
//! - After the medium has been idle for AIFS = SIFS + AIFSN x slot (10.23.2.4, Eq. 10-3),
//!   each station with a backoff pending counts it down one per idle slot; the first to
//!   reach 0 transmits at that slot boundary. Stations that reach 0 at the same boundary
//!   transmit together and collide. The others freeze what they have left (10.23.2.2).
//! - A successful exchange keeps the medium busy for the PPDU, SIFS and the ACK or
//!   BlockAck; a group-addressed PPDU for the PPDU alone. A collision keeps it busy for
//!   the longest of the overlapping PPDUs and an ACK timeout taken as SIFS + the
//!   response's duration + slot (10.3.2.9 defines ACKTimeout as aSIFSTime + aSlotTime +
//!   aRxPHYStartDelay; this one lies near EIFS - AIFS), for every station alike:
//!   EIFS (10.3.2.3.7) is not modelled, the third stations resume as the colliders do.
//!   Then AIFS again. Against Bianchi (JSAC 2000, Sec. IV, basic access): T_s = PPDU +
//!   SIFS + ACK + AIFS as his; T_c = PPDU + SIFS + ACK + slot + AIFS, longer than his
//!   PPDU + DIFS by SIFS + ACK + slot.
//! - Failure (a collision, or no MPDU of the PPDU received) doubles CW = 2 (CW + 1) - 1
//!   up to CWmax; success resets it to CWmin, and so does a discard at the retry limit
//!   (10.23.2.2); a group-addressed frame leaves it. After every transmission the
//!   station draws a new backoff in [0, CW] (post-backoff, 10.23.2.2); it counts down whether or not a frame is waiting. A
//!   frame arriving at a station with no backoff pending (its queue was empty and its
//!   post-backoff done) draws a fresh one: every transmission is preceded by a backoff
//!   (the standard would let it transmit at once after AIFS of idle medium: a
//!   simplification that makes every access a contention).
//! - A star's robots a, a2 .. aN and the AP b are stations 0..N-1 and N (the AP with a
//!   queue per robot, station.rs); the background stations follow.
//! - Stations a and b (the robot and the AP) take the robot-AP link's MCS and error
//!   rates, which `medium_step` lines change during the run (steps.rs: linklab's rate
//!   control, computed ahead from the robot's distance); the background stations keep
//!   the `medium` line's. A step applies from the first exchange that starts at or after
//!   its time.
//! - Not modelled: RTS/CTS, EIFS, NAV/TXOP bursts, rate adaptation in the relay, capture,
//!   hidden stations, MU-MIMO/OFDMA, power save.

use std::fs::File;
use std::io::BufWriter;

use super::airtime::{Airtime, SLOT_NS};
use super::lag::Lag;
use super::spec::MediumSpec;
use super::station::{Limits, Outcome, Source, Station};
use super::steps::Steps;
use crate::packet::{Packet, Pool};
use crate::rng::Rng;

/// What happens next on the medium.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Event {
    /// the exchange on the air ends
    End,
    /// a generated frame arrives at a station (Poisson source)
    Arrival(usize),
    /// one or more stations reach 0 and transmit
    Start,
}

pub struct Channel {
    /// the medium line's channel: the background stations'
    pub spec: MediumSpec,
    pub air: Airtime,
    /// the robot-AP link's channel (stations a and b): `spec` as the steps change it
    pub link: MediumSpec,
    pub link_air: Airtime,
    pub steps: Steps,
    /// the robots (stations 0..robots-1); the AP is station `robots`
    pub robots: usize,
    pub limits: Limits,
    pub stations: Vec<Station>,
    rng: Rng,
    aifs_ns: u64,
    busy: bool,
    busy_end: u64,
    idle_since: u64,
    transmitters: Vec<usize>,
    collided: bool,
    pub started: u64,
    pub busy_ns: u64,
    /// unicast PPDUs and the MPDUs they carried (mean A-MPDU size)
    pub unicast_ppdus: u64,
    pub unicast_mpdus: u64,
    pub events: u64,
    /// how late each event was handled against its time (relay only)
    pub lag: Option<Lag>,
    pub log: Option<BufWriter<File>>,
}

impl Channel {
    /// The stations (the `robots`, the AP, then the background ones) at `start`, idle.
    #[allow(clippy::too_many_arguments)]
    pub fn new(mut spec: MediumSpec, mut stations: Vec<Station>, robots: usize, seed: u64, start: u64, log: Option<BufWriter<File>>, pool: &mut Pool) -> Channel {
        let steps = Steps::new(std::mem::take(&mut spec.steps));
        let air = Airtime::new(spec.standard, spec.band, spec.width_mhz, spec.nss, spec.mcs, spec.gi_ns);
        let limits = Limits {
            ampdu_frames: spec.ampdu_frames as usize,
            ampdu_bytes: spec.ampdu_bytes,
            ppdu_max_ns: spec.ppdu_max_ns,
            queue_packets: spec.queue_packets,
            queue_bytes: spec.queue_bytes,
        };
        for st in stations.iter_mut() {
            st.cw = spec.cw_min;
        }
        // AIFS = aSIFSTime + AIFSN x aSlotTime (Eq. 10-3)
        let aifs_ns = air.sifs_ns + spec.aifsn as u64 * SLOT_NS;
        let mut ch = Channel {
            // a stream of its own: the stages use 1000.. and 2000..
            rng: Rng::new(seed, 43_000),
            aifs_ns,
            busy: false,
            busy_end: 0,
            idle_since: start,
            transmitters: Vec::with_capacity(stations.len()),
            collided: false,
            started: start,
            busy_ns: 0,
            unicast_ppdus: 0,
            unicast_mpdus: 0,
            events: 0,
            lag: None,
            log,
            link: spec.clone(),
            link_air: air.clone(),
            steps,
            robots,
            spec,
            air,
            limits,
            stations,
        };
        for i in 0..ch.stations.len() {
            match ch.stations[i].source {
                Source::Saturated => ch.generate(i, start, pool),
                Source::Poisson { mean_gap_ns, .. } => {
                    let gap = ch.rng.exponential(mean_gap_ns) as u64;
                    ch.stations[i].source = Source::Poisson { mean_gap_ns, next: start + gap };
                }
                Source::Relay => {}
            }
        }
        ch
    }

    /// The next event and its time (ties: the end of the exchange first, then arrivals,
    /// then transmissions).
    fn next_event(&self) -> Option<(u64, Event)> {
        let mut best: Option<(u64, Event)> = if self.busy { Some((self.busy_end, Event::End)) } else { None };
        let consider = |t: u64, e: Event, best: &mut Option<(u64, Event)>| {
            if best.map_or(true, |(bt, _)| t < bt) {
                *best = Some((t, e));
            }
        };
        for (i, st) in self.stations.iter().enumerate() {
            if let Source::Poisson { next, .. } = st.source {
                consider(next, Event::Arrival(i), &mut best);
            }
        }
        if !self.busy {
            for st in &self.stations {
                if st.backoff_pending && st.has_frame() {
                    consider(st.count_from + st.backoff as u64 * SLOT_NS, Event::Start, &mut best);
                }
            }
        }
        best
    }

    /// When the medium next has something to do (the relay's timer).
    pub fn next_due(&self) -> Option<u64> {
        self.next_event().map(|(t, _)| t)
    }

    /// Run every event up to `until`; frames delivered from robot k go to `to_b[k]`, from
    /// the AP to `to_a[k]` for robot k.
    pub fn advance(&mut self, until: u64, pool: &mut Pool, to_b: &mut [Vec<Packet>], to_a: &mut [Vec<Packet>]) {
        while let Some((t, event)) = self.next_event() {
            if t > until {
                break;
            }
            self.events += 1;
            if let Some(lag) = self.lag.as_mut() {
                lag.record(until, t);
            }
            match event {
                Event::End => self.end_exchange(t, pool, to_b, to_a),
                Event::Arrival(i) => {
                    self.generate(i, t, pool);
                    if let Source::Poisson { mean_gap_ns, .. } = self.stations[i].source {
                        let gap = (self.rng.exponential(mean_gap_ns) as u64).max(1);
                        self.stations[i].source = Source::Poisson { mean_gap_ns, next: t + gap };
                    }
                }
                Event::Start => {
                    self.apply_steps(t);
                    self.start_exchange(t)
                }
            }
        }
    }

    /// A frame for station `i` at `t` (the relay's, or None for a generated one); at the
    /// AP, `dest` is the robot it goes to (None: the pair's one robot).
    #[allow(clippy::too_many_arguments)]
    pub fn arrive(&mut self, i: usize, dest: Option<usize>, packet: Option<Packet>, ip_bytes: u32, multicast: bool, t: u64, pool: &mut Pool) {
        let had_frame = self.stations[i].has_frame();
        if self.stations[i].enqueue_to(dest, packet, ip_bytes, multicast, t, &self.limits, pool, &mut self.log) && !had_frame {
            self.wants_access(i, t);
        }
    }

    /// A generated source's arrival (Poisson) or top-up (saturated) at `t`.
    fn generate(&mut self, i: usize, t: u64, pool: &mut Pool) {
        let had_frame = self.stations[i].has_frame();
        match self.stations[i].source {
            Source::Saturated => self.stations[i].top_up(t, &self.limits, pool, &mut self.log),
            _ => {
                let bytes = self.stations[i].frame_bytes;
                self.stations[i].enqueue(None, bytes, false, t, &self.limits, pool, &mut self.log);
            }
        }
        if !had_frame && self.stations[i].has_frame() {
            self.wants_access(i, t);
        }
    }

    /// Station `i` got a frame at `t` with an empty queue before: it keeps what is left
    /// of a pending post-backoff, or draws a fresh backoff (module comment).
    fn wants_access(&mut self, i: usize, t: u64) {
        let busy = self.busy;
        let st = &mut self.stations[i];
        if st.backoff_pending && !busy {
            // the post-backoff counted while the queue was empty: what is left at t
            let counted = t.saturating_sub(st.count_from) / SLOT_NS;
            if counted < st.backoff as u64 {
                st.backoff -= counted as u32;
                st.count_from += counted * SLOT_NS;
                return;
            }
            st.backoff_pending = false;
        }
        if st.backoff_pending {
            return; // frozen during the busy medium; it counts again after AIFS
        }
        st.backoff = (self.rng.next_u64() % (st.cw as u64 + 1)) as u32;
        st.backoff_pending = true;
        if !busy {
            // counting starts after AIFS of idle medium, on the slot grid that began then
            let base = self.idle_since + self.aifs_ns;
            st.count_from = if t <= base { base } else { base + (t - base).div_ceil(SLOT_NS) * SLOT_NS };
        }
    }

    /// The robot-AP channel of the last step due at `t`, if one is.
    fn apply_steps(&mut self, t: u64) {
        if let Some(step) = self.steps.due(t.saturating_sub(self.started)) {
            let link = &mut self.link;
            (link.mcs, link.per, link.multicast_per) = (step.mcs, step.per, step.multicast_per);
            self.link_air = Airtime::new(link.standard, link.band, link.width_mhz, link.nss, link.mcs, link.gi_ns);
        }
    }

    /// The stations whose backoff ends at `t` transmit; the others freeze theirs.
    fn start_exchange(&mut self, t: u64) {
        self.transmitters.clear();
        for (i, st) in self.stations.iter_mut().enumerate() {
            if !st.backoff_pending {
                continue;
            }
            let counted = (t.saturating_sub(st.count_from) / SLOT_NS).min(st.backoff as u64);
            st.backoff -= counted as u32;
            st.count_from += counted * SLOT_NS;
            if st.backoff == 0 && st.count_from <= t {
                st.backoff_pending = false; // a post-backoff with no frame is done
                if st.has_frame() {
                    self.transmitters.push(i);
                }
            }
        }
        self.collided = self.transmitters.len() > 1;
        let sifs = self.air.sifs_ns;
        let mut end = t;
        for &i in &self.transmitters {
            let st = &mut self.stations[i];
            st.select(if i <= self.robots { &self.link_air } else { &self.air }, &self.limits);
            let exchange = if st.response_ns == 0 {
                st.ppdu_ns
            } else if self.collided {
                // the ACK timeout after a PPDU that got no response
                st.ppdu_ns + sifs + st.response_ns + SLOT_NS
            } else {
                st.ppdu_ns + sifs + st.response_ns
            };
            end = end.max(t + exchange);
            if st.response_ns != 0 {
                self.unicast_ppdus += 1;
                self.unicast_mpdus += st.inflight_len() as u64;
            }
        }
        self.busy = true;
        self.busy_end = end;
        self.busy_ns += end - t;
    }

    /// The exchange ends at `t`: outcomes, CW, new backoffs, in-order release; then the
    /// medium is idle and every pending backoff counts after AIFS.
    fn end_exchange(&mut self, t: u64, pool: &mut Pool, to_b: &mut [Vec<Packet>], to_a: &mut [Vec<Packet>]) {
        for k in 0..self.transmitters.len() {
            let i = self.transmitters[k];
            let spec = if i <= self.robots { &self.link } else { &self.spec };
            let st = &mut self.stations[i];
            match st.finish(t, self.collided, spec, &mut self.rng, pool, &mut self.log) {
                Outcome::Failed => st.cw = (2 * (st.cw + 1) - 1).min(spec.cw_max),
                Outcome::Reset => st.cw = spec.cw_min,
                Outcome::Unacknowledged => {}
            }
            st.backoff = (self.rng.next_u64() % (st.cw as u64 + 1)) as u32;
            st.backoff_pending = true;
            let (outs, keep): (&mut [Vec<Packet>], bool) = if i < self.robots {
                (&mut to_b[i..=i], true)
            } else if i == self.robots {
                (&mut *to_a, true)
            } else {
                (&mut [], false)
            };
            st.release(t, outs, pool, &mut self.log, keep);
            if matches!(st.source, Source::Saturated) {
                st.top_up(t, &self.limits, pool, &mut self.log);
            }
        }
        self.busy = false;
        self.idle_since = t;
        let count_from = t + self.aifs_ns;
        for st in self.stations.iter_mut().filter(|s| s.backoff_pending) {
            st.count_from = count_from;
        }
    }
}
