"""Selective CDR: XCDR1 little-endian with encapsulation header, writing only masked leaves.

Wire format of an SFT sample (what goes into a DDS sample or a Zenoh payload):

    00 01 00 00            encapsulation header: CDR_LE (XCDR1), options 0 — as ROS 2 sends
    <body>                 the selected leaves, in declaration order, CDR-aligned

The body is exactly the CDR encoding of the message with every *omitted* leaf removed
(it takes no bytes and no padding); alignment is counted from the end of the header,
as in plain CDR.  With a full mask the output is byte-identical to rosbags'
``Typestore.serialize_cdr`` (tests/test_sft_cdr.py checks this across the Humble
types).  The mask itself is not in the payload: the receiver knows it from the
channel the sample arrived on (DDS partition / Zenoh key expression, see
:mod:`linklab.sft.transport`), and rebuilds a complete message with defaults
(0, "", empty sequences) in the omitted leaves (paper 003 §IV-D).

Paper 003 §IV-C: B_r^SFT = sum_{j in A_r} s_j — the serialized size is the sum over
the transmitted fields only (plus alignment).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from linklab.errors import LinklabError
from linklab.sft.masks import FieldMask, range_bits
from linklab.sft.schema import (
    NUMPY_DTYPE,
    PRIMITIVE_SIZE,
    STRUCT_FORMAT,
    FieldSpec,
    Schema,
    default_value,
)

HEADER_CDR_LE = b"\x00\x01\x00\x00"
_PACK = {name: struct.Struct("<" + fmt) for name, fmt in STRUCT_FORMAT.items()}
_U32 = struct.Struct("<I")


class CdrError(LinklabError):
    """A payload that does not decode with the given schema and mask."""


def serialize(message: Any, sch: Schema, mask: FieldMask | None = None) -> bytes:
    """CDR bytes (with header) holding the leaves of ``mask`` (all leaves when None)."""
    bits = (1 << sch.leaf_count) - 1 if mask is None else mask.bits
    if mask is not None and mask.length != sch.leaf_count:
        raise ValueError(f"mask has {mask.length} bits, {sch.typename} has {sch.leaf_count} leaves")
    buf = bytearray(HEADER_CDR_LE)
    _write_struct(buf, sch, message, bits, 0)
    return bytes(buf)


def _align(buf: bytearray, size: int) -> None:
    pad = -(len(buf) - 4) % size
    if pad:
        buf += bytes(pad)


def _write_struct(buf: bytearray, sch: Schema, message: Any, bits: int, offset: int) -> None:
    for spec in sch.fields:
        lo = offset + spec.first_leaf
        if spec.kind == "struct":
            if bits & range_bits(lo, offset + spec.end_leaf):
                _write_struct(buf, spec.element, getattr(message, spec.name), bits, lo)
        elif bits >> lo & 1:
            _write_field(buf, spec, getattr(message, spec.name))


def _write_full(buf: bytearray, sch: Schema, message: Any) -> None:
    _write_struct(buf, sch, message, (1 << sch.leaf_count) - 1, 0)


def _write_string(buf: bytearray, value: str) -> None:
    data = value.encode()
    _align(buf, 4)
    buf += _U32.pack(len(data) + 1)
    buf += data
    buf += b"\0"


def _write_primitives(buf: bytearray, element: str, value: Any) -> None:
    array = np.asarray(value, dtype=NUMPY_DTYPE[element])
    if array.size:
        _align(buf, min(PRIMITIVE_SIZE[element], 8))
        buf += array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()


def _write_field(buf: bytearray, spec: FieldSpec, value: Any) -> None:
    kind, element = spec.kind, spec.element
    if kind == "base":
        _align(buf, PRIMITIVE_SIZE[element])
        buf += _PACK[element].pack(value)
        return
    if kind == "string":
        _write_string(buf, value)
        return
    if kind == "array" and len(value) != spec.length:
        raise ValueError(f"{spec.name}: array of {len(value)} elements, type says {spec.length}")
    if kind == "sequence":
        _align(buf, 4)
        buf += _U32.pack(len(value))
    if isinstance(element, Schema):
        for item in value:
            _write_full(buf, element, item)
    elif element == "string":
        for item in value:
            _write_string(buf, item)
    else:
        _write_primitives(buf, element, value)


# --- deserialization ------------------------------------------------------------------


def deserialize(data: bytes | memoryview, sch: Schema, mask: FieldMask | None = None) -> Any:
    """Rebuild a complete message; leaves outside ``mask`` get their defaults."""
    view = memoryview(data)
    if len(view) < 4 or bytes(view[:2]) != b"\x00\x01":
        raise CdrError(f"{sch.typename}: not a little-endian XCDR1 payload "
                       f"(header {bytes(view[:4]).hex()})")
    bits = (1 << sch.leaf_count) - 1 if mask is None else mask.bits
    reader = _Reader(view)
    try:
        return reader.struct(sch, bits, 0)
    except (struct.error, ValueError, IndexError, UnicodeDecodeError) as error:
        raise CdrError(f"{sch.typename}: payload does not decode with mask "
                       f"{mask or 'full'}: {error}") from error


class _Reader:
    def __init__(self, view: memoryview):
        self.view = view
        self.pos = 4

    def align(self, size: int) -> None:
        self.pos += -(self.pos - 4) % size

    def struct(self, sch: Schema, bits: int, offset: int) -> Any:
        values = {}
        for spec in sch.fields:
            lo = offset + spec.first_leaf
            if spec.kind == "struct":
                if bits & range_bits(lo, offset + spec.end_leaf):
                    values[spec.name] = self.struct(spec.element, bits, lo)
                else:
                    values[spec.name] = default_value(spec)
            elif bits >> lo & 1:
                values[spec.name] = self.field(spec)
            else:
                values[spec.name] = default_value(spec)
        return sch.cls(**values)

    def full(self, sch: Schema) -> Any:
        return self.struct(sch, (1 << sch.leaf_count) - 1, 0)

    def string(self) -> str:
        self.align(4)
        (length,) = _U32.unpack_from(self.view, self.pos)
        if length < 1 or self.pos + 4 + length > len(self.view):
            raise ValueError(f"bad string length {length} at {self.pos}")
        text = bytes(self.view[self.pos + 4:self.pos + 3 + length]).decode()
        self.pos += 4 + length
        return text

    def primitives(self, element: str, count: int) -> np.ndarray:
        size = PRIMITIVE_SIZE[element]
        if count:
            self.align(min(size, 8))
        end = self.pos + count * size
        if end > len(self.view):
            raise ValueError(f"{count} x {element} overrun the payload")
        dtype = np.dtype(NUMPY_DTYPE[element]).newbyteorder("<")
        array = np.frombuffer(self.view[self.pos:end], dtype=dtype).astype(
            NUMPY_DTYPE[element])
        self.pos = end
        return array

    def field(self, spec: FieldSpec) -> Any:
        kind, element = spec.kind, spec.element
        if kind == "base":
            size = PRIMITIVE_SIZE[element]
            self.align(size)
            (value,) = _PACK[element].unpack_from(self.view, self.pos)
            self.pos += size
            return value
        if kind == "string":
            return self.string()
        if kind == "sequence":
            self.align(4)
            (count,) = _U32.unpack_from(self.view, self.pos)
            self.pos += 4
            if count > len(self.view):
                raise ValueError(f"sequence length {count} exceeds the payload")
        else:
            count = spec.length
        if isinstance(element, Schema):
            return [self.full(element) for _ in range(count)]
        if element == "string":
            return [self.string() for _ in range(count)]
        return self.primitives(element, count)
