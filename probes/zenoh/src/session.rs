//! The zenoh configuration (the Python probe's build_config: same keys, same values) and
//! what the session reports back into the summary's `applied`.

use serde_json::{json, Map, Value};
use zenoh::{Config, Session, Wait};

use crate::options::Options;
use crate::settings;

pub fn build_config(o: &Options) -> Result<Config, String> {
    let mut config = match &o.profile {
        Some(path) => Config::from_file(path).map_err(|e| format!("--profile {path}: {e}"))?,
        None => Config::default(),
    };
    settings::apply(&mut config, &o.mode, &o.peers, &o.listen)?;
    Ok(config)
}

/// Mode, scouting and endpoints as the zenoh Config holds them.
pub fn config_readback(config: &Config) -> Map<String, Value> {
    let get = |key: &str| -> Value {
        config.get_json(key).ok().and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or(Value::Null)
    };
    let mut out = Map::new();
    for (name, key) in [("mode", "mode"), ("scouting_multicast", "scouting/multicast/enabled"),
                        ("connect", "connect/endpoints"), ("listen", "listen/endpoints"),
                        ("shared_memory", "transport/shared_memory/enabled")] {
        out.insert(name.into(), get(key));
    }
    out
}

/// Links, transports, peers and routers of the session as zenoh reports them now; true
/// when there is a link.
pub fn read_session(session: &Session, applied: &mut Map<String, Value>) -> bool {
    let links: Vec<Value> = session.info().links().wait().map(|link| json!({
        "src": link.src().to_string(), "dst": link.dst().to_string(), "mtu": link.mtu(),
        "streamed": link.is_streamed(),
    })).collect();
    let mut transport: Vec<String> = links.iter()
        .filter_map(|l| l["dst"].as_str()?.split('/').next().map(String::from)).collect();
    transport.sort();
    transport.dedup();
    let any = !links.is_empty();
    applied.insert("links".into(), Value::Array(links));
    applied.insert("transport".into(), json!(transport));
    applied.insert("peers".into(), json!(session.info().peers_zid().wait().count()));
    applied.insert("routers".into(), json!(session.info().routers_zid().wait().count()));
    any
}

// linklab.middleware.families ZENOH: the policies zenoh pub/sub has no such thing as
// (tests/test_zenoh_native_probe.py compares them with the Python table)
const NO_HISTORY: &str = "Zenoh pub/sub has no history cache: a put goes to the subscribers \
                          matched now and is kept nowhere.";
const NO_DEPTH: &str = "Zenoh pub/sub has no history cache whose depth could be set.";
const NO_SUB_RELIABILITY: &str = "A zenoh 1.x subscriber has no reliability setting: each \
                                  sample travels with its publisher's reliability (the \
                                  publisher's summary has it).";

/// applied.ros_qos: zenoh pub/sub has no history; what it does is volatile.
pub fn ros_qos(role: &str, reliability: Option<&str>) -> Value {
    let mut unsupported = Map::new();
    if role != "pub" {
        unsupported.insert("reliability".into(), json!(NO_SUB_RELIABILITY));
    }
    unsupported.insert("history".into(), json!(NO_HISTORY));
    unsupported.insert("depth".into(), json!(NO_DEPTH));
    json!({"reliability": reliability, "history": null, "depth": null,
           "durability": "volatile", "unsupported": unsupported})
}

/// The summary's applied map (the summary has one from the start).
pub fn applied(summary: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let entry = summary.entry("applied").or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut().expect("an object")
}
