//! The bridge's command line: one line naming the option on a bad one (exit 2).

pub struct BridgeOptions {
    pub to_zenoh: bool,
    pub topic: String,
    pub type_name: String,
    pub reliable: bool,
    pub depth: i32, // 0: keep all
    pub domain: i32,
    pub interface: String,
    pub peer: String,
    pub mode: String,
    pub connect: Vec<String>,
    pub listen: Vec<String>,
    pub ready_file: Option<String>,
}

impl BridgeOptions {
    /// The zenoh key expression: the DDS topic's name, as zenoh-plugin-dds maps it.
    pub fn key(&self) -> String {
        format!("rt/{}", self.topic)
    }
}

fn set(o: &mut BridgeOptions, flag: &str, value: &str) -> Result<(), String> {
    match flag {
        "--direction" => {
            o.to_zenoh = match value {
                "dds-to-zenoh" => true,
                "zenoh-to-dds" => false,
                _ => return Err(format!("--direction: {value} is not one of dds-to-zenoh, zenoh-to-dds")),
            }
        }
        "--topic" => o.topic = value.into(),
        "--type" => o.type_name = value.into(),
        "--qos" => {
            o.reliable = match value {
                "reliable" => true,
                "best_effort" => false,
                _ => return Err(format!("--qos: {value} is not one of reliable, best_effort")),
            }
        }
        "--depth" => {
            o.depth = value.parse().ok().filter(|d| (0..=100_000).contains(d))
                .ok_or_else(|| format!("--depth: {value} is not 0-100000 (0: keep all)"))?
        }
        "--domain" => {
            o.domain = value.parse().ok().filter(|d| (0..=232).contains(d))
                .ok_or_else(|| format!("--domain: {value} is not 0-232"))?
        }
        "--interface" => o.interface = value.into(),
        "--peer" => o.peer = value.into(),
        "--mode" => {
            if value != "peer" && value != "client" {
                return Err(format!("--mode: {value} is not one of peer, client"));
            }
            o.mode = value.into();
        }
        "--connect" => o.connect.push(value.into()),
        "--listen" => o.listen.push(value.into()),
        "--ready-file" => o.ready_file = Some(value.into()),
        _ => return Err(format!("unknown option {flag} (--direction --topic --type --qos --depth \
                                 --domain --interface --peer --mode --connect --listen --ready-file)")),
    }
    Ok(())
}

pub fn parse(args: &[String]) -> Result<BridgeOptions, String> {
    let mut o = BridgeOptions {
        to_zenoh: true, topic: String::new(), type_name: String::new(), reliable: true, depth: 0,
        domain: 0, interface: "127.0.0.1".into(), peer: "127.0.0.1".into(), mode: "peer".into(),
        connect: vec![], listen: vec![], ready_file: None,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        set(&mut o, flag, value)?;
    }
    if o.topic.is_empty() || o.type_name.is_empty() {
        return Err("--topic and --type are required".into());
    }
    Ok(o)
}
