"""What ``up`` will build, decided before anything is touched: the topology, every
link's stages and the wire that carries each (pure: validation and planning only)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from linklab.errors import UsageError
from linklab.link.cluster_plan import (
    DEFAULT_UNDERLAY_RATE,
    ClusterOptions,
    take_options,
)
from linklab.link.impairments import Impairment, direction_stages
from linklab.link.impairments.medium import medium_stages
from linklab.link.names import check_name
from linklab.link.presets import get_preset
from linklab.link.spec import DIRECTIONS, LinkSpec, build_spec
from linklab.link.spec_checks import check_spec
from linklab.link.topology import LinkPlan, TopologyPlan, plan_topology
from linklab.link.wires import Wire, choose_wire

DEFAULT_NAME = "default"


@dataclass
class Design:
    """Everything ``up`` will build, decided before anything is touched."""

    name: str
    plan: TopologyPlan
    spec: LinkSpec
    stages: dict[str, dict[str, list[Impairment]]]           # link -> direction -> stages
    wires: dict[str, type[Wire]]                        # link -> wire class
    inputs: dict[str, Any] = field(default_factory=dict)


def cluster_spec(topology: str, preset: str | None, fields: dict[str, Any] | None,
                 overrides: dict[str, Any]) -> tuple[ClusterOptions | None, dict[str, Any],
                                                     Any]:
    """(cluster options or None, the link's own fields, its LinkSpec): a cluster's
    underlay runs at 1 Gbit/s when neither the preset nor the fields give a rate."""
    options, link_fields = take_options(topology, dict(overrides))
    spec = build_spec(preset, fields, link_fields)
    if options is not None and spec.up.rate_bps is None and spec.down.rate_bps is None:
        link_fields["rate"] = DEFAULT_UNDERLAY_RATE
        spec = build_spec(preset, fields, link_fields)
    return options, link_fields, spec


def _check_medium_carrier(topology: str, wire: str | None) -> None:
    """The 802.11 medium runs in the emulator's relay: a pair's link (robot and AP), or a
    star's robot links all on one medium (one relay, the AP one station)."""
    if topology not in ("pair", "star"):
        why = ("its ap routes between two links, an AP bridges"
               if topology == "chain" else "its nodes' underlay is a wired network")
        raise UsageError(f"a medium link needs topology pair or star (the robots and one AP "
                         f"on one channel); not {topology}: {why}", argument="--topology")
    if wire not in (None, "emu"):
        raise UsageError(f"the 802.11 medium runs in the emulator's relay (wire emu); the "
                         f"{wire} wire cannot carry it", argument="--wire")


def _link_medium(plan: TopologyPlan, link: LinkPlan, medium: Any
                 ) -> dict[str, list[Impairment]]:
    """A link's medium stages: a pair's link, or a star's robot link K (its robot K - 1 of
    one medium); a star's ap-edge link is the AP's wired side, not on the air."""
    if plan.kind != "star":
        return medium_stages(medium)
    return medium_stages(medium, link.index - 1) if link.a.host.startswith("robot") else {}


def design(preset: str | None = None, *, preset_fields: Mapping[str, Any] | None = None,
           topology: str = "pair", hosts: int = 1, name: str = DEFAULT_NAME,
           wire: str | None = None, **overrides: Any) -> Design:
    """Validate a request and decide the topology, stages and wires (pure, no changes).

    ``preset_fields``: a preset's fields (``presets.resolve_preset``, e.g. from a user's
    file; ``preset`` is then only its name). Recorded in ``inputs`` with the rest, so
    any process reopens the run without that file."""
    check_name(name)
    if preset_fields is None and preset:
        preset_fields = get_preset(preset)
    fields = dict(preset_fields) if preset_fields is not None else None
    if overrides.get("medium") is not None or "medium" in (fields or {}):
        _check_medium_carrier(topology, wire)   # (before a cluster's underlay rate)
    # a cluster's own fields (overlay, encryption, datapath, nodes, pods): cluster_plan.py
    options, link_fields, spec = cluster_spec(topology, preset, fields, overrides)
    check_spec(spec, link_fields)
    plan = plan_topology(topology, name, hosts, cluster=options, mtu=spec.mtu)
    if plan.kind == "star" and spec.medium is not None and spec.medium.motion is not None:
        raise UsageError("medium motion moves a pair's one robot; a star's robots keep "
                         "their channel (leave motion out, or use topology pair)",
                         argument="medium.motion")
    stages: dict[str, dict[str, list[Impairment]]] = {}
    if spec.radio is not None:  # a distance-based Wi-Fi medium (paper 002)
        from linklab.link.radio_plan import radio_design
        plan, stages = radio_design(plan, spec)
    wires: dict[str, type[Wire]] = {}
    for link in plan.links:
        if spec.radio is None:
            stages[link.name] = {d: direction_stages(spec.direction(d), link.carries,
                                                     spec.trace_start)
                                 for d in DIRECTIONS}
            for d, extra in _link_medium(plan, link, spec.medium).items():  # after the relay stages
                stages[link.name][d] = [*stages[link.name][d], *extra]
        needed = {s.kind for d in DIRECTIONS for s in stages[link.name][d]
                  if s.runs_in == "relay"}
        wires[link.name] = choose_wire(needed, wire)
    inputs = {"preset": preset, "preset_fields": fields, "topology": topology,
              "hosts": hosts, "wire": wire,
              "overrides": {k: v for k, v in overrides.items() if v is not None}}
    return Design(name, plan, spec, stages, wires, inputs)
