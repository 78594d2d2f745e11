"""What a link should do, as plain data: a preset plus overrides -> :class:`LinkSpec`.

Pure functions only. Directions: ``up`` is robot -> edge, ``down`` is edge -> robot.
A user value applies to both directions (``--loss 1%``) or to each one
(``--loss up=1%,down=20%``).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from linklab.errors import UsageError
from linklab.link.radio import RADIO_FIELDS, RadioSpec, apply_field, conflicts
from linklab.units import (
    format_bitrate,
    format_duration,
    format_percent,
    format_size,
    parse_bitrate,
    parse_duration,
    parse_fraction,
    parse_size,
)

DIRECTIONS = ("up", "down")
MIN_MTU, MAX_MTU = 576, 9000
OUTAGE_FORMS = ("START+LENGTH or START+LENGTH/PERIOD with units, e.g. 10s+20s "
                "(one 20 s outage 10 s after the link is up) or 5s+2s/30s (repeats every 30 s)")


@dataclass(frozen=True)
class Outage:
    """100 % loss from ``start_s`` for ``length_s`` seconds after t0, repeating every
    ``period_s`` seconds if set."""

    start_s: float
    length_s: float
    period_s: float | None = None

    def windows(self, until_s: float) -> list[tuple[float, float]]:
        """Outage windows (start, end) in seconds after t0 that begin before ``until_s``."""
        out: list[tuple[float, float]] = []
        begin = self.start_s
        while begin < until_s:
            out.append((begin, begin + self.length_s))
            if self.period_s is None:
                break
            begin += self.period_s
        return out

    def active(self, t_s: float) -> bool:
        if t_s < self.start_s:
            return False
        offset = t_s - self.start_s
        if self.period_s is not None:
            offset = math.fmod(offset, self.period_s)
        return offset < self.length_s

    def text(self) -> str:
        base = f"{_dur(self.start_s)}+{_dur(self.length_s)}"
        return base if self.period_s is None else f"{base}/{_dur(self.period_s)}"


def _dur(seconds: float) -> str:
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{round(seconds * 1000, 3):g}ms"


_OUTAGE = re.compile(r"^\s*(?P<start>[^+/]+)\+(?P<length>[^+/]+)(?:/(?P<period>[^+/]+))?\s*$")


def parse_outage(text: str, argument: str | None = "--outage") -> Outage:
    match = _OUTAGE.match(str(text))
    if not match:
        raise UsageError(f"expected {OUTAGE_FORMS}, got {text!r}", argument=argument)
    try:
        start = parse_duration(match["start"], allow_zero=True)
        length = parse_duration(match["length"])
        period = parse_duration(match["period"]) if match["period"] else None
    except UsageError:
        raise UsageError(f"expected {OUTAGE_FORMS}, got {text!r}", argument=argument) from None
    if period is not None and period <= length:
        raise UsageError(f"the period in {text!r} must be longer than the outage; "
                         f"expected {OUTAGE_FORMS}", argument=argument)
    return Outage(start, length, period)


@dataclass(frozen=True)
class BurstLoss:
    """Gilbert-Elliott loss (two-state Markov chain) -- run by the userspace emulator.

    p: P(good -> bad), r: P(bad -> good), loss_good (1-k) and loss_bad (1-h) per packet.
    """

    p: float
    r: float
    loss_good: float = 0.0
    loss_bad: float = 1.0


# What the queue in front of a direction's bottleneck (its rate or trace) does when full
# or standing: the relay's three queues (emu/src/stages/queue.rs, after Mahimahi's).
QUEUE_DISCIPLINES = ("droptail", "headdrop", "codel")


@dataclass(frozen=True)
class QueueLimit:
    """The most the bottleneck's queue holds: frames, bytes, or both."""

    packets: int | None = None
    bytes: int | None = None

    def text(self) -> str:
        parts = [f"{self.packets} packets"] if self.packets else []
        if self.bytes:
            parts.append(format_size(self.bytes))
        return ", ".join(parts)


@dataclass(frozen=True)
class DirectionSpec:
    """The impairments of one direction of the impaired link."""

    loss: float = 0.0                 # Bernoulli packet loss (fraction)
    rate_bps: float | None = None     # bottleneck rate (bit/s); None = not limited
    outage: Outage | None = None
    delay_s: float | None = None      # one-way delay     (userspace emulator)
    jitter_s: float | None = None     # delay variation    (userspace emulator)
    jitter_distribution: str | None = None  # uniform | normal | pareto | paretonormal (emu)
    burst_loss: BurstLoss | None = None  # Gilbert-Elliott (userspace emulator)
    trace: str | None = None          # Mahimahi-style delivery trace file (userspace emulator)
    queue: str | None = None          # the bottleneck's queue discipline (userspace emulator)
    queue_limit: QueueLimit | None = None  # and its limit (None: the emulator's default)

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"loss": format_percent(self.loss)}
        if self.rate_bps is not None:
            out["rate"] = format_bitrate(self.rate_bps)
        if self.outage is not None:
            out["outage"] = self.outage.text()
        if self.delay_s is not None:
            out["delay"] = format_duration(self.delay_s)
        if self.jitter_s is not None:
            out["jitter"] = format_duration(self.jitter_s)
        if self.jitter_distribution is not None:
            out["jitter_distribution"] = self.jitter_distribution
        if self.burst_loss is not None:
            out["burst_loss"] = vars(self.burst_loss)
        if self.trace is not None:
            out["trace"] = self.trace
        if self.queue is not None:
            out["queue"] = self.queue
        if self.queue_limit is not None:
            out["queue_limit"] = self.queue_limit.text()
        return out


@dataclass(frozen=True)
class LinkSpec:
    preset: str | None
    up: DirectionSpec = field(default_factory=DirectionSpec)
    down: DirectionSpec = field(default_factory=DirectionSpec)
    mtu: int = 1500
    source: str = ""
    radio: RadioSpec | None = None    # a distance-based Wi-Fi medium (radio.py, paper 002)
    # TCP congestion control set in every namespace of the run; None keeps the host's
    # default (which the run records: it differs between machines, cubic on stock Debian)
    tcp_congestion: str | None = None
    # When the relay's traces start: "first-packet" (the first frame of the link), a UTC
    # time (TRACE_START_FORMS), or None: when the relay starts
    trace_start: str | None = None

    def direction(self, name: str) -> DirectionSpec:
        return self.up if name == "up" else self.down

    def describe(self) -> dict[str, Any]:
        out = {"preset": self.preset, "mtu": self.mtu, "up": self.up.describe(),
               "down": self.down.describe(), "source": self.source}
        if self.radio is not None:
            out["radio"] = self.radio.describe()
        if self.tcp_congestion is not None:
            out["tcp_congestion"] = self.tcp_congestion
        if self.trace_start is not None:
            out["trace_start"] = self.trace_start
        return out


# --- parsing user values ---------------------------------------------------------------

# The kernel loss stage draws ``numgen random mod LOSS_RESOLUTION`` per packet (stages.py):
# loss in steps of 0.0001 %. A loss it cannot apply within 1 % of itself is refused, not
# rounded (0.005 % in steps of 0.01 % would have been 0, i.e. no loss at all).
LOSS_RESOLUTION = 1_000_000
LOSS_TOLERANCE = 0.01


def loss_steps(value: float) -> int:
    """The loss stage's threshold for ``value`` (drop when random mod RESOLUTION < it)."""
    return round(value * LOSS_RESOLUTION)


def parse_loss(text: str | float, argument: str | None = "--loss") -> float:
    value = parse_fraction(text, argument)
    if value >= 1.0:
        raise UsageError(f"{text!r} would drop every packet; use --outage for a dead link",
                         argument=argument)
    if value > 0 and abs(loss_steps(value) - value * LOSS_RESOLUTION) > (
            LOSS_TOLERANCE * value * LOSS_RESOLUTION):
        raise UsageError(f"{text!r} cannot be applied: the loss stage draws in steps of "
                         f"{format_percent(1 / LOSS_RESOLUTION)}; give a multiple of it",
                         argument=argument)
    return value


def parse_rate(text: str, argument: str | None = "--rate") -> float:
    return parse_bitrate(text, argument)


def parse_mtu(text: str | int, argument: str | None = "--mtu") -> int:
    if isinstance(text, int) or re.fullmatch(r"\s*\d+\s*", str(text)):
        value = int(text)
    else:
        value = parse_size(str(text), argument)
    if not MIN_MTU <= value <= MAX_MTU:
        raise UsageError(f"{text!r} is outside {MIN_MTU}..{MAX_MTU} bytes "
                         "(e.g. 1500, 1450 for VXLAN, 1380 for WireGuard)", argument=argument)
    return value


TCP_CONGESTION_FORMS = "a TCP congestion control of the kernel, e.g. cubic, reno or bbr"


def parse_tcp_congestion(text: Any, argument: str | None = "--tcp-congestion") -> str:
    """A congestion control's name (whether this kernel has it: spec_checks)."""
    value = str(text).strip()
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,15}", value):
        raise UsageError(f"expected {TCP_CONGESTION_FORMS}, got {text!r}", argument=argument)
    return value


def per_direction(text: Any, parse: Callable[[Any, str | None], Any],
                  argument: str) -> dict[str, Any]:
    """``"1%"`` -> {up: .01, down: .01}; ``"up=1%,down=20%"`` -> each direction."""
    if isinstance(text, Mapping):
        parts = dict(text)
    elif isinstance(text, str) and "=" in text:
        parts = {}
        for item in text.split(","):
            key, _, value = item.partition("=")
            parts[key.strip()] = value.strip()
    else:
        value = parse(text, argument)
        return {"up": value, "down": value}
    unknown = set(parts) - set(DIRECTIONS)
    if unknown or not parts:
        raise UsageError(f"expected a value for both directions or up=VALUE,down=VALUE, "
                         f"got {text!r}", argument=argument)
    return {key: parse(value, argument) for key, value in parts.items()}


# Fields a preset (or the Python API) may set, and how each is parsed.
_FIELD_PARSERS: dict[str, tuple[str, Callable[[Any, str | None], Any]]] = {
    "loss": ("loss", parse_loss),
    "rate": ("rate_bps", parse_rate),
    "outage": ("outage", parse_outage),
    "delay": ("delay_s", lambda v, a: parse_duration(v, a, allow_zero=True)),
    "jitter": ("jitter_s", lambda v, a: parse_duration(v, a, allow_zero=True)),
    "jitter_distribution": ("jitter_distribution", lambda v, a: _parse_distribution(v, a)),
    "burst_loss": ("burst_loss", lambda v, a: _parse_burst(v, a)),
    "trace": ("trace", lambda v, a: str(v)),
    "queue": ("queue", lambda v, a: parse_queue(v, a)),
    "queue_limit": ("queue_limit", lambda v, a: parse_queue_limit(v, a)),
}
# Every field a preset may set besides the link-wide ones and up:/down: (preset_file.py
# reads this): the per-direction stage fields, then the radio medium's fields (radio.py),
# which apply to the whole link and are refused under up:/down:.
STAGE_FIELDS = (*_FIELD_PARSERS, *RADIO_FIELDS)
# Fields for the whole run, one value each (never per direction).
LINK_WIDE_FIELDS = ("mtu", "tcp_congestion", "trace_start")
TRACE_START_FORMS = "first-packet, now, or a UTC time such as 2026-11-28T10:30:00Z"


def _parse_distribution(value: Any, argument: str | None) -> str:
    from linklab.emu.parse import parse_distribution

    return parse_distribution(str(value), argument or "--jitter-distribution")


def _parse_burst(value: Any, argument: str | None) -> BurstLoss:
    if isinstance(value, str):  # netem's form, gemodel:p,r,1-h,1-k (linklab.emu.parse)
        from linklab.emu.parse import gemodel_fields

        value = gemodel_fields(value, argument or "--loss-model")
    if not isinstance(value, Mapping) or not {"p", "r"} <= set(value):
        raise UsageError("expected a mapping with p, r (and optionally loss_good, loss_bad)",
                         argument=argument)
    return BurstLoss(**{k: parse_fraction(v, argument) for k, v in value.items()})


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


def _check_trace_start(spec: LinkSpec, preset_name: str | None) -> None:
    if spec.trace_start is not None and spec.up.trace is None and spec.down.trace is None:
        raise UsageError("trace_start says when a trace starts; this link has no trace",
                         argument=f"preset {preset_name!r}: trace_start" if preset_name
                         else "--trace-start")


def _check_queue(spec: LinkSpec, preset_name: str | None) -> None:
    """A queue setting needs a bottleneck to queue at in its direction."""
    for name in DIRECTIONS:
        direction = spec.direction(name)
        asked = [k for k in ("queue", "queue_limit") if getattr(direction, k) is not None]
        if asked and direction.rate_bps is None and direction.trace is None:
            key = asked[0]
            raise UsageError(f"{key} ({name}) sets the queue in front of the link's "
                             "bottleneck; give a rate or a trace for that direction too",
                             argument=f"preset {preset_name!r}: {key}" if preset_name
                             else f"--{key.replace('_', '-')}")


def build_spec(preset_name: str | None, preset: Mapping[str, Any] | None,
               overrides: Mapping[str, Any]) -> LinkSpec:
    """A preset's fields, then the user's overrides (each replaces the preset's value)."""
    spec = LinkSpec(preset=preset_name, source=str((preset or {}).get("source", "")))
    spec = _apply(spec, {k: v for k, v in (preset or {}).items()
                         if k not in ("description", "source")}, preset_name)
    spec = _apply(spec, {k: v for k, v in overrides.items() if v is not None}, None)
    _check_radio(spec, preset_name)
    _check_queue(spec, preset_name)
    _check_trace_start(spec, preset_name)
    return spec


def _stage_fields_set(spec: LinkSpec) -> set[str]:
    """The per-direction fields that hold a setting (in either direction)."""
    out = set()
    for d in DIRECTIONS:
        direction = spec.direction(d)
        if direction.loss > 0:
            out.add("loss")
        for name, (attr, _) in _FIELD_PARSERS.items():
            if name != "loss" and getattr(direction, attr) is not None:
                out.add(name)
    return out


def _check_radio(spec: LinkSpec, preset_name: str | None) -> None:
    """A radio link takes no stage that would be left without effect (radio.conflicts)."""
    for key, message in conflicts(spec.radio, _stage_fields_set(spec), spec.mtu):
        raise UsageError(message, argument=f"preset {preset_name!r}: {key}" if preset_name
                         else f"--{key.replace('_', '-')}")


def _apply(spec: LinkSpec, fields: Mapping[str, Any], preset_name: str | None) -> LinkSpec:
    where = f"preset {preset_name!r}" if preset_name else None
    for key, value in fields.items():
        argument = f"{where}: {key}" if where else f"--{key.replace('_', '-')}"
        if key == "mtu":
            spec = replace(spec, mtu=parse_mtu(value, argument))
        elif key == "tcp_congestion":
            spec = replace(spec, tcp_congestion=parse_tcp_congestion(value, argument))
        elif key == "trace_start":
            spec = replace(spec, trace_start=parse_trace_start(value, argument))
        elif key in RADIO_FIELDS:
            spec = replace(spec, radio=apply_field(spec.radio, key, value, argument))
        elif key in DIRECTIONS:
            if not isinstance(value, Mapping):
                raise UsageError("expected a mapping of stage fields", argument=argument)
            for sub_key, sub_value in value.items():
                spec = _set_direction(spec, key, sub_key, sub_value, f"{argument}.{sub_key}")
        elif key in _FIELD_PARSERS:
            for direction, parsed in per_direction(
                    value, _FIELD_PARSERS[key][1], argument).items():
                spec = replace(spec, **{direction: replace(
                    spec.direction(direction), **{_FIELD_PARSERS[key][0]: parsed})})
        else:
            raise UsageError(f"unknown field {key!r}; known: {', '.join(LINK_WIDE_FIELDS)}, "
                             f"up, down, {', '.join(STAGE_FIELDS)}",
                             argument=where or "--" + key)
    return spec


def _set_direction(spec: LinkSpec, direction: str, key: str, value: Any,
                   argument: str) -> LinkSpec:
    if key in RADIO_FIELDS:
        raise UsageError(f"{key} applies to the whole radio medium, not to one direction; "
                         f"give it beside up:/down:", argument=argument)
    if key not in _FIELD_PARSERS:
        raise UsageError(f"unknown field {key!r}; known: {', '.join(_FIELD_PARSERS)}",
                         argument=argument)
    attr, parse = _FIELD_PARSERS[key]
    return replace(spec, **{direction: replace(spec.direction(direction),
                                               **{attr: parse(value, argument)})})
