//! How long before a deadline the relay stops sleeping and polls instead.
//!
//! A timer wakes the relay late: on this project's 2-vCPU VM a timerfd armed for an
//! idle vCPU fired 50-150 us after its deadline (p50 52 us busy, ~130 us idle; p99 up
//! to ~1 ms), SCHED_FIFO or not, because the host has to wake the halted vCPU first.
//! A frame delayed 20 ms then left 20.13 ms after it came in, every time. The relay
//! therefore arms the timer `lead` early and spends the rest polling:
//!
//! - `Fixed(ns)`: a constant lead (`spin NS` in the configuration; 0 sleeps to the
//!   deadline, the relay's behaviour before the adaptive lead);
//! - `Adaptive`: the 90th percentile of the last WINDOW observed wake-up lateness
//!   values plus MARGIN_NS, never above `cap` (`spin auto CAP`). It learns what the
//!   machine does now: short on a busy machine, where vCPUs are awake, longer on an
//!   idle one. Polling costs CPU: at most `cap` per deadline.

const WINDOW: usize = 64;
const MARGIN_NS: u64 = 10_000;
const FIRST_LEAD_NS: u64 = 100_000;

pub enum Lead {
    Fixed(u64),
    Adaptive { cap: u64, seen: [u64; WINDOW], count: usize, current: u64 },
}

impl Lead {
    pub fn fixed(ns: u64) -> Lead {
        Lead::Fixed(ns)
    }

    pub fn adaptive(cap: u64) -> Lead {
        Lead::Adaptive { cap, seen: [0; WINDOW], count: 0, current: FIRST_LEAD_NS.min(cap) }
    }

    /// The lead to use now (ns).
    pub fn ns(&self) -> u64 {
        match self {
            Lead::Fixed(ns) => *ns,
            Lead::Adaptive { current, .. } => *current,
        }
    }

    /// The timer, armed for `armed_ns`, woke the relay at `woke_ns`.
    pub fn observe(&mut self, armed_ns: u64, woke_ns: u64) {
        if let Lead::Adaptive { cap, seen, count, current } = self {
            seen[*count % WINDOW] = woke_ns.saturating_sub(armed_ns);
            *count += 1;
            let filled = (*count).min(WINDOW);
            if filled >= 8 {
                let mut sorted = *seen; // a copy on the stack: no allocation per wake-up
                let rank = (filled * 9) / 10;
                let (_, p90, _) = sorted[..filled].select_nth_unstable(rank.min(filled - 1));
                *current = (*p90 + MARGIN_NS).min(*cap);
            }
        }
    }

    /// What the stats file says about it.
    pub fn describe(&self) -> String {
        match self {
            Lead::Fixed(ns) => format!("{{\"mode\": \"fixed\", \"lead_ns\": {ns}}}"),
            Lead::Adaptive { cap, current, count, .. } => format!(
                "{{\"mode\": \"auto\", \"lead_ns\": {current}, \"cap_ns\": {cap}, \"wakeups\": {count}}}"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_never_moves() {
        let mut lead = Lead::fixed(5_000);
        for _ in 0..100 {
            lead.observe(0, 1_000_000);
        }
        assert_eq!(lead.ns(), 5_000);
    }

    #[test]
    fn adaptive_follows_the_90th_percentile_of_recent_lateness() {
        let mut lead = Lead::adaptive(300_000);
        assert_eq!(lead.ns(), FIRST_LEAD_NS);
        // 60 wakes 40 us late, 4 wakes 1 ms late (6 %): the lead is 40 us and the margin
        for i in 0..WINDOW {
            let late = if i % 16 == 15 { 1_000_000 } else { 40_000 };
            lead.observe(1_000, 1_000 + late);
        }
        assert_eq!(lead.ns(), 40_000 + MARGIN_NS);
        // 8 of 64 (12 %): the 90th percentile is a late one, and the cap holds it
        for i in 0..WINDOW {
            let late = if i % 8 == 7 { 1_000_000 } else { 40_000 };
            lead.observe(1_000, 1_000 + late);
        }
        assert_eq!(lead.ns(), 300_000);
        // the machine gets quieter: the lead shrinks within one window
        for _ in 0..WINDOW {
            lead.observe(0, 20_000);
        }
        assert_eq!(lead.ns(), 20_000 + MARGIN_NS);
    }

    #[test]
    fn adaptive_never_exceeds_its_cap() {
        let mut lead = Lead::adaptive(50_000);
        for _ in 0..WINDOW {
            lead.observe(0, 2_000_000);
        }
        assert_eq!(lead.ns(), 50_000);
    }
}

/// How much of the relay's time polling may take. A SCHED_FIFO task that runs more than
/// kernel.sched_rt_runtime_us of every sched_rt_period_us (950 ms of every 1 s by
/// default) is stopped for the rest of that period, and a relay whose deadlines come
/// closer together than its lead (a medium with saturated background stations: one
/// every ~150 us) would poll all the time. Measured (2026-11-29, 8 saturated stations
/// beside a 10 Mbit/s flow): stalls of 47-52 ms once a second, none with the limit lifted
/// (sched_rt_runtime_us = -1). Past the budget the relay sleeps to the deadline itself.
pub const SPIN_SHARE: f64 = 0.5;
const SPIN_WINDOW_NS: u64 = 100_000_000;

pub struct SpinBudget {
    window_start: u64,
    spun_ns: u64,
    spinning_since: Option<u64>,
}

impl SpinBudget {
    pub fn new(now: u64) -> SpinBudget {
        SpinBudget { window_start: now, spun_ns: 0, spinning_since: None }
    }

    /// At `now` the relay decides whether to poll (`spinning`) until its next turn; the
    /// time since the last decision to poll counts as polled.
    pub fn note(&mut self, now: u64, spinning: bool) {
        if let Some(since) = self.spinning_since.take() {
            self.spun_ns += now.saturating_sub(since);
        }
        if now.saturating_sub(self.window_start) >= SPIN_WINDOW_NS {
            self.window_start = now;
            self.spun_ns = 0;
        }
        if spinning {
            self.spinning_since = Some(now);
        }
    }

    /// Whether this window has polling left.
    pub fn allows(&self) -> bool {
        (self.spun_ns as f64) < SPIN_SHARE * SPIN_WINDOW_NS as f64
    }
}

#[cfg(test)]
mod spin_tests {
    use super::*;

    #[test]
    fn polling_stops_at_its_share_of_a_window_and_comes_back_with_the_next() {
        let mut b = SpinBudget::new(0);
        let mut t = 0;
        while b.allows() && t < SPIN_WINDOW_NS {
            b.note(t, true);
            t += 1_000_000;
        }
        b.note(t, false);
        assert!(!b.allows());
        assert!((t as f64) >= SPIN_SHARE * SPIN_WINDOW_NS as f64 && t < SPIN_WINDOW_NS);
        b.note(SPIN_WINDOW_NS + 1, false);
        assert!(b.allows());
    }
}
