"""`linklab report RUN_DIR`: Table II layout, the paper's values beside ours, exports."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest

from linklab.bench.matrix import expand
from linklab.bench.measure import cell_row_base as _cell_row_base
from linklab.bench.spec import parse_scenario
from linklab.rundir import RunStore
from linklab.rundir import complete_row as _complete_row

SCENARIO = """\
name: report-test
fixed: {rate: 30Hz, link: wifi-severe, count: 300, history: profile}
axes:
  profile: [default, optimized]
  payload: [256KiB, 512KiB]
"""


@pytest.fixture
def run_dir(tmp_path):
    scenario = parse_scenario(SCENARIO, "s.yaml")
    cells = {(c.profile, c.payload_bytes // 1024): c for c in expand(scenario)}
    store = RunStore.create(tmp_path / "run", scenario=scenario.to_dict(), options={},
                            planned=[c.cell_id for c in cells.values()], estimated_s=1.0,
                            versions={"kernel": "6.18", "libfastrtps-dev": "2.9.1"})

    def add(key, status, reason=None, **values):
        row = _cell_row_base(cells[key])
        row.update(status=status, failure_reason=reason, **values)
        store.append(_complete_row(row))

    add(("default", 256), "failed", "not completed: received 15/300 before the deadline",
        published=300, received=15, reception_rate_hz=0.71, latency_mean_ms=5000.0,
        jitter_ms=900.0)
    add(("default", 512), "failed", "crashed: publisher ended with signal 11", published=3)
    add(("optimized", 256), "ok", published=300, received=300, reception_rate_hz=30.031,
        latency_mean_ms=21.456, jitter_ms=7.25, rate_bins_hz=[30] * 10)
    add(("optimized", 512), "failed", "latency: mean 4000 ms > 3333 ms (100 publish "
        "intervals)", published=300, received=300, reception_rate_hz=11.5,
        latency_mean_ms=4000.0, jitter_ms=1200.0)
    return store.root


def report(*args):
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "linklab.cli", "report", *map(str, args)],
                          capture_output=True, text=True, timeout=60, env=env)


def test_terminal_table_shows_ours_the_papers_and_dashes(run_dir):
    result = report(run_dir)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "wifi-severe" in out and "(c) Severe loss, PER 20 %" in out
    assert "Reception rate (Hz)" in out and "Avg. latency (ms)" in out and "Jitter" in out
    assert "30.03" in out and "21.46" in out and "7.25" in out       # ours, optimized 256
    assert "30.04" in out and "44.25" in out and "19.47" in out      # paper, optimized 256
    assert "12.91" in out and "1300.60" in out                      # paper, optimized 512
    assert "11.50" in out   # latency-failed cell keeps its reception rate ...
    assert "4000.00" not in out  # ... but shows "—" for latency, as the paper does
    assert "0.71" not in out     # a cell that did not complete is "—" throughout
    assert "—" in out
    assert "15/300" in out and "300/300" in out
    assert "not completed: received 15/300" in out
    assert "crashed: publisher ended with signal 11" in out


def test_json_export_keeps_measured_values_of_failed_cells(run_dir):
    result = report(run_dir, "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    (block,) = doc["blocks"]
    default_256 = block["columns"][0]
    assert default_256["status"] == "failed"
    assert default_256["reception_rate_hz"]["shown"] is None
    assert default_256["reception_rate_hz"]["measured"] == pytest.approx(0.71)
    assert default_256["reception_rate_hz"]["paper"] is None
    assert default_256["reception_rate_hz"]["paper_has_cell"] is True
    assert len(doc["cells"]) == 4 and doc["run"]["format_version"] == 2


def test_csv_export_writes_cells_table_and_bins(run_dir, tmp_path):
    result = report(run_dir, "--csv", tmp_path / "csv")
    assert result.returncode == 0, result.stderr
    with open(tmp_path / "csv" / "table2.csv") as f:
        rows = list(csv.DictReader(f))
    opt = [r for r in rows if r["profile"] == "optimized" and r["payload_bytes"] == "262144"
           and r["metric"] == "reception_rate_hz"]
    assert opt[0]["shown"] == "30.031" and opt[0]["paper"] == "30.04"
    with open(tmp_path / "csv" / "cells.csv") as f:
        assert len(list(csv.DictReader(f))) == 4
    with open(tmp_path / "csv" / "rate_bins.csv") as f:
        assert len(list(csv.DictReader(f))) == 10


def test_a_directory_without_a_run_is_a_one_line_error(tmp_path):
    result = report(tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().startswith("linklab: error: RUN_DIR:")
    assert len(result.stderr.strip().splitlines()) == 1


def test_markdown_export_puts_the_papers_value_in_parentheses(run_dir):
    result = report(run_dir, "--markdown")
    assert result.returncode == 0, result.stderr
    assert "| Reception rate (Hz) | — (—) | — (—) | 30.03 (30.04) | 11.50 (12.91) |" \
        in result.stdout
    assert "| Delivered | 15/300 | 0/3 | 300/300 | 300/300 |" in result.stdout


def test_outage_recovery_is_computed_from_the_one_second_bins():
    from linklab.report.export import outage_markdown, recovery

    bins = [30] * 5 + [3] + [0] * 9 + [60, 45, 20, 30, 30] + [30] * 6
    row = {"cell_id": "h-last10", "payload_bytes": 231000, "history_applied": "keep_last:10",
           "outage_at_s": 5.4, "outage_s": 10.0, "rate_hz": 30.0, "rate_bins_hz": bins,
           "received": 500, "published": 780}
    rec = recovery(row)
    # whole seconds before the outage: bins 0..4; the link is back from second 16
    assert rec["before_hz"] == 30.0 and rec["back_at_s"] == 16
    assert rec["after10_hz"] == (45 + 20 + 30 + 30 + 30 * 6) / 10
    assert rec["recover_s"] == 0  # bin 16 already at >= 27 Hz
    text = "\n".join(outage_markdown([row]))
    assert "| h-last10 | 231KB | keep_last:10 | 5.4 s + 10 s | 30.0 | 30.5 | 0 | 500/780 |" \
        in text
    assert "| 15 | 60 |" in text
