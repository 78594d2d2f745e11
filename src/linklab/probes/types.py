"""The probes' message types and their DDS (ROS 2) names."""

from __future__ import annotations

from linklab.errors import UsageError
from linklab.probes.ros_types import ROS_TYPES, size_refusal

# performance_test's fixed layouts: payload bytes of the array / point data
FIXED_TYPE_BYTES: dict[str, int] = {
    "Array1k": 1024, "Array4k": 4096, "Array16k": 16384, "Array32k": 32768,
    "Array60k": 61440, "Array64k": 65536, "Array256k": 262144, "Array1m": 1048576,
    "Array2m": 2097152, "Array4m": 4194304,
    "PointCloud512k": 524288, "PointCloud1m": 1048576, "PointCloud2m": 2097152,
    "PointCloud4m": 4194304,
}
# any --size: linklab's Bytes and ROS 2's Image, PointCloud2, String, UInt8MultiArray
# (linklab.probes.ros_types: where seq and send time live, which sizes each can carry)
ANY_SIZE_TYPES: tuple[str, ...] = ("Bytes", *ROS_TYPES)
TYPES: tuple[str, ...] = (*ANY_SIZE_TYPES, *FIXED_TYPE_BYTES)


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
