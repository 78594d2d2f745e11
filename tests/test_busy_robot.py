"""The tuned profiles on a busy robot (issue 38): short versions of the busy-robot study.

512 KiB at 30 Hz over wifi-severe (PER 20 %) with the tuner's profile, while 2 CPU-bound
competitors per core run beside the probes (bench/cpu.py). Every sample must arrive at the
publish rate with no stall, and the cell's tuner verdict must say it holds. At 4 per core
the tuned Fast DDS writer needs 81 % of the share the scheduler leaves it and the stream
stopped after its first sample (46 of 300, 10 s with nothing, docs/RESULTS.md "A busy
robot"); Cyclone's serial repair loop wakes too late there: the tuner refuses both
(tests/test_tune_stall.py), and a bench cell at that load records the refusal.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import require_root
from linklab.link import competitors

# alone (make test runs it after the others, one at a time): it loads the CPU with competitors
pytestmark = [pytest.mark.integration, pytest.mark.alone]
REPO = Path(__file__).resolve().parents[1]


def bench(tmp_path: Path, text: str) -> dict:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(text)
    out = tmp_path / "runs"
    result = subprocess.run([sys.executable, "-m", "linklab.cli", "bench", str(scenario),
                             "--out", str(out)], capture_output=True, text=True, cwd=REPO,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    (run_dir,) = [p for p in out.iterdir() if (p / "run.json").exists()]
    (row,) = pq.read_table(run_dir / "cells.parquet").to_pylist()
    return row


@pytest.mark.parametrize("middleware, per_core", [("fastdds", 2), ("cyclonedds", 2)])
def test_the_tuned_profile_holds_512kib_at_30hz_beside_cpu_bound_competitors(
        tmp_path, middleware, per_core):
    require_root()
    row = bench(tmp_path, f"""\
name: busy-{middleware}
fixed:
  middleware: {middleware}
  profile: optimized
  history: profile
  link: wifi-severe
  payload: 512KiB
  rate: 30Hz
  count: 240
  warmup: 1s
  cpu_load: {per_core}/core
""")
    seen = json.dumps({k: row.get(k) for k in (
        "status", "failure_reason", "received", "published", "reception_rate_hz",
        "stall_max_s", "latency_mean_ms", "cpu_load_processes", "cpu_load_cpu_s",
        "tuner_verdict")}, default=str)
    # the competitors really ran beside it, per_core per core, burning CPU all the cell
    assert row["cpu_load_processes"] == per_core * competitors.online_cpus(), seen
    assert row["cpu_load_cpu_s"] > 0.5 * row["cpu_load_wall_s"], seen
    assert row["status"] == "ok", seen
    assert row["received"] == row["published"] == 240, seen
    assert row["reception_rate_hz"] >= 29.0, seen
    assert row["stall_max_s"] < 1.0, seen
    assert row["tuner_verdict"].startswith("FEASIBLE"), seen
