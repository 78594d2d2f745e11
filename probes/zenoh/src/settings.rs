//! linklab's settings of every zenoh session it opens (the probe's, the Python probe's
//! build_config, and the DDS <-> Zenoh bridge's): same keys, same values.

use serde_json::json;
use zenoh::Config;

/// `mode`, the explicit endpoints, and what linklab turns off, into `config`.
pub fn apply(config: &mut Config, mode: &str, connect: &[String], listen: &[String])
             -> Result<(), String> {
    let settings = [
        ("mode", json!(mode)),
        ("connect/endpoints", json!(connect)),
        ("listen/endpoints", json!(listen)),
        // explicit endpoints only: no multicast scouting, no gossip
        ("scouting/multicast/enabled", json!(false)),
        ("scouting/gossip/enabled", json!(false)),
        // zenoh puts payloads >= 3 KiB into shared memory when both ends are on one
        // machine -- as host namespaces are -- and sends only a reference: the samples
        // would never cross the emulated link (this build has no shared memory at all;
        // the key is set as the Python probe sets it, and read back)
        ("transport/shared_memory/enabled", json!(false)),
    ];
    for (key, value) in settings {
        config.insert_json5(key, &value.to_string()).map_err(|e| format!("config {key}: {e}"))?;
    }
    Ok(())
}
