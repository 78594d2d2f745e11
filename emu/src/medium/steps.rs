//! The link's channel changing during a run (issue 43: a robot moving away from its AP,
//! so its rate control steps down and its frames fail more often): `medium_step` lines
//! after the `medium` line, each the MCS and the MPDU error rates of the robot-AP link
//! from `at_ns` after the medium's start on.
//!
//! ```text
//! medium standard=ac mcs=9 per=0.0001 per_bytes=1500 ...
//! medium_step at_ns=500000000 mcs=8 per=0.002 multicast_per=0
//! medium_step at_ns=600000000 mcs=7 per=0.0005 multicast_per=0
//! ```
//! Times strictly increase; each MCS is one the `medium` line's PHY defines. A step applies
//! to stations a and b (the robot and the AP) at the first exchange that starts at or
//! after its time, so one exchange's airtime and outcome come from one step; the
//! background stations keep the `medium` line's channel. linklab writes the steps from the
//! link's `motion` (src/linklab/link/medium.py): the channel at the robot's distance every
//! tenth of a second, where it changes.

use super::spec::{check_mcs, MediumSpec, Words};

/// The most steps one medium takes.
pub const MAX_STEPS: usize = 100_000;

const KEYS: [&str; 4] = ["at_ns", "mcs", "per", "multicast_per"];

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// from this long after the medium's start
    pub at_ns: u64,
    pub mcs: u32,
    pub per: f64,
    pub multicast_per: f64,
}

impl MediumSpec {
    /// A `medium_step` line (the words after `medium_step`): every key required.
    pub fn add_step(&mut self, words: &[&str], line: usize) -> Result<(), String> {
        let w = Words::split(words, line, "medium_step", &KEYS)?;
        if let Some(key) = KEYS.iter().find(|k| !w.values.contains_key(*k)) {
            return Err(format!("config line {line}: medium_step: {key}: required (keys: {})", KEYS.join(", ")));
        }
        if self.steps.len() >= MAX_STEPS {
            return Err(format!("config line {line}: medium_step: at most {MAX_STEPS} steps"));
        }
        let at_ns = w.int("at_ns", 0, 0, u64::MAX)?;
        if let Some(last) = self.steps.last() {
            if at_ns <= last.at_ns {
                return Err(w.err("at_ns", &format!("accepts a time after the previous step's ({} ns)", last.at_ns)));
            }
        }
        let top = match self.standard {
            super::spec::Standard::A | super::spec::Standard::N => 7,
            super::spec::Standard::Ac => 9,
            super::spec::Standard::Ax => 11,
        };
        let mcs = w.int("mcs", 0, 0, top)? as u32;
        check_mcs(&w, self.standard, self.width_mhz, self.nss, mcs)?;
        let step = Step { at_ns, mcs, per: w.prob("per")?, multicast_per: w.prob("multicast_per")? };
        self.steps.push(step);
        Ok(())
    }
}

/// Where a medium is in its steps.
#[derive(Debug, Clone, Default)]
pub struct Steps {
    list: Vec<Step>,
    next: usize,
}

impl Steps {
    pub fn new(list: Vec<Step>) -> Steps {
        Steps { list, next: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// How many have been applied.
    pub fn applied(&self) -> usize {
        self.next
    }

    /// The last step due at `t` (ns since the medium's start) not applied yet, if any;
    /// every step before it is passed over (none was in force during an exchange).
    pub fn due(&mut self, since_start: u64) -> Option<Step> {
        let mut found = None;
        while self.next < self.list.len() && self.list[self.next].at_ns <= since_start {
            found = Some(self.list[self.next]);
            self.next += 1;
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn medium(text: &str) -> MediumSpec {
        let words: Vec<&str> = text.split_whitespace().collect();
        MediumSpec::parse(&words, 1).unwrap()
    }

    fn add(spec: &mut MediumSpec, text: &str) -> Result<(), String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        spec.add_step(&words, 2)
    }

    #[test]
    fn steps_are_read_in_order_and_checked_against_the_phy() {
        let mut spec = medium("standard=ac width_mhz=80 mcs=9");
        add(&mut spec, "at_ns=100 mcs=8 per=0.5 multicast_per=0").unwrap();
        add(&mut spec, "at_ns=200 mcs=0 per=1 multicast_per=0.25").unwrap();
        assert_eq!(spec.steps.len(), 2);
        assert_eq!(spec.steps[1], Step { at_ns: 200, mcs: 0, per: 1.0, multicast_per: 0.25 });
        for (text, error) in [
            ("at_ns=200 mcs=1 per=0 multicast_per=0", "at_ns=200: accepts a time after the previous step's (200 ns)"),
            ("at_ns=300 mcs=10 per=0 multicast_per=0", "mcs=10: accepts an integer in 0..9"),
            ("at_ns=300 mcs=1 per=2 multicast_per=0", "per=2: accepts a probability in [0, 1]"),
            ("at_ns=300 mcs=1 per=0", "multicast_per: required"),
            ("at_ns=300 mcs=1 per=0 multicast_per=0 rssi=3", "rssi: unknown key"),
        ] {
            let got = add(&mut spec, text).unwrap_err();
            assert!(got.contains(error), "{text}: {got}");
            assert!(got.starts_with("config line 2: medium_step: "), "{got}");
        }
        // a combination the PHY does not define (VHT 20 MHz MCS 9, one stream)
        let mut narrow = medium("standard=ac width_mhz=20 mcs=8");
        let got = add(&mut narrow, "at_ns=1 mcs=9 per=0 multicast_per=0").unwrap_err();
        assert!(got.contains("is not a valid MCS at 20 MHz"), "{got}");
    }

    #[test]
    fn a_step_is_due_from_its_time_and_only_the_last_one_due_counts() {
        let list = vec![
            Step { at_ns: 10, mcs: 5, per: 0.1, multicast_per: 0.0 },
            Step { at_ns: 20, mcs: 4, per: 0.2, multicast_per: 0.0 },
            Step { at_ns: 30, mcs: 3, per: 0.3, multicast_per: 0.0 },
        ];
        let mut steps = Steps::new(list);
        assert_eq!(steps.due(9), None);
        assert_eq!(steps.due(10).map(|s| s.mcs), Some(5));
        assert_eq!(steps.due(15), None);
        assert_eq!(steps.due(35).map(|s| s.mcs), Some(3));
        assert_eq!((steps.applied(), steps.len()), (3, 3));
        assert_eq!(steps.due(1000), None);
    }
}
