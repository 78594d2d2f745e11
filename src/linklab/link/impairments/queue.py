"""The queue in front of a direction's bottleneck (its rate or trace): the ``queue`` and
``queue_limit`` fields, run by the relay (emu/src/stages/queue.rs, after Mahimahi's)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from linklab.emu.directives import QUEUE_DISCIPLINES
from linklab.errors import UsageError
from linklab.link.direction_spec import DirectionSpec, QueueLimit
from linklab.link.impairments.base import Field, Impairment
from linklab.units import parse_size


def parse_queue(value: Any, argument: str | None = "--queue") -> str:
    text = str(value).strip().lower()
    if text not in QUEUE_DISCIPLINES:
        raise UsageError(f"expected one of {', '.join(QUEUE_DISCIPLINES)}, got {value!r}",
                         argument=argument)
    return text


def parse_queue_limit(value: Any, argument: str | None = "--queue-limit") -> QueueLimit:
    """``200 packets`` (or ``200p``), a size (``1MiB``), or both joined by ``,`` or ``+``
    (``+`` inside a per-direction value: up=200p+1MiB,down=1MiB)."""
    packets = size = None
    for part in re.split(r"[,+]", str(value)):
        match = re.fullmatch(r"\s*(\d+)\s*(?:p|packets?|frames?)\s*", part)
        if match:
            packets = int(match.group(1))
        else:
            size = parse_size(part.strip(), argument)
    if packets == 0 or size == 0 or (packets is None and size is None):
        raise UsageError(f"expected N packets, a size (e.g. 1MiB) or both, got {value!r}",
                         argument=argument)
    return QueueLimit(packets, size)


@dataclass(frozen=True)
class Queue(Impairment):
    """A bottleneck's queue: its discipline (None: droptail) and limit (None: the
    bottleneck's default). No stage of its own: the rate or trace stage in front of which
    it stands carries it (``params`` is its part of theirs)."""

    discipline: str | None = None
    limit: QueueLimit | None = None
    kind: ClassVar[str] = "queue"
    runs_in: ClassVar[str] = "relay"
    FIELDS: ClassVar[dict[str, Field]] = {
        "queue": Field("queue", parse_queue),
        "queue_limit": Field("queue_limit", parse_queue_limit, lambda q: q.text()),
    }

    @staticmethod
    def check_directions(directions: dict[str, DirectionSpec],
                         preset_name: str | None) -> None:
        """A queue setting needs a bottleneck to queue at in its direction."""
        for name, direction in directions.items():
            asked = [k for k in ("queue", "queue_limit") if getattr(direction, k) is not None]
            if asked and direction.rate_bps is None and direction.trace is None:
                key = asked[0]
                raise UsageError(f"{key} ({name}) sets the queue in front of the link's "
                                 "bottleneck; give a rate or a trace for that direction too",
                                 argument=f"preset {preset_name!r}: {key}" if preset_name
                                 else f"--{key.replace('_', '-')}")

    @property
    def name(self) -> str:
        return self.discipline or "droptail"

    def params(self) -> dict[str, Any]:
        return {"queue": self.name,
                "limit_packets": self.limit.packets if self.limit else None,
                "limit_bytes": self.limit.bytes if self.limit else None}
