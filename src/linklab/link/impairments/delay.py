"""One-way delay and its variation: the ``delay``, ``jitter`` and ``jitter_distribution``
fields, run by the relay (one relay stage for both: a constant delay plus jitter)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from linklab.emu.directives import Delay as RelayDelay
from linklab.emu.directives import Stage as RelayDirective
from linklab.emu.parse import parse_distribution
from linklab.link.direction_spec import DirectionSpec
from linklab.link.impairments.base import Field, Impairment
from linklab.units import format_duration, parse_duration


def parse_delay(value: Any, argument: str | None) -> float:
    return parse_duration(value, argument, allow_zero=True)


def parse_jitter_distribution(value: Any, argument: str | None) -> str:
    return parse_distribution(str(value), argument or "--jitter-distribution")


@dataclass
class DelayStage(Impairment):
    delay_s: float
    kind: ClassVar[str] = "delay"
    runs_in: ClassVar[str] = "relay"
    relay_kind: ClassVar[str | None] = "delay"
    FIELDS: ClassVar[dict[str, Field]] = {
        "delay": Field("delay_s", parse_delay, format_duration)}
    setting: ClassVar[str | None] = "delay_s"

    def params(self) -> dict[str, Any]:
        return {"delay_s": self.delay_s, "text": format_duration(self.delay_s)}

    def relay_stage(self) -> RelayDelay:
        return RelayDelay(self.delay_s)


@dataclass
class JitterStage(Impairment):
    jitter_s: float
    distribution: str | None = None   # None: uniform, as netem without a table
    kind: ClassVar[str] = "jitter"
    runs_in: ClassVar[str] = "relay"
    relay_kind: ClassVar[str | None] = "delay"
    FIELDS: ClassVar[dict[str, Field]] = {
        "jitter": Field("jitter_s", parse_delay, format_duration),
        "jitter_distribution": Field("jitter_distribution", parse_jitter_distribution),
    }

    @classmethod
    def from_direction(cls, spec: DirectionSpec,
                       trace_start: str | None) -> list[Impairment]:
        if spec.jitter_s is None:
            return []
        return [cls(spec.jitter_s, spec.jitter_distribution)]

    def params(self) -> dict[str, Any]:
        return {"jitter_s": self.jitter_s, "distribution": self.distribution or "uniform",
                "text": format_duration(self.jitter_s)}

    def relay_stage(self) -> RelayDelay:
        return RelayDelay(0.0, self.jitter_s, self.distribution or "uniform")


def relay_directives(stages: list[Impairment]) -> tuple[RelayDirective, ...]:
    """The relay's stages of a direction's relay impairments (in pipeline order). Delay and
    jitter are one relay stage (a constant delay plus jitter), where the first of them
    stood; the distribution is the jitter's."""
    out: list[RelayDirective] = []
    delay = jitter = 0.0
    distribution = "uniform"
    delay_at: int | None = None
    for stage in stages:
        directive = stage.relay_stage()
        if not isinstance(directive, RelayDelay):
            out.append(directive)
            continue
        delay += directive.delay_s
        jitter += directive.jitter_s
        if isinstance(stage, JitterStage):
            distribution = directive.distribution
        if delay_at is None:
            delay_at = len(out)
            out.append(directive)
    if delay_at is not None:
        out[delay_at] = RelayDelay(delay, jitter, distribution)
    return tuple(out)
