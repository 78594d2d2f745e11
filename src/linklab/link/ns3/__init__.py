"""The ns-3 program of the radio medium (``ns3/linklab-ns3.cc``, built by scripts/setup.sh
into ``build/ns3/linklab-ns3``): where it is, and what its stats file says.

``calibrate`` (python -m linklab.link.ns3.calibrate) measures the loss-vs-distance curve
of paper 002 Fig. 4 with it; ``ceiling`` (python -m linklab.link.ns3.ceiling) measures how
much traffic the realtime simulation carries on this machine before it falls behind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linklab.errors import EnvironmentProblem

# The simulation is "behind" while its events run more than LAG_LIMIT_MS after their
# time (late events delay frames: the paper's one-way latency is 0.6 ms, Table III). It
# has fallen behind -- the link is taken down -- when it stays behind for LAG_HOLD_MS:
# a simulation offered more frames than it can simulate only gets later. A single late
# moment is not that: this machine is a VM whose CPU can be taken away for milliseconds
# (an idle medium here saw 6 ms once in 10 s), which delays every link, simulated or not;
# the simulation catches up within a few events. The stats file keeps the largest lag
# (lag_max_ms) and the time spent behind (behind_ms) for the record.
LAG_LIMIT_MS = 10.0
LAG_HOLD_MS = 500.0
# SCHED_FIFO priority of the simulation (as the emu relay's): other processes' load must
# not make it late.
PRIORITY = 10


def repo_root() -> Path:
    return Path(__file__).resolve().parents[4]


def ns3_binary() -> Path:
    """The built program, or EnvironmentProblem naming how to build it."""
    path = repo_root() / "build" / "ns3" / "linklab-ns3"
    if not path.exists():
        raise EnvironmentProblem(f"{path} is not built (the ns-3 radio medium): run "
                                 "scripts/setup.sh (it installs ns3, libns3-dev, libgsl-dev)")
    return path


@dataclass(frozen=True)
class AirStats:
    """The stats file the program rewrites every 100 ms of simulated time."""

    state: str                      # running | lagging | stopped
    pid: int
    sim_s: float
    lag_ms: float
    lag_max_ms: float
    lag_max_at_s: float
    lag_limit_ms: float
    lag_hold_ms: float
    behind_since_s: float
    behind_ms: float
    stations: tuple[dict[str, Any], ...]
    pairs: tuple[dict[str, Any], ...]

    def pair(self, src: str, dst: str) -> dict[str, Any]:
        for entry in self.pairs:
            if entry["src"] == src and entry["dst"] == dst:
                return entry
        return {"src": src, "dst": dst, "sent": 0, "acked": 0, "failed": 0, "delivered": 0}

    def lag_reason(self) -> str:
        return (f"the ns-3 simulation stayed more than {self.lag_limit_ms:g} ms behind real "
                f"time for {self.lag_hold_ms:g} ms (from {self.behind_since_s:.3f} s of the "
                f"simulation, lag then {self.lag_ms:.1f} ms): more traffic than this machine "
                "simulates in real time, so the link was taken down -- not a slow link "
                "(the ceiling: python -m linklab.link.ns3.ceiling)")


def read_stats(path: Path) -> AirStats | None:
    """The stats file, or None if it is not there (yet) or half-written."""
    try:
        data = json.loads(path.read_text())
        return AirStats(state=str(data["state"]), pid=int(data["pid"]),
                        sim_s=float(data["sim_s"]), lag_ms=float(data["lag_ms"]),
                        lag_max_ms=float(data["lag_max_ms"]),
                        lag_max_at_s=float(data["lag_max_at_s"]),
                        lag_limit_ms=float(data["lag_limit_ms"]),
                        lag_hold_ms=float(data["lag_hold_ms"]),
                        behind_since_s=float(data["behind_since_s"]),
                        behind_ms=float(data["behind_ms"]),
                        stations=tuple(data["stations"]), pairs=tuple(data["pairs"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
