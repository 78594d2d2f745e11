//! The relay's configuration file: one directive per line, `#` starts a comment.
//!
//! ```text
//! seed 42
//! mtu 1500
//! stats /run/linklab/x/emu-stats.json 100000000      # path, interval in ns
//! epoch 123456789             # the time-based stages' zero (traces, outages, on/off),
//!                              # CLOCK_MONOTONIC ns; default: the relay's start;
//!                              # `epoch first-packet`: when the first frame arrives
//! spin auto 300000             # poll before a deadline instead of sleeping: as long as the
//!                              # timer has recently been late (p90), at most 300 us (lead.rs);
//!                              # `spin NS` polls a fixed NS (0: sleep to the deadline)
//! priority 10                  # SCHED_FIFO priority (0: normal scheduling)
//! tap a linklab-x-ea netns linklab-x-robot
//! tap b linklab-x-eb netns linklab-x-server
//! tap a2 linklab-x-ea2 netns linklab-x-robot2   # link 2.. of a star on one medium
//! tap b2 linklab-x-eb2                          # (stage ab2 ..., stage ba2 ...)
//! stage ab delay delay_ns=20000000 jitter_ns=5000000 dist=normal reorder=0
//! stage ab loss model=gemodel p=0.01 r=0.3 1-h=1 1-k=0
//! stage ba rate rate_bps=10000000 limit_packets=100 overhead=0
//! medium standard=ac band_ghz=5 width_mhz=80 nss=1 mcs=7 ...   # at most one: both
//!                              # directions share one 802.11 channel after their stages
//!                              # (medium/spec.rs lists the keys)
//! medium_step at_ns=500000000 mcs=6 per=0.01 multicast_per=0   # after the medium line:
//!                              # the robot-AP channel from then on (medium/steps.rs)
//! ```
//! A relay carries one link (`tap a`, `tap b`, stages `ab` and `ba`) or, with a medium,
//! a star's links 1..N on that one channel: link K's lines say `aK`, `bK`, `abK`, `baK`
//! (link 1 is `a`, `b`, `ab`, `ba`); each link's robot is a station of the medium and
//! every `bK` side is the one AP's (medium/mod.rs).
//! `--simulate-medium` reads a file of `seed`, `medium`, `medium_step` and `sim a|b
//! load_bps=X frame_bytes=Y` lines only (parse_offline; medium/simulate.rs).
//! The Python side (linklab.emu) writes this file with every quantity already in
//! base units (ns, bit/s, bytes, probabilities), so the relay parses no units.

use std::collections::HashMap;

use crate::medium::{simulate, Load, MediumSpec};

#[derive(Debug, Clone)]
pub struct TapSpec {
    pub name: String,
    pub netns: Option<String>,
}

/// The most links one relay carries (a star's robots: linklab.link.topology MAX_STAR_HOSTS).
pub const MAX_LINKS: usize = 32;

/// One link: its two TAP devices and the stages of each direction.
#[derive(Debug, Clone, Default)]
pub struct LinkConfig {
    pub tap_a: Option<TapSpec>,
    pub tap_b: Option<TapSpec>,
    pub ab: Vec<StageSpec>,
    pub ba: Vec<StageSpec>,
}

#[derive(Debug, Clone)]
pub struct StageSpec {
    pub kind: String,
    pub params: HashMap<String, String>,
    pub line: usize,
}

/// How the relay waits for a deadline (lead.rs).
#[derive(Debug, Clone, PartialEq)]
pub enum Spin {
    Fixed(u64),
    Auto(u64),
}

#[derive(Debug, Clone)]
pub struct Config {
    pub seed: u64,
    pub mtu: usize,
    pub stats_path: Option<String>,
    pub stats_interval_ns: u64,
    pub epoch_ns: Option<u64>,
    pub epoch_first_packet: bool,
    pub spin: Spin,
    pub priority: i32,
    /// link 1, then a star's links 2..N (those only with a medium)
    pub links: Vec<LinkConfig>,
    /// the shared radio medium after both pipelines (none: the relay as before)
    pub medium: Option<MediumSpec>,
    /// `sim a|b` lines (offline only): the real stations' offered load, and the line
    pub sim: [Load; 2],
    pub sim_line: Option<usize>,
}

/// The relay's configuration: both taps of every link required, no `sim` lines.
pub fn parse(text: &str) -> Result<Config, String> {
    let cfg = parse_lines(text, |_, _| Ok(()))?;
    for (k, link) in cfg.links.iter().enumerate() {
        if link.tap_a.is_none() || link.tap_b.is_none() {
            let n = suffix(k);
            return Err(format!("config: both `tap a{n}` and `tap b{n}` are required"));
        }
    }
    if cfg.links.len() > 1 && cfg.medium.is_none() {
        return Err("config: links 2.. (tap a2 ...) need a `medium` line: one relay carries several links only as a star on one 802.11 medium".to_string());
    }
    if let Some(line) = cfg.sim_line {
        return Err(format!("config line {line}: sim lines are read by --simulate-medium only"));
    }
    Ok(cfg)
}

/// `--simulate-medium`'s file: `seed`, one `medium` (required) and `sim` lines only.
pub fn parse_offline(text: &str) -> Result<Config, String> {
    let cfg = parse_lines(text, |line, line_no| match line.split_whitespace().next() {
        Some("seed" | "medium" | "medium_step" | "sim") => Ok(()),
        _ => Err(format!("config line {line_no}: --simulate-medium reads seed, medium, medium_step and sim lines only: {line}")),
    })?;
    if cfg.medium.is_none() {
        return Err("config: --simulate-medium needs a `medium` line".to_string());
    }
    if cfg.links.len() > 1 {
        return Err("config: --simulate-medium has one link (no tap or stage lines)".to_string());
    }
    Ok(cfg)
}

fn parse_lines(text: &str, allowed: impl Fn(&str, usize) -> Result<(), String>) -> Result<Config, String> {
    let mut cfg = Config::defaults();
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        allowed(line, line_no)?;
        apply_directive(&mut cfg, line, line_no)?;
    }
    Ok(cfg)
}

impl Config {
    /// What a file that sets nothing but its taps gets.
    fn defaults() -> Config {
        Config {
            seed: 1,
            mtu: 1500,
            stats_path: None,
            stats_interval_ns: 100_000_000,
            epoch_ns: None,
            epoch_first_packet: false,
            spin: Spin::Fixed(0),
            priority: 0,
            links: vec![LinkConfig::default()],
            medium: None,
            sim: [Load::NONE; 2],
            sim_line: None,
        }
    }
}

/// One directive (a line without its comment, not empty) into the configuration.
fn apply_directive(cfg: &mut Config, line: &str, line_no: usize) -> Result<(), String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let bad = |what: &str| format!("config line {line_no}: {what}: {line}");
    match words[0] {
        "seed" if words.len() == 2 => {
            cfg.seed = words[1].parse().map_err(|_| bad("seed must be an integer"))?
        }
        "mtu" if words.len() == 2 => {
            cfg.mtu = words[1].parse().map_err(|_| bad("mtu must be an integer"))?
        }
        "spin" if words.len() == 2 => {
            cfg.spin = Spin::Fixed(
                words[1].parse().map_err(|_| bad("spin must be integer ns or `auto CAP_NS`"))?,
            )
        }
        "spin" if words.len() == 3 && words[1] == "auto" => {
            cfg.spin = Spin::Auto(
                words[2].parse().map_err(|_| bad("spin auto's cap must be integer ns"))?,
            )
        }
        "priority" if words.len() == 2 => {
            cfg.priority = words[1].parse().map_err(|_| bad("priority must be 0..99"))?
        }
        "epoch" if words.len() == 2 && words[1] == "first-packet" => {
            cfg.epoch_first_packet = true;
        }
        "epoch" if words.len() == 2 => {
            cfg.epoch_ns = Some(
                words[1].parse().map_err(|_| bad("epoch must be integer ns or first-packet"))?,
            )
        }
        "stats" if words.len() == 2 || words.len() == 3 => {
            cfg.stats_path = Some(words[1].to_string());
            if words.len() == 3 {
                cfg.stats_interval_ns =
                    words[2].parse().map_err(|_| bad("stats interval must be ns"))?;
            }
        }
        "tap" if words.len() == 3 || words.len() == 5 => apply_tap(cfg, &words, &bad)?,
        "stage" if words.len() >= 3 => apply_stage(cfg, &words, line_no, &bad)?,
        "medium" => {
            if cfg.medium.is_some() {
                return Err(bad("one `medium` line at most"));
            }
            cfg.medium = Some(MediumSpec::parse(&words[1..], line_no)?);
        }
        "medium_step" => match cfg.medium.as_mut() {
            Some(medium) => medium.add_step(&words[1..], line_no)?,
            None => return Err(bad("a medium_step line follows the medium line")),
        },
        "sim" => {
            let (side, load) = simulate::parse_sim(&words[1..], line_no)?;
            cfg.sim[side] = load;
            cfg.sim_line = Some(line_no);
        }
        _ => return Err(bad("unknown or malformed directive")),
    }
    Ok(())
}

/// What a link's number is written as after `a`, `b`, `ab`, `ba`: nothing for link 1
/// (index 0), K for link K.
pub fn suffix(index: usize) -> String {
    if index == 0 { String::new() } else { (index + 1).to_string() }
}

/// `word` as `prefix` + a link's suffix: the link's index (0 for link 1), or None when it
/// is not that form.
fn link_of(word: &str, prefix: &str) -> Option<usize> {
    let rest = word.strip_prefix(prefix)?;
    if rest.is_empty() {
        return Some(0);
    }
    match rest.parse::<usize>() {
        Ok(k) if (2..=MAX_LINKS).contains(&k) && !rest.starts_with('0') => Some(k - 1),
        _ => None,
    }
}

/// Link `index` of the configuration, made (empty) with those before it.
fn link_mut(cfg: &mut Config, index: usize) -> &mut LinkConfig {
    while cfg.links.len() <= index {
        cfg.links.push(LinkConfig::default());
    }
    &mut cfg.links[index]
}

/// `tap a|b NAME [netns NS]` (`aK`/`bK` for link K): one side's TAP device and the
/// namespace it moves to.
fn apply_tap(cfg: &mut Config, words: &[&str], bad: &impl Fn(&str) -> String) -> Result<(), String> {
    let netns = if words.len() == 5 {
        if words[3] != "netns" {
            return Err(bad("expected `tap a|b NAME [netns NS]`"));
        }
        Some(words[4].to_string())
    } else {
        None
    };
    if words[2].len() > 15 {
        return Err(bad("interface names have at most 15 characters"));
    }
    let spec = TapSpec { name: words[2].to_string(), netns };
    if let Some(k) = link_of(words[1], "a") {
        link_mut(cfg, k).tap_a = Some(spec);
    } else if let Some(k) = link_of(words[1], "b") {
        link_mut(cfg, k).tap_b = Some(spec);
    } else {
        return Err(bad(&format!("tap side must be a or b (aK, bK: link K of 2..{MAX_LINKS})")));
    }
    Ok(())
}

/// `stage ab|ba KIND key=value...` (`abK`/`baK` for link K): a stage appended to one
/// direction's pipeline.
fn apply_stage(
    cfg: &mut Config,
    words: &[&str],
    line_no: usize,
    bad: &impl Fn(&str) -> String,
) -> Result<(), String> {
    let mut params = HashMap::new();
    for word in &words[3..] {
        let (key, value) = word.split_once('=').ok_or_else(|| bad("expected key=value"))?;
        params.insert(key.to_string(), value.to_string());
    }
    let spec = StageSpec { kind: words[2].to_string(), params, line: line_no };
    if let Some(k) = link_of(words[1], "ab") {
        link_mut(cfg, k).ab.push(spec);
    } else if let Some(k) = link_of(words[1], "ba") {
        link_mut(cfg, k).ba.push(spec);
    } else {
        return Err(bad(&format!("stage direction must be ab or ba (abK, baK: link K of 2..{MAX_LINKS})")));
    }
    Ok(())
}

/// Typed access to a stage's key=value parameters, with errors naming the line.
pub struct Params<'a> {
    spec: &'a StageSpec,
}

impl<'a> Params<'a> {
    pub fn new(spec: &'a StageSpec) -> Params<'a> {
        Params { spec }
    }

    fn err(&self, key: &str, what: &str) -> String {
        format!("config line {}: stage {}: {key}: {what}", self.spec.line, self.spec.kind)
    }

    pub fn str_or(&self, key: &str, default: &'a str) -> &'a str {
        self.spec.params.get(key).map(|s| s.as_str()).unwrap_or(default)
    }

    pub fn has(&self, key: &str) -> bool {
        self.spec.params.contains_key(key)
    }

    pub fn f64_or(&self, key: &str, default: f64) -> Result<f64, String> {
        match self.spec.params.get(key) {
            None => Ok(default),
            Some(v) => v.parse::<f64>().map_err(|_| self.err(key, "must be a number")),
        }
    }

    pub fn u64_or(&self, key: &str, default: u64) -> Result<u64, String> {
        match self.spec.params.get(key) {
            None => Ok(default),
            Some(v) => v.parse::<u64>().map_err(|_| self.err(key, "must be an integer")),
        }
    }

    pub fn prob(&self, key: &str, default: f64) -> Result<f64, String> {
        let v = self.f64_or(key, default)?;
        if !(0.0..=1.0).contains(&v) {
            return Err(self.err(key, "must be a probability in [0, 1]"));
        }
        Ok(v)
    }

    pub fn positive(&self, key: &str) -> Result<f64, String> {
        let v = self.f64_or(key, f64::NAN)?;
        if v.is_nan() {
            return Err(self.err(key, "is required"));
        }
        if v <= 0.0 {
            return Err(self.err(key, "must be > 0"));
        }
        Ok(v)
    }

    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, String> {
        match self.spec.params.get(key).map(|s| s.as_str()) {
            None => Ok(default),
            Some("1") | Some("true") => Ok(true),
            Some("0") | Some("false") => Ok(false),
            Some(_) => Err(self.err(key, "must be 0 or 1")),
        }
    }

    /// `a:b,c:d` -> [(a, b), (c, d)] as u64 pairs.
    pub fn pairs(&self, key: &str) -> Result<Vec<(u64, u64)>, String> {
        let mut out = Vec::new();
        let text = self.str_or(key, "");
        for item in text.split(',').filter(|s| !s.is_empty()) {
            let (a, b) = item.split_once(':').ok_or_else(|| self.err(key, "expected start:length,..."))?;
            let a = a.parse().map_err(|_| self.err(key, "start must be integer ns"))?;
            let b = b.parse().map_err(|_| self.err(key, "length must be integer ns"))?;
            out.push((a, b));
        }
        Ok(out)
    }

    pub fn unknown_keys(&self, known: &[&str]) -> Result<(), String> {
        for key in self.spec.params.keys() {
            if key != "name" && !known.contains(&key.as_str()) {
                return Err(self.err(key, &format!("unknown parameter (known: {})", known.join(", "))));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_directive_is_read() {
        let cfg = parse(
            "seed 7\nmtu 9000\nstats /s.json 5\nepoch first-packet\nspin auto 300\npriority 10\n\
             tap a ea netns ns1   # comment\ntap b eb\nstage ab delay delay_ns=1 name=d\nstage ba loss p=0\n",
        )
        .unwrap();
        assert_eq!((cfg.seed, cfg.mtu, cfg.priority), (7, 9000, 10));
        assert_eq!((cfg.stats_path.as_deref(), cfg.stats_interval_ns), (Some("/s.json"), 5));
        assert!(cfg.epoch_first_packet && cfg.epoch_ns.is_none());
        assert_eq!(cfg.spin, Spin::Auto(300));
        let link = &cfg.links[0];
        assert_eq!(link.tap_a.as_ref().unwrap().netns.as_deref(), Some("ns1"));
        assert_eq!(link.tap_b.as_ref().unwrap().netns, None);
        assert_eq!((cfg.links.len(), link.ab.len(), link.ba.len(), link.ab[0].line), (1, 1, 1, 9));
        assert_eq!(link.ab[0].params.get("name").map(|s| s.as_str()), Some("d"));
    }

    #[test]
    fn a_bad_line_is_named_with_its_number_and_text() {
        let taps = "tap a ea\ntap b eb\n";
        for (line, message) in [
            ("seed x", "config line 3: seed must be an integer: seed x"),
            ("spin auto x", "config line 3: spin auto's cap must be integer ns: spin auto x"),
            ("tap a x netz y", "config line 3: expected `tap a|b NAME [netns NS]`: tap a x netz y"),
            ("tap c x", "config line 3: tap side must be a or b (aK, bK: link K of 2..32): tap c x"),
            ("tap a1 x", "config line 3: tap side must be a or b (aK, bK: link K of 2..32): tap a1 x"),
            ("tap b33 x", "config line 3: tap side must be a or b (aK, bK: link K of 2..32): tap b33 x"),
            ("tap a abcdefghijklmnop", "config line 3: interface names have at most 15 characters: tap a abcdefghijklmnop"),
            ("stage ab delay d", "config line 3: expected key=value: stage ab delay d"),
            ("stage xx delay d=1", "config line 3: stage direction must be ab or ba (abK, baK: link K of 2..32): stage xx delay d=1"),
            ("stage ab02 delay d=1", "config line 3: stage direction must be ab or ba (abK, baK: link K of 2..32): stage ab02 delay d=1"),
            ("mtu 1 2", "config line 3: unknown or malformed directive: mtu 1 2"),
        ] {
            assert_eq!(parse(&format!("{taps}{line}\n")).unwrap_err(), message);
        }
        assert_eq!(parse("tap a ea\n").unwrap_err(), "config: both `tap a` and `tap b` are required");
    }

    #[test]
    fn a_star_of_links_on_one_medium() {
        let taps = "tap a ea\ntap b eb\ntap a2 ea2 netns r2\ntap b2 eb2\ntap a3 ea3\ntap b3 eb3\n";
        let cfg = parse(&format!("{taps}stage ab2 delay delay_ns=1\nstage ba3 loss p=0\nmedium standard=ac\n")).unwrap();
        assert_eq!(cfg.links.len(), 3);
        assert_eq!(cfg.links[1].tap_a.as_ref().unwrap().netns.as_deref(), Some("r2"));
        assert_eq!((cfg.links[1].ab.len(), cfg.links[2].ba.len(), cfg.links[0].ab.len()), (1, 1, 0));
        assert_eq!(parse(taps).unwrap_err(), "config: links 2.. (tap a2 ...) need a `medium` line: one relay carries several links only as a star on one 802.11 medium");
        assert_eq!(parse("tap a ea\ntap b eb\ntap a3 x\nmedium standard=ac\n").unwrap_err(), "config: both `tap a2` and `tap b2` are required");
        assert_eq!(parse_offline("medium standard=ac\nstage ab2 loss p=0\n").unwrap_err(), "config line 2: --simulate-medium reads seed, medium, medium_step and sim lines only: stage ab2 loss p=0");
    }

    #[test]
    fn the_medium_and_sim_lines() {
        let taps = "tap a ea\ntap b eb\n";
        let cfg = parse(&format!("{taps}medium standard=n band_ghz=2.4 mcs=3 bg_stations=2\n")).unwrap();
        assert_eq!(cfg.medium.unwrap().bg_stations, 2);
        assert!(parse(taps).unwrap().medium.is_none());
        for (text, message) in [
            ("medium standard=a\nmedium standard=a", "config line 4: one `medium` line at most: medium standard=a"),
            ("medium mcs=x", "config line 3: medium: mcs=x: accepts an integer in 0..9"),
            ("medium standard=ac\nsim a load_bps=1", "config line 4: sim lines are read by --simulate-medium only"),
            ("medium_step at_ns=1 mcs=1 per=0 multicast_per=0", "config line 3: a medium_step line follows the medium line: medium_step at_ns=1 mcs=1 per=0 multicast_per=0"),
        ] {
            assert_eq!(parse(&format!("{taps}{text}\n")).unwrap_err(), message);
        }
        let stepped = parse(&format!("{taps}medium standard=ac mcs=9\nmedium_step at_ns=5 mcs=2 per=0.5 multicast_per=0\n")).unwrap();
        assert_eq!(stepped.medium.unwrap().steps.len(), 1);
        let offline = parse_offline("seed 9\nmedium standard=a width_mhz=20\nsim a load_bps=inf frame_bytes=200\n").unwrap();
        assert!(offline.sim[0].bps.is_infinite() && offline.sim[0].frame_bytes == 200 && offline.sim[1].bps == 0.0);
        for (text, message) in [
            ("sim a load_bps=1", "config: --simulate-medium needs a `medium` line"),
            ("medium standard=a\nstage ab loss p=0", "config line 2: --simulate-medium reads seed, medium, medium_step and sim lines only: stage ab loss p=0"),
            ("medium standard=a\nsim c load_bps=1", "config line 2: sim: expected `sim a|b load_bps=X frame_bytes=Y`"),
            ("medium standard=a\nsim a load_bps=fast", "config line 2: sim: load_bps=fast: accepts bit/s >= 0 or inf (saturated)"),
            ("medium standard=a\nsim a rate=1", "config line 2: sim: rate: unknown key (known: load_bps, frame_bytes)"),
        ] {
            assert_eq!(parse_offline(text).unwrap_err(), message);
        }
    }
}
