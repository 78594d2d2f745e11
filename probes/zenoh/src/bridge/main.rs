//! linklab-bridge-zenoh: seed 004's bridged architecture (§3.1: "the communication within
//! one host used DDS, and communication between two hosts used Zenoh") between a Cyclone
//! DDS domain restricted to this host and a zenoh session, as zenoh-plugin-dds forwards it.
//!
//!   --direction dds-to-zenoh   a DDS reader on rt/TOPIC (probes/cyclonedds/bridge_dds.c,
//!                              the MQTT bridge's DDS side); each sample's serialized CDR
//!                              is put on key rt/TOPIC
//!   --direction zenoh-to-dds   a zenoh subscriber on rt/TOPIC; each sample's bytes are
//!                              written as a serialized DDS sample
//!
//! Nothing is decoded on the way. Reliable topics put with zenoh's Reliable reliability
//! and Block congestion control (the native probe's), best effort with BestEffort/Drop.
//! --mode client with --connect the router, or peer with --listen (the receiving side)
//! and --connect (the sending side); scouting off. --ready-file is created when the DDS
//! endpoint exists and (sending side) a zenoh subscriber matches. On SIGINT/SIGTERM it
//! prints one JSON line: what it forwarded and dropped.

#[allow(dead_code)]
#[path = "../cdr.rs"]
mod cdr;
#[allow(dead_code)]
#[path = "../stream.rs"]
mod stream;
#[allow(dead_code)]
#[path = "../types.rs"]
mod types;
#[path = "../settings.rs"]
mod settings;

mod dds;
mod options;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::json;
use zenoh::qos::{CongestionControl, Reliability};
use zenoh::{Config, Session, Wait};

use options::BridgeOptions;

const PROG: &str = "linklab-bridge-zenoh";
const MATCH_TIMEOUT_S: f64 = 15.0;

#[derive(Default)]
struct Counts {
    forwarded: AtomicU64,
    bytes: AtomicU64,
    dropped: AtomicU64,
}

impl Counts {
    fn count(&self, ok: bool, bytes: usize) {
        if ok {
            self.forwarded.fetch_add(1, Ordering::Relaxed);
            self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        } else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn config(o: &BridgeOptions) -> Result<Config, String> {
    let mut config = Config::default();
    settings::apply(&mut config, &o.mode, &o.connect, &o.listen)?;
    Ok(config)
}

/// DDS -> zenoh: the reader's samples put as they are taken; runs until a signal.
fn dds_to_zenoh(session: &Session, o: &BridgeOptions, counts: &Arc<Counts>)
                -> Result<dds::Endpoint, String> {
    let publisher = session.declare_publisher(o.key())
        .congestion_control(if o.reliable { CongestionControl::Block } else { CongestionControl::Drop })
        .reliability(if o.reliable { Reliability::Reliable } else { Reliability::BestEffort })
        .wait().map_err(|e| format!("declare_publisher: {e}"))?;
    let start = stream::now_ns();
    while !publisher.matching_status().wait().is_ok_and(|s| s.matching()) {
        if stream::stop_wait(0.01) || stream::now_ns() - start > (MATCH_TIMEOUT_S * 1e9) as i64 {
            return Err(format!("no zenoh subscriber of {} matched within {MATCH_TIMEOUT_S} s", o.key()));
        }
    }
    let counts = Arc::clone(counts);
    dds::Endpoint::reader(o, Box::new(move |cdr: &[u8]| {
        counts.count(publisher.put(cdr.to_vec()).wait().is_ok(), cdr.len());
    }))
}

/// What runs until a signal, closed DDS side first: no sample is handed to a closed end.
enum Running {
    Out(dds::Endpoint),
    In(zenoh::pubsub::Subscriber<()>, Arc<dds::Endpoint>),
}

/// zenoh -> DDS: each sample written as it arrives.
fn zenoh_to_dds(session: &Session, o: &BridgeOptions, counts: &Arc<Counts>)
                -> Result<Running, String> {
    let writer = Arc::new(dds::Endpoint::writer(o)?);
    let (counts, into) = (Arc::clone(counts), Arc::clone(&writer));
    let subscriber = session.declare_subscriber(o.key())
        .callback(move |sample| {
            let bytes = sample.payload().to_bytes();
            counts.count(into.write(&bytes), bytes.len());
        })
        .wait().map_err(|e| format!("declare_subscriber: {e}"))?;
    Ok(Running::In(subscriber, writer))
}

fn run(o: &BridgeOptions, counts: &Arc<Counts>) -> Result<(), String> {
    let session = zenoh::open(config(o)?).wait().map_err(|e| format!("zenoh.open: {e}"))?;
    let running = if o.to_zenoh {
        Running::Out(dds_to_zenoh(&session, o, counts)?)
    } else {
        zenoh_to_dds(&session, o, counts)?
    };
    if let Some(path) = &o.ready_file {
        std::fs::write(path, b"").map_err(|e| format!("--ready-file {path}: {e}"))?;
    }
    while !stream::stop_wait(0.1) {}
    match running {
        Running::Out(reader) => drop(reader),
        Running::In(subscriber, writer) => {
            let _ = subscriber.undeclare().wait();
            drop(writer);
        }
    }
    let _ = session.close().wait();
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match options::parse(&args) {
        Ok(o) => o,
        Err(error) => {
            eprintln!("{PROG}: error: {error}");
            std::process::exit(2);
        }
    };
    stream::catch_signals();
    let counts = Arc::new(Counts::default());
    if let Err(error) = run(&o, &counts) {
        eprintln!("{PROG}: error: {error}");
        std::process::exit(1);
    }
    println!("{}", json!({
        "bridge": "zenoh",
        "direction": if o.to_zenoh { "dds-to-zenoh" } else { "zenoh-to-dds" },
        "topic": o.topic,
        "forwarded": counts.forwarded.load(Ordering::Relaxed),
        "forwarded_bytes": counts.bytes.load(Ordering::Relaxed),
        "dropped": counts.dropped.load(Ordering::Relaxed),
    }));
}
