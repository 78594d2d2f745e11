//! The `medium` directive: every key read and checked, a refusal naming the key and
//! what it accepts.
//!
//! ```text
//! medium standard=ac band_ghz=5 width_mhz=80 nss=1 mcs=7 gi_ns=800 per=0 per_bytes=0
//!        multicast_per=0 retry_limit=7 cw_min=15 cw_max=1023 aifsn=3 ampdu_frames=64 ampdu_bytes=1048575
//!        ppdu_max_ns=5484000 queue_packets=1000 queue_bytes=0 bg_stations=0 bg_load_bps=0
//!        bg_frame_bytes=1500 log=
//! ```
//! (one line). A key left out takes the value shown (width_mhz: 20 for a and n). The A-MPDU limits are upper
//! bounds: the standard's own maximum applies when it is lower (802.11a: no A-MPDU,
//! one MPDU per PPDU; HT 64 MPDUs / 65 535 B, 9.4.2.56.3 and 10.12.2; VHT 64 MPDUs (the
//! BlockAck window) / 1 048 575 B, 9.4.2.158.2; HE 256 MPDUs / 6 500 631 B, 9.4.2.248;
//! aPPDUMaxTime 5.484 ms for VHT/HE, 10 ms for HT, Tables 19-25, 21-29, 27-54).
//! `per_bytes` 0: every unicast MPDU is lost with `per`, every group-addressed one with
//! `multicast_per`; N > 0: each is the loss of an MPDU of N bytes, and one of M bytes (an IP packet of L bytes: M = L + 38, QoS data
//! header, LLC/SNAP and FCS) is lost with 1 - (1 - per)^(M/N): independent bit errors, a
//! channel's loss from distance (src/linklab/model/wifi_channel.py).

use std::collections::HashMap;

pub use super::airtime::{Band, Standard};
use super::airtime::{n_dbps_exact, FCS, LLC_SNAP};
use super::steps::Step;

/// The most `medium_step` lines one medium takes (steps.rs).
pub const MAX_STEPS: usize = 100_000;

const STEP_KEYS: [&str; 4] = ["at_ns", "mcs", "per", "multicast_per"];

/// A QoS data MPDU's MAC header (9.3.2.1), as airtime.rs counts it for n, ac and ax.
const QOS_DATA_HEADER: u32 = 26;

#[derive(Debug, Clone)]
pub struct MediumSpec {
    pub standard: Standard,
    pub band: Band,
    pub width_mhz: u32,
    pub nss: u32,
    pub mcs: u32,
    pub gi_ns: u32,
    pub per: f64,
    pub per_bytes: u32,
    pub multicast_per: f64,
    pub retry_limit: u32,
    pub cw_min: u32,
    pub cw_max: u32,
    pub aifsn: u32,
    pub ampdu_frames: u32,
    pub ampdu_bytes: u64,
    pub ppdu_max_ns: u64,
    pub queue_packets: u32,
    pub queue_bytes: u64,
    pub bg_stations: u32,
    pub bg_load_bps: f64,
    pub bg_frame_bytes: u32,
    pub log: String,
    /// the robot-AP channel's changes during the run (`medium_step` lines, steps.rs)
    pub steps: Vec<Step>,
}

pub const KEYS: [&str; 22] = [
    "standard", "band_ghz", "width_mhz", "nss", "mcs", "gi_ns", "per", "per_bytes", "multicast_per",
    "retry_limit", "cw_min", "cw_max", "aifsn", "ampdu_frames", "ampdu_bytes", "ppdu_max_ns",
    "queue_packets", "queue_bytes", "bg_stations", "bg_load_bps", "bg_frame_bytes", "log",
];
/// Background stations at most (each keeps a delay histogram of 15 KiB).
pub const MAX_BG_STATIONS: u32 = 256;
/// The largest IP packet a station may send (an MPDU of a jumbo frame).
pub const MAX_FRAME_BYTES: u32 = 9000;

/// A directive's key=value words, with errors of the form
/// `config line N: medium: KEY: what it accepts`.
pub struct Words<'a> {
    pub values: HashMap<&'a str, &'a str>,
    pub line: usize,
    pub what: &'static str,
}

impl<'a> Words<'a> {
    pub fn split(words: &[&'a str], line: usize, what: &'static str, known: &[&str]) -> Result<Words<'a>, String> {
        let mut values = HashMap::new();
        for word in words {
            let Some((key, value)) = word.split_once('=') else {
                return Err(format!("config line {line}: {what}: expected key=value, got {word}"));
            };
            if !known.contains(&key) {
                return Err(format!("config line {line}: {what}: {key}: unknown key (known: {})", known.join(", ")));
            }
            if values.insert(key, value).is_some() {
                return Err(format!("config line {line}: {what}: {key}: given twice"));
            }
        }
        Ok(Words { values, line, what })
    }

    pub fn err(&self, key: &str, accepts: &str) -> String {
        let value = self.values.get(key).copied().unwrap_or("");
        format!("config line {}: {}: {key}={value}: {accepts}", self.line, self.what)
    }

    pub fn get(&self, key: &str, default: &'a str) -> &'a str {
        self.values.get(key).copied().unwrap_or(default)
    }

    pub fn int(&self, key: &str, default: u64, low: u64, high: u64) -> Result<u64, String> {
        let accepts = || self.err(key, &format!("accepts an integer in {low}..{high}"));
        let v = match self.values.get(key) {
            None => default,
            Some(text) => text.parse().map_err(|_| accepts())?,
        };
        if v < low || v > high {
            return Err(accepts());
        }
        Ok(v)
    }

    pub fn prob(&self, key: &str) -> Result<f64, String> {
        let v: f64 = self.get(key, "0").parse().map_err(|_| self.err(key, "accepts a probability in [0, 1]"))?;
        if !(0.0..=1.0).contains(&v) {
            return Err(self.err(key, "accepts a probability in [0, 1]"));
        }
        Ok(v)
    }

    /// A load in bit/s: a number >= 0 or `inf` (saturated).
    pub fn load(&self, key: &str) -> Result<f64, String> {
        let v: f64 = self.get(key, "0").parse().map_err(|_| self.err(key, "accepts bit/s >= 0 or inf (saturated)"))?;
        if v.is_nan() || v < 0.0 {
            return Err(self.err(key, "accepts bit/s >= 0 or inf (saturated)"));
        }
        Ok(v)
    }
}

/// An integer out of `accepted` (the first when the key is left out).
fn one_of(w: &Words, key: &str, accepted: &[u64]) -> Result<u64, String> {
    let value = match w.values.get(key) {
        None => return Ok(accepted[0]),
        Some(text) => text.parse::<u64>().ok(),
    };
    match value {
        Some(v) if accepted.contains(&v) => Ok(v),
        _ => {
            let list: Vec<String> = accepted.iter().map(|v| v.to_string()).collect();
            Err(w.err(key, &format!("accepts {} here", list.join(" | "))))
        }
    }
}

/// Whether CW is 2^k - 1, k 0..15 (ECWmin/ECWmax of the EDCA Parameter Set, 9.4.2.29).
fn is_cw(v: u64) -> bool {
    v < 32768 && (v + 1).is_power_of_two()
}

impl MediumSpec {
    /// The loss of a unicast MPDU carrying `ip_bytes` (module comment: `per_bytes`).
    #[inline]
    pub fn mpdu_per(&self, ip_bytes: u32) -> f64 {
        self.sized(self.per, ip_bytes)
    }

    /// The loss of a group-addressed MPDU carrying `ip_bytes`: `multicast_per`, sized
    /// the same way.
    #[inline]
    pub fn multicast_mpdu_per(&self, ip_bytes: u32) -> f64 {
        self.sized(self.multicast_per, ip_bytes)
    }

    #[inline]
    fn sized(&self, per: f64, ip_bytes: u32) -> f64 {
        if self.per_bytes == 0 || per <= 0.0 || per >= 1.0 {
            return per;
        }
        let mpdu = (ip_bytes + QOS_DATA_HEADER + LLC_SNAP + FCS) as f64;
        1.0 - (1.0 - per).powf(mpdu / self.per_bytes as f64)
    }

    pub fn parse(words: &[&str], line: usize) -> Result<MediumSpec, String> {
        let w = Words::split(words, line, "medium", &KEYS)?;
        let (standard, band, width_mhz, nss, mcs, gi_ns) = parse_phy(&w)?;
        let cw_min = w.int("cw_min", 15, 0, 32767)?;
        let cw_max = w.int("cw_max", 1023, 0, 32767)?;
        if !is_cw(cw_min) {
            return Err(w.err("cw_min", "accepts 2^k - 1, k 0..15 (1, 3, 7, 15, 31, ...)"));
        }
        if !is_cw(cw_max) || cw_max < cw_min {
            return Err(w.err("cw_max", "accepts 2^k - 1, k 0..15, at least cw_min"));
        }
        // standard limits on aggregation (module comment)
        let (frames_cap, bytes_cap, ppdu_cap) = match standard {
            Standard::A => (1, 4095, 5_484_000),
            Standard::N => (64, 65_535, 10_000_000),
            Standard::Ac => (64, 1_048_575, 5_484_000),
            Standard::Ax => (256, 6_500_631, 5_484_000),
        };
        let spec = MediumSpec {
            standard,
            band,
            width_mhz,
            nss,
            mcs,
            gi_ns,
            per: w.prob("per")?,
            per_bytes: w.int("per_bytes", 0, 0, MAX_FRAME_BYTES as u64)? as u32,
            multicast_per: w.prob("multicast_per")?,
            retry_limit: w.int("retry_limit", 7, 0, 1_000_000)? as u32,
            cw_min: cw_min as u32,
            cw_max: cw_max as u32,
            // AIFSN 1..15 (9.4.2.29; 1 only for an AP, 2 = DIFS)
            aifsn: w.int("aifsn", 3, 1, 15)? as u32,
            ampdu_frames: w.int("ampdu_frames", 64, 1, 256)?.min(frames_cap) as u32,
            ampdu_bytes: w.int("ampdu_bytes", 1_048_575, 1, 6_500_631)?.min(bytes_cap),
            ppdu_max_ns: w.int("ppdu_max_ns", 5_484_000, 1, 10_000_000)?.min(ppdu_cap),
            queue_packets: w.int("queue_packets", 1000, 1, 1_000_000)? as u32,
            queue_bytes: w.int("queue_bytes", 0, 0, 1 << 40)?,
            bg_stations: w.int("bg_stations", 0, 0, MAX_BG_STATIONS as u64)? as u32,
            bg_load_bps: w.load("bg_load_bps")?,
            bg_frame_bytes: w.int("bg_frame_bytes", 1500, 1, MAX_FRAME_BYTES as u64)? as u32,
            log: w.get("log", "").to_string(),
            steps: Vec::new(),
        };
        Ok(spec)
    }
}

impl MediumSpec {
    /// A `medium_step` line (the words after `medium_step`, steps.rs): every key required.
    pub fn add_step(&mut self, words: &[&str], line: usize) -> Result<(), String> {
        let w = Words::split(words, line, "medium_step", &STEP_KEYS)?;
        if let Some(key) = STEP_KEYS.iter().find(|k| !w.values.contains_key(*k)) {
            return Err(format!("config line {line}: medium_step: {key}: required (keys: {})", STEP_KEYS.join(", ")));
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
            Standard::A | Standard::N => 7,
            Standard::Ac => 9,
            Standard::Ax => 11,
        };
        let mcs = w.int("mcs", 0, 0, top)? as u32;
        check_mcs(&w, self.standard, self.width_mhz, self.nss, mcs)?;
        let step = Step { at_ns, mcs, per: w.prob("per")?, multicast_per: w.prob("multicast_per")? };
        self.steps.push(step);
        Ok(())
    }
}

/// The PHY keys: standard, band, width, streams, MCS and guard interval, checked together.
fn parse_phy(w: &Words) -> Result<(Standard, Band, u32, u32, u32, u32), String> {
    let standard = match w.get("standard", "ac") {
        "a" => Standard::A,
        "n" => Standard::N,
        "ac" => Standard::Ac,
        "ax" => Standard::Ax,
        _ => return Err(w.err("standard", "accepts a | n | ac | ax")),
    };
    let band = match (w.get("band_ghz", "5"), standard) {
        ("2.4", Standard::N) => Band::TwoFour,
        ("2.4", _) => return Err(w.err("band_ghz", "2.4 GHz takes standard=n only here")),
        ("5", _) => Band::Five,
        ("6", Standard::Ax) => Band::Six,
        ("6", _) => return Err(w.err("band_ghz", "6 GHz takes standard=ax only")),
        _ => return Err(w.err("band_ghz", "accepts 2.4 | 5 | 6")),
    };
    // the first is the default: 20 MHz for a and n, 80 MHz for ac and ax
    let widths: &[u64] = match standard {
        Standard::A => &[20],
        Standard::N => &[20, 40],
        _ => &[80, 20, 40, 160],
    };
    let width_mhz = one_of(w, "width_mhz", widths)?;
    let max_nss = if standard == Standard::A { 1 } else { 4 };
    let nss = w.int("nss", 1, 1, max_nss)?;
    let max_mcs = match standard {
        Standard::A | Standard::N => 7,
        Standard::Ac => 9,
        Standard::Ax => 11,
    };
    let mcs = w.int("mcs", 7, 0, max_mcs)?;
    let gis: &[u64] = match standard {
        Standard::A => &[800],
        Standard::N | Standard::Ac => &[800, 400],
        Standard::Ax => &[800, 1600, 3200],
    };
    let gi_ns = one_of(w, "gi_ns", gis)?;
    let (width_mhz, nss, mcs) = (width_mhz as u32, nss as u32, mcs as u32);
    check_mcs(w, standard, width_mhz, nss, mcs)?;
    Ok((standard, band, width_mhz, nss, mcs, gi_ns as u32))
}

/// The MCS x width x streams combinations the standard defines: integer N_DBPS for
/// a/HT/VHT, and the VHT combinations Tables 21-30..21-61 mark "not valid" (20 MHz MCS 9
/// with 1, 2, 4 streams; 80 MHz MCS 6 with 3; 160 MHz MCS 9 with 3).
fn check_mcs(w: &Words, standard: Standard, width: u32, nss: u32, mcs: u32) -> Result<(), String> {
    let vht_invalid = standard == Standard::Ac
        && matches!((width, nss, mcs), (20, 1 | 2 | 4, 9) | (80, 3, 6) | (160, 3, 9));
    let (num, den) = n_dbps_exact(standard, width, nss, mcs);
    if vht_invalid || (standard != Standard::Ax && num % den != 0) {
        return Err(w.err("mcs", &format!("is not a valid MCS at {width} MHz with nss={nss} (IEEE 802.11 VHT MCS tables)")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<MediumSpec, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        MediumSpec::parse(&words, 3)
    }

    #[test]
    fn the_contract_line_is_read() {
        let s = parse(
            "standard=ac band_ghz=5 width_mhz=80 nss=1 mcs=7 gi_ns=800 per=0 multicast_per=0 retry_limit=7 \
             cw_min=15 cw_max=1023 aifsn=3 ampdu_frames=64 ampdu_bytes=1048575 ppdu_max_ns=5484000 \
             queue_packets=1000 queue_bytes=0 bg_stations=2 bg_load_bps=inf bg_frame_bytes=1500 log=",
        )
        .unwrap();
        assert_eq!((s.standard, s.band, s.width_mhz, s.mcs, s.ampdu_frames), (Standard::Ac, Band::Five, 80, 7, 64));
        assert!(s.bg_load_bps.is_infinite() && s.log.is_empty() && s.bg_stations == 2);
        // 802.11a: no aggregation whatever the limits say
        let a = parse("standard=a width_mhz=20 aifsn=2").unwrap();
        assert_eq!((a.ampdu_frames, a.aifsn), (1, 2));
    }

    #[test]
    fn per_is_for_its_mpdu_size_or_for_every_mpdu() {
        let every = parse("per=0.1").unwrap();
        assert_eq!((every.per_bytes, every.mpdu_per(100), every.mpdu_per(1500)), (0, 0.1, 0.1));
        let sized = parse("per=0.1 per_bytes=1500").unwrap();
        // per is for a 1500-byte MPDU: an IP packet of 1462 B (38 B of MAC around it)
        assert!((sized.mpdu_per(1462) - 0.1).abs() < 1e-12);
        // three 500-byte MPDUs lose as much as one of 1500: 1 - 0.9^(1/3) each
        assert!((sized.mpdu_per(462) - (1.0 - 0.9f64.powf(1.0 / 3.0))).abs() < 1e-12);
        assert!(sized.mpdu_per(3000) > 0.1 && sized.mpdu_per(60) < 0.01);
        assert_eq!(parse("per=1 per_bytes=1500").unwrap().mpdu_per(60), 1.0);
        // group-addressed frames are sized the same way when per_bytes is given
        let multicast = parse("multicast_per=0.2 per_bytes=1500").unwrap();
        assert!((multicast.multicast_mpdu_per(1462) - 0.2).abs() < 1e-12);
        assert!(multicast.multicast_mpdu_per(100) < 0.05);
        assert_eq!(parse("multicast_per=0.2").unwrap().multicast_mpdu_per(100), 0.2);
        assert!(parse("per_bytes=9001").unwrap_err().contains("per_bytes=9001: accepts an integer in 0..9000"));
    }

    #[test]
    fn refusals_name_the_key_and_what_it_accepts() {
        for (text, message) in [
            ("colour=red", "config line 3: medium: colour: unknown key (known: standard, band_ghz,"),
            ("standard=b", "config line 3: medium: standard=b: accepts a | n | ac | ax"),
            ("standard=ac band_ghz=2.4", "band_ghz=2.4: 2.4 GHz takes standard=n only here"),
            ("standard=a band_ghz=2.4", "band_ghz=2.4: 2.4 GHz takes standard=n only here"),
            ("standard=ac band_ghz=6", "band_ghz=6: 6 GHz takes standard=ax only"),
            ("standard=n width_mhz=80", "width_mhz=80: accepts 20 | 40 here"),
            ("standard=ac width_mhz=wide", "width_mhz=wide: accepts 80 | 20 | 40 | 160 here"),
            ("standard=a width_mhz=40", "width_mhz=40: accepts 20 here"),
            ("standard=ac width_mhz=20 mcs=9", "mcs=9: is not a valid MCS at 20 MHz with nss=1"),
            ("standard=ac width_mhz=80 nss=3 mcs=6", "mcs=6: is not a valid MCS at 80 MHz with nss=3"),
            ("standard=ac width_mhz=160 nss=3 mcs=9", "mcs=9: is not a valid MCS at 160 MHz with nss=3"),
            ("standard=ac mcs=10", "mcs=10: accepts an integer in 0..9"),
            ("standard=n mcs=8", "mcs=8: accepts an integer in 0..7"),
            ("standard=a nss=2 width_mhz=20", "nss=2: accepts an integer in 1..1"),
            ("standard=ax gi_ns=400", "gi_ns=400: accepts 800 | 1600 | 3200 here"),
            ("standard=a width_mhz=20 gi_ns=400", "gi_ns=400: accepts 800 here"),
            ("per=1.5", "per=1.5: accepts a probability in [0, 1]"),
            ("cw_min=16", "cw_min=16: accepts 2^k - 1"),
            ("cw_min=31 cw_max=15", "cw_max=15: accepts 2^k - 1, k 0..15, at least cw_min"),
            ("aifsn=0", "aifsn=0: accepts an integer in 1..15"),
            ("bg_load_bps=-1", "bg_load_bps=-1: accepts bit/s >= 0 or inf"),
            ("queue_packets=0", "queue_packets=0: accepts an integer in 1..1000000"),
            ("nss", "config line 3: medium: expected key=value, got nss"),
            ("nss=1 nss=2", "nss: given twice"),
        ] {
            let got = parse(text).unwrap_err();
            assert!(got.contains(message), "{text}: {got}");
        }
        // VHT 20 MHz MCS 9 is valid with 3 streams; HE takes every MCS 0..11
        assert!(parse("standard=ac width_mhz=20 nss=3 mcs=9").is_ok());
        assert!(parse("standard=ax band_ghz=6 width_mhz=160 nss=4 mcs=11 gi_ns=3200").is_ok());
    }

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
        assert_eq!(spec.steps[1], super::Step { at_ns: 200, mcs: 0, per: 1.0, multicast_per: 0.25 });
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

}
