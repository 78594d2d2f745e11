"""Cyclone DDS Python type support for ROS 2 messages, built from rosbags definitions.

The DDS topic carries the standard ROS 2 type name (``pkg::msg::dds_::Type_``) and a
type description equal to the ROS 2 IDL, so discovery (and XTypes type information)
looks like any ROS 2 node's.  linklab writes and takes the *serialized* bytes itself
(:mod:`linklab.sft.cdr`), so these classes only describe the type to Cyclone.
"""


import functools
from dataclasses import dataclass
from typing import Any

from cyclonedds.idl import IdlStruct, make_idl_struct
from cyclonedds.idl import types as t
from cyclonedds.idl.annotations import key

from linklab.sft.masks import FieldMask, range_bits
from linklab.sft.schema import Schema, dds_typename
from linklab.sft.transport import Request

_PRIMITIVE = {
    "bool": bool, "byte": t.byte, "char": t.uint8, "int8": t.int8, "uint8": t.uint8,
    "int16": t.int16, "uint16": t.uint16, "int32": t.int32, "uint32": t.uint32,
    "int64": t.int64, "uint64": t.uint64, "float32": t.float32, "float64": t.float64,
}


def _element_type(element: Any) -> Any:
    if isinstance(element, Schema):
        return idl_struct(element)
    if element == "string":
        return str
    return _PRIMITIVE[element]


@functools.cache
def idl_struct(sch: Schema) -> type[IdlStruct]:
    """An IdlStruct named like ROS 2 names the type on the wire."""
    fields: dict[str, Any] = {}
    for spec in sch.fields:
        if spec.kind == "struct":
            fields[spec.name] = idl_struct(spec.element)
        elif spec.kind == "string":
            fields[spec.name] = str
        elif spec.kind == "base":
            fields[spec.name] = _PRIMITIVE[spec.element]
        elif spec.kind == "array":
            fields[spec.name] = t.array[_element_type(spec.element), spec.length]
        else:
            fields[spec.name] = t.sequence[_element_type(spec.element)]
    class_name = sch.typename.replace("/", "__")
    return make_idl_struct(class_name, dds_typename(sch.typename), fields)


@dataclass
class FieldRequest(IdlStruct, typename="linklab_sft::msg::dds_::FieldRequest_"):
    """A Selective Transmission Request (paper 003 §IV-B), keyed by the reader.

    ``mask`` holds the bit vector little-endian (bit i = byte i//8, bit i%8),
    ``mask_length`` its length in bits; ``seq`` is monotonic per reader (a publisher
    ignores a request older than the one it has); ``sent_ns`` is the CLOCK_REALTIME
    time the reader emitted it (for the response-time measurement).
    """

    reader_id: str
    key("reader_id")
    topic: str
    typename: str
    mask_length: t.uint32
    mask: t.sequence[t.uint8]
    seq: t.uint64
    sent_ns: t.int64



@functools.cache
def projected_struct(sch: Schema, bits: int, offset: int = 0) -> type[IdlStruct]:
    """The ROS type reduced to the leaves in ``bits`` (same type name, fewer members).

    Its XCDR1 encoding is exactly :func:`linklab.sft.cdr.serialize` with that mask, so
    Cyclone (which validates every sample against its type) accepts SFT variants as
    ordinary samples.  A struct with no selected leaf is left out; the empty mask keeps
    one ``uint8`` placeholder (IDL has no empty structs), see ``EMPTY_BODY``.
    """
    fields: dict[str, Any] = {}
    for spec in sch.fields:
        lo, hi = offset + spec.first_leaf, offset + spec.end_leaf
        if spec.kind == "struct":
            if bits & range_bits(lo, hi):
                fields[spec.name] = projected_struct(spec.element, bits, lo)
        elif bits >> lo & 1:
            fields[spec.name] = idl_struct(sch).__annotations__[spec.name]
    if not fields:
        fields["structure_needs_at_least_one_member"] = t.uint8
    class_name = f"{sch.typename.replace('/', '__')}__sft_{bits:x}_{offset}"
    return make_idl_struct(class_name, dds_typename(sch.typename), fields)


EMPTY_BODY = b"\x00"  # the placeholder member of an empty projection


def request_from(sample: FieldRequest) -> Request:
    bits = int.from_bytes(bytes(sample.mask), "little")
    return Request(sample.reader_id, sample.topic, FieldMask(sample.mask_length, bits),
                   sample.seq, sample.sent_ns)


def request_to(request: Request, typename: str) -> FieldRequest:
    nbytes = (request.mask.length + 7) // 8
    return FieldRequest(reader_id=request.reader_id, topic=request.topic, typename=typename,
                        mask_length=request.mask.length,
                        mask=list(request.mask.bits.to_bytes(nbytes, "little")),
                        seq=request.seq, sent_ns=request.sent_ns)
