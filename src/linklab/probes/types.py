"""The probes' message types and their DDS (ROS 2) names."""

from __future__ import annotations

from linklab.errors import UsageError

# performance_test's fixed layouts: payload bytes of the array / point data
FIXED_TYPE_BYTES: dict[str, int] = {
    "Array1k": 1024, "Array4k": 4096, "Array16k": 16384, "Array32k": 32768,
    "Array60k": 61440, "Array64k": 65536, "Array256k": 262144, "Array1m": 1048576,
    "Array2m": 2097152, "Array4m": 4194304,
    "PointCloud512k": 524288, "PointCloud1m": 1048576, "PointCloud2m": 2097152,
    "PointCloud4m": 4194304,
}
TYPES: tuple[str, ...] = ("Bytes", *FIXED_TYPE_BYTES)


def dds_type_name(type_name: str) -> str:
    """ROS 2's DDS name of a probe type, e.g. performance_test_msgs::msg::dds_::Array64k_."""
    if type_name == "Bytes":
        return "linklab_msgs::msg::dds_::Bytes_"
    if type_name in FIXED_TYPE_BYTES:
        return f"performance_test_msgs::msg::dds_::{type_name}_"
    raise UsageError(f"unknown type {type_name!r}; expected one of {', '.join(TYPES)}",
                     argument="--type")


def payload_bytes(type_name: str, size: int | None) -> int:
    """The payload a sample of this type carries (checks --size against fixed types)."""
    if type_name == "Bytes":
        if size is None or size < 0:
            raise UsageError("Bytes needs a payload size in bytes", argument="--size")
        return size
    fixed = FIXED_TYPE_BYTES.get(type_name)
    if fixed is None:
        dds_type_name(type_name)  # raises with the list
    if size is not None and size != fixed:
        raise UsageError(f"{type_name} carries exactly {fixed} bytes, not {size}; "
                         "use --type Bytes for other sizes", argument="--size")
    return fixed
