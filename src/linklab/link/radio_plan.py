"""How a radio link (radio.py) maps onto linklab's hosts, links and stages.

``radio: ns3`` -- one shared 802.11a medium for every host of the topology (002 Fig. 2):

``pair``  robot 10.77.0.1, edge 10.77.0.100: one link ``robot-edge``.
``star``  robot1..N 10.77.0.1..N and edge 10.77.0.100: links ``robotK-edge``, one per robot,
          all ending at the edge's one radio (the edge port is the same TAP in each).

Every host has one interface, a TAP bridged to its ns-3 station; the ns-3 process runs
in the run's ``ap`` namespace (the air), which has no address and no bridge: stations
reach each other directly (ad hoc), robot to robot too, and share one channel -- the
paper's setting. The star keeps its host names, so a scenario's ``topology: star`` puts
the publisher on edge (the centre, Fig. 3) and the subscribers on robot1..N. A link is the
pair (robot, edge) the paper measures: its ``air`` stage per direction shows the
distance and counts the frames that crossed (delivered) and did not (unicast frames sent
and not acknowledged). ``chain`` has a routed hop, which an ad-hoc medium does not have:
refused.

``radio: curve`` -- the same topologies as without a radio (veth pair; star through the
ap's bridge), with one loss stage per robot link and direction, its loss read from the
measured curve at that robot's distance from the edge (radio_curve.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from linklab.errors import UsageError
from linklab.link.impairments import Impairment, StageCounters
from linklab.link.names import netns_name
from linklab.link.netops import Snapshot
from linklab.link.radio import (
    RadioSpec,
    format_metres,
    motion_targets,
    separation_m,
    station_positions,
)
from linklab.link.spec import DIRECTIONS, LinkSpec
from linklab.link.topology import HostPlan, LinkPlan, PathView, Port, TopologyPlan

AIR_HOST = "ap"


@dataclass
class AirCounters(StageCounters):
    """An air stage's frames, and the simulation's lag behind the wall clock (the ns-3
    wire's ``simulator`` figures: linklab.link.ns3.AirStats.lag_figures)."""

    simulator: dict[str, Any] | None = field(default=None)


@dataclass
class AirStage(Impairment):
    """One direction of one station pair across the ns-3 medium (run by the ns3 wire)."""

    sender: str
    receiver: str
    distance_m: float
    tx_power_dbm: float
    # a moving robot (radio.Motion): its distance at the end and how long it takes
    moves_to_m: float | None = None
    moves_over_s: float | None = None
    kind: ClassVar[str] = "air"
    runs_in: ClassVar[str] = "relay"

    def params(self) -> dict[str, Any]:
        where = format_metres(self.distance_m)
        out = {"model": "ns-3 802.11a ad hoc, 54 Mbit/s, log-distance (exponent 3)",
               "sender": self.sender, "receiver": self.receiver,
               "distance_m": self.distance_m, "tx_power_dbm": self.tx_power_dbm}
        if self.moves_to_m is not None:
            out |= {"moves_to_m": self.moves_to_m, "moves_over_s": self.moves_over_s}
            where += f"->{format_metres(self.moves_to_m)} over {self.moves_over_s:g}s"
        return out | {"text": f"{where} {self.tx_power_dbm:g}dBm"}

    def counters(self, snapshot: Snapshot, path: PathView) -> AirCounters | None:
        found = snapshot.relay.get((path.link, path.direction, self.kind))
        return AirCounters(**found) if found else None


def robots_of(plan: TopologyPlan) -> list[str]:
    return [h.name for h in plan.hosts if h.name.startswith("robot")]


def moves_of(plan: TopologyPlan, radio: RadioSpec) -> list[tuple[str, float, float, float]]:
    """(robot, x, y, seconds) per moving robot: where it goes, over how long (radio.motion)."""
    targets = motion_targets(radio, robots_of(plan), positions_of(plan, radio))
    assert radio.motion is not None or not targets
    return [(robot, x, y, radio.motion.over_s) for robot, (x, y) in targets.items()]


def positions_of(plan: TopologyPlan, radio: RadioSpec) -> dict[str, tuple[float, float]]:
    """Every station's position (metres); positions naming no host of the plan refused."""
    robots = robots_of(plan)
    known = {"edge", *robots}
    for host, _, _ in radio.positions:
        if host not in known:
            raise UsageError(f"{host} is not a host of this {plan.kind} topology (hosts: "
                             f"{', '.join(sorted(known))})", argument="positions")
    return station_positions(radio, robots)


def tap_name(tag: str, host: str) -> str:
    """The TAP of a station; unique in the air namespace, where all of them are made."""
    return f"{tag}-{host}"


def medium_plan(plan: TopologyPlan) -> TopologyPlan:
    """The ns-3 medium's plan for a pair or star (see the module docstring)."""
    if plan.kind not in ("pair", "star"):
        raise UsageError(f"a radio link (distance, positions) joins hosts by one ad-hoc "
                         f"medium: topology pair or star, not {plan.kind}",
                         argument="--topology")
    stations = [h for h in plan.hosts if h.addresses]
    hosts = []
    ports: dict[str, Port] = {}
    for host in stations:
        tap = tap_name(plan.tag, host.name)
        ports[host.name] = Port(host.name, host.netns, tap)
        hosts.append(HostPlan(host.name, host.netns, ((tap, host.addresses[0][1]),),
                              (("224.0.0.0/4", None, tap),)))
    hosts.append(HostPlan(AIR_HOST, netns_name(plan.run, AIR_HOST), ()))
    links = tuple(LinkPlan(f"{robot}-edge", ports[robot], ports["edge"],
                           frozenset({"air"}), k)
                  for k, robot in enumerate(robots_of(plan)))
    notes = ("one shared 802.11a ad-hoc channel, simulated by ns-3 in the ap namespace; "
             "robots reach each other directly",)
    return replace(plan, hosts=tuple(hosts), links=links, notes=notes)


def radio_design(plan: TopologyPlan, spec: LinkSpec
                 ) -> tuple[TopologyPlan, dict[str, dict[str, list[Impairment]]]]:
    """(the plan, link -> direction -> stages) of a link whose spec has a radio."""
    radio = spec.radio
    assert radio is not None
    positions = positions_of(plan, radio) if plan.kind in ("pair", "star") else {}
    if radio.mode == "ns3":
        plan = medium_plan(plan)
        targets = motion_targets(radio, robots_of(plan), positions)
        stages: dict[str, dict[str, list[Impairment]]] = {}
        for link in plan.links:
            robot = link.a.host
            d = round(separation_m(positions[robot], positions["edge"]), 6)
            moves = ((radio.motion.to_m, radio.motion.over_s)
                     if radio.motion is not None and robot in targets else (None, None))
            stages[link.name] = {
                "up": [AirStage(robot, "edge", d, radio.tx_power_dbm, *moves)],
                "down": [AirStage("edge", robot, d, radio.tx_power_dbm, *moves)]}
        return plan, stages
    if plan.kind not in ("pair", "star"):
        raise UsageError(f"a radio link places robots around the edge: topology pair or "
                         f"star, not {plan.kind}", argument="--topology")
    from linklab.link.radio_curve import CurveLossStage, measured_curve

    curve = measured_curve()
    stages = {}
    for link in plan.links:
        robot = link.a.host
        if not robot.startswith("robot"):
            stages[link.name] = {d: [] for d in DIRECTIONS}   # the star's ap-edge link
            continue
        d = round(separation_m(positions[robot], positions["edge"]), 6)
        loss = curve.loss_at_power(d, radio.tx_power_dbm)
        # the power is named only when it is not the curve's own (then it moved the curve)
        power = None if radio.tx_power_dbm == curve.tx_power_dbm else radio.tx_power_dbm
        stages[link.name] = {direction: ([CurveLossStage(loss, d, power)] if loss > 0 else [])
                             for direction in DIRECTIONS}
    return plan, stages
