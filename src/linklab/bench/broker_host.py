"""Where a cell's broker (MQTT: mosquitto) or router (Zenoh) runs: ``broker_host``.

By default on the edge host, the subscriber's: the broker shares a host with an endpoint
and adds no hop of its own. Seed 004 (§3.1, Table 1, Fig. 5) ran its router/broker on a
third machine, and its tables have two MQTT columns: "MQTT-broker" (the broker on that
third host) and "MQTT-nobroker" (no broker host of its own; read here as the broker on
an endpoint's host -- README "Middlewares"). ``broker_host`` names the host: ``edge``,
``robot``, or a host with no endpoint -- e.g. ``robot2`` of a star with ``hosts: 2``,
a station of its own on the shared channel, so every message crosses the link twice
(publisher -> broker -> subscriber), as through the paper's third machine.

Checked before the run (bench.checks): a middleware without a broker or router, a host
the cell's topology does not have, and beds that place brokers themselves (a cluster's
pods, real hosts over SSH) are refused in one line naming ``broker_host``.
"""

from __future__ import annotations

from typing import Any

from linklab.bench.matrix import Cell
from linklab.errors import UsageError
from linklab.middleware import MIDDLEWARES

DEFAULT = "edge"


def broker_host(cell: Cell) -> str:
    """The host the cell's broker/router runs on."""
    return cell.broker_host or DEFAULT


def check_cell(cell: Cell, *, remote: bool) -> None:
    if cell.broker_host is None:
        return
    entry = MIDDLEWARES[cell.middleware]
    if not entry.brokered:
        brokered = ", ".join(n for n, m in MIDDLEWARES.items() if m.brokered)
        raise UsageError(f"{cell.broker_host}: {cell.middleware} runs no broker or router, "
                         f"so there is nothing to place; broker_host applies to {brokered}",
                         argument="broker_host")
    if remote or cell.topology == "cluster":
        where = "real hosts (hosts:)" if remote else "a cluster (its placement puts the " \
            "broker in the edge host's pod)"
        raise UsageError(f"{cell.broker_host}: placed on linklab's namespace testbeds only; "
                         f"on {where} remove broker_host", argument="broker_host")
    from linklab.bench.topics import topology_hosts

    known = topology_hosts(cell.topology, cell.hosts)
    if cell.broker_host not in known:
        hint = (" (a third host: topology: star with hosts: one more than the robots "
                "the endpoints use)" if cell.topology != "star" else
                " (raise hosts: for a station of its own)")
        raise UsageError(f"host {cell.broker_host!r} is not in the cell's {cell.topology} "
                         f"topology; accepted: {', '.join(known)}{hint}",
                         argument="broker_host")


def check_cells(cells: list[Cell], *, remote: bool, about: Any) -> None:
    """``check_cell`` for every cell, inside ``about(cell)`` (the error names the cell and
    the scenario's line)."""
    for cell in cells:
        with about(cell):
            check_cell(cell, remote=remote)
