"""The relay's 802.11 medium alone, in virtual time: ``linklab-emu --simulate-medium``.

No TAP devices and no root: the relay reads a configuration with a ``medium`` line and
the offered load of its two real stations (``sim a`` the robot, ``sim b`` the AP), runs
``seconds`` of virtual time from ``seed`` and prints one JSON object (emu/src/medium/
simulate.rs): per station (a, b, bg0..) offered and delivered frames and bit/s, drops at
the retry limit and at a full queue, collisions, MAC delay mean and p95; and the totals
throughput_bps (delivered IP bits/s of every station), collision_probability (collided
transmissions / transmissions), mean_ampdu_frames and busy_fraction. This is what checks
the medium against Bianchi's model (linklab.model.dcf) and against ns-3.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from linklab.emu.directives import Medium, SimulatedLoad
from linklab.emu.relay import relay_binary
from linklab.errors import EnvironmentProblem, LinklabError

FLAG = "--simulate-medium"


def simulation_config(medium: Medium, loads: Sequence[SimulatedLoad], seed: int = 1) -> str:
    """The configuration file ``--simulate-medium`` reads."""
    stations = [load.station for load in loads]
    if len(set(stations)) != len(stations) or not set(stations) <= {"a", "b"}:
        raise ValueError(f"sim lines for stations a and b at most once each, got {stations}")
    lines = [f"seed {seed}", *medium.lines(), *(load.directive() for load in loads)]
    return "\n".join(lines) + "\n"


def simulates_medium(binary: Path | None = None) -> bool:
    """Whether this relay has ``--simulate-medium`` (its --help says so)."""
    path = binary or relay_binary()
    result = subprocess.run([str(path), "--help"], capture_output=True, text=True, timeout=30)
    return FLAG in result.stdout + result.stderr


def simulate_medium(medium: Medium, loads: Sequence[SimulatedLoad], seconds: float,
                    seed: int = 1, binary: Path | None = None) -> dict[str, Any]:
    """Run the medium for ``seconds`` of virtual time; its JSON object."""
    path = binary or relay_binary()
    with tempfile.TemporaryDirectory(prefix="linklab-medium-") as folder:
        config = Path(folder) / "medium.conf"
        config.write_text(simulation_config(medium, loads, seed))
        try:
            result = subprocess.run([str(path), FLAG, str(config), "--seconds", f"{seconds:g}"],
                                    capture_output=True, text=True, timeout=600)
        except FileNotFoundError as error:
            raise EnvironmentProblem(f"cannot run the link emulator {path}: {error}") from None
    if result.returncode != 0:
        why = (result.stderr.strip().splitlines() or [f"exit status {result.returncode}"])[-1]
        raise LinklabError(f"the medium simulation failed: {why}")
    return json.loads(result.stdout)
