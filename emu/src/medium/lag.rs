//! How late the relay handled the medium's events against their times: every event's
//! lag in a histogram, and the relay turns in which an event was more than `LATE_NS`
//! late -- when (CLOCK_MONOTONIC ns, the clock the relay and `time.monotonic_ns()` read),
//! by how much, and where the relay's time went just before: asleep in epoll_wait (a
//! wake-up late), reading its devices, or in its previous turn's work -- so a stall can
//! be told apart and placed against what else happened on the machine then
//! (scripts/medium_realtime.py). No allocation after construction.

use std::fmt::Write as _;

use super::counters::Histogram;

/// The real-time target's bound (issue 43: no scheduling lag above 1 ms).
pub const LATE_NS: u64 = 1_000_000;
/// Late turns kept with their time; later ones are counted only.
const TURNS_KEPT: usize = 32;

pub struct Lag {
    pub hist: Histogram,
    /// events handled more than LATE_NS after their time
    pub late_events: u64,
    /// relay turns holding such an event
    pub late_turns: u64,
    /// the first TURNS_KEPT late turns
    turns: Vec<LateTurn>,
    last_turn: u64,
    /// where the relay's time went before the current turn (`Lag::turn`)
    before: Before,
}

/// Where the relay's time went before a turn (ns): asleep in epoll_wait, reading its
/// devices after it woke, and the previous turn's work (from its wake-up to its sleep).
/// An event still pending after the previous turn is due after that turn began, so a
/// late turn's lag is at most their sum (tests/test_medium_link.py checks it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Before {
    pub slept: u64,
    pub read: u64,
    pub previous_turn: u64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct LateTurn {
    at: u64,
    lag: u64,
    before: Before,
}

impl Lag {
    pub fn new() -> Lag {
        Lag {
            hist: Histogram::new(),
            late_events: 0,
            late_turns: 0,
            turns: Vec::with_capacity(TURNS_KEPT),
            last_turn: u64::MAX,
            before: Before::default(),
        }
    }

    /// A new relay turn begins: where its time went before it.
    #[inline]
    pub fn turn(&mut self, before: Before) {
        self.before = before;
    }

    /// An event due at `due` handled in the relay's turn at `now` (>= due).
    #[inline]
    pub fn record(&mut self, now: u64, due: u64) {
        let lag = now - due;
        self.hist.record(lag);
        if lag <= LATE_NS {
            return;
        }
        self.late_events += 1;
        if now != self.last_turn {
            self.last_turn = now;
            self.late_turns += 1;
            if self.turns.len() < TURNS_KEPT {
                self.turns.push(LateTurn { at: now, lag, before: self.before });
            }
        } else if self.late_turns as usize <= TURNS_KEPT {
            let last = self.turns.last_mut().expect("a kept turn");
            last.lag = last.lag.max(lag);
        }
    }

    /// The JSON fields (after a comma) of the medium's stats object; each late turn as
    /// [clock, lag, slept, read, previous turn] in ns.
    pub fn json_fields(&self, s: &mut String) {
        let h = &self.hist;
        let _ = write!(
            s,
            ",\"lag_max_ns\":{},\"lag_p90_ns\":{},\"lag_p99_ns\":{},\"lag_mean_ns\":{:.0},\
             \"lag_late_ns\":{},\"lag_late_events\":{},\"lag_late_turns\":{},\"lag_late_at\":[",
            h.max,
            h.quantile(0.90),
            h.quantile(0.99),
            h.mean(),
            LATE_NS,
            self.late_events,
            self.late_turns,
        );
        for (i, t) in self.turns.iter().enumerate() {
            let b = t.before;
            let _ = write!(s, "{}[{},{},{},{},{}]", if i > 0 { "," } else { "" }, t.at, t.lag, b.slept, b.read, b.previous_turn);
        }
        s.push(']');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn late_turns_are_kept_with_their_largest_lag() {
        let mut lag = Lag::new();
        lag.record(10_000, 9_000); // on time
        let asleep = Before { slept: 4_100_000, read: 20_000, previous_turn: 50_000 };
        lag.turn(asleep);
        lag.record(5_000_000, 1_000_000); // a turn 4 ms late ...
        lag.record(5_000_000, 3_500_000); // ... and a later event of it, 1.5 ms
        lag.record(5_000_000, 4_500_000); // 0.5 ms: not late
        let working = Before { slept: 0, read: 10_000, previous_turn: 2_100_000 };
        lag.turn(working);
        lag.record(9_000_000, 7_000_000); // the next late turn, 2 ms
        assert_eq!((lag.late_events, lag.late_turns), (3, 2));
        let kept: Vec<(u64, u64, Before)> = lag.turns.iter().map(|t| (t.at, t.lag, t.before)).collect();
        assert_eq!(kept, vec![(5_000_000, 4_000_000, asleep), (9_000_000, 2_000_000, working)]);
        assert_eq!(lag.hist.max, 4_000_000);
        let mut s = String::new();
        lag.json_fields(&mut s);
        assert!(s.ends_with("\"lag_late_events\":3,\"lag_late_turns\":2,\"lag_late_at\":[[5000000,4000000,4100000,20000,50000],[9000000,2000000,0,10000,2100000]]"), "{s}");
    }

    #[test]
    fn turns_past_the_kept_ones_are_counted_only() {
        let mut lag = Lag::new();
        for k in 0..(TURNS_KEPT as u64 + 5) {
            let now = 10_000_000 * (k + 1);
            lag.record(now, now - 2_000_000);
            lag.record(now, now - 1_500_000);
        }
        assert_eq!(lag.late_turns, TURNS_KEPT as u64 + 5);
        assert_eq!(lag.late_events, 2 * (TURNS_KEPT as u64 + 5));
        assert_eq!(lag.turns.len(), TURNS_KEPT);
        assert!(lag.turns.iter().all(|t| t.lag == 2_000_000));
    }
}
