"""Field masks: bit vectors of any length over a schema's leaves (paper 003 §IV-A).

Bit ``i`` set means leaf ``i`` (see :mod:`linklab.sft.schema`) is required.  A mask is
an immutable value (``bits`` as a Python int, ``length`` bits), so it can key dicts
(one serialized variant per distinct mask, §IV-C).  Text form: ``<length>:<hex>``,
e.g. ``16:0008`` — used in requests, DDS partition names and Zenoh key expressions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from linklab.errors import UsageError
from linklab.sft.schema import Schema


@dataclass(frozen=True, order=True)
class FieldMask:
    length: int
    bits: int

    def __post_init__(self) -> None:
        if self.length < 0 or self.bits < 0 or self.bits >> self.length:
            raise ValueError(f"mask bits {self.bits:#x} do not fit in {self.length} bits")

    @classmethod
    def full(cls, length: int) -> FieldMask:
        return cls(length, (1 << length) - 1)

    @classmethod
    def empty(cls, length: int) -> FieldMask:
        return cls(length, 0)

    @classmethod
    def from_indices(cls, length: int, indices: Iterable[int]) -> FieldMask:
        bits = 0
        for index in indices:
            if not 0 <= index < length:
                raise ValueError(f"bit {index} outside a {length}-bit mask")
            bits |= 1 << index
        return cls(length, bits)

    @classmethod
    def parse(cls, text: str) -> FieldMask:
        match = re.fullmatch(r"(\d+):([0-9a-fA-F]+)", text)
        if not match:
            raise UsageError(f"bad field mask {text!r}: expected <length>:<hex>")
        return cls(int(match.group(1)), int(match.group(2), 16))

    def text(self) -> str:
        digits = max(1, (self.length + 3) // 4)
        return f"{self.length}:{self.bits:0{digits}x}"

    def __str__(self) -> str:
        return self.text()

    @property
    def is_full(self) -> bool:
        return self.bits == (1 << self.length) - 1

    def __contains__(self, index: int) -> bool:
        return bool(self.bits >> index & 1)

    def indices(self) -> list[int]:
        return [i for i in range(self.length) if self.bits >> i & 1]

    def count(self) -> int:
        return bin(self.bits).count("1")

    def __or__(self, other: FieldMask) -> FieldMask:
        self._same(other)
        return FieldMask(self.length, self.bits | other.bits)

    def __and__(self, other: FieldMask) -> FieldMask:
        self._same(other)
        return FieldMask(self.length, self.bits & other.bits)

    def covers(self, other: FieldMask) -> bool:
        self._same(other)
        return other.bits & ~self.bits == 0

    def _same(self, other: FieldMask) -> None:
        if self.length != other.length:
            raise ValueError(f"masks of different lengths ({self.length} and {other.length})")


def range_bits(lo: int, hi: int) -> int:
    return ((1 << hi) - 1) ^ ((1 << lo) - 1)


def mask_for_paths(sch: Schema, paths: Iterable[str]) -> FieldMask:
    """Requirements as field paths (``current``, ``header.stamp``, ``pose.pose.position``)."""
    bits = 0
    for path in paths:
        span = sch.paths.get(path)
        if span is None:
            known = ", ".join(sch.top_level)
            raise UsageError(f"{sch.typename} has no field {path!r} (top-level fields: {known}; "
                             "nested paths use dots, e.g. header.stamp)", argument="fields")
        bits |= range_bits(*span)
    return FieldMask(sch.leaf_count, bits)


def mask_except(sch: Schema, paths: Iterable[str]) -> FieldMask:
    """All fields but ``paths`` (e.g. LaserScan without ``intensities``)."""
    full = FieldMask.full(sch.leaf_count)
    return FieldMask(sch.leaf_count, full.bits & ~mask_for_paths(sch, paths).bits)


def paths_in_mask(sch: Schema, mask: FieldMask) -> list[str]:
    """The shortest field paths that together make up ``mask`` (for display)."""
    out: list[str] = []

    def walk(prefix: str, fields, offset: int) -> None:
        for spec in fields:
            bits = range_bits(offset + spec.first_leaf, offset + spec.end_leaf)
            name = prefix + spec.name
            if spec.end_leaf > spec.first_leaf and mask.bits & bits == bits:
                out.append(name)
            elif mask.bits & bits and spec.kind == "struct":
                walk(name + ".", spec.element.fields, offset + spec.first_leaf)

    walk("", sch.fields, 0)
    return out


def top_level_mask(sch: Schema, field_bits: int) -> FieldMask:
    """The paper's K-bit top-level mask (bit j = top-level field j) as a leaf mask."""
    bits = 0
    for index, spec in enumerate(sch.fields):
        if field_bits >> index & 1:
            bits |= range_bits(spec.first_leaf, spec.end_leaf)
    return FieldMask(sch.leaf_count, bits)
