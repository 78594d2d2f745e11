"""The probes' message types and their DDS (ROS 2) names (the table:
linklab.probes.message_types)."""

from __future__ import annotations

from linklab.errors import UsageError
from linklab.probes.message_types import MESSAGE_TYPES
from linklab.probes.ros_types import ENCAPSULATION, OVERHEAD, ROS_TYPES, size_refusal

# performance_test's fixed layouts: payload bytes of the array / point data
FIXED_TYPE_BYTES: dict[str, int] = {t.name: t.payload_bytes for t in MESSAGE_TYPES
                                    if t.payload_bytes}
# any --size: linklab's Bytes and ROS 2's Image, PointCloud2, String, UInt8MultiArray
# (linklab.probes.ros_types: where seq and send time live, which sizes each can carry)
ANY_SIZE_TYPES: tuple[str, ...] = tuple(t.name for t in MESSAGE_TYPES if not t.payload_bytes)
TYPES: tuple[str, ...] = (*ANY_SIZE_TYPES, *FIXED_TYPE_BYTES)

# What one serialized sample adds to its payload (probes/idl/linklab_types.idl, XCDR1):
# the encapsulation header CDR_LE, then each type's fields around the payload. The wire
# carries these bytes with every sample; tests/test_probes_types.py checks every type
# against Fast DDS 2.9's serializer (linklab-check-cdr --size).
BYTES_FIELDS = 20   # Bytes_: seq_ u64, t_send_ns_ i64, data_'s length u32
ARRAY_FIELDS = 16   # Array*_: time_ i64 and id_ u64 after the octet array
# PointCloud*_: header (stamp 8, frame_id "linklab" 4 + 8), height, width, 8 PointFields
# (x, y, z 20 B each, intensity 28, four empty 20 each), is_bigendian + 3 padding,
# point_step, row_step: 208 B before data_; after it is_dense_ + 7 padding, time_, id_
CLOUD_FIELDS = 208 + 8 + 16


def sample_extra_bytes(type_name: str) -> int:
    """Bytes a serialized sample of ``type_name`` carries besides its payload."""
    dds_type_name(type_name)  # an unknown type: a usage error listing the types
    if type_name == "Bytes":
        fields = BYTES_FIELDS
    elif type_name in ROS_TYPES:
        fields = OVERHEAD[type_name]
    elif type_name.startswith("Array"):
        fields = ARRAY_FIELDS
    else:  # PointCloud512k ... PointCloud4m
        fields = CLOUD_FIELDS
    return len(ENCAPSULATION) + fields


def sample_bytes(type_name: str, payload: int) -> int:
    """The serialized sample's bytes for ``payload`` bytes of ``type_name``: what Fast
    DDS and Cyclone DDS put in RTPS DATA, encapsulation included."""
    return payload + sample_extra_bytes(type_name)


def dds_type_name(type_name: str) -> str:
    """ROS 2's DDS name of a probe type, e.g. sensor_msgs::msg::dds_::Image_."""
    if type_name == "Bytes":
        return "linklab_msgs::msg::dds_::Bytes_"
    if type_name in ROS_TYPES:
        return ROS_TYPES[type_name]
    if type_name in FIXED_TYPE_BYTES:
        return f"performance_test_msgs::msg::dds_::{type_name}_"
    raise UsageError(f"unknown type {type_name!r}; expected one of {', '.join(TYPES)}",
                     argument="--type")


def payload_bytes(type_name: str, size: int | None) -> int:
    """The payload a sample of this type carries (checks --size against the type)."""
    if type_name in ANY_SIZE_TYPES:
        if size is None or size < 0:
            raise UsageError(f"{type_name} needs a payload size in bytes", argument="--size")
        why = size_refusal(type_name, size)
        if why:
            raise UsageError(why, argument="--size")
        return size
    fixed = FIXED_TYPE_BYTES.get(type_name)
    if fixed is None:
        dds_type_name(type_name)  # raises with the list
    if size is not None and size != fixed:
        raise UsageError(f"{type_name} carries exactly {fixed} bytes, not {size}; "
                         "use --type Bytes for other sizes", argument="--size")
    return fixed
