"""Loss in bursts: the ``burst_loss`` field (a Gilbert-Elliott model), run by the relay."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from linklab.emu.directives import GilbertElliott
from linklab.emu.parse import gemodel_fields, split_directions
from linklab.errors import UsageError
from linklab.link.direction_spec import BurstLoss
from linklab.link.impairments.base import Field, Impairment
from linklab.units import format_percent, parse_fraction


def parse_burst_loss(value: Any, argument: str | None) -> BurstLoss:
    if isinstance(value, str):  # netem's form, gemodel:p,r,1-h,1-k (linklab.emu.parse)
        value = gemodel_fields(value, argument or "--loss-model")
    if not isinstance(value, Mapping) or not {"p", "r"} <= set(value):
        raise UsageError("expected a mapping with p, r (and optionally loss_good, loss_bad)",
                         argument=argument)
    return BurstLoss(**{k: parse_fraction(v, argument) for k, v in value.items()})


@dataclass
class BurstLossStage(Impairment):
    model: BurstLoss
    kind: ClassVar[str] = "burst_loss"
    runs_in: ClassVar[str] = "relay"
    relay_kind: ClassVar[str | None] = "loss"
    FIELDS: ClassVar[dict[str, Field]] = {
        "burst_loss": Field("burst_loss", parse_burst_loss, vars)}
    setting: ClassVar[str | None] = "burst_loss"

    @classmethod
    def from_flag(cls, text: str, flag: str) -> Any:
        value = split_directions(text, flag)
        for one in (value.values() if isinstance(value, dict) else [value]):
            gemodel_fields(one)  # fail here, naming --loss-model
        return value

    def params(self) -> dict[str, Any]:
        m = self.model
        text = "gemodel:" + ",".join(format_percent(v) for v in (m.p, m.r, m.loss_bad,
                                                                  m.loss_good))
        return {**asdict(m), "text": text.replace(" ", "")}

    def relay_stage(self) -> GilbertElliott:
        m = self.model
        return GilbertElliott(m.p, m.r, one_minus_h=m.loss_bad, one_minus_k=m.loss_good)
