//! Links that go down on a schedule: fixed outage windows, or a stochastic on/off.

use std::fs::File;
use std::io::{BufWriter, Write};

use super::open_log;
use crate::config::Params;
use crate::rng::Rng;

/// Scheduled outage windows, relative to the epoch and optionally repeating with
/// `period_ns`: frames arriving inside a window are dropped.
pub struct Outage {
    epoch: u64,
    windows: Vec<(u64, u64)>,
    period: u64,
}

impl Outage {
    pub(super) fn build(params: &Params, epoch: u64) -> Result<Outage, String> {
        params.unknown_keys(&["windows", "period_ns"])?;
        Ok(Outage { epoch, windows: params.pairs("windows")?, period: params.u64_or("period_ns", 0)? })
    }

    pub(super) fn down(&self, now: u64) -> bool {
        if now < self.epoch {
            return false;
        }
        let mut t = now - self.epoch;
        if self.period > 0 {
            t %= self.period;
        }
        self.windows.iter().any(|&(start, len)| t >= start && t < start + len)
    }
}

/// Stochastic on/off link (Mahimahi's mm-onoff): exponentially distributed on and
/// off times; frames arriving while off are dropped. The link starts on at the
/// epoch. Transitions are computed at their exact times and, with `log=PATH`,
/// written there as lines `on|off <CLOCK_MONOTONIC ns>`.
pub struct OnOff {
    mean_on_ns: f64,
    mean_off_ns: f64,
    rng: Rng,
    on: bool,
    next_switch: u64,
    transitions: u64,
    log: Option<BufWriter<File>>,
}

impl OnOff {
    pub(super) fn build(params: &Params, mut rng: Rng, epoch: u64) -> Result<OnOff, String> {
        params.unknown_keys(&["mean_on_ns", "mean_off_ns", "log"])?;
        let mean_on_ns = params.positive("mean_on_ns")?;
        let first = rng.exponential(mean_on_ns).round() as u64;
        Ok(OnOff {
            mean_on_ns,
            mean_off_ns: params.positive("mean_off_ns")?,
            rng,
            on: true,
            next_switch: epoch + first.max(1),
            transitions: 0,
            log: open_log(params.str_or("log", ""))?,
        })
    }

    pub(super) fn is_on(&self) -> bool {
        self.on
    }

    pub(super) fn transitions(&self) -> u64 {
        self.transitions
    }

    pub(super) fn flush_log(&mut self) {
        if let Some(log) = self.log.as_mut() {
            let _ = log.flush();
        }
    }

    pub(super) fn advance(&mut self, now: u64) {
        while self.next_switch <= now {
            self.on = !self.on;
            self.transitions += 1;
            if let Some(log) = self.log.as_mut() {
                let _ = writeln!(log, "{} {}", if self.on { "on" } else { "off" }, self.next_switch);
            }
            let mean = if self.on { self.mean_on_ns } else { self.mean_off_ns };
            self.next_switch += (self.rng.exponential(mean).round() as u64).max(1);
        }
    }
}
