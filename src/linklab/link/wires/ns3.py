"""The ns3 wire: every station of a radio link joined by one ns-3 802.11a medium.

One ns-3 process per run (``linklab-ns3 air``, ns3/linklab-ns3.cc) runs in the run's ``ap``
namespace (the air; nothing is made in the root namespace). It opens one TAP per station
there, bridged to that station's Wi-Fi device, and this wire moves each TAP into its host's
namespace (the descriptor stays valid); the TAP carries the Wi-Fi device's MAC address.
The medium is built once for all links (``build_medium``); the links (robotK-edge,
radio_plan.py) are the station pairs the paper measures.

The simulation runs in real time. If it stays behind the wall clock by more than
``LAG_LIMIT_MS`` for ``LAG_HOLD_MS`` (linklab.link.ns3 says why), it takes the link down
(its TAPs vanish) and says so in its stats file: ``health`` shows the link down with the
reason, and ``faults`` makes any measurement across it void (the bench turns such a cell
into an error, never a slow link). A process that ends for any other reason also takes
its TAPs with it: down, never bypassed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, ClassVar

from linklab.emu.relay import pid_running
from linklab.errors import LinklabError
from linklab.link import made
from linklab.link.impairments import Impairment
from linklab.link.netops import NetOps
from linklab.link.ns3 import (
    LAG_HOLD_MS,
    LAG_LIMIT_MS,
    PRIORITY,
    AirStats,
    ns3_binary,
    read_stats,
)
from linklab.link.radio_plan import AIR_HOST, moves_of, positions_of
from linklab.link.system import Shell
from linklab.link.topology import LinkPlan
from linklab.link.wires import TUN_DEVICE, Wire, binary_problem, tun_usable

START_TIMEOUT_S = 10.0


def _files(state_path: Path) -> dict[str, Path]:
    stem = f"{state_path.stem}.ns3"
    return {"stats": state_path.with_name(stem + ".stats.json"),
            "log": state_path.with_name(stem + ".log")}


def _last_line(path: Path) -> str | None:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return None
    return lines[-1] if lines else None


class Ns3Wire(Wire):
    name: ClassVar[str] = "ns3"
    executes: ClassVar[frozenset[str]] = frozenset({"air"})
    priority: ClassVar[int] = -20   # only for links that have an air stage

    @classmethod
    def unavailable(cls) -> str | None:
        problem = binary_problem(ns3_binary)
        if problem is not None or tun_usable():
            return problem
        return f"{TUN_DEVICE} is not readable and writable for this user"

    def build_medium(self, net: NetOps, design: Any) -> None:
        journal = net.journal
        plan, radio = design.plan, design.spec.radio
        files = _files(journal.path)
        journal.record("ns-3 medium files", made.files([p.name for p in files.values()]))
        positions = positions_of(plan, radio)
        stations = [h for h in plan.hosts if h.addresses]
        air = plan.host(AIR_HOST)
        argv = [str(ns3_binary()), "air", "--tx-power", f"{radio.tx_power_dbm:.4f}",
                "--stats", str(files["stats"]), "--lag-limit-ms", f"{LAG_LIMIT_MS:g}",
                "--lag-hold-ms", f"{LAG_HOLD_MS:g}",
                "--priority", str(PRIORITY)]
        for host in stations:
            x, y = positions[host.name]
            argv += ["--station", f"{host.name},{host.interface},{x:.6f},{y:.6f}"]
        for name, x, y, seconds in moves_of(plan, radio):     # link.motion (radio.py)
            argv += ["--move", f"{name},{x:.6f},{y:.6f},{seconds:.6f}"]
        pid = journal.spawn("ns-3 medium", argv, netns=air.netns, log=files["log"])
        journal.update(ns3={"pid": pid, "stats": str(files["stats"]), "log": str(files["log"]),
                            "links": [link.name for link in plan.links]})
        self._wait_started(pid, files)
        for host in stations:
            net.ip(air.netns, ["link", "set", host.interface, "netns", host.netns],
                   undo=made.link(host.netns, host.interface),
                   what=f"TAP {host.interface} of the ns-3 medium into {host.netns}")

    @staticmethod
    def _wait_started(pid: int, files: dict[str, Path]) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            stats = read_stats(files["stats"])
            if stats is not None and stats.state == "running":
                return
            if not pid_running(pid):
                break
            time.sleep(0.02)
        why = _last_line(files["log"]) or (f"no TAP devices within {START_TIMEOUT_S:g} s"
                                           if pid_running(pid) else "it exited")
        raise LinklabError(f"the ns-3 medium did not start: {why}")

    def build(self, net: NetOps, link: LinkPlan, relay_stages: dict[str, list[Impairment]]) -> None:
        """Nothing per link: build_medium made every station's TAP."""

    # --- looking at it -------------------------------------------------------------------

    def _info(self) -> dict[str, Any] | None:
        journal = getattr(self, "journal", None)
        info = journal.state.get("ns3") if journal is not None else None
        return info if isinstance(info, dict) else None

    def _stats(self) -> tuple[dict[str, Any], AirStats | None] | None:
        info = self._info()
        if info is None:
            return None
        return info, read_stats(Path(info["stats"]))

    def counters(self, shell: Shell) -> dict[tuple[str, str, str], dict[str, Any]]:
        """Per link and direction: frames the receiver passed up (passed), and unicast
        frames the MAC sent that were not acknowledged -- retry limit reached, dropped by
        the full queue, or still queued (dropped); and the simulation's lag behind the
        wall clock (``simulator``: AirStats.lag_figures, the same for every link), which
        every frame across the medium may carry (linklab.bench.simlag reads a cell's)."""
        found = self._stats()
        if found is None or found[1] is None:
            return {}
        info, stats = found
        out = {}
        for link in info["links"]:
            robot = link.rsplit("-", 1)[0]
            for direction, (src, dst) in (("up", (robot, "edge")), ("down", ("edge", robot))):
                pair = stats.pair(src, dst)
                out[(link, direction, "air")] = {
                    "passed_packets": pair["delivered"], "passed_bytes": None,
                    "dropped_packets": max(0, pair["sent"] - pair["acked"]),
                    "dropped_bytes": None, "simulator": stats.lag_figures()}
        return out

    def _down_reason(self) -> str | None:
        found = self._stats()
        if found is None:
            return None
        info, stats = found
        if stats is not None and stats.state == "lagging":
            return stats.lag_reason()
        if not pid_running(info["pid"]):
            last = _last_line(Path(info["log"]))
            return "the ns-3 medium exited" + (f": {last}" if last else "")
        return None

    def health(self, shell: Shell) -> dict[str, str]:
        info = self._info()
        if info is None:
            return {}
        reason = self._down_reason()
        return {link: "up" if reason is None else f"down: {reason}" for link in info["links"]}

    def faults(self, shell: Shell) -> dict[str, str]:
        info = self._info()
        reason = self._down_reason() if info is not None else None
        return {} if reason is None else {link: reason for link in info["links"]}
