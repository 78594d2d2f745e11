"""`linklab bench` command line: --dry-run prints the matrix; bad input is one line, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def bench(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "linklab.cli", "bench", *map(str, args)],
                          capture_output=True, text=True, timeout=60, cwd=cwd)


@pytest.mark.native
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


@pytest.mark.slow
def test_bad_options_are_usage_errors(tmp_path):
    assert bench("scenarios/demo.yaml", "--repeat", "0", "--dry-run").returncode == 2
    result = bench("--dry-run")
    assert result.returncode == 2 and "SCENARIO.yaml" in result.stderr
    result = bench("--resume", tmp_path)
    assert result.returncode == 2 and "not a run directory" in result.stderr


def _table2_run(tmp_path):
    """A run of paper-000-table2.yaml with no cell yet: (scenario, cells, store)."""
    from linklab.bench.matrix import expand
    from linklab.bench.spec import load_scenario
    from linklab.rundir import RunStore

    scenario = load_scenario(REPO / "scenarios/paper-000-table2.yaml")
    cells = expand(scenario)
    store = RunStore.create(tmp_path / "run", scenario=dict(scenario.to_dict(),
                                                              text=scenario.text),
                            options={}, planned=[c.cell_id for c in cells],
                            estimated_s=0.0, versions={})
    return scenario, cells, store


def _finish(store, cells, share):
    """Rows for ``cells``, each taking ``share`` of its estimate."""
    from linklab.bench.matrix import estimate_s
    from linklab.bench.measure import cell_row_base as _cell_row_base
    from linklab.rundir import complete_row as _complete_row

    for cell in cells:
        row = _cell_row_base(cell)
        row.update(status="ok", wall_s=estimate_s(cell) * share)
        store.append(_complete_row(row))


@pytest.mark.native
def test_dry_run_of_a_resumed_run_paces_what_is_left_by_its_finished_cells(tmp_path):
    """Cells that took half their estimate on this machine: the rest is estimated so."""
    from linklab.bench.matrix import estimate_s

    _, cells, store = _table2_run(tmp_path)
    fresh = json.loads(bench("--resume", store.root, "--dry-run", "--json").stdout)
    assert fresh["pace"] == 1.0
    _finish(store, cells[:4], 0.5)
    doc = json.loads(bench("--resume", store.root, "--dry-run", "--json").stdout)
    assert doc["pace"] == pytest.approx(0.5)
    assert {c.link for c in cells[:4]} == {"wifi-ideal"}  # no outage: estimate_s alone
    finished = sum(estimate_s(c) for c in cells[:4])
    assert doc["estimated_s"] == pytest.approx((fresh["estimated_s"] - finished) / 2)
    text = bench("--resume", store.root, "--dry-run").stdout
    assert "60 cells (56 left)" in text
    assert "its 4 finished cells took 0.50 of their estimate" in " ".join(text.split())


@pytest.mark.native
def test_a_resumed_runs_progress_bar_is_paced_by_its_earlier_sessions_cells(tmp_path):
    """The ETA of a resumed run starts paced like its dry-run, not at the raw estimate:
    the cells of earlier sessions say how fast this run's cells go. Stopped (Ctrl-C) at
    the first progress report, before any cell runs."""
    from linklab.bench.namespace_environment import LinklabEnvironment
    from linklab.bench.runner import run_cells

    scenario, cells, store = _table2_run(tmp_path)
    _finish(store, cells[:4], 0.25)
    seen = []

    def stop_at_first_report(progress):
        seen.append(progress.remaining_s)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_cells(store, cells, LinklabEnvironment(scenario.presets), run_tag="pace",
                  on_progress=stop_at_first_report, search_settings=scenario.search)
    result = bench("--resume", store.root, "--dry-run", "--json")
    assert result.returncode == 0, result.stderr
    dry = json.loads(result.stdout)
    assert dry["pace"] == pytest.approx(0.25)
    assert seen == [pytest.approx(dry["estimated_s"])]
    assert store.info["interrupted"] and store.info["sessions"][-1]["cells_measured"] == 0
