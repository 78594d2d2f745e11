//! `linklab-emu --simulate-medium FILE --seconds S`: the medium alone, in virtual time
//! (no TAP devices, no root). FILE holds a `medium` line, optionally `seed N` and the
//! two real stations' offered load (default none):
//!
//! ```text
//! seed 7
//! medium standard=a band_ghz=5 width_mhz=20 mcs=7 aifsn=2 bg_stations=4 bg_load_bps=inf
//! sim a load_bps=inf frame_bytes=1500
//! sim b load_bps=0 frame_bytes=1500
//! ```
//! It runs S seconds from 0 and prints one JSON object: `seconds`, `seed`, and the
//! medium's counters (mod.rs `json`): per station offered/delivered frames and bit/s,
//! drops (retry, queue), collisions, MAC delay mean/p95; totals throughput_bps,
//! collision_probability, mean_ampdu_frames, busy_fraction. Same file, same JSON.

use super::{Load, Medium, MediumSpec};
use crate::packet::Pool;

/// The medium of `spec` run for `seconds` of virtual time: its JSON.
pub fn run(spec: MediumSpec, seed: u64, loads: [Load; 2], seconds: f64) -> Result<String, String> {
    let mut medium = Medium::build(spec, seed, 0, loads)?;
    let until = (seconds * 1e9) as u64;
    let (mut pool, mut to_b, mut to_a) = (Pool::new(64), Vec::new(), Vec::new());
    medium.advance(until, &mut pool, &mut to_b, &mut to_a);
    medium.flush_log();
    let body = medium.json(until);
    Ok(format!("{{\"seconds\":{seconds},\"seed\":{seed},{}", &body[1..]))
}

/// `sim a|b load_bps=X frame_bytes=Y` (the words after `sim`).
pub fn parse_sim(words: &[&str], line: usize) -> Result<(usize, Load), String> {
    let side = match words.first() {
        Some(&"a") => 0,
        Some(&"b") => 1,
        _ => return Err(format!("config line {line}: sim: expected `sim a|b load_bps=X frame_bytes=Y`")),
    };
    let w = super::spec::Words::split(&words[1..], line, "sim", &["load_bps", "frame_bytes"])?;
    let frame_bytes = w.int("frame_bytes", 1500, 1, super::spec::MAX_FRAME_BYTES as u64)? as u32;
    Ok((side, Load { bps: w.load("load_bps")?, frame_bytes }))
}

/// The command line's `--seconds` value.
pub fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s > 0.0 && s <= 1e6 => Ok(s),
        _ => Err(format!("--seconds {text}: accepts a number of seconds > 0 (up to 1e6)")),
    }
}
