"""bench/pooling.py and ``model-check --latency --with``: a cell's trials pooled."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from linklab.bench.pooling import cell_key, pool
from linklab.errors import UsageError
from linklab.probes.records import HEADER, MAGIC, RECORD_DTYPE, ROLE_SUBSCRIBER
from linklab.rundir import RunStore

REPO = Path(__file__).resolve().parents[1]
LINK = {"spec": {"mtu": 1500, "up": {"rate": "300 Mbit/s", "loss": "5 %"}}}


def subscriber(path: Path, latencies_ms, duplicate_first: bool = False) -> None:
    """A subscriber record file whose samples took ``latencies_ms`` (one duplicate of the
    first, which the pooled figures must not count)."""
    lat = np.asarray(latencies_ms, dtype=float)
    rec = np.zeros(len(lat) + duplicate_first, dtype=RECORD_DTYPE)
    seqs = list(range(len(lat))) + ([0] if duplicate_first else [])
    rec["seq"] = seqs
    rec["t_send_ns"] = np.array(seqs) * 33_000_000
    lat_ns = (np.concatenate([lat, lat[:1] + 5.0]) if duplicate_first else lat) * 1e6
    rec["t_recv_ns"] = rec["t_send_ns"] + lat_ns.astype(np.int64)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(HEADER.pack(MAGIC, RECORD_DTYPE.itemsize, ROLE_SUBSCRIBER) + rec.tobytes())


def run(root: Path, cells: dict[str, list[float]], trials: int = 1, status=None) -> RunStore:
    ids = [f"{c}-t{t}" if trials > 1 else c for c in cells for t in range(1, trials + 1)]
    store = RunStore.create(root, scenario={"name": "grid"}, options={}, planned=ids,
                            estimated_s=1.0, versions={})
    store.info["links"] = {"lossy": LINK}
    store.save_info()
    index = 0
    for cell, latencies in cells.items():
        for t in range(1, trials + 1):
            cell_id = f"{cell}-t{t}" if trials > 1 else cell
            trial_lat = [v * t for v in latencies]
            subscriber(root / "records" / cell_id / "sub.bin", trial_lat, duplicate_first=True)
            store.append({"index": index, "cell_id": cell_id, "trial": t,
                          "middleware": "cyclonedds", "profile": "optimized", "link": "lossy",
                          "payload_bytes": 32 * 1024, "rate_hz": 30.0, "topics": 1,
                          "status": (status or {}).get(cell_id, "ok"),
                          "latency_mean_ms": float(np.mean(trial_lat)),
                          "latency_p95_ms": float(np.percentile(trial_lat, 95))})
            index += 1
    return store


def test_a_cells_trials_pool_into_one_row_with_their_spread(tmp_path):
    store = run(tmp_path / "a", {"c32": [1.0, 2.0, 3.0, 4.0]}, trials=2)
    assert [cell_key(r) for r in store.rows] == ["c32", "c32"]
    (row,) = pool([(tmp_path / "a", store.rows)])
    both = [1.0, 2.0, 3.0, 4.0, 2.0, 4.0, 6.0, 8.0]
    assert row["cell_id"] == "c32" and row["trials"] == 2
    assert row["latency_mean_ms"] == pytest.approx(np.mean(both))
    assert row["latency_p95_ms"] == pytest.approx(np.percentile(both, 95))
    mean, p95 = np.mean(both), np.percentile(both, 95)
    trials = ([1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0])
    assert row["trial_spread"] == pytest.approx(max(
        max(abs(np.mean(t) - mean) / mean, abs(np.percentile(t, 95) - p95) / p95)
        for t in trials))  # trial 1's p95, 3.85 ms against the pooled 7.3
    assert row["trial_spread"] > 0.4


def test_other_runs_add_trials_a_failed_one_fails_the_cell_and_one_trial_stays(tmp_path):
    a = run(tmp_path / "a", {"x": [1.0, 2.0], "y": [3.0, 3.0], "z": [5.0]})
    b = run(tmp_path / "b", {"x": [1.0, 2.0], "y": [3.0, 3.0]}, status={"y": "failed"})
    rows = {r["cell_id"]: r for r in pool([(tmp_path / "a", a.rows), (tmp_path / "b", b.rows)])}
    assert rows["x"]["trials"] == 2 and rows["x"]["latency_mean_ms"] == pytest.approx(1.5)
    assert rows["y"]["status"] == "failed"
    assert rows["z"]["trials"] == 1 and math.isnan(rows["z"]["trial_spread"])
    assert rows["z"]["latency_mean_ms"] == 5.0


def test_a_missing_record_file_is_one_line_naming_it(tmp_path):
    a = run(tmp_path / "a", {"x": [1.0, 2.0]}, trials=2)
    (tmp_path / "a" / "records" / "x-t2" / "sub.bin").unlink()
    with pytest.raises(UsageError, match="x-t2/sub.bin"):
        pool([(tmp_path / "a", a.rows)])


def test_model_check_with_pools_runs_of_the_same_scenario_only(tmp_path):
    run(tmp_path / "a", {"x": [1.0, 2.0, 30.0]})
    run(tmp_path / "b", {"x": [1.0, 2.0, 30.0]})
    other = RunStore.create(tmp_path / "c", scenario={"name": "another"}, options={},
                            planned=[], estimated_s=1.0, versions={})
    other.save_info()
    command = [sys.executable, "-m", "linklab.cli", "model-check", "--latency",
               str(tmp_path / "a"), "--machine", "stored"]
    ok = subprocess.run(command + ["--with", str(tmp_path / "b"), "--json"],
                        capture_output=True, text=True, cwd=REPO, timeout=120)
    (cell,) = json.loads(ok.stdout)["cells"]
    assert ok.returncode == (0 if cell["within"] else 1), ok.stderr  # the verdict's exit
    one, both = np.percentile([1, 2, 30], 95), np.percentile([1, 2, 30] * 2, 95)
    assert cell["cell_id"] == "x" and cell["trials"] == 2  # equal runs: only the p95's
    assert cell["trial_spread"] == pytest.approx(abs(one - both) / both)  # interpolation
    bad = subprocess.run(command + ["--with", str(tmp_path / "c")], capture_output=True,
                         text=True, cwd=REPO, timeout=120)
    assert bad.returncode == 2 and "--with" in bad.stderr and "another" in bad.stderr
    assert bad.stderr.strip().count("\n") == 0
    alone = subprocess.run([sys.executable, "-m", "linklab.cli", "model-check",
                            str(tmp_path / "a"), "--with", str(tmp_path / "b")],
                           capture_output=True, text=True, cwd=REPO, timeout=120)
    assert alone.returncode == 2 and "--latency" in alone.stderr
