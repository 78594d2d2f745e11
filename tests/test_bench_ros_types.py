"""The bench with ROS 2's Image, PointCloud2, String and UInt8MultiArray (paper 000 §V-A):
a payload like Bytes, quick real cells across a namespace pair, and a size a type cannot
carry refused before anything runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import require_root
from linklab.probes import read_records

REPO = Path(__file__).resolve().parents[1]


def bench(tmp_path: Path, text: str, *args: str) -> tuple[subprocess.CompletedProcess, Path]:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(text)
    out = tmp_path / "runs"
    done = subprocess.run([sys.executable, "-m", "linklab.cli", "bench", str(scenario),
                           "--out", str(out), *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    return done, out


def rows_of(out: Path) -> dict[str, dict]:
    (run_dir,) = [p for p in out.iterdir() if (p / "run.json").exists()]
    return {r["cell_id"]: {**r, "_dir": run_dir}
            for r in pq.read_table(run_dir / "cells.parquet").to_pylist()}


def assert_delivered(row: dict, type_name: str, payload: int, count: int) -> None:
    seen = {k: row[k] for k in ("status", "failure_reason", "received", "published")}
    assert row["type"] == type_name and row["payload_bytes"] == payload, seen
    assert row["status"] == "ok" and row["received"] == row["published"] == count, seen
    records = read_records(row["_dir"] / "records" / row["cell_id"] / "sub.bin").records
    assert sorted(records["seq"].tolist()) == list(range(count))
    assert set(records["bytes"].tolist()) == {payload}  # the payload asked, not the sample
    assert row["wire_amplification"] > 1.0


@pytest.mark.integration
def test_a_quick_image_cell_runs(tmp_path):
    require_root()
    done, out = bench(tmp_path, """\
name: itest-image
fixed: {link: wifi-ideal, rate: 30Hz, count: 60, warmup: 0.5s, payload: 256KiB}
quick: {count: 20, type: Image, payload: 64KiB}
""", "--quick")
    assert done.returncode == 0, done.stderr[-2000:]
    (row,) = rows_of(out).values()
    assert_delivered(row, "Image", 65536, 20)


@pytest.mark.integration
def test_the_four_types_as_an_axis(tmp_path):
    require_root()
    done, out = bench(tmp_path, """\
name: itest-types
fixed: {link: wifi-ideal, rate: 30Hz, count: 20, warmup: 0.5s, payload: 32KiB}
axes:
  type: [Image, PointCloud2, String, UInt8MultiArray]
""")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = rows_of(out)
    assert list(rows) == ["Image", "PointCloud2", "String", "UInt8MultiArray"]
    for type_name, row in rows.items():
        assert_delivered(row, type_name, 32768, 20)


def test_a_size_the_type_cannot_carry_is_refused_before_running(tmp_path):
    done, out = bench(tmp_path, """\
name: itest-bad-size
fixed: {link: wifi-ideal, rate: 30Hz, count: 20, payload: 100B}
axes:
  type: [Image, PointCloud2]
""", "--dry-run")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "scenario.yaml:" in line and "multiple of 16" in line, line
    assert not out.exists() or not any(out.iterdir())
