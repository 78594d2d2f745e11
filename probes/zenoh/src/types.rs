//! The probes' message types, read from the one table the C++ probes read
//! (probes/common/message_types.inc, written from src/linklab/probes/message_types.py).

/// How a type is filled and stamped (the C++ `TypeKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Bytes,
    Array,
    PointCloud,
    Image,
    PointCloud2,
    String,
    UInt8MultiArray,
}

impl Kind {
    fn parse(text: &str) -> Option<Kind> {
        Some(match text {
            "Bytes" => Kind::Bytes,
            "Array" => Kind::Array,
            "PointCloud" => Kind::PointCloud,
            "Image" => Kind::Image,
            "PointCloud2" => Kind::PointCloud2,
            "String" => Kind::String,
            "UInt8MultiArray" => Kind::UInt8MultiArray,
            _ => return None,
        })
    }

    /// ROS 2's standard types: carried as their CDR-serialized sample.
    pub fn is_ros(self) -> bool {
        matches!(self, Kind::Image | Kind::PointCloud2 | Kind::String | Kind::UInt8MultiArray)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageType {
    pub name: String,     // --type, e.g. "Array64k"
    pub dds_name: String, // e.g. "performance_test_msgs::msg::dds_::Array64k_"
    pub kind: Kind,
    pub fixed: u32, // fixed payload bytes; 0: any --size
}

const TABLE: &str = include_str!("../../common/message_types.inc");

/// One `X(name, "dds_name", Kind, bytes)` row of LINKLAB_MESSAGE_TYPES.
fn row(line: &str) -> Option<MessageType> {
    let inner = line.trim().strip_prefix("X(")?.trim_end_matches('\\').trim();
    let inner = inner.strip_suffix(')')?;
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    if parts.len() != 4 {
        return None;
    }
    Some(MessageType {
        name: parts[0].to_string(),
        dds_name: parts[1].trim_matches('"').to_string(),
        kind: Kind::parse(parts[2])?,
        fixed: parts[3].parse().ok()?,
    })
}

/// Every type, in the table's order.
pub fn all() -> Vec<MessageType> {
    TABLE.lines().filter_map(row).collect()
}

pub fn lookup(name: &str) -> Option<MessageType> {
    all().into_iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_every_kind() {
        let types = all();
        assert_eq!(types[0].name, "Bytes");
        assert_eq!(lookup("Array64k").unwrap().fixed, 65536);
        assert_eq!(lookup("Image").unwrap().dds_name, "sensor_msgs::msg::dds_::Image_");
        assert_eq!(lookup("PointCloud4m").unwrap().kind, Kind::PointCloud);
        assert!(types.len() >= 19);
    }
}
