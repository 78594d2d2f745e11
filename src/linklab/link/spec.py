"""What a link should do, as plain data: a preset plus overrides -> :class:`LinkSpec`.

Pure functions only. Directions: ``up`` is robot -> edge, ``down`` is edge -> robot.
A user value applies to both directions (``--loss 1%``) or to each one
(``--loss up=1%,down=20%``). Each per-direction field, its parser and how it is shown
belong to its impairment's class (``linklab.link.impairments``); this module holds the
link-wide fields and puts a preset and the user's overrides together.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from linklab.errors import UsageError
from linklab.link.impairments import (
    DIRECTIONS,
    FIELDS,
    DirectionSpec,
    Queue,
    TraceStage,
    describe_direction,
)
from linklab.link.impairments.trace import parse_trace_start
from linklab.link.medium import MediumSpec, merge
from linklab.link.medium_conflicts import conflicts as medium_conflicts
from linklab.link.radio import RADIO_FIELDS, RadioSpec, apply_field, conflicts
from linklab.units import parse_size

MIN_MTU, MAX_MTU = 576, 9000


@dataclass(frozen=True)
class LinkSpec:
    preset: str | None
    up: DirectionSpec = field(default_factory=DirectionSpec)
    down: DirectionSpec = field(default_factory=DirectionSpec)
    mtu: int = 1500
    source: str = ""
    radio: RadioSpec | None = None    # a distance-based Wi-Fi medium (radio.py, paper 002)
    medium: MediumSpec | None = None  # the relay's shared 802.11 medium (medium.py, issue 43)
    # TCP congestion control set in every namespace of the run; None keeps the host's
    # default (which the run records: it differs between machines, cubic on stock Debian)
    tcp_congestion: str | None = None
    # When the relay's traces start: "first-packet" (the first frame of the link), a UTC
    # time (TRACE_START_FORMS), or None: when the relay starts
    trace_start: str | None = None

    def direction(self, name: str) -> DirectionSpec:
        return self.up if name == "up" else self.down

    def describe(self) -> dict[str, Any]:
        out = {"preset": self.preset, "mtu": self.mtu, "up": describe_direction(self.up),
               "down": describe_direction(self.down), "source": self.source}
        if self.radio is not None:
            out["radio"] = self.radio.describe()
        if self.medium is not None:
            out["medium"] = self.medium.describe()
        if self.tcp_congestion is not None:
            out["tcp_congestion"] = self.tcp_congestion
        if self.trace_start is not None:
            out["trace_start"] = self.trace_start
        return out


# --- parsing user values ---------------------------------------------------------------

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


# Every field a preset may set besides the link-wide ones and up:/down: (preset_file.py
# reads this): the per-direction stage fields (impairments.FIELDS), then the radio
# medium's fields (radio.py) and the 802.11 medium (medium.py), which apply to the whole
# link and are refused under up:/down:.
MEDIUM_FIELD = "medium"
STAGE_FIELDS = (*FIELDS, *RADIO_FIELDS, MEDIUM_FIELD)
# Fields for the whole run, one value each (never per direction).
LINK_WIDE_FIELDS = ("mtu", "tcp_congestion", "trace_start")


def build_spec(preset_name: str | None, preset: Mapping[str, Any] | None,
               overrides: Mapping[str, Any]) -> LinkSpec:
    """A preset's fields, then the user's overrides (each replaces the preset's value)."""
    spec = LinkSpec(preset=preset_name, source=str((preset or {}).get("source", "")))
    spec = _apply(spec, {k: v for k, v in (preset or {}).items()
                         if k not in ("description", "source")}, preset_name)
    spec = _apply(spec, {k: v for k, v in overrides.items() if v is not None}, None)
    _check_radio(spec, preset_name)
    _check_medium(spec, preset_name)
    directions = {name: spec.direction(name) for name in DIRECTIONS}
    Queue.check_directions(directions, preset_name)
    TraceStage.check_start(spec.trace_start, directions, preset_name)
    return spec


def _stage_fields_set(spec: LinkSpec) -> set[str]:
    """The per-direction fields that hold a setting (in either direction)."""
    out = set()
    for d in DIRECTIONS:
        direction = spec.direction(d)
        if direction.loss > 0:
            out.add("loss")
        for name, field_ in FIELDS.items():
            if name != "loss" and getattr(direction, field_.attr) is not None:
                out.add(name)
    return out


def _check_radio(spec: LinkSpec, preset_name: str | None) -> None:
    """A radio link takes no stage that would be left without effect (radio.conflicts)."""
    for key, message in conflicts(spec.radio, _stage_fields_set(spec), spec.mtu):
        raise UsageError(message, argument=f"preset {preset_name!r}: {key}" if preset_name
                         else f"--{key.replace('_', '-')}")


def _check_medium(spec: LinkSpec, preset_name: str | None) -> None:
    """A medium link takes no stage the medium replaces (medium_conflicts)."""
    for key, message in medium_conflicts(spec.medium, _stage_fields_set(spec), spec.mtu,
                                         spec.radio is not None):
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
        elif key == MEDIUM_FIELD:   # key by key over the preset's medium
            spec = replace(spec, medium=merge(spec.medium, value, argument))
        elif key in DIRECTIONS:
            if not isinstance(value, Mapping):
                raise UsageError("expected a mapping of stage fields", argument=argument)
            for sub_key, sub_value in value.items():
                spec = _set_direction(spec, key, sub_key, sub_value, f"{argument}.{sub_key}")
        elif key in FIELDS:
            for direction, parsed in per_direction(value, FIELDS[key].parse, argument).items():
                spec = replace(spec, **{direction: replace(
                    spec.direction(direction), **{FIELDS[key].attr: parsed})})
        else:
            raise UsageError(f"unknown field {key!r}; known: {', '.join(LINK_WIDE_FIELDS)}, "
                             f"up, down, {', '.join(STAGE_FIELDS)}",
                             argument=where or "--" + key)
    return spec


def _set_direction(spec: LinkSpec, direction: str, key: str, value: Any,
                   argument: str) -> LinkSpec:
    if key == MEDIUM_FIELD:
        raise UsageError("the 802.11 medium is shared by both directions; give medium "
                         "beside up:/down:", argument=argument)
    if key in RADIO_FIELDS:
        raise UsageError(f"{key} applies to the whole radio medium, not to one direction; "
                         f"give it beside up:/down:", argument=argument)
    if key not in FIELDS:
        raise UsageError(f"unknown field {key!r}; known: {', '.join(FIELDS)}",
                         argument=argument)
    field_ = FIELDS[key]
    return replace(spec, **{direction: replace(spec.direction(direction),
                                               **{field_.attr: field_.parse(value, argument)})})
