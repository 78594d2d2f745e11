"""How far the ns-3 simulation (or the relay's 802.11 medium) lagged behind the wall clock
during a cell.

The ns-3 medium (radio: ns3, linklab.link.wires.ns3) runs in real time and may fall behind
by up to LAG_LIMIT_MS for LAG_HOLD_MS (~0.5 s) before it takes the link down
(linklab.link.ns3): a frame across it is delayed by the lag of the moment, so a latency
measured through it includes that lag. A cell stores the largest lag of its window
(``simulator_lag_max_ms``) so such latencies can be told apart.

The figures come from the cell's two snapshots (LinkBed.snapshot, before the publishers
start and after the probes stopped): every ``air`` stage carries the simulation's
``simulator`` figures (AirStats.lag_figures); the window is the simulated time between
them, to within one 100 ms stats period (linklab.link.ns3.lag_max_since).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from linklab.link.ns3 import lag_max_since


def _simulator(snapshot: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The simulation's figures in a snapshot (LinkBed.snapshot, or Testbed.counters
    alone), or None when no stage of it ran in a simulator."""
    if not snapshot:
        return None
    counters = snapshot.get("link", snapshot)
    for stage in (counters or {}).get("stages", []) or []:
        figures = stage.get("simulator")
        if isinstance(figures, dict):
            return figures
    return None


def _medium(snapshot: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The relay's 802.11 medium figures in a snapshot (a ``medium`` stage's counters:
    linklab.emu.relay.MediumStats), or None."""
    counters = (snapshot or {}).get("link", snapshot) or {}
    for stage in counters.get("stages", []) or []:
        figures = stage.get("medium")
        if isinstance(figures, dict) and figures.get("lag_max_ns") is not None:
            return figures
    return None


def simulator_lag_ms(before: dict[str, Any], after: dict[str, Any]) -> float | None:
    """The largest lag (ms) of the simulation between two snapshots; None when no
    simulator was on the link. A ``before`` without figures, or from another simulation
    process (another pid), counts from that process's start. The relay's 802.11 medium
    keeps one maximum since the relay started (emu/src/medium): that, an upper bound."""
    late = _simulator(after)
    if late is None:
        medium = _medium(after)
        return None if medium is None else float(medium["lag_max_ns"]) / 1e6
    early = _simulator(before)
    since_s = (float(early["sim_s"]) if early is not None and early.get("pid") == late.get("pid")
               else None)
    return lag_max_since(late, since_s)


# A lag above this is worth a note beside the cell's latencies: the paper's one-way
# latency on the medium is ~0.6 ms (002 Table III), so a millisecond of simulator lag is
# already of the order of what is measured.
NOTE_ABOVE_MS = 1.0


def simulator_lag_note(lag_ms: float | None) -> str | None:
    """One line for a cell's exit_note when the simulation lagged more than NOTE_ABOVE_MS
    during it, else None."""
    if lag_ms is None or lag_ms <= NOTE_ABOVE_MS:
        return None
    return (f"the simulated medium (ns-3, or the relay's 802.11 medium since it started) ran "
            f"up to {lag_ms:.1f} ms behind real time during the cell: latencies across it "
            "include up to that much")
