//! One direction of a link: frames read from one TAP pass the stages in order and
//! are written to the other TAP.

use crate::packet::{Packet, Pool};
use crate::stages::Stage;

pub struct Pipeline {
    pub stages: Vec<Stage>,
    pub rx_frames: u64,
    pub rx_bytes: u64,
    pub tx_frames: u64,
    pub tx_bytes: u64,
    pub tx_errors: u64,
    a: Vec<Packet>,
    b: Vec<Packet>,
}

impl Pipeline {
    pub fn new(stages: Vec<Stage>) -> Pipeline {
        Pipeline {
            stages,
            rx_frames: 0,
            rx_bytes: 0,
            tx_frames: 0,
            tx_bytes: 0,
            tx_errors: 0,
            a: Vec::with_capacity(512),
            b: Vec::with_capacity(512),
        }
    }

    /// Run the stages at `now` with `input` (new frames, oldest first); what
    /// leaves the last stage is appended to `output`. Each stage first releases
    /// what is due, then takes the new frames, so order is kept.
    pub fn run(&mut self, now: u64, input: &mut Vec<Packet>, pool: &mut Pool, output: &mut Vec<Packet>) {
        for p in input.iter() {
            self.rx_frames += 1;
            self.rx_bytes += p.len as u64;
        }
        let mut current = std::mem::take(&mut self.a);
        let mut next = std::mem::take(&mut self.b);
        current.clear();
        current.append(input);
        for stage in self.stages.iter_mut() {
            next.clear();
            stage.release(now, &mut next, pool);
            for p in current.drain(..) {
                stage.push(p, now, pool, &mut next);
            }
            std::mem::swap(&mut current, &mut next);
        }
        output.append(&mut current);
        self.a = current;
        self.b = next;
    }

    pub fn next_due(&self) -> Option<u64> {
        self.stages.iter().filter_map(|s| s.next_due()).min()
    }
}
