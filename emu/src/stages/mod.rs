//! The impairment stages. Each stage does one thing (after Mahimahi's queues): it
//! takes a frame (`push`), hands frames on when they are due (`release`), and says
//! when it next has something due (`next_due`). A direction is a list of stages;
//! see pipeline.rs.

mod delay;
mod loss;
mod queue;
mod rate;
mod schedule;
mod trace;

use std::fs::File;
use std::io::BufWriter;

use crate::config::{Params, StageSpec};
use crate::packet::{Packet, Pool};
use crate::rng::Rng;
use delay::Delay;
use loss::Loss;
use rate::Rate;
use schedule::{OnOff, Outage};
use trace::Trace;

/// Ethernet header length: stages that charge IP bytes (trace) subtract it.
const ETH_HEADER: usize = 14;

#[derive(Default, Clone, Debug)]
pub struct Counters {
    pub packets_in: u64,
    pub bytes_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    pub queue_packets: u64,
    pub queue_bytes: u64,
    pub queue_max_packets: u64,
    pub queue_max_bytes: u64,
}

impl Counters {
    #[inline]
    fn arrive(&mut self, p: &Packet) {
        self.packets_in += 1;
        self.bytes_in += p.len as u64;
    }
    #[inline]
    fn emit(&mut self, p: Packet, out: &mut Vec<Packet>) {
        self.packets_out += 1;
        self.bytes_out += p.len as u64;
        out.push(p);
    }
    #[inline]
    fn drop(&mut self, p: Packet, pool: &mut Pool) {
        self.dropped_packets += 1;
        self.dropped_bytes += p.len as u64;
        pool.recycle(p);
    }
    #[inline]
    fn enqueued(&mut self, len: usize) {
        self.queue_packets += 1;
        self.queue_bytes += len as u64;
        self.queue_max_packets = self.queue_max_packets.max(self.queue_packets);
        self.queue_max_bytes = self.queue_max_bytes.max(self.queue_bytes);
    }
    #[inline]
    fn dequeued(&mut self, len: usize) {
        self.queue_packets -= 1;
        self.queue_bytes -= len as u64;
    }
}

// ---------------------------------------------------------------- stage -------

enum Behaviour {
    Delay(Delay),
    Loss(Loss),
    Rate(Rate),
    Outage(Outage),
    OnOff(OnOff),
    Trace(Trace),
    Duplicate { p: f64, rng: Rng },
    Corrupt { p: f64, rng: Rng },
}

pub struct Stage {
    pub name: String,
    pub kind: String,
    pub counters: Counters,
    behaviour: Behaviour,
}

fn open_log(path: &str) -> Result<Option<BufWriter<File>>, String> {
    if path.is_empty() {
        return Ok(None);
    }
    File::create(path).map(|f| Some(BufWriter::new(f))).map_err(|e| format!("log {path}: {e}"))
}

impl Stage {
    pub fn build(spec: &StageSpec, seed: u64, stream: u64, epoch: u64) -> Result<Stage, String> {
        let params = Params::new(spec);
        let rng = Rng::new(seed, stream);
        let line = spec.line;
        let behaviour = match spec.kind.as_str() {
            "delay" => Behaviour::Delay(Delay::build(&params, line, rng)?),
            "loss" => Behaviour::Loss(Loss::build(&params, line, rng)?),
            "rate" => Behaviour::Rate(Rate::build(&params, epoch)?),
            "outage" => Behaviour::Outage(Outage::build(&params, epoch)?),
            "onoff" => Behaviour::OnOff(OnOff::build(&params, rng, epoch)?),
            "trace" => Behaviour::Trace(Trace::build(&params, line, epoch)?),
            "duplicate" => {
                params.unknown_keys(&["p"])?;
                Behaviour::Duplicate { p: params.prob("p", 0.0)?, rng }
            }
            "corrupt" => {
                params.unknown_keys(&["p"])?;
                Behaviour::Corrupt { p: params.prob("p", 0.0)?, rng }
            }
            other => return Err(format!("config line {}: unknown stage kind {other}", spec.line)),
        };
        Ok(Stage {
            name: params.str_or("name", &spec.kind).to_string(),
            kind: spec.kind.clone(),
            counters: Counters::default(),
            behaviour,
        })
    }

    /// A frame arrives at `now`: hand it on (into `out`), keep it, or drop it.
    pub fn push(&mut self, mut p: Packet, now: u64, pool: &mut Pool, out: &mut Vec<Packet>) {
        let c = &mut self.counters;
        c.arrive(&p);
        match &mut self.behaviour {
            Behaviour::Delay(d) => d.push(c, p, now),
            Behaviour::Loss(l) => {
                if l.lose() {
                    c.drop(p, pool)
                } else {
                    c.emit(p, out)
                }
            }
            Behaviour::Rate(r) => r.push(c, p, now, pool),
            Behaviour::Outage(o) => {
                if o.down(now) {
                    c.drop(p, pool)
                } else {
                    c.emit(p, out)
                }
            }
            Behaviour::OnOff(o) => {
                o.advance(now);
                if o.is_on() {
                    c.emit(p, out)
                } else {
                    c.drop(p, pool)
                }
            }
            Behaviour::Trace(t) => t.push(c, p, now, pool),
            Behaviour::Duplicate { p: prob, rng } => {
                if rng.chance(*prob) {
                    let copy = pool.copy_of(&p);
                    c.emit(copy, out);
                }
                c.emit(p, out)
            }
            Behaviour::Corrupt { p: prob, rng } => {
                // flip one bit after the Ethernet header, as netem flips one in the
                // network-layer data
                if p.len > ETH_HEADER && rng.chance(*prob) {
                    let at = ETH_HEADER + (rng.next_u64() % (p.len - ETH_HEADER) as u64) as usize;
                    p.buf[at] ^= 1 << (rng.next_u64() % 8);
                }
                c.emit(p, out)
            }
        }
    }

    /// Hand on every kept frame that is due at `now`.
    pub fn release(&mut self, now: u64, out: &mut Vec<Packet>, pool: &mut Pool) {
        let c = &mut self.counters;
        match &mut self.behaviour {
            Behaviour::Delay(d) => d.release(c, now, out),
            Behaviour::Rate(r) => r.release(c, now, out, pool),
            Behaviour::Trace(t) => t.release(c, now, out, pool),
            Behaviour::OnOff(o) => o.advance(now),
            _ => {}
        }
    }

    pub fn next_due(&self) -> Option<u64> {
        match &self.behaviour {
            Behaviour::Delay(d) => d.next_due(),
            Behaviour::Rate(r) => r.next_due(),
            Behaviour::Trace(t) => t.next_due(),
            _ => None,
        }
    }

    /// Stage-specific state for the stats file, as JSON members (may be empty).
    pub fn state_json(&self, now: u64) -> String {
        match &self.behaviour {
            Behaviour::Loss(l) => match l.state_name() {
                Some(s) => format!(",\"state\":\"{s}\""),
                None => String::new(),
            },
            Behaviour::Outage(o) => {
                format!(",\"state\":\"{}\"", if o.down(now) { "down" } else { "up" })
            }
            Behaviour::OnOff(o) => format!(
                ",\"state\":\"{}\",\"transitions\":{}",
                if o.is_on() { "on" } else { "off" },
                o.transitions()
            ),
            _ => String::new(),
        }
    }

    pub fn flush_logs(&mut self) {
        match &mut self.behaviour {
            Behaviour::Delay(d) => d.flush_log(),
            Behaviour::OnOff(o) => o.flush_log(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StageSpec;
    use std::collections::HashMap;

    const MS: u64 = 1_000_000;

    fn stage(kind: &str, params: &[(&str, &str)]) -> Stage {
        let params: HashMap<String, String> =
            params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Stage::build(&StageSpec { kind: kind.into(), params, line: 1 }, 7, 1, 0).unwrap()
    }

    fn frame(len: usize, tag: u8) -> Packet {
        let mut buf = vec![0u8; 2048];
        buf[0] = tag;
        Packet { buf, len }
    }

    /// Push `frames` at t = 0, then step time in 0.1 ms ticks: (tag, release time).
    fn run(mut st: Stage, frames: Vec<Packet>, until: u64) -> Vec<(u8, u64)> {
        let mut pool = Pool::new(2048);
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for p in frames {
            st.push(p, 0, &mut pool, &mut out);
        }
        let mut now = 0;
        while now <= until {
            st.release(now, &mut out, &mut pool);
            for p in out.drain(..) {
                seen.push((p.buf[0], now));
            }
            now += MS / 10;
        }
        seen
    }

    #[test]
    fn serializer_sends_one_frame_per_transmission_time() {
        // 1000-byte frames at 8 Mbit/s: 1 ms each
        let st = stage("rate", &[("rate_bps", "8000000"), ("limit_packets", "5")]);
        let got = run(st, (0..7).map(|i| frame(1000, i)).collect(), 10 * MS);
        let times: Vec<u64> = got.iter().map(|&(_, t)| t).collect();
        assert_eq!(times, vec![MS, 2 * MS, 3 * MS, 4 * MS, 5 * MS]); // 2 dropped (limit 5)
    }

    #[test]
    fn token_bucket_lets_a_burst_through_then_paces() {
        let st = stage("rate", &[("rate_bps", "8000000"), ("burst", "3000")]);
        let got = run(st, (0..5).map(|i| frame(1000, i)).collect(), 10 * MS);
        let times: Vec<u64> = got.iter().map(|&(_, t)| t).collect();
        assert_eq!(times, vec![0, 0, 0, MS, 2 * MS]);
    }

    #[test]
    fn trace_delivers_1504_bytes_per_line_and_carries_the_rest_over() {
        let path = std::env::temp_dir().join(format!("emu-test-{}.trace", std::process::id()));
        std::fs::write(&path, "1\n2\n").unwrap();
        let st = stage("trace", &[("file", path.to_str().unwrap())]);
        // 1514-byte frames are charged 1500 IP bytes
        let got = run(st, (0..3).map(|i| frame(1514, i)).collect(), 5 * MS);
        std::fs::remove_file(path).unwrap();
        assert_eq!(got, vec![(0, MS), (1, 2 * MS), (2, 3 * MS)]);
    }

    #[test]
    fn delay_keeps_order_unless_reordering_is_allowed() {
        for (reorder, expect_sorted) in [("0", true), ("1", false)] {
            let st = stage("delay", &[("delay_ns", "5000000"), ("jitter_ns", "4000000"),
                                      ("dist", "normal"), ("reorder", reorder)]);
            let mut pool = Pool::new(2048);
            let (mut st, mut out, mut tags) = (st, Vec::new(), Vec::new());
            for i in 0..200u64 {
                st.push(frame(100, i as u8), i * MS / 10, &mut pool, &mut out);
                st.release(i * MS / 10, &mut out, &mut pool);
                tags.extend(out.drain(..).map(|p| p.buf[0]));
            }
            st.release(100 * MS, &mut out, &mut pool);
            tags.extend(out.drain(..).map(|p| p.buf[0]));
            assert_eq!(tags.len(), 200);
            let sorted = tags.windows(2).all(|w| w[1] == w[0].wrapping_add(1));
            assert_eq!(sorted, expect_sorted, "reorder={reorder}");
        }
    }

    #[test]
    fn gilbert_elliott_long_run_loss_matches_the_chain() {
        let mut st = stage("loss", &[("model", "gemodel"), ("p", "0.02"), ("r", "0.25"),
                                     ("1-h", "0.8"), ("1-k", "0.005")]);
        let mut pool = Pool::new(2048);
        let mut out = Vec::new();
        let n = 1_000_000;
        for _ in 0..n {
            st.push(frame(64, 0), 0, &mut pool, &mut out);
            out.clear();
        }
        // pi_B = p / (p + r); loss = pi_G (1-k) + pi_B (1-h)
        let pi_b = 0.02 / 0.27;
        let want = (1.0 - pi_b) * 0.005 + pi_b * 0.8;
        let got = st.counters.dropped_packets as f64 / n as f64;
        assert!((got - want).abs() < 0.03 * want, "{got} vs {want}");
    }

    #[test]
    fn outage_windows_repeat_with_their_period() {
        let st = stage("outage", &[("windows", "1000000:2000000"), ("period_ns", "10000000")]);
        if let Behaviour::Outage(o) = &st.behaviour {
            let down: Vec<bool> = [0, 1, 2, 3, 10, 11, 13].iter().map(|ms| o.down(ms * MS)).collect();
            assert_eq!(down, vec![false, true, true, false, false, true, false]);
        } else {
            panic!("not an outage stage");
        }
    }
}