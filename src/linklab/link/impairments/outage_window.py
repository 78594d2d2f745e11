"""Scheduled outages: the ``outage`` field (100 % loss in windows), run by the kernel."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from linklab.errors import UsageError
from linklab.link.direction_spec import Outage
from linklab.link.impairments.base import Field, IngressStage, chain_counter
from linklab.link.netops import nft_name
from linklab.link.topology import PathView
from linklab.units import parse_duration

OUTAGE_FORMS = ("START+LENGTH or START+LENGTH/PERIOD with units, e.g. 10s+20s "
                "(one 20 s outage 10 s after the link is up) or 5s+2s/30s (repeats every 30 s)")


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


@dataclass
class OutageStage(IngressStage):
    """100 % loss during scheduled windows. The rules are in place from the start; a
    scheduler process (``link/outage.py``) fills an nft chain with one drop rule when a
    window opens and flushes it when it closes."""

    outage: Outage
    kind: ClassVar[str] = "outage"
    FIELDS: ClassVar[dict[str, Field]] = {
        "outage": Field("outage", parse_outage, lambda o: o.text())}
    setting: ClassVar[str | None] = "outage"

    def params(self) -> dict[str, Any]:
        return {"schedule": self.outage.text(), "start_s": self.outage.start_s,
                "length_s": self.outage.length_s, "period_s": self.outage.period_s}

    def switch_chain(self, path: PathView) -> str:
        return "outage_" + nft_name(path.receiver.ifname)

    def own_chain(self, path: PathView) -> str:
        return self.switch_chain(path)

    def ingress_rule(self, path: PathView) -> str:
        return f"jump {self.switch_chain(path)}"

    def switch(self, net_table: str, path: PathView) -> dict[str, Any]:
        """What the scheduler needs to open/close a window on this path."""
        family = "inet" if path.receiver_shaped else "netdev"
        return {"netns": path.receiver.netns, "table": f"{family} {net_table}",
                "chain": self.switch_chain(path),
                "rule": f"counter name \"{chain_counter(path, self.kind, 'drop')}\" drop",
                "link": path.link, "direction": path.direction}
