"""Replay of a recorded link: the ``trace`` field (a Mahimahi delivery trace), run by the
relay, and when it starts (``LinkSpec.trace_start``)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

from linklab.emu.directives import Trace as RelayTrace
from linklab.emu.parse import parse_trace_pair
from linklab.errors import UsageError
from linklab.link.direction_spec import DirectionSpec, QueueLimit
from linklab.link.impairments.base import Field, Impairment
from linklab.link.impairments.queue import Queue

TRACE_START_FORMS = "first-packet, now, or a UTC time such as 2026-11-28T10:30:00Z"


def parse_trace_start(value: Any, argument: str | None = "--trace-start") -> str | None:
    """``first-packet``, ``now`` (None: the relay's start) or a UTC time, kept as text
    (ISO 8601, ending in Z) and turned into the relay's clock when the link comes up."""
    text = str(value).strip()
    if text in ("first-packet", "now"):
        return None if text == "now" else text
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        when = None
    if when is None or when.utcoffset() != timedelta(0):
        raise UsageError(f"expected {TRACE_START_FORMS}, got {value!r}", argument=argument)
    booted = time.time() - time.monotonic()   # the relay's clock starts at boot
    if when.timestamp() <= booted:
        raise UsageError(f"{text} is before this machine started; give a later time",
                         argument=argument)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class TraceStage(Impairment):
    trace: str
    queue: str | None = None
    queue_limit: QueueLimit | None = None
    start: str | None = None   # LinkSpec.trace_start: first-packet, a UTC time, None
    kind: ClassVar[str] = "trace"
    runs_in: ClassVar[str] = "relay"
    relay_kind: ClassVar[str | None] = "trace"
    FIELDS: ClassVar[dict[str, Field]] = {"trace": Field("trace", lambda v, a: str(v))}

    @classmethod
    def from_direction(cls, spec: DirectionSpec,
                       trace_start: str | None) -> list[Impairment]:
        if spec.trace is None:
            return []
        return [cls(spec.trace, spec.queue, spec.queue_limit, trace_start)]

    @classmethod
    def from_flag(cls, text: str, flag: str) -> Any:
        """``up.trace,down.trace`` or one file for both, each checked, as absolute paths."""
        up_path, down_path = parse_trace_pair(text)
        return {"up": str(up_path.resolve()), "down": str(down_path.resolve())}

    @staticmethod
    def check_start(trace_start: str | None, directions: dict[str, DirectionSpec],
                    preset_name: str | None) -> None:
        """A trace start needs a trace."""
        if trace_start is not None and all(d.trace is None for d in directions.values()):
            raise UsageError("trace_start says when a trace starts; this link has no trace",
                             argument=f"preset {preset_name!r}: trace_start" if preset_name
                             else "--trace-start")

    def params(self) -> dict[str, Any]:
        return {"trace": self.trace, "text": self.trace.rsplit("/", 1)[-1],
                "start": self.start or "relay start",
                **Queue(self.queue, self.queue_limit).params()}

    def relay_stage(self) -> RelayTrace:
        queue = Queue(self.queue, self.queue_limit)
        limit = queue.limit or QueueLimit()
        return RelayTrace(Path(self.trace), limit.packets, limit.bytes, queue.name)


def relay_epoch(stages: list[Impairment]) -> tuple[int | None, bool]:
    """(epoch_ns, first_packet) of a relay running ``stages``: where its traces start.
    A UTC time becomes this host's CLOCK_MONOTONIC (the relay's clock) now."""
    starts = {s.start for s in stages if isinstance(s, TraceStage) and s.start}
    if not starts:
        return None, False
    (start,) = starts  # one link-wide value (LinkSpec.trace_start)
    if start == "first-packet":
        return None, True
    utc_ns = round(datetime.fromisoformat(start.replace("Z", "+00:00")).timestamp() * 1e9)
    return time.monotonic_ns() + (utc_ns - time.time_ns()), False
