//! The shared Wi-Fi radio medium (issue 43): both directions of one relay share one
//! 802.11 channel. Frames leaving the `ab` pipeline queue at station a (the robot),
//! frames leaving `ba` at station b (the AP); optional background stations contend too
//! and are never delivered. A star's links 1..N share it the same way: robot k is
//! station a (a2 .. aN), every link's `ba` frames queue at the one AP b, in a queue per
//! robot (station.rs), and the AP delivers to the robot each frame is for. A discrete-event simulation of EDCA (contention.rs) over
//! PHY airtimes (airtime.rs), with per-station queues, A-MPDUs and in-order release
//! (station.rs), runs in virtual time kept in step with the wall clock: the relay hands
//! it each frame with the time it left the pipeline, the medium first runs every event
//! up to that time, and a frame goes to the destination TAP when its exchange (PPDU,
//! SIFS, ACK/BlockAck) ends. `--simulate-medium` runs the same code offline
//! (simulate.rs).
//!
//! `medium_step` lines change the robot-AP channel (MCS, error rates) during the run
//! (steps.rs); the counters then say where it is (`link`).
//!
//! The per-frame log (`log=PATH`): one text line per MPDU outcome,
//! `<ns> <station> delivered|drop_retry|drop_queue|multicast_lost <ip_bytes> <mac_delay_ns> <retries>`
//! (ns on CLOCK_MONOTONIC in the relay, from 0 offline).

pub mod airtime;
mod contention;
mod counters;
mod lag;
pub mod simulate;
pub mod spec;
mod station;
mod steps;
#[cfg(test)]
mod tests;

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write as _};

use crate::packet::{Packet, Pool};
use contention::Channel;
use lag::Lag;
pub use lag::Before;
pub use spec::MediumSpec;
use station::{Source, Station};

/// Ethernet header: a TAP frame minus this is the IP packet the MPDU carries.
const ETH_HEADER: usize = 14;

/// The offered load of a generated station: bit/s (`inf`: saturated, 0: none) of IP
/// packets of `frame_bytes`.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    pub bps: f64,
    pub frame_bytes: u32,
}

impl Load {
    pub const NONE: Load = Load { bps: 0.0, frame_bytes: 1500 };

    fn source(&self) -> Source {
        if self.bps.is_infinite() {
            Source::Saturated
        } else if self.bps > 0.0 {
            // exponential gaps with mean 8 x bytes / load (Poisson arrivals)
            Source::Poisson { mean_gap_ns: 8.0 * self.frame_bytes as f64 / self.bps * 1e9, next: 0 }
        } else {
            Source::Relay
        }
    }
}

pub struct Medium {
    channel: Channel,
    /// a star's robots' MAC addresses (their side a's): the AP sends robot k only the
    /// unicast frames addressed to it (its association); None: not known, or a pair
    robot_macs: Vec<Option<[u8; 6]>>,
}

/// A TAP frame's IP bytes, and whether it is group-addressed (the destination MAC's
/// I/G bit).
#[inline]
fn frame_shape(p: &Packet) -> (u32, bool) {
    (p.len.saturating_sub(ETH_HEADER) as u32, p.len > 0 && p.buf[0] & 1 == 1)
}

impl Medium {
    /// The medium from `start` (ns): stations a and b with `loads` (the relay's: none,
    /// its frames come from the pipelines), then the background stations.
    pub fn build(spec: MediumSpec, seed: u64, start: u64, loads: [Load; 2]) -> Result<Medium, String> {
        Medium::build_star(spec, seed, start, loads, 1)
    }

    /// The medium of a star of `robots` links (1: a pair): robots a, a2 .. aN (with
    /// `loads[0]`), the AP b (`loads[1]`), then the background stations.
    pub fn build_star(spec: MediumSpec, seed: u64, start: u64, loads: [Load; 2], robots: usize) -> Result<Medium, String> {
        let log = if spec.log.is_empty() {
            None
        } else {
            Some(BufWriter::new(File::create(&spec.log).map_err(|e| format!("medium log {}: {e}", spec.log))?))
        };
        let capacity = (spec.queue_packets as usize).min(4096) + spec.ampdu_frames as usize;
        let mut stations = Vec::new();
        for k in 0..robots {
            // robot1 is a, robot K a<K> (the relay's link lines, config.rs)
            let name = if k == 0 { "a".to_string() } else { format!("a{}", k + 1) };
            stations.push(Station::new(name, loads[0].source(), loads[0].frame_bytes, spec.cw_min, capacity));
        }
        let ap_robots = if robots > 1 { robots } else { 0 };
        stations.push(Station::with_robots("b".to_string(), loads[1].source(), loads[1].frame_bytes, spec.cw_min, capacity, ap_robots));
        let bg = Load { bps: spec.bg_load_bps, frame_bytes: spec.bg_frame_bytes };
        for k in 0..spec.bg_stations {
            stations.push(Station::new(format!("bg{k}"), bg.source(), bg.frame_bytes, spec.cw_min, capacity));
        }
        let mut pool = Pool::new(64); // generated frames carry no buffer
        Ok(Medium { channel: Channel::new(spec, stations, robots, seed, start, log, &mut pool), robot_macs: vec![None; robots] })
    }

    /// Record how late each event is handled against its time (the relay).
    pub fn track_lag(&mut self) {
        self.channel.lag = Some(Lag::new());
    }

    /// A relay turn begins: where the relay's time went before it (the lag's late turns).
    pub fn turn(&mut self, before: Before) {
        if let Some(lag) = self.channel.lag.as_mut() {
            lag.turn(before);
        }
    }

    /// Run the medium up to `now` (a pair): frames from a whose exchange has ended go to
    /// `to_b`, from b to `to_a`.
    #[inline]
    pub fn advance(&mut self, now: u64, pool: &mut Pool, to_b: &mut Vec<Packet>, to_a: &mut Vec<Packet>) {
        self.channel.advance(now, pool, std::slice::from_mut(to_b), std::slice::from_mut(to_a));
    }

    /// Run the medium up to `now` (a star): frames from robot k go to `to_b[k]`, the
    /// AP's for robot k to `to_a[k]`.
    #[inline]
    pub fn advance_links(&mut self, now: u64, pool: &mut Pool, to_b: &mut [Vec<Packet>], to_a: &mut [Vec<Packet>]) {
        self.channel.advance(now, pool, to_b, to_a);
    }

    /// The frames that left side `side`'s pipeline of a pair (0: ab, station a; 1: ba,
    /// station b) at `now` join that station's queue. Call after `advance(now)`.
    #[cfg(test)]
    pub fn push(&mut self, side: usize, frames: &mut Vec<Packet>, now: u64, pool: &mut Pool) {
        if side == 0 {
            self.push_up(0, frames, now, pool);
        } else {
            self.push_down(0, frames, now, pool);
        }
    }

    /// Robot k's MAC address (its TAP's, as the relay made it).
    pub fn set_robot_mac(&mut self, k: usize, mac: Option<[u8; 6]>) {
        self.robot_macs[k] = mac;
    }

    /// Frames that left link k's `ab` pipeline at `now` join robot k's queue (the robot's
    /// address is learnt from them, should it change).
    pub fn push_up(&mut self, k: usize, frames: &mut Vec<Packet>, now: u64, pool: &mut Pool) {
        for p in frames.drain(..) {
            let (ip_bytes, multicast) = frame_shape(&p);
            if self.channel.robots > 1 && p.len >= 12 && p.buf[6] & 1 == 0 {
                self.robot_macs[k] = Some(p.buf[6..12].try_into().unwrap());
            }
            self.channel.arrive(k, None, Some(p), ip_bytes, multicast, now, pool);
        }
    }

    /// Frames that left link k's `ba` pipeline at `now` join the AP's queue for robot k;
    /// in a star, a unicast frame not addressed to robot k (the AP's bridge flooded it) is
    /// not sent (`not_addressed`).
    pub fn push_down(&mut self, k: usize, frames: &mut Vec<Packet>, now: u64, pool: &mut Pool) {
        let ap = self.channel.robots;
        for p in frames.drain(..) {
            let (ip_bytes, multicast) = frame_shape(&p);
            if !multicast && ap > 1 && p.len >= 6 && self.robot_macs[k].is_some_and(|mac| p.buf[..6] != mac) {
                self.channel.stations[ap].counters.not_addressed += 1;
                pool.recycle(p);
                continue;
            }
            self.channel.arrive(ap, Some(k), Some(p), ip_bytes, multicast, now, pool);
        }
    }

    pub fn next_due(&self) -> Option<u64> {
        self.channel.next_due()
    }

    pub fn flush_log(&mut self) {
        if let Some(log) = self.channel.log.as_mut() {
            let _ = log.flush();
        }
    }

    /// The counters as one JSON object, rates over `now` - start.
    pub fn json(&self, now: u64) -> String {
        let ch = &self.channel;
        let elapsed = now.saturating_sub(ch.started);
        let seconds = elapsed as f64 / 1e9;
        let mut s = format!("{{\"elapsed_ns\":{elapsed},\"events\":{},\"stations\":{{", ch.events);
        let (mut delivered_bytes, mut transmissions, mut collisions) = (0u64, 0u64, 0u64);
        for (i, st) in ch.stations.iter().enumerate() {
            let c = &st.counters;
            delivered_bytes += c.delivered_bytes;
            transmissions += c.transmissions;
            collisions += c.collisions;
            let _ = write!(s, "{}\"{}\":{}", if i > 0 { "," } else { "" }, st.name, c.json(seconds, st.queued()));
        }
        let ratio = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { 0.0 };
        let _ = write!(
            s,
            "}},\"throughput_bps\":{:.1},\"collision_probability\":{:.6},\"mean_ampdu_frames\":{:.3},\"busy_fraction\":{:.6}",
            if seconds > 0.0 { 8.0 * delivered_bytes as f64 / seconds } else { 0.0 },
            ratio(collisions, transmissions),
            ratio(ch.unicast_mpdus, ch.unicast_ppdus),
            ratio(ch.busy_ns, elapsed).min(1.0),
        );
        if !ch.steps.is_empty() {
            // where the robot-AP channel is in its steps (steps.rs)
            let link = &ch.link;
            let _ = write!(
                s,
                ",\"link\":{{\"mcs\":{},\"per\":{},\"multicast_per\":{},\"steps_applied\":{},\"steps\":{}}}",
                link.mcs,
                link.per,
                link.multicast_per,
                ch.steps.applied(),
                ch.steps.len()
            );
        }
        if let Some(lag) = &ch.lag {
            lag.json_fields(&mut s);
        }
        s.push('}');
        s
    }
}
