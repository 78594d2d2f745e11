//! The relay's two devices, side a and side b, whichever kind the config asks for
//! (`io veth|tap`): veth pairs read and written through AF_PACKET rings (vethpair.rs,
//! packetio.rs), or TAP devices (tap.rs, tapio.rs). The loop sees only this.

use std::os::fd::RawFd;

use crate::config::{Config, Io};
use crate::packet::{Packet, Pool};
use crate::packetio::PacketPort;
use crate::pipeline::Pipeline;
use crate::tap::Tap;
use crate::tapio::TapIo;
use crate::vethpair::{self, VethSide};

pub enum Devices {
    Veth { sides: [VethSide; 2], ports: [PacketPort; 2] },
    Tap { taps: [Tap; 2], io: TapIo },
}

impl Devices {
    /// Both devices made, each side's moved into its namespace; `max_frame`: the
    /// largest frame a read may return.
    pub fn open(cfg: &Config, max_frame: usize) -> Result<Devices, String> {
        let specs = [cfg.tap_a.as_ref().unwrap(), cfg.tap_b.as_ref().unwrap()];
        match cfg.io {
            Io::Veth => {
                let sides = vethpair::open(specs, max_frame)?;
                let port = |s: &VethSide| PacketPort::open(s.ifindex, max_frame).map_err(|e| format!("{}: {e}", s.inner));
                let ports = [port(&sides[0])?, port(&sides[1])?];
                Ok(Devices::Veth { sides, ports })
            }
            Io::Tap => {
                let taps = [Tap::create(&specs[0].name)?, Tap::create(&specs[1].name)?];
                for (tap, spec) in taps.iter().zip(specs) {
                    if let Some(ns) = &spec.netns {
                        tap.move_to(ns)?;
                    }
                }
                let io = TapIo::new(&[&taps[0], &taps[1]], max_frame);
                Ok(Devices::Tap { taps, io })
            }
        }
    }

    /// What epoll watches for each side's frames.
    pub fn fds(&self) -> [RawFd; 2] {
        match self {
            Devices::Veth { ports, .. } => [ports[0].fd(), ports[1].fd()],
            Devices::Tap { taps, .. } => [taps[0].fd, taps[1].fd],
        }
    }

    /// The devices' names in their namespaces (a, b).
    pub fn names(&self) -> (&str, &str) {
        match self {
            Devices::Veth { sides, .. } => (&sides[0].name, &sides[1].name),
            Devices::Tap { taps, .. } => (&taps[0].name, &taps[1].name),
        }
    }

    /// Up to a batch of frames from side `side` (0: a, 1: b) into `into`. Err when the
    /// device is gone: the relay then stops, and with it the link.
    pub fn read_batch(&mut self, side: usize, pool: &mut Pool, into: &mut Vec<Packet>) -> Result<(), String> {
        match self {
            Devices::Veth { sides, ports } => {
                ports[side].read_batch(pool, into).map_err(|e| format!("read {}: {e}", sides[side].name))
            }
            Devices::Tap { taps, io } => io.read_batch(&taps[side], side as u32, pool, into),
        }
    }

    /// `out` (in order) to side `side`, counted in `pipe`; the buffers back to `pool`.
    pub fn write_out(&mut self, side: usize, pipe: &mut Pipeline, out: &mut Vec<Packet>, pool: &mut Pool) {
        match self {
            Devices::Veth { ports, .. } => ports[side].write_out(pipe, out, pool),
            Devices::Tap { taps, io } => io.write_out(&taps[side], side as u32, pipe, out, pool),
        }
    }

    /// Frames side `side`'s device dropped, unread, since the last call.
    pub fn rx_dropped(&self, side: usize) -> u64 {
        match self {
            Devices::Veth { ports, .. } => ports[side].dropped(),
            Devices::Tap { .. } => 0,
        }
    }

    /// The devices go, and with them the link.
    pub fn close(self) {
        match self {
            Devices::Veth { sides, ports } => {
                drop(ports);
                vethpair::delete_pairs(&sides);
            }
            Devices::Tap { taps, io } => {
                drop(io); // its ring holds the devices' files too
                drop(taps);
            }
        }
    }
}
