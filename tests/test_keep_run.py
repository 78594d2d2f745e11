"""scripts/keep_run.py: the part of a run kept in the repository reports the same cells,
keeps why failed cells failed, and leaves the bulky record files behind (no root)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import load_script
from report_checks import linklab
from report_rundirs import outage_run, table_run

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "keep_run.py"


def _keep(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.slow
def test_the_kept_copy_reports_the_same_table_and_keeps_failures(tmp_path):
    run = table_run(tmp_path / "run", trials=2)
    kept = tmp_path / "kept"
    result = _keep(run, kept)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in (run / "cells.jsonl").read_text().splitlines()]
    status = {r["cell_id"]: r["status"] for r in rows}
    not_ok = sum(1 for state in status.values() if state != "ok")
    assert f"{len(status)} cells ({not_ok} not ok)" in result.stdout
    expected = {"run.json", "cells.jsonl", "profiles", "records"}
    expected |= {"streams.jsonl"} if (run / "streams.jsonl").exists() else set()
    assert {p.name for p in kept.iterdir()} == expected
    assert not list(kept.rglob("*.bin")) and not list(kept.rglob("*.parquet"))
    failed = {r["cell_id"] for r in rows if r["status"] != "ok"}
    assert failed, "the hand-made run has failed cells"
    assert {p.name for p in (kept / "records").iterdir()} == failed
    for cell in failed:
        assert sorted(p.name for p in (kept / "records" / cell).iterdir()) == sorted(
            p.name for p in (run / "records" / cell).iterdir()
            if p.suffix in (".json", ".log"))
    assert sorted(p.name for p in (kept / "profiles").iterdir()) == sorted(
        p.name for p in (run / "profiles").iterdir())

    original, copy = linklab("report", run), linklab("report", kept)
    assert original.returncode == 0 and copy.returncode == 0, copy.stderr
    assert copy.stdout == original.stdout  # the tables come from the rows alone


@pytest.mark.slow
def test_a_kept_outage_run_reports_without_its_record_files(tmp_path):
    """Without the per-sample records the report still gives every table and the rate
    trace after the outage (kept in the rows), terminal and HTML."""
    run = outage_run(tmp_path / "outage")
    kept = tmp_path / "kept"
    assert _keep(run, kept).returncode == 0
    assert not list(kept.rglob("*.bin"))
    original, copy = linklab("report", run), linklab("report", kept)
    assert copy.returncode == 0, copy.stderr
    assert "Reception rate per 1 s bin" in copy.stdout and copy.stdout == original.stdout
    page = tmp_path / "kept.html"
    result = linklab("report", kept, "--html", page)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and page.stat().st_size > 0


def test_bad_arguments_are_one_line_and_exit_2(tmp_path):
    result = _keep(tmp_path / "nowhere", tmp_path / "dest")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "not a bench run" in result.stderr
    assert _keep(tmp_path).returncode == 2
    assert not (tmp_path / "dest").exists()


def test_a_cell_run_again_counts_by_its_last_row(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "cells.jsonl").write_text(
        json.dumps({"cell_id": "a", "status": "failed"}) + "\n"
        + json.dumps({"cell_id": "b", "status": "ok"}) + "\n"
        + json.dumps({"cell_id": "a", "status": "ok"}) + "\n"
        + '{"cell_id": "c", "sta')  # cut by a kill
    assert load_script("keep_run").cell_status(run) == {"a": "ok", "b": "ok"}
