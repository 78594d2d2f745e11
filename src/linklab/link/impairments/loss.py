"""Bernoulli packet loss: the ``loss`` field, run by the kernel (nft at the receiver)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from linklab.errors import UsageError
from linklab.link.direction_spec import DirectionSpec
from linklab.link.impairments.base import Field, Impairment, IngressStage, chain_counter
from linklab.link.topology import PathView
from linklab.units import format_percent, parse_fraction

# The kernel loss stage draws ``numgen random mod LOSS_RESOLUTION`` per packet (LossStage):
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


def steps_text(threshold: int) -> str:
    """The loss a stage applies, as a percentage that reads 100 % (0 %) only when every
    (no) packet is dropped: 99.9999 % is not rounded up to 100 %."""
    text = format_percent(threshold / LOSS_RESOLUTION)
    if text in ("100 %", "0 %") and 0 < threshold < LOSS_RESOLUTION:
        text = f"{threshold * 100 / LOSS_RESOLUTION:.4f}".rstrip("0").rstrip(".") + " %"
    return text


@dataclass
class LossStage(IngressStage):
    """Bernoulli packet loss: ``numgen random mod 1000000 < N drop`` on ingress (loss in
    steps of 0.0001 %: LOSS_RESOLUTION). A loss of every step (N = 1000000, e.g. a
    radio curve at a distance beyond its range: radio_curve.py) is a plain ``drop`` of
    every packet: nft refuses ``< 1000000`` ("exceeds valid range 0-999999"), since
    ``mod 1000000`` never reaches it. Dropped packets are counted either way."""

    loss: float
    kind: ClassVar[str] = "loss"
    FIELDS: ClassVar[dict[str, Field]] = {"loss": Field("loss", parse_loss, format_percent)}

    def __post_init__(self) -> None:
        if not 0.0 <= self.loss <= 1.0:   # what would reach nft otherwise: refused here
            raise ValueError(f"a loss stage takes 0..1, not {self.loss!r}")

    @classmethod
    def from_direction(cls, spec: DirectionSpec,
                       trace_start: str | None) -> list[Impairment]:
        return [cls(spec.loss)] if spec.loss > 0 else []

    @property
    def threshold(self) -> int:
        return loss_steps(self.loss)

    @property
    def drops_all(self) -> bool:
        return self.threshold >= LOSS_RESOLUTION

    def params(self) -> dict[str, Any]:
        return {"loss": self.loss, "text": steps_text(self.threshold)}

    def rule(self, drop_counter: str) -> str:
        """The nft rule that drops (pure: what ``install`` adds)."""
        draw = "" if self.drops_all else (
            f"numgen random mod {LOSS_RESOLUTION} < {self.threshold} ")
        return f"{draw}counter name \"{drop_counter}\" drop"

    def ingress_rule(self, path: PathView) -> str:
        return self.rule(chain_counter(path, self.kind, "drop"))
