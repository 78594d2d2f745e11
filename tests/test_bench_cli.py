"""`linklab bench` command line: --dry-run prints the matrix; bad input is one line, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def bench(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "linklab.cli", "bench", *map(str, args)],
                          capture_output=True, text=True, timeout=60, cwd=cwd)


def test_dry_run_prints_the_matrix_and_an_estimate():
    result = bench("scenarios/paper-000-table2.yaml", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "60 cells, estimated 0:" in result.stdout
    doc = json.loads(bench("scenarios/paper-000-table2.yaml", "--dry-run", "--json",
                           "--repeat", "2").stdout)
    assert len(doc["cells"]) == 120 and doc["estimated_s"] > 60 * 33


def test_a_scenario_error_is_one_line_naming_file_line_and_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nfixed:\n  rate: 30Hz\n  link: wifi-ideal\n  count: 10\n"
                   "axes:\n  payload: [64KiB, 64]\n")
    result = bench(bad, "--dry-run")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"linklab: error: {bad}:7: axes.payload[1]: '64' has no unit; expected a size "
        "with a unit, e.g. 256KiB, 64KB, 1500B, 2MiB (KB=1000 B, KiB=1024 B)")


def test_bad_options_are_usage_errors(tmp_path):
    assert bench("scenarios/demo.yaml", "--repeat", "0", "--dry-run").returncode == 2
    result = bench("--dry-run")
    assert result.returncode == 2 and "SCENARIO.yaml" in result.stderr
    result = bench("--resume", tmp_path)
    assert result.returncode == 2 and "not a run directory" in result.stderr
