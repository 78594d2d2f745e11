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
//! tenth of a second, where it changes. The lines are read by spec.rs (`add_step`).

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// from this long after the medium's start
    pub at_ns: u64,
    pub mcs: u32,
    pub per: f64,
    pub multicast_per: f64,
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
