//! linklab's native Zenoh probe: the probe protocol (src/linklab/probes/__init__.py) on
//! the zenoh 1.10.2 crate. The same command line, records, pacing, warm-up and
//! end-of-stream samples, subscriber end conditions and JSON summary as the Python probe
//! (src/linklab/probes/zenoh_probe.py, which stays as the reference) and the C++ probes
//! (probes/common/); scripts/zenoh-probe-build.sh builds it the first time a cell needs it.

mod cdr;
mod options;
mod publish;
mod session;
mod settings;
mod stream;
mod subscribe;
mod types;

use serde_json::{json, Map, Value};
use zenoh::Wait;

const PROG: &str = "linklab-probe-zenoh";
const ZENOH_VERSION: &str = "1.10.2"; // Cargo.toml pins zenoh = "=1.10.2"

const HELP: &str = "linklab's Zenoh probe (native: the zenoh 1.10.2 crate)

    linklab-probe-zenoh pub|sub --topic T --type TYPE [--size BYTES] --rate HZ ...
        [--qos reliable|best_effort] [--durability volatile] [--system-default]
        --records FILE.bin [--mode peer|client] [--peer ENDPOINT ...] [--listen ENDPOINT ...]

The command line, records and summary of the Python probe (linklab.probes.zenoh_probe)
and the C++ probes (linklab.probes): --mode peer (explicit endpoints, scouting off) or
client (both ends --peer to a router); --peer takes ADDR, ADDR:PORT or a zenoh endpoint
(tcp/ADDR:PORT, tls/ADDR:PORT); --profile a zenoh JSON5 configuration applied before
linklab's settings. Key expression rt/<topic>. --history and --durability
transient_local are refused (zenoh pub/sub keeps no history).";

/// The summary's fields before the run, in the Python probe's order.
fn summary_head(o: &options::Options) -> Map<String, Value> {
    let ty = o.ty.as_ref().expect("parse checks --type");
    let mut summary = Map::new();
    summary.insert("probe".into(), json!("zenoh"));
    summary.insert("role".into(), json!(o.role));
    summary.insert("version".into(), json!(format!("zenoh {ZENOH_VERSION} (Rust probe)")));
    summary.insert("topic".into(), json!(o.key()));
    summary.insert("type".into(), json!(ty.dds_name));
    summary.insert("size".into(), json!(o.size));
    if o.role == "pub" {
        summary.insert("rate_hz".into(), json!(o.rate_hz));
    }
    summary.insert("applied".into(), json!({}));
    summary.insert("samples".into(), json!(0));
    summary
}

/// Opens the session and runs the role; the end reason.
fn run_session(o: &options::Options, summary: &mut Map<String, Value>,
               errors: &mut Vec<String>) -> &'static str {
    let config = match session::build_config(o) {
        Ok(config) => config,
        Err(error) => {
            errors.push(error);
            return "error";
        }
    };
    let readback = session::config_readback(&config);
    let session = match zenoh::open(config).wait() {
        Ok(session) => session,
        Err(error) => {
            errors.push(format!("zenoh.open: {error}"));
            return "error";
        }
    };
    // process start-up and session set-up (the Python probe's interpreter and imports
    // besides): CPU tables subtract it
    summary.insert("startup_cpu_s".into(), json!(stream::process_cpu_s()));
    let mut applied = readback;
    applied.insert("history".into(), json!("n/a (zenoh pub/sub has no history cache)"));
    applied.insert("domain".into(), json!("n/a (zenoh)"));
    applied.insert("probe_runtime".into(), json!(format!("Rust (zenoh {ZENOH_VERSION} crate)")));
    if o.role == "sub" {
        // no reliability setting on a zenoh subscriber
        applied.insert("ros_qos".into(), session::ros_qos("sub", None));
    }
    summary.insert("applied".into(), Value::Object(applied));
    let ran = if o.role == "pub" {
        publish::run_pub(&session, o, summary, errors)
    } else {
        subscribe::run_sub(&session, o, summary, errors)
    };
    let _ = session.close().wait();
    ran.unwrap_or_else(|error| {
        errors.push(error);
        "error"
    })
}

fn run(o: &options::Options) -> (Map<String, Value>, i32) {
    stream::catch_signals();
    let begin = stream::now_ns();
    let mut summary = summary_head(o);
    let mut errors = vec![];
    let reason = run_session(o, &mut summary, &mut errors);
    let failed = !errors.is_empty() && reason != "signal";
    summary.insert("errors".into(), json!(errors));
    summary.insert("end_reason".into(), json!(reason));
    if let Some(number) = stream::received_signal() {
        summary.insert("signal".into(), json!(number));
    }
    summary.insert("records".into(), json!(o.records));
    summary.insert("wall_s".into(), json!((stream::now_ns() - begin) as f64 / 1e9));
    (summary, i32::from(failed))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if matches!(args.first().map(String::as_str), Some("-h" | "--help")) {
        println!("{HELP}");
        return;
    }
    let o = match options::parse(&args) {
        Ok(o) => o,
        Err(error) => {
            eprintln!("{PROG}: error: {error}");
            std::process::exit(2);
        }
    };
    let (summary, status) = run(&o);
    println!("{}", Value::Object(summary));
    std::process::exit(status);
}
