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
# (lag_max_ms) and the time spent behind (behind_ms) for the record, and the lag's peaks
# (lag_peaks) from which the largest lag of any stretch of time is read (lag_max_since):
# a bench cell stores it (linklab.bench.simlag), as every latency through the medium
# includes it.
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
    # (end of a 100 ms period in simulated s, largest lag in it ms): the periods no later
    # one reached, oldest first (ns3/air.cc); None from a program that predates
    # them (then only lag_max_ms is known)
    lag_peaks: tuple[tuple[float, float], ...] | None = None
    lag_peaks_from_s: float = 0.0   # the peaks are complete for windows from here on

    def lag_figures(self) -> dict[str, Any]:
        """The lag as plain data (a stage's counters carry it into every snapshot)."""
        return {"pid": self.pid, "sim_s": self.sim_s, "lag_ms": self.lag_ms,
                "lag_max_ms": self.lag_max_ms, "lag_max_at_s": self.lag_max_at_s,
                "lag_peaks": None if self.lag_peaks is None else [list(p) for p in
                                                                  self.lag_peaks],
                "lag_peaks_from_s": self.lag_peaks_from_s}

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


def lag_max_since(figures: dict[str, Any], since_s: float | None) -> float:
    """The largest lag (ms) the simulation had after simulated time ``since_s`` (None:
    since it started), from ``AirStats.lag_figures()`` -- to within one 100 ms period:
    the period open at ``since_s`` counts whole, and one still open when the figures were
    written is not in them yet. Where the kept peaks do not reach back to ``since_s`` (a
    program without them, or past the cap) the answer is the largest lag since the start,
    an upper bound. With no period closed after ``since_s``, the latest lag."""
    peaks = figures.get("lag_peaks")
    if peaks is None or since_s is None or since_s < float(figures["lag_peaks_from_s"]):
        return float(figures["lag_max_ms"])
    for end_s, max_ms in peaks:
        if float(end_s) > since_s:
            return float(max_ms)
    return float(figures["lag_ms"])


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
                        stations=tuple(data["stations"]), pairs=tuple(data["pairs"]),
                        lag_peaks=None if "lag_peaks" not in data else tuple(
                            (float(end), float(value)) for end, value in data["lag_peaks"]),
                        lag_peaks_from_s=float(data.get("lag_peaks_from_s", 0.0)))
    except (OSError, ValueError, KeyError, TypeError):
        return None
