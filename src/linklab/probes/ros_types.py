"""ROS 2's standard message types in the Zenoh probe: the CDR-serialized sample.

The Python twin of probes/common/ros_types.{hpp,cpp} (the layouts, where seq and send
time live, the geometry for a size: probes/idl/linklab_types.idl). A sample is the
encapsulation header CDR_LE (00 01 00 00) and the XCDR1 body, byte for byte what Fast
DDS 2.9 serializes (padding zeroed; tests compare with ``linklab-check-cdr``) and what
rmw_zenoh puts in a zenoh payload. :class:`CdrSample` builds it once for ``n`` payload
bytes and stamps seq and send time in place; :func:`read` decodes one.

Where seq and send time live (ROS 2 has no field for them):

* ``Image``, ``PointCloud2``: ``header.stamp`` = send time (sec = t // 1e9,
  nanosec = t % 1e9), ``header.frame_id`` = seq as 16 lowercase hex digits.
* ``String``: the first 32 characters: seq and send time (as u64) in 16 hex digits each.
* ``UInt8MultiArray``: octets 0-7 seq (u64 LE), 8-15 send time (i64 LE);
  ``layout.data_offset`` = 16, one dimension ``linklab`` of size and stride n - 16.

Each type's own bytes around the payload, after the 4-byte encapsulation
(:data:`OVERHEAD`): Image 60, PointCloud2 149, String 5, UInt8MultiArray 32.
"""

from __future__ import annotations

import struct

from linklab.probes.message_types import MESSAGE_TYPES

ROS_TYPES: dict[str, str] = {t.name: t.dds_name for t in MESSAGE_TYPES
                             if t.kind in ("Image", "PointCloud2", "String", "UInt8MultiArray")}
IMAGE_ENCODING = "rgb8"
IMAGE_CHANNELS = 3
POINT_STEP = 16
FLOAT32 = 7  # sensor_msgs/PointField FLOAT32
POINT_FIELDS = (("x", 0), ("y", 4), ("z", 8), ("intensity", 12))
SEQ_DIGITS = 16
STRING_HEAD = 32
ARRAY_HEAD = 16
DIM_LABEL = "linklab"
ENCAPSULATION = b"\x00\x01\x00\x00"  # CDR_LE, options 0
# serialized bytes besides the payload, encapsulation excluded (XCDR1)
OVERHEAD: dict[str, int] = {"Image": 60, "PointCloud2": 149, "String": 5,
                            "UInt8MultiArray": 32}

_U32 = struct.Struct("<I")
_STAMP = struct.Struct("<iI")
_HEAD = struct.Struct("<Qq")


def image_geometry(n: int) -> tuple[int, int, int]:
    """(height, width, step) of an rgb8 image of ``n`` bytes: height = the largest
    divisor h of n with 3*h*h <= n (1 if none), step = n // h, width = step // 3."""
    height = 1
    d = 1
    while IMAGE_CHANNELS * d * d <= n:
        if n % d == 0:
            height = d
        d += 1
    step = n // height
    return height, step // IMAGE_CHANNELS, step


def size_refusal(type_name: str, n: int) -> str:
    """Why ``type_name`` cannot carry ``n`` payload bytes ("" when it can)."""
    if type_name == "PointCloud2" and n % POINT_STEP:
        return ("PointCloud2 carries whole 16-byte points (x, y, z, intensity as float32): "
                f"expected a multiple of 16 bytes, got {n}")
    if type_name == "String" and n < STRING_HEAD:
        return ("String carries its seq and send time in its first 32 characters: expected "
                f"at least 32 bytes, got {n}")
    if type_name == "UInt8MultiArray" and n < ARRAY_HEAD:
        return ("UInt8MultiArray carries its seq and send time in its first 16 octets: "
                f"expected at least 16 bytes, got {n}")
    return ""


def fill_pattern(n: int) -> bytes:
    """probes/common's fill_pattern: xorshift32 bytes (nothing compresses them)."""
    out = bytearray(n)
    x = 2463534242
    for i in range(n):
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        out[i] = x & 0xFF
    return bytes(out)


_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def fill_text(n: int) -> bytes:
    """String's printable filler (never NUL)."""
    return fill_pattern(n).translate(bytes(_ALPHABET[b & 63] for b in range(256)))


class _Writer:
    def __init__(self) -> None:
        self.b = bytearray(ENCAPSULATION)

    def align(self, n: int) -> None:
        self.b += bytes(-(len(self.b) - 4) % n)

    def u8(self, v: int) -> None:
        self.b.append(v)

    def u32(self, v: int) -> None:
        self.align(4)
        self.b += _U32.pack(v)

    def string(self, s: bytes) -> None:
        self.u32(len(s) + 1)
        self.b += s + b"\0"

    def header(self) -> int:
        self.align(4)
        at = len(self.b)
        self.b += _STAMP.pack(0, 0)
        self.string(b"0" * SEQ_DIGITS)
        return at

    def octets(self, data: bytes) -> int:
        self.u32(len(data))
        at = len(self.b)
        self.b += data
        return at


class CdrSample:
    """One serialized sample of a ROS 2 type for ``n`` payload bytes, built once;
    :meth:`stamp` rewrites only seq and send time. ``buffer`` is what goes on the wire."""

    def __init__(self, type_name: str, n: int):
        if type_name not in ROS_TYPES:
            raise ValueError(f"not a ROS 2 type: {type_name!r}")
        why = size_refusal(type_name, n)
        if why:
            raise ValueError(why)
        self.type = type_name
        w = _Writer()
        if type_name == "Image":
            height, width, step = image_geometry(n)
            self._at = w.header()
            w.u32(height)
            w.u32(width)
            w.string(IMAGE_ENCODING.encode())
            w.u8(0)  # is_bigendian
            w.u32(step)
            w.octets(fill_pattern(n))
        elif type_name == "PointCloud2":
            self._at = w.header()
            w.u32(1)  # height
            w.u32(n // POINT_STEP)  # width
            w.u32(len(POINT_FIELDS))
            for name, offset in POINT_FIELDS:
                w.string(name.encode())
                w.u32(offset)
                w.u8(FLOAT32)
                w.u32(1)
            w.u8(0)  # is_bigendian
            w.u32(POINT_STEP)
            w.u32(n)  # row_step
            w.octets(fill_pattern(n))
            w.u8(1)  # is_dense
        elif type_name == "String":
            w.u32(n + 1)
            self._at = len(w.b)
            w.b += fill_text(n) + b"\0"
        else:  # UInt8MultiArray
            w.u32(1)
            w.string(DIM_LABEL.encode())
            w.u32(n - ARRAY_HEAD)  # size
            w.u32(n - ARRAY_HEAD)  # stride
            w.u32(ARRAY_HEAD)  # data_offset
            self._at = w.octets(fill_pattern(n))
        self.buffer = w.b

    def stamp(self, seq: int, t_send_ns: int) -> None:
        at, b = self._at, self.buffer
        if self.type in ("Image", "PointCloud2"):
            _STAMP.pack_into(b, at, t_send_ns // 1_000_000_000, t_send_ns % 1_000_000_000)
            b[at + 12:at + 28] = b"%016x" % seq
        elif self.type == "String":
            b[at:at + 32] = b"%016x%016x" % (seq, t_send_ns & 0xFFFFFFFFFFFFFFFF)
        else:
            _HEAD.pack_into(b, at, seq, t_send_ns)


class _Reader:
    def __init__(self, data: bytes):
        self.d = data
        self.pos = 4

    def need(self, k: int) -> int:
        at = self.pos
        if k < 0 or at + k > len(self.d):
            raise ValueError("truncated")
        self.pos += k
        return at

    def align(self, n: int) -> None:
        self.need(-(self.pos - 4) % n)

    def u8(self) -> int:
        return self.d[self.need(1)]

    def u32(self) -> int:
        self.align(4)
        return _U32.unpack_from(self.d, self.need(4))[0]

    def string(self) -> bytes:
        n = self.u32()
        at = self.need(n)
        if n == 0 or self.d[at + n - 1] != 0:
            raise ValueError("string without terminator")
        return self.d[at:at + n - 1]

    def octets(self) -> tuple[int, int]:
        n = self.u32()
        return self.need(n), n

    def header(self) -> tuple[int, int]:
        self.align(4)
        sec, nanosec = _STAMP.unpack_from(self.d, self.need(8))
        frame = self.string()
        return _hex16(frame), sec * 1_000_000_000 + nanosec


def _hex16(text: bytes) -> int:
    if len(text) != SEQ_DIGITS or text.strip(b"0123456789abcdef"):
        raise ValueError("no 16-digit hex seq")
    return int(text, 16)


def read(type_name: str, data: bytes) -> tuple[int, int, int] | None:
    """(seq, t_send_ns, payload bytes) of a serialized sample, or None when it is not a
    linklab sample of this type (truncated, not CDR_LE, no seq/send time in it)."""
    if data[:2] != ENCAPSULATION[:2]:
        return None
    r = _Reader(data)
    try:
        if type_name in ("Image", "PointCloud2"):
            seq, t_send = r.header()
            r.u32()
            r.u32()
            if type_name == "Image":
                r.string()
                r.u8()
                r.u32()
                _, n = r.octets()
            else:
                for _ in range(r.u32()):
                    r.string()
                    r.u32()
                    r.u8()
                    r.u32()
                r.u8()
                r.u32()
                r.u32()
                _, n = r.octets()
                r.u8()
            return seq, t_send, n
        if type_name == "String":
            text = r.string()
            if len(text) < STRING_HEAD:
                return None
            seq, t_send = _hex16(text[:16]), _hex16(text[16:32])
            return seq, t_send - (1 << 64) if t_send >= 1 << 63 else t_send, len(text)
        if type_name == "UInt8MultiArray":
            for _ in range(r.u32()):
                r.string()
                r.u32()
                r.u32()
            r.u32()
            at, n = r.octets()
            if n < ARRAY_HEAD:
                return None
            seq, t_send = _HEAD.unpack_from(data, at)
            return seq, t_send, n
    except (ValueError, struct.error):
        return None
    return None
