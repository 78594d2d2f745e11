//! The probe's command line: the Python probe's (src/linklab/probes/zenoh_options.py),
//! flag for flag and message for message: the common probe command line plus --mode and
//! --listen; --history and --durability transient_local are refused (zenoh pub/sub keeps
//! no history), --durability volatile is what it does.

use crate::cdr::size_refusal;
use crate::types::{self, Kind, MessageType};

const DEFAULT_PORT: u16 = 7447;
// linklab.middleware.families ZENOH.refused (the reasons the Python probe gives)
const NO_HISTORY: &str = "zenoh pub/sub has no history cache (a put goes to the subscribers \
                          matched now and is kept nowhere)";
const NO_TRANSIENT_LOCAL: &str = "zenoh pub/sub keeps nothing for late-joining subscribers; \
                                  only volatile is possible";

#[derive(Clone, Debug)]
pub struct Options {
    pub role: String,
    pub topic: String,
    pub ty: Option<MessageType>,
    pub size: u32,
    pub rate_hz: f64,
    pub count: u64,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub reliable: Option<bool>, // None: ROS 2's reliable, or zenoh's own with system_default
    pub system_default: bool,
    pub profile: Option<String>,
    pub peers: Vec<String>,
    pub listen: Vec<String>,
    pub mode: String,
    pub records: String,
    pub match_timeout_s: f64,
    pub idle_timeout_s: f64,
    pub linger_s: f64,
    pub subscribers: u64,
}

impl Options {
    fn new(role: &str) -> Options {
        Options {
            role: role.to_string(), topic: String::new(), ty: None, size: 0, rate_hz: 0.0,
            count: 0, duration_s: 0.0, warmup_s: 0.0, reliable: None, system_default: false,
            profile: None, peers: vec![], listen: vec![], mode: "peer".into(),
            records: String::new(), match_timeout_s: 30.0, idle_timeout_s: 30.0,
            linger_s: 5.0, subscribers: 1,
        }
    }

    pub fn key(&self) -> String {
        format!("rt/{}", self.topic)
    }

    pub fn kind(&self) -> Kind {
        self.ty.as_ref().map_or(Kind::Bytes, |t| t.kind)
    }
}

type Usage = Result<(), String>;

/// "20", "20s", "500ms", "1min", "1e-3" -> seconds.
fn seconds(flag: &str, text: &str) -> Result<f64, String> {
    let bad = || format!("{flag}: expected a non-negative duration in seconds (e.g. 20, 20s, \
                          500ms), got '{text}'");
    let (number, factor) = split_unit(text, &[("ms", 1e-3), ("min", 60.0), ("s", 1.0)]);
    plain_number(number, true).map(|v| v * factor).ok_or_else(bad)
}

/// The number and the factor of its unit (the first unit it ends with; 1 without one).
fn split_unit<'a>(text: &'a str, units: &[(&str, f64)]) -> (&'a str, f64) {
    for (unit, factor) in units {
        if let Some(number) = text.strip_suffix(unit) {
            return (number, *factor);
        }
    }
    (text, 1.0)
}

/// Digits and dots, with an exponent when `exponent` (Python's float() of what the
/// Python probe's pattern accepts).
fn plain_number(text: &str, exponent: bool) -> Option<f64> {
    let (mantissa, exp) = match text.find(['e', 'E']) {
        Some(i) if exponent => (&text[..i], Some(&text[i + 1..])),
        _ => (text, None),
    };
    if mantissa.is_empty() || !mantissa.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    if let Some(e) = exp {
        let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
        if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
    }
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

fn size(text: &str) -> Result<u32, String> {
    let units = [("KiB", 1024.0), ("MiB", 1048576.0), ("KB", 1e3), ("MB", 1e6), ("B", 1.0)];
    let (number, factor) = split_unit(text, &units);
    let value = plain_number(number, false).map(|v| v * factor).ok_or_else(|| {
        format!("--size: expected a payload size in bytes (e.g. 262144 or 256KiB), got '{text}'")
    })?;
    if value.fract() != 0.0 || value > u32::MAX as f64 {
        return Err(format!("--size: expected a whole number of bytes, got '{text}'"));
    }
    Ok(value as u32)
}

fn count(flag: &str, text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(v) if !text.is_empty() && text.chars().all(|c| c.is_ascii_digit()) => Ok(v),
        _ => Err(format!("{flag}: expected a non-negative integer, got '{text}'")),
    }
}

/// '10.0.0.2' / '10.0.0.2:7447' / 'tcp/10.0.0.2:7447' -> a zenoh endpoint.
fn endpoint(text: &str) -> String {
    if text.contains('/') {
        text.to_string()
    } else if text.contains(':') {
        format!("tcp/{text}")
    } else {
        format!("tcp/{text}:{DEFAULT_PORT}")
    }
}

fn rate(text: &str) -> Result<f64, String> {
    let number = text.strip_suffix("Hz").unwrap_or(text);
    match plain_number(number, false) {
        Some(v) if v > 0.0 => Ok(v),
        _ => Err(format!("--rate: expected a publish rate in Hz above 0 (e.g. 30 or 30Hz), got \
                          '{text}'")),
    }
}

fn history(text: &str) -> Usage {
    let depth_ok = text.strip_prefix("keep_last:").is_some_and(|d| {
        !d.is_empty() && !d.starts_with('0') && d.chars().all(|c| c.is_ascii_digit())
    });
    if text != "keep_all" && !depth_ok {
        return Err(format!("--history: expected keep_all or keep_last:N (e.g. keep_last:10), \
                            got '{text}'"));
    }
    Err(format!("--history: {NO_HISTORY}; omit --history"))
}

fn durability(text: &str) -> Usage {
    match text {
        "volatile" => Ok(()),
        "transient_local" => Err(format!("--durability {text}: {NO_TRANSIENT_LOCAL}")),
        _ => Err(format!("--durability: expected 'volatile' or 'transient_local', got '{text}'")),
    }
}

fn topic(text: &str) -> Result<String, String> {
    if text.is_empty() || text.contains([' ', '/', '\t']) {
        return Err(format!("--topic: expected a ROS 2 topic name without slashes (e.g. \
                            chatter), got '{text}'"));
    }
    Ok(text.to_string())
}

fn message_type(text: &str) -> Result<MessageType, String> {
    types::lookup(text).ok_or_else(|| {
        let names: Vec<String> = types::all().into_iter().map(|t| t.name).collect();
        format!("--type: unknown type '{text}'; expected one of {}", names.join(", "))
    })
}

/// Sets what one flag says on o (--size is the caller's: it depends on the type).
fn take(o: &mut Options, flag: &str, v: &str) -> Usage {
    match flag {
        "--topic" => o.topic = topic(v)?,
        "--type" => o.ty = Some(message_type(v)?),
        "--rate" => o.rate_hz = rate(v)?,
        "--count" => o.count = count(flag, v)?,
        "--duration" => o.duration_s = seconds(flag, v)?,
        "--warmup" => o.warmup_s = seconds(flag, v)?,
        "--qos" => o.reliable = Some(match v {
            "reliable" => true,
            "best_effort" => false,
            _ => return Err(format!("--qos: expected 'reliable' or 'best_effort', got '{v}'")),
        }),
        "--durability" => durability(v)?,
        "--profile" if std::path::Path::new(v).is_file() => o.profile = Some(v.to_string()),
        "--profile" => return Err(format!("--profile: cannot read '{v}'")),
        "--mode" if v == "peer" || v == "client" => o.mode = v.to_string(),
        "--mode" => return Err(format!("--mode: expected 'peer' or 'client', got '{v}'")),
        "--domain" => drop(count(flag, v)?), // zenoh has no domain (applied says so)
        "--records" => o.records = v.to_string(),
        "--match-timeout" => o.match_timeout_s = seconds(flag, v)?,
        "--idle-timeout" => o.idle_timeout_s = seconds(flag, v)?,
        "--linger" => o.linger_s = seconds(flag, v)?,
        "--subscribers" => o.subscribers = count(flag, v)?,
        "--peer" => o.peers.extend(v.split(',').filter(|p| !p.is_empty()).map(endpoint)),
        "--listen" => o.listen.extend(v.split(',').filter(|p| !p.is_empty()).map(endpoint)),
        "--history" => history(v)?,
        _ => {} // --interface, --profile-name: taken, no meaning for zenoh (as in Python)
    }
    Ok(())
}

const VALUE_FLAGS: [&str; 21] = [
    "--topic", "--type", "--rate", "--count", "--duration", "--warmup", "--qos",
    "--durability", "--profile", "--mode", "--domain", "--interface", "--records",
    "--match-timeout", "--idle-timeout", "--linger", "--subscribers", "--peer", "--listen",
    "--size", "--history",
];

/// (flag, value) of each option after the role; --verbose is skipped and
/// --system-default set on o (they take no value).
fn flag_values(argv: &[String], o: &mut Options) -> Result<Vec<(String, String)>, String> {
    let mut out = vec![];
    let mut i = 1;
    while i < argv.len() {
        let mut arg = argv[i].as_str();
        i += 1;
        if arg == "-v" || arg == "--verbose" {
            continue;
        }
        if arg == "--system-default" {
            o.system_default = true;
            continue;
        }
        if arg.starts_with("--system-default=") {
            return Err("--system-default takes no value".into());
        }
        let mut value = None;
        if let (true, Some((flag, v))) = (arg.starts_with("--"), arg.split_once('=')) {
            (arg, value) = (flag, Some(v.to_string()));
        }
        if !VALUE_FLAGS.contains(&arg) && arg != "--profile-name" {
            return Err(format!("unknown argument '{arg}' (see --help)"));
        }
        let value = match value {
            Some(v) => v,
            None if i < argv.len() => { i += 1; argv[i - 1].clone() }
            None => return Err(format!("{arg}: missing value")),
        };
        out.push((arg.to_string(), value));
    }
    Ok(out)
}

/// The payload size: --size for a type of any size (required to publish), the type's
/// own for a fixed one (--size may only repeat it).
fn set_size(o: &mut Options, given: Option<u32>) -> Usage {
    let ty = o.ty.clone().expect("the type is checked first");
    if ty.fixed == 0 {
        if o.role == "pub" && given.is_none() {
            return Err(format!("--size is required with --type {} (e.g. --size 262144)",
                               ty.name));
        }
        o.size = given.unwrap_or(0);
        let why = if given.is_some() { size_refusal(ty.kind, o.size) } else { String::new() };
        if !why.is_empty() {
            return Err(format!("--size: {why}"));
        }
    } else {
        if given.is_some_and(|s| s != ty.fixed) {
            return Err(format!("--size: {} carries exactly {} bytes; omit --size or use --type \
                                Bytes", ty.name, ty.fixed));
        }
        o.size = ty.fixed;
    }
    Ok(())
}

pub fn parse(argv: &[String]) -> Result<Options, String> {
    let role = argv.first().ok_or("missing role: expected 'pub' or 'sub' (see --help)")?;
    if role != "pub" && role != "sub" {
        return Err(format!("role: expected 'pub' or 'sub', got '{role}'"));
    }
    let mut o = Options::new(role);
    let mut given = None;
    let mut rate_given = false;
    for (flag, value) in flag_values(argv, &mut o)? {
        if flag == "--size" {
            given = Some(size(&value)?);
        } else {
            take(&mut o, &flag, &value)?;
            rate_given |= flag == "--rate";
        }
    }
    check(&mut o, given, rate_given)?;
    Ok(o)
}

fn check(o: &mut Options, given: Option<u32>, rate_given: bool) -> Usage {
    if o.topic.is_empty() {
        return Err("--topic is required (e.g. --topic chatter)".into());
    }
    if o.ty.is_none() {
        return Err("--type is required (e.g. --type Bytes or --type Array64k)".into());
    }
    set_size(o, given)?;
    if o.role == "pub" && !rate_given {
        return Err("--rate is required for pub (e.g. --rate 30)".into());
    }
    if o.role == "pub" && o.count == 0 && o.duration_s == 0.0 {
        return Err("pub needs --count N or --duration S".into());
    }
    if o.records.is_empty() {
        return Err("--records FILE.bin is required".into());
    }
    if o.mode == "client" && o.peers.is_empty() {
        return Err("--peer: client mode needs the router's endpoint".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_publisher_command_line() {
        let o = parse(&args("pub --topic t --type Bytes --size 64KiB --rate 10Hz --count 20 \
                             --records r.bin --peer 10.0.0.2 --peer=tcp/1.2.3.4:9 \
                             --warmup 500ms --qos best_effort --system-default")).unwrap();
        assert_eq!((o.size, o.rate_hz, o.count, o.warmup_s), (65536, 10.0, 20, 0.5));
        assert_eq!(o.peers, ["tcp/10.0.0.2:7447", "tcp/1.2.3.4:9"]);
        assert_eq!((o.reliable, o.system_default, o.key()), (Some(false), true, "rt/t".into()));
    }

    #[test]
    fn what_the_python_probe_refuses_is_refused() {
        for (line, message) in [
            ("pub --topic t --type Bytes --rate 1 --count 1 --records r", "--size is required"),
            ("sub --topic t --type Array1k --size 5 --records r", "--size: Array1k carries"),
            ("sub --topic t --type Bytes --records r --history keep_all", "--history: zenoh"),
            ("sub --topic t --type Bytes --records r --durability transient_local",
             "--durability transient_local: zenoh"),
            ("sub --topic t --type Bytes --records r --bogus 1", "unknown argument '--bogus'"),
            ("sub --topic t --type Bytes --records r --mode client", "--peer: client mode"),
            ("sub --topic t --type Bytes --records r --duration 5x", "--duration: expected"),
            ("pub --topic t --type Bytes --size 1 --rate 0 --count 1 --records r", "--rate:"),
        ] {
            let error = parse(&args(line)).unwrap_err();
            assert!(error.starts_with(message), "{line}: {error}");
        }
    }
}
