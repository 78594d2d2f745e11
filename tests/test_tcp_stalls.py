"""scripts/tcp_stalls.py: per trial, how long TCP connections stood still (pure, no root)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import load_script

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "tcp_stalls.py"


def _socket(local: str, peer: str, acked: int, unacked: int, rto: int, backoff: int) -> str:
    extra = f" backoff:{backoff}" if backoff else ""
    held = f" unacked:{unacked}" if unacked else ""
    return (f"ESTAB 0      1000   {local} {peer}\n"
            f"\t skmem:(r0) cubic rto:{rto}{extra} bytes_acked:{acked}{held} cwnd:1\n")


def _log(tmp_path: Path) -> Path:
    """Data robot -> edge stands still 2 s (backoff to 2); ACKNACKs edge -> robot flow."""
    # a connection still being set up, inside the window: not counted, not a stall
    lines = ["### 2026-11-26T10:00:02.000 linklab-b1-robot\nSYN-SENT 0 1 10.0.0.1:1 "
             "10.0.0.2:7700\n\t rto:9000 backoff:6 bytes_acked:1 unacked:1\n"]
    acked = [1000, 5000, 5000, 5000, 5000, 5000, 9000]
    for i, value in enumerate(acked):
        stamp = f"2026-11-26T10:00:{1 + i // 2:02d}.{'0' if i % 2 == 0 else '5'}00"
        backoff = {3: 1, 4: 1, 5: 2}.get(i, 0)
        lines.append(f"### {stamp} linklab-b1-robot\n"
                     + _socket("10.0.0.1:40000", "10.0.0.2:7700", value, 3, 200 << backoff,
                               backoff))
        lines.append(f"### {stamp} linklab-b1-edge\n"
                     + _socket("10.0.0.2:7700", "10.0.0.1:40000", 10 + i, 0, 210, 0))
    path = tmp_path / "ss.log"
    path.write_text("".join(lines))
    return path


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    cell = {"cell_id": "c-t1", "received": 150, "published": 150, "latency_max_ms": 2400.0,
            "started_utc": "2026-11-26T10:00:00+00:00", "wall_s": 10.0}
    (run / "cells.jsonl").write_text(json.dumps(cell) + "\n")
    return run


def test_a_stall_on_the_data_connection_is_measured_with_its_backoff(tmp_path):
    rows = load_script("tcp_stalls").trial_rows(_run(tmp_path), _log(tmp_path))
    # cell, delivered, worst latency, connections, data: stall, RTO, backoff, others: ...
    assert rows == [["c-t1", "150/150", "2.4", "1", "2.0", "0.8", "2", "0.0", "0.2", "0"]]


def test_bad_arguments_are_one_line_and_exit_2(tmp_path):
    for args in ([], [str(tmp_path)], [str(tmp_path), str(tmp_path / "none.log")]):
        result = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                                text=True)
        assert result.returncode == 2
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    run = _run(tmp_path)
    result = subprocess.run([sys.executable, str(SCRIPT), str(run), str(tmp_path / "no.log")],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "SS_LOG" in result.stderr
