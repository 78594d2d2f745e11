"""The tuned profiles keep large samples flowing over PER 20 % and recover from a stall.

Short versions of issue 15's cases, through ``linklab bench`` on a real namespace pair
with the real middlewares (each test well under 60 s):

* 512 KiB at 30 Hz over wifi-severe with a 2 s outage, Fast DDS and Cyclone DDS. The
  outage leaves the writer owing its whole history, as a reader that discovers the
  writer late does (the random trigger of the 512 KiB collapse, docs/RESULTS.md). With
  the old tuner (reader limits = N_HC, heartbeat piggyback on, no pacing, Cyclone's
  16.7 ms loop and default defragmentation/retransmit limits) nothing arrived after the
  outage until the publisher stopped; these tests fail then.
* 256 KiB at 30 Hz over wifi-severe, Cyclone DDS: every sample at 30 Hz (the old
  16.7 ms Cyclone loop repairs one sample per NACK and fell to 4-12 Hz).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import require_root

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[1]
PUBLISH_S = 8.0  # 240 samples at 30 Hz
OUTAGE_S = 2.0


def bench(tmp_path: Path, text: str) -> dict:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(text)
    out = tmp_path / "runs"
    result = subprocess.run([sys.executable, "-m", "linklab.cli", "bench", str(scenario),
                             "--out", str(out)], capture_output=True, text=True, cwd=REPO,
                            timeout=240)
    assert result.returncode == 0, result.stderr[-2000:]
    (run_dir,) = [p for p in out.iterdir() if (p / "run.json").exists()]
    (row,) = pq.read_table(run_dir / "cells.parquet").to_pylist()
    return row


def summary(row: dict) -> str:
    keys = ("status", "failure_reason", "received", "published", "reception_rate_hz",
            "latency_mean_ms", "wire_amplification", "rate_dropped_packets", "outage_at_s",
            "rate_bins_hz", "history_applied")
    return json.dumps({k: row.get(k) for k in keys}, default=str)


@pytest.mark.parametrize("middleware", ["fastdds", "cyclonedds"])
def test_512kib_over_per_20_recovers_after_a_stall(tmp_path, middleware):
    require_root()
    row = bench(tmp_path, f"""\
name: itest-stall-{middleware}
fixed:
  middleware: {middleware}
  profile: optimized
  history: profile
  payload: 512KiB
  rate: 30Hz
  count: 240
  warmup: 1s
  outage_start: 1s
  grace: 10s
  link: {{preset: wifi-severe, outage: 0s+{OUTAGE_S:g}s}}
""")
    seen = summary(row)
    assert row["status"] == "ok", seen
    # the outage began outage_start after the first measured sample: the publisher starts
    # on the discovery gate's go, which also arms the outage clock (a sample is one 33 ms
    # tick late at most; it began 1.3 s late when the clock guessed the start)
    assert abs(row["outage_at_s"] - 1.0) < 0.2, seen
    # back to the publish rate while the publisher still publishes: from 2 s after the
    # link returned to the end of publishing (the old tuner: 0-3 Hz there)
    first = math.ceil(row["outage_at_s"] + OUTAGE_S + 2.0)
    bins = row["rate_bins_hz"][first:int(PUBLISH_S)]
    assert len(bins) >= 2, seen
    assert sum(bins) / len(bins) >= 24, seen
    # the writer is paced (Fast DDS) or repairs one sample at a time (Cyclone): the
    # link's queue never overflowed
    assert row["rate_dropped_packets"] == 0, seen


def test_cyclone_256kib_over_per_20_delivers_every_sample_at_30hz(tmp_path):
    require_root()
    row = bench(tmp_path, """\
name: itest-cyclone-256k
fixed:
  middleware: cyclonedds
  profile: optimized
  history: profile
  payload: 256KiB
  rate: 30Hz
  count: 150
  warmup: 1s
  grace: 10s
  link: wifi-severe
""")
    seen = summary(row)
    assert row["status"] == "ok", seen
    assert row["received"] == row["published"] == 150, seen
    assert row["reception_rate_hz"] >= 28, seen
    assert row["latency_mean_ms"] < 500, seen
