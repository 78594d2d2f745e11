"""Automatic requirement recording (ARR, paper 003 §IV-A) with miss detection.

With ``record=True`` the callback gets a :class:`RecordedMessage` instead of the plain
message: attribute reads go through it and set the bit of every leaf read (a leaf is
recorded when it is read; reading a nested struct only records what is then read
from it; using a struct as a whole — ``repr``, ``==``, :func:`unwrap` — records all
of it).  The subscriber accumulates the bits over callbacks and re-announces its mask
whenever it grows (the paper's per-field access counters).

Beyond the paper (its stated future work): reading a leaf that the current message
did not carry is a *miss*.  The leaf is recorded at once and the subscriber widens
its mask immediately (before the callback returns), so the next message carries it.
The callback is told in one of two documented ways (``on_miss`` of Subscriber):

* ``"raise"`` (default): the read raises :class:`FieldNotTransmitted` — the callback
  can catch it; if it does not, the subscriber catches it, counts it and calls the
  subscriber's ``miss_callback(message, paths)`` if one was given.
* ``"flag"``: the read returns the default value (0, "", empty) as the paper's
  receiver would see it, and :func:`missing` lists the leaves missed in this message.
"""

from __future__ import annotations

import threading
from typing import Any

from linklab.errors import LinklabError
from linklab.sft.masks import FieldMask, range_bits
from linklab.sft.schema import Schema


class FieldNotTransmitted(LinklabError):  # noqa: N818 - the name says what happened
    """A field was read that the publisher did not send in this message."""

    def __init__(self, paths: list[str]):
        self.paths = paths
        super().__init__(f"field(s) {', '.join(paths)} not transmitted in this message "
                         "(requirement recorded; the mask is widened for the next ones)")


class Recorder:
    """Accumulated leaf reads of one subscriber (the ARR counters, as a bit set)."""

    def __init__(self, sch: Schema, initial: FieldMask | None = None):
        self.sch = sch
        self.bits = initial.bits if initial else 0
        self.counts = [0] * sch.leaf_count
        self._lock = threading.Lock()

    def record(self, lo: int, hi: int) -> bool:
        """Record reads of leaves [lo, hi); True if that added a new requirement."""
        with self._lock:
            for index in range(lo, hi):
                self.counts[index] += 1
            new = self.bits | range_bits(lo, hi)
            grew = new != self.bits
            self.bits = new
            return grew

    def mask(self) -> FieldMask:
        return FieldMask(self.sch.leaf_count, self.bits)


class _MissState:
    def __init__(self, mode: str, on_new_requirement):
        self.mode = mode
        self.paths: list[str] = []
        self.on_new_requirement = on_new_requirement


class RecordedMessage:
    """Read-only view of a received message that records the leaves read."""

    __slots__ = ("_msg", "_sch", "_offset", "_recorder", "_received", "_miss", "_prefix")

    def __init__(self, msg: Any, sch: Schema, recorder: Recorder, received: FieldMask,
                 miss: _MissState, offset: int = 0, prefix: str = ""):
        object.__setattr__(self, "_msg", msg)
        object.__setattr__(self, "_sch", sch)
        object.__setattr__(self, "_offset", offset)
        object.__setattr__(self, "_recorder", recorder)
        object.__setattr__(self, "_received", received)
        object.__setattr__(self, "_miss", miss)
        object.__setattr__(self, "_prefix", prefix)

    def __getattr__(self, name: str) -> Any:
        spec = next((f for f in self._sch.fields if f.name == name), None)
        value = getattr(self._msg, name)
        if spec is None:  # constants and methods of the rosbags class
            return value
        lo, hi = self._offset + spec.first_leaf, self._offset + spec.end_leaf
        if spec.kind == "struct":
            return RecordedMessage(value, spec.element, self._recorder, self._received,
                                   self._miss, lo, f"{self._prefix}{name}.")
        self._read(lo, hi)
        return value

    def _read(self, lo: int, hi: int) -> None:
        self._recorder.record(lo, hi)
        absent = [i for i in range(lo, hi) if i not in self._received]
        if absent:
            # a miss widens the mask at once; other new reads are announced after the
            # callback, all together
            self._miss.on_new_requirement()
            paths = [self._recorder.sch.leaves[i] for i in absent]
            self._miss.paths.extend(p for p in paths if p not in self._miss.paths)
            if self._miss.mode == "raise":
                raise FieldNotTransmitted(paths)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("received SFT messages are read-only")

    def _whole(self) -> Any:
        self._read(self._offset, self._offset + self._sch.leaf_count)
        return self._msg

    def __repr__(self) -> str:
        return repr(self._whole())

    def __eq__(self, other: object) -> bool:
        other = other._whole() if isinstance(other, RecordedMessage) else other
        return self._whole() == other

    __hash__ = None  # type: ignore[assignment]

    def __dir__(self) -> list[str]:
        return [f.name for f in self._sch.fields]


def unwrap(message: Any) -> Any:
    """The plain rosbags message (records every leaf of it as required)."""
    return message._whole() if isinstance(message, RecordedMessage) else message


def missing(message: Any) -> list[str]:
    """Leaves read from ``message`` that it did not carry (``on_miss="flag"``)."""
    if isinstance(message, RecordedMessage):
        return list(object.__getattribute__(message, "_miss").paths)
    return []


def wrap(msg: Any, sch: Schema, recorder: Recorder, received: FieldMask, mode: str,
         on_new_requirement) -> tuple[RecordedMessage, _MissState]:
    state = _MissState(mode, on_new_requirement)
    return RecordedMessage(msg, sch, recorder, received, state), state
