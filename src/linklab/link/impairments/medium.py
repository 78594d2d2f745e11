"""A link direction's station on the shared 802.11 medium (the ``medium`` field, issue 43).

Not a per-direction field: the medium (linklab.link.medium) is the whole link's, and the
relay runs one for both directions (its ``medium`` directive, after each direction's
stages). Each direction shows it as a stage of its own, so ``status`` lists what each
station sent: ``up`` is station a (the robot), ``down`` station b (the AP). Its counters
are that station's frames delivered and dropped (retry limit, queue overflow), and carry
the medium's whole figures (``medium``: every station, the lag) into every snapshot.

In a star the robots' links share one medium (one relay): robot K is station ``a``
(robot1), ``a2`` .. ``aN``; every link's ``down`` is the one AP ``b``, counted for that
robot (the AP's ``delivered_to`` and ``dropped_to``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from linklab.errors import LinklabError
from linklab.link.impairments.base import Impairment, StageCounters
from linklab.link.medium import MediumSpec
from linklab.link.netops import Snapshot
from linklab.link.topology import PathView

STATIONS = {"up": "a", "down": "b"}   # the relay's station that sends each direction


def station_name(direction: str, robot: int | None = None) -> str:
    """The relay's station that sends ``direction`` of a pair's link (robot None) or of a
    star's robot ``robot`` (0-based: robot1 is 0; the relay's link lines say a, a2, ...)."""
    side = STATIONS[direction]
    return f"{side}{robot + 1}" if side == "a" and robot else side


@dataclass
class MediumCounters(StageCounters):
    """A station's frames, and the medium's figures (stations, lag) as the relay wrote
    them (linklab.emu.relay.MediumStats.figures)."""

    medium: dict[str, Any] | None = field(default=None)


@dataclass
class MediumStage(Impairment):
    """One direction's sending station on the link's 802.11 medium."""

    medium: MediumSpec
    direction: str
    robot: int | None = None      # a star's robot (0-based); None: a pair's one robot
    kind: ClassVar[str] = "medium"
    runs_in: ClassVar[str] = "relay"
    relay_kind: ClassVar[str | None] = "medium"

    @property
    def station(self) -> str:
        return station_name(self.direction, self.robot)

    def params(self) -> dict[str, Any]:
        role = "robot" if self.direction == "up" else "AP"
        shared = "" if self.robot is None else ", one medium for the star's robots"
        return {"station": self.station, "role": role, **self.medium.describe(),
                "text": f"{self.medium.text()}; station {self.station} ({role}){shared}"}

    def relay_stage(self) -> Any:
        raise LinklabError("the medium is the relay's medium directive, not a stage line "
                           "(linklab.emu.config.RelayConfig.medium)")

    def counters(self, snapshot: Snapshot, path: PathView) -> MediumCounters | None:
        found = snapshot.relay.get((path.link, path.direction, self.kind))
        return MediumCounters(**found) if found else None


def medium_stages(medium: MediumSpec | None, robot: int | None = None
                  ) -> dict[str, list[Impairment]]:
    """{direction: [its MediumStage]} for a medium link (a star's robot ``robot``, 0-based);
    {} without one."""
    if medium is None:
        return {}
    return {direction: [MediumStage(medium, direction, robot)] for direction in STATIONS}
