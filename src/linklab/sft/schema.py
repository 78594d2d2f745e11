"""Message schemas for SFT, built from rosbags' ROS 2 message definitions.

A :class:`Schema` is the field tree of one message type (rosbags ``Typestore`` field
definitions: BASE, NAME, ARRAY, SEQUENCE).  SFT selects *leaves* of that tree: a leaf
is any field that is not a single nested struct — a primitive, a string, a fixed
array or a sequence (sequences of structs are selected whole).  Leaves are numbered in
declaration order (depth first), and that numbering is the bit order of a
:class:`linklab.sft.masks.FieldMask`.  Paper 003 §IV-D selects top-level fields only;
a top-level field here is simply the range of leaves under it, so top-level masks are
a special case of leaf masks (the paper's stated limitation, lifted).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rosbags.interfaces import Nodetype
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from linklab.errors import UsageError

PRIMITIVE_SIZE = {
    "bool": 1, "byte": 1, "char": 1, "int8": 1, "uint8": 1,
    "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "float32": 4,
    "int64": 8, "uint64": 8, "float64": 8,
}
# rosbags' numpy dtype for primitive arrays (rosbags.serde.utils.ndtype)
NUMPY_DTYPE = {
    "bool": np.bool_, "byte": np.int8, "char": np.uint8, "int8": np.int8, "uint8": np.uint8,
    "int16": np.int16, "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32,
    "float32": np.float32, "int64": np.int64, "uint64": np.uint64, "float64": np.float64,
}
STRUCT_FORMAT = {
    "bool": "?", "byte": "b", "char": "B", "int8": "b", "uint8": "B",
    "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "float32": "f",
    "int64": "q", "uint64": "Q", "float64": "d",
}


@dataclass(frozen=True)
class FieldSpec:
    """One field of a struct.

    kind: "base" (primitive), "string", "struct" (a single nested struct),
    "array" (fixed length) or "sequence"; ``element`` is the primitive name, "string",
    or a Schema for structs; ``length`` is the fixed array length (0 otherwise).
    ``first_leaf``/``end_leaf`` give the leaf bits this field covers.
    """

    name: str
    kind: str
    element: Any
    length: int
    first_leaf: int
    end_leaf: int


@dataclass(frozen=True)
class Schema:
    typename: str  # rosbags form: pkg/msg/Name
    cls: Any
    fields: tuple[FieldSpec, ...]
    leaves: tuple[str, ...]  # dotted leaf paths, bit order
    paths: dict[str, tuple[int, int]] = field(hash=False, compare=False)  # path -> leaf range

    @property
    def leaf_count(self) -> int:
        return len(self.leaves)

    @property
    def top_level(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    @property
    def dds_typename(self) -> str:
        return dds_typename(self.typename)


def dds_typename(typename: str) -> str:
    """``sensor_msgs/msg/BatteryState`` -> ``sensor_msgs::msg::dds_::BatteryState_`` (ROS 2)."""
    pkg, kind, name = typename.split("/")
    return f"{pkg}::{kind}::dds_::{name}_"


def normalize_typename(name: str) -> str:
    """Accept ``pkg/msg/T``, ``pkg/T``, ``pkg::msg::T`` and ``pkg::msg::dds_::T_``."""
    match = re.fullmatch(r"(\w+)::(\w+)::dds_::(\w+)_", name)
    if match:
        return "/".join(match.groups())
    parts = re.split(r"::|/", name)
    if len(parts) == 2:
        parts = [parts[0], "msg", parts[1]]
    if len(parts) != 3 or not all(parts):
        raise UsageError(f"unknown message type {name!r}: use pkg/msg/Type "
                         "(e.g. sensor_msgs/msg/BatteryState)", argument="msgtype")
    return "/".join(parts)


@functools.cache
def typestore():
    """The ROS 2 Humble interfaces plus linklab's synthetic benchmark types."""
    return get_typestore(Stores.ROS2_HUMBLE)


_synthetic_registered: set[str] = set()


def synthetic_type(fields: int, field_size: int) -> str:
    """The parametric-study type of paper 003 §V-A: ``fields`` fields of ``field_size`` B.

    Registered as ``linklab_sft/msg/Fields<K>x<S>`` with members ``uint8[S] f0..f<K-1>``.
    """
    name = f"linklab_sft/msg/Fields{fields}x{field_size}"
    if name not in _synthetic_registered:
        text = "\n".join(f"uint8[{field_size}] f{i}" for i in range(fields))
        store = typestore()
        if name not in store.fielddefs:
            store.register(get_types_from_msg(text, name))
        _synthetic_registered.add(name)
    return name


def _build(typename: str) -> Schema:
    store = typestore()
    try:
        msgdef = store.get_msgdef(typename)
    except Exception as error:  # rosbags raises TypesysError for unknown names
        raise UsageError(f"unknown message type {typename!r} (not in the ROS 2 Humble "
                         "interfaces known to rosbags)", argument="msgtype") from error
    specs: list[FieldSpec] = []
    leaves: list[str] = []
    paths: dict[str, tuple[int, int]] = {}
    for name, desc in msgdef.fields:
        start = len(leaves)
        kind, element, length = _describe(desc)
        if kind == "struct":
            for sub in element.leaves:
                leaves.append(f"{name}.{sub}")
            for sub, (lo, hi) in element.paths.items():
                paths[f"{name}.{sub}"] = (start + lo, start + hi)
        else:
            leaves.append(name)
        paths[name] = (start, len(leaves))
        specs.append(FieldSpec(name, kind, element, length, start, len(leaves)))
    return Schema(typename, msgdef.cls, tuple(specs), tuple(leaves), paths)


def _describe(desc) -> tuple[str, Any, int]:
    node, rest = desc
    if node == Nodetype.BASE:
        base = rest[0]
        if base == "string":
            return "string", "string", 0
        if base not in PRIMITIVE_SIZE:
            raise UsageError(f"primitive type {base!r} is not supported by linklab.sft")
        return "base", base, 0
    if node == Nodetype.NAME:
        return "struct", schema(rest), 0
    sub, length = rest
    element = _element(sub)
    return ("array" if node == Nodetype.ARRAY else "sequence"), element, length


def _element(sub) -> Any:
    node, rest = sub
    if node == Nodetype.BASE:
        return "string" if rest[0] == "string" else rest[0]
    return schema(rest)


@functools.cache
def schema(typename: str) -> Schema:
    """The field tree of a ROS 2 message type (any spelling accepted by normalize_typename)."""
    return _build(normalize_typename(typename))


def default_message(sch: Schema) -> Any:
    """A message with every field at its default (0, "", empty sequence)."""
    return sch.cls(**{f.name: default_value(f) for f in sch.fields})


def default_value(spec: FieldSpec) -> Any:
    if spec.kind == "base":
        return False if spec.element == "bool" else (0.0 if spec.element.startswith("float")
                                                     else 0)
    if spec.kind == "string":
        return ""
    if spec.kind == "struct":
        return default_message(spec.element)
    if spec.kind == "array":
        if isinstance(spec.element, Schema):
            return [default_message(spec.element) for _ in range(spec.length)]
        if spec.element == "string":
            return [""] * spec.length
        return np.zeros(spec.length, dtype=NUMPY_DTYPE[spec.element])
    if isinstance(spec.element, Schema) or spec.element == "string":
        return []
    return np.zeros(0, dtype=NUMPY_DTYPE[spec.element])
