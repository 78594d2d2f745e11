"""The relay's stages: one dataclass per stage of its pipeline (emu/src/stages/*.rs).

Each stage knows its line in the relay's configuration file (``directive``), with
every quantity in base units (ns, bit/s, bytes, probabilities). Quantities here are
SI (seconds, bit/s, bytes, fractions), as ``linklab.units`` parses them. A link's
impairments (``linklab.link.impairments``) each say which of these stages they become.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from linklab.errors import UsageError

DISTRIBUTIONS = ("uniform", "normal", "pareto", "paretonormal")


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def _p(value: float) -> str:
    return repr(float(value))


@dataclass(frozen=True)
class Delay:
    """Constant one-way delay plus jitter (netem ``delay D J distribution X``).

    Frames keep their order unless ``reorder`` is set (then a frame may overtake
    one that drew a longer delay)."""

    delay_s: float
    jitter_s: float = 0.0
    distribution: str = "uniform"
    reorder: bool = False
    kind: str = field(default="delay", init=False)

    def directive(self) -> str:
        return (f"delay delay_ns={_ns(self.delay_s)} jitter_ns={_ns(self.jitter_s)} "
                f"dist={self.distribution} reorder={int(self.reorder)}")


@dataclass(frozen=True)
class _Chance:
    """A stage that acts on each frame with probability ``p``: ``<verb> p=P``."""

    p: float
    verb: ClassVar[str] = ""

    def directive(self) -> str:
        return f"{self.verb} p={_p(self.p)}"


@dataclass(frozen=True)
class Loss(_Chance):
    """Independent (Bernoulli) loss with probability ``p``."""

    kind: str = field(default="loss", init=False)
    verb: ClassVar[str] = "loss model=bernoulli"


@dataclass(frozen=True)
class GilbertElliott:
    """Burst loss as netem's ``loss gemodel p r 1-h 1-k``: Good -> Bad with ``p``,
    Bad -> Good with ``r``; loss probability ``1-h`` in Bad, ``1-k`` in Good."""

    p: float
    r: float
    one_minus_h: float = 1.0
    one_minus_k: float = 0.0
    kind: str = field(default="loss", init=False)

    def directive(self) -> str:
        return (f"loss model=gemodel p={_p(self.p)} r={_p(self.r)} "
                f"1-h={_p(self.one_minus_h)} 1-k={_p(self.one_minus_k)}")


@dataclass(frozen=True)
class FourStateLoss:
    """netem's ``loss state p13 p31 p32 p23 p14`` (4-state Markov chain)."""

    p13: float
    p31: float
    p32: float = 0.0
    p23: float = 1.0
    p14: float = 0.0
    kind: str = field(default="loss", init=False)

    def directive(self) -> str:
        return (f"loss model=state p13={_p(self.p13)} p31={_p(self.p31)} p32={_p(self.p32)} "
                f"p23={_p(self.p23)} p14={_p(self.p14)}")


@dataclass(frozen=True)
class Rate:
    """Rate limit with a queue (``queue``: droptail, headdrop or codel) of ``limit_packets``
    or ``limit_bytes``.

    Without ``burst_bytes`` the link serializes frames at ``rate_bps`` (like netem's
    ``rate``); with it, it is a token bucket of that depth. ``overhead_bytes`` are
    charged per frame on top of its length."""

    rate_bps: float
    limit_packets: int | None = None
    limit_bytes: int | None = None
    overhead_bytes: int = 0
    burst_bytes: int = 0
    queue: str = "droptail"
    kind: str = field(default="rate", init=False)

    def directive(self) -> str:
        text = f"rate rate_bps={_p(self.rate_bps)} overhead={self.overhead_bytes}"
        if self.burst_bytes:
            text += f" burst={self.burst_bytes}"
        return text + _queue_part(self.queue, self.limit_packets, self.limit_bytes)


# The relay's queue disciplines (emu/src/stages/queue.rs): drop the newcomer at the limit,
# drop the oldest, or CoDel (RFC 8289, target 5 ms, interval 100 ms). Without a limit
# a queue holds at most QUEUE_DEFAULT_LIMIT_BYTES (and a rate stage 1000 frames).
QUEUE_DISCIPLINES = ("droptail", "headdrop", "codel")
QUEUE_DEFAULT_LIMIT_BYTES = 64 << 20


def _queue_part(queue: str, limit_packets: int | None, limit_bytes: int | None) -> str:
    """The queue part of a directive (rate and trace stages queue the same way)."""
    if queue not in QUEUE_DISCIPLINES:
        raise UsageError(f"queue {queue!r}: expected one of {', '.join(QUEUE_DISCIPLINES)}")
    text = f" queue={queue}" if queue != "droptail" else ""
    if limit_packets:
        text += f" limit_packets={limit_packets}"
    if limit_bytes:
        text += f" limit_bytes={limit_bytes}"
    return text


@dataclass(frozen=True)
class Outage:
    """Scheduled outages: ``windows`` of (start, length) seconds after the relay's
    epoch, repeating every ``period_s`` when set. Frames in a window are dropped."""

    windows: tuple[tuple[float, float], ...]
    period_s: float = 0.0
    kind: str = field(default="outage", init=False)

    def directive(self) -> str:
        windows = ",".join(f"{_ns(s)}:{_ns(length)}" for s, length in self.windows)
        return f"outage windows={windows} period_ns={_ns(self.period_s)}"


@dataclass(frozen=True)
class OnOff:
    """Stochastic on/off link (Mahimahi's ``mm-onoff``): exponential on and off
    times with the given means; frames sent while off are dropped. With
    ``log_path`` the relay writes each transition (``on|off <monotonic ns>``)."""

    mean_on_s: float
    mean_off_s: float
    log_path: Path | None = None
    kind: str = field(default="onoff", init=False)

    def directive(self) -> str:
        text = f"onoff mean_on_ns={_ns(self.mean_on_s)} mean_off_ns={_ns(self.mean_off_s)}"
        if self.log_path is not None:
            text += f" log={self.log_path}"
        return text


@dataclass(frozen=True)
class Trace:
    """Mahimahi packet-delivery trace: one 1504-byte delivery opportunity per line
    (millisecond timestamps), repeating with the period of the last line."""

    path: Path
    limit_packets: int | None = None
    limit_bytes: int | None = None
    queue: str = "droptail"
    kind: str = field(default="trace", init=False)

    def directive(self) -> str:
        text = f"trace file={Path(self.path).resolve()}"
        return text + _queue_part(self.queue, self.limit_packets, self.limit_bytes)


@dataclass(frozen=True)
class Duplicate(_Chance):
    """Each frame is sent twice with probability ``p``."""

    kind: str = field(default="duplicate", init=False)
    verb: ClassVar[str] = "duplicate"


@dataclass(frozen=True)
class Corrupt(_Chance):
    """One random bit of a frame's network-layer data flips with probability ``p``."""

    kind: str = field(default="corrupt", init=False)
    verb: ClassVar[str] = "corrupt"


def _number(value: float) -> str:
    """A base-unit number as the relay reads it: ``5``, ``2.4``, ``inf``."""
    value = float(value)
    if value == float("inf"):
        return "inf"
    return str(int(value)) if value.is_integer() else repr(value)


@dataclass(frozen=True)
class Medium:
    """The shared 802.11 medium of both directions (emu/src/medium/): one ``medium`` line
    per relay configuration, beside the ``stage`` lines (which run before it). Every value
    in base units; the meaning of each is linklab.link.medium's (where users write them)."""

    standard: str            # a | n | ac | ax
    band_ghz: float          # 2.4 | 5 | 6
    width_mhz: int
    nss: int
    mcs: int
    gi_ns: int
    per: float               # unicast MPDU error probability after a clean PPDU
    multicast_per: float     # the same for group-addressed frames (basic rate, no retry)
    retry_limit: int
    cw_min: int
    cw_max: int
    aifsn: int
    ampdu_frames: int
    ampdu_bytes: int
    ppdu_max_ns: int
    queue_packets: int
    queue_bytes: int         # 0: no byte limit
    bg_stations: int
    bg_load_bps: float       # each background station's offered load; inf: saturated
    bg_frame_bytes: int
    per_bytes: int = 0       # per is for an MPDU of this many bytes (0: for every MPDU)
    log: str = ""            # a per-frame log file ("": none)
    # the robot-AP channel's changes during the run (``medium_step`` lines), times rising
    steps: tuple[MediumStep, ...] = ()
    kind: str = field(default="medium", init=False)

    def lines(self) -> list[str]:
        """The ``medium`` line and its ``medium_step`` lines."""
        return [self.directive(), *(step.directive() for step in self.steps)]

    def directive(self) -> str:
        values = [("standard", self.standard), ("band_ghz", _number(self.band_ghz)),
                  ("width_mhz", self.width_mhz), ("nss", self.nss), ("mcs", self.mcs),
                  ("gi_ns", self.gi_ns), ("per", _number(self.per)),
                  ("per_bytes", self.per_bytes),
                  ("multicast_per", _number(self.multicast_per)),
                  ("retry_limit", self.retry_limit), ("cw_min", self.cw_min),
                  ("cw_max", self.cw_max), ("aifsn", self.aifsn),
                  ("ampdu_frames", self.ampdu_frames), ("ampdu_bytes", self.ampdu_bytes),
                  ("ppdu_max_ns", self.ppdu_max_ns), ("queue_packets", self.queue_packets),
                  ("queue_bytes", self.queue_bytes), ("bg_stations", self.bg_stations),
                  ("bg_load_bps", _number(self.bg_load_bps)),
                  ("bg_frame_bytes", self.bg_frame_bytes), ("log", self.log)]
        if any(c.isspace() for c in self.log):
            raise UsageError(f"medium log {self.log!r}: a path without spaces")
        return "medium " + " ".join(f"{key}={value}" for key, value in values)


@dataclass(frozen=True)
class MediumStep:
    """From ``at_s`` after the medium's start, the robot-AP link (stations a and b) sends
    at ``mcs`` and loses an MPDU with ``per`` (group-addressed: ``multicast_per``), sized
    as the medium line's ``per_bytes`` says (emu/src/medium/steps.rs)."""

    at_s: float
    mcs: int
    per: float
    multicast_per: float

    def directive(self) -> str:
        return (f"medium_step at_ns={_ns(self.at_s)} mcs={self.mcs} per={_number(self.per)} "
                f"multicast_per={_number(self.multicast_per)}")


@dataclass(frozen=True)
class SimulatedLoad:
    """The offered load of station ``a`` or ``b`` in ``--simulate-medium`` (a ``sim``
    line): ``frame_bytes`` IP packets at ``load_bps`` (Poisson; inf: saturated)."""

    station: str
    load_bps: float
    frame_bytes: int = 1500

    def directive(self) -> str:
        return (f"sim {self.station} load_bps={_number(self.load_bps)} "
                f"frame_bytes={self.frame_bytes}")


Stage = (Delay | Loss | GilbertElliott | FourStateLoss | Rate | Outage | OnOff | Trace
         | Duplicate | Corrupt)
