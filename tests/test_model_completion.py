"""Issue 37 item 5: the model never gives a steady-state figure for a cell it says cannot
complete (model/completion.py, C1: the wire a strictly reliable stream needs is more than
the link carries, 000 Eq. 2) -- in the bench's rows, the report's tables, model-check and
``linklab model``. The cells are `make demo`'s (scenarios/demo.yaml: Fast DDS, 256 KiB at
30 Hz over wifi-severe, 300 Mbit/s, PER 20 %, MTU 1500), whose default profile the old
report printed as "model R_DDS/R_pub 24647.58"."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from linklab.bench.matrix import expand
from linklab.bench.measure import cell_row_base as _cell_row_base
from linklab.bench.namespace_environment import LinkChoice, LinklabEnvironment
from linklab.bench.spec import parse_scenario
from linklab.model.completion import completion, steady
from linklab.report.interface_counters import model_verdict
from linklab.rundir import RunStore
from linklab.rundir import complete_row as _complete_row
from linklab.tune.wirecheck import LinkInfo, compare, render, verdict_for

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "scenarios" / "demo.yaml"
OLD_STUDY = REPO / "studies" / "paper-000-table2-calibrated"  # recorded before issue 37
KIB = 1024
SEVERE = LinkInfo(300e6, 0.2, 1500)


def demo_cells():
    text = DEMO.read_text()
    scenario = parse_scenario(text, str(DEMO))
    return text, scenario, {c.profile: c for c in expand(scenario)}


def run(*args):
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "linklab.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, timeout=120, env=env)


# --- the verdict ---------------------------------------------------------------------------

def test_the_demo_default_cell_cannot_complete_and_the_model_says_why():
    value, note = verdict_for("fastdds", "default", 256 * KIB, 30.0, SEVERE)
    assert value == math.inf
    # every one of the 181 IP packets of a sample must arrive: 0.8^181 = 3e-18; a lost
    # 65 KB fragment goes again as 45 packets (0.8^45 = 4.4e-05 to arrive whole)
    assert note.startswith("cannot complete: P(sample) = 3e-18 at PER 20 % with 181 IP "
                           "packets"), note
    assert "45 packets" in note and "4.4e-05" in note and "300 Mbit/s link" in note


def test_cells_that_complete_keep_their_figure():
    tuned, note = verdict_for("fastdds", "optimized", 256 * KIB, 30.0, SEVERE)
    assert note is None and tuned == pytest.approx(1.434, abs=0.005)
    clean, note = verdict_for("fastdds", "default", 256 * KIB, 30.0, LinkInfo(300e6, 0.0))
    assert note is None and clean == pytest.approx(1.057, abs=0.005)


def test_c1_is_the_link_rate_against_the_figure_times_r_pub():
    r_pub_bits = 256 * KIB * 30 * 8  # 62.9 Mbit/s
    assert steady(300e6 / r_pub_bits, 256 * KIB, 30.0, 300e6)
    assert not steady(300e6 / r_pub_bits * 1.001, 256 * KIB, 30.0, 300e6)
    assert steady(math.nan, 256 * KIB, 30.0, 300e6)  # no figure: nothing to refuse
    # loss-free and still too much: the stream alone does not fit
    over = completion(1.1, 512 * KIB, 60.0, 100e6, 0.0, 363, 1)
    assert over.amplification == math.inf
    assert over.reason == ("cannot complete: the stream with its headers needs 276.8 Mbit/s "
                           "on a 100 Mbit/s link (000 Eq. 2)")


def test_the_bench_environment_records_the_verdict_not_the_figure():
    """What measure.measure() stores: (NaN, reason) for the default cell, the figure for
    the tuned one -- computed by the bench's own environment from the demo scenario."""
    _, scenario, cells = demo_cells()
    env = LinklabEnvironment(scenario.presets)
    assert env.model_amplification(cells["default"]) == math.inf  # was 24647.58
    value, note = env.model_verdict(cells["default"])
    assert math.isnan(value) and note.startswith("cannot complete: P(sample) = 3e-18")
    value, note = env.model_verdict(cells["optimized"])
    assert note is None and value == pytest.approx(1.434, abs=0.005)


# --- the report ----------------------------------------------------------------------------

def make_demo_run(root: Path, *, old: bool = False, links: bool = True) -> Path:
    """A run of the demo's two cells as the bench writes it; ``old``: as the bench wrote
    it before issue 37 (no note column, the bare figure 24647.58 for the default)."""
    text, scenario, cells = demo_cells()
    env = LinklabEnvironment(scenario.presets)
    store = RunStore.create(root, scenario=dict(scenario.to_dict(), text=text), options={},
                            planned=[c.cell_id for c in cells.values()], estimated_s=1.0,
                            versions={})
    for profile, cell in cells.items():
        if links:
            store.record_link(cell.link, {"preset": cell.link, "spec": env.links.spec(
                LinkChoice(cell.link)).describe()})
        ok = profile == "optimized"
        row = _cell_row_base(cell)
        row.update(status="ok" if ok else "failed",
                   failure_reason=None if ok else "not completed: nothing received",
                   published=1000, received=1000 if ok else 0,
                   reception_rate_hz=30.01 if ok else 0.0,
                   latency_mean_ms=39.21 if ok else None, jitter_ms=16.08 if ok else None,
                   wire_amplification=1.68 if ok else 3.94)
        if old:
            row = _complete_row(row)
            row.pop("model_amplification_note", None)
            row["model_amplification"] = 1.434 if ok else 24647.58
        else:
            row["model_amplification"], row["model_amplification_note"] = \
                env.model_verdict(cell)
            row = _complete_row(row)
        store.append(row)
    return store.root


def _wire_lines(out: str) -> list[list[str]]:
    """The table's two lines "Wire / published" and "model R_DDS/R_pub", as cells."""
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "model R_DDS/R_pub" in line)
    return [[cell.strip() for cell in line.split("│")[1:-1]] for line in lines[at - 1:at + 1]]


@pytest.mark.slow
@pytest.mark.parametrize("old", [False, True], ids=["new-row", "old-row"])
def test_terminal_and_markdown_print_infinity_and_the_reason(tmp_path, old):
    root = make_demo_run(tmp_path / "run", old=old)
    terminal = run("report", root)
    assert terminal.returncode == 0, terminal.stderr
    wire, model = _wire_lines(terminal.stdout)
    assert wire[1:] == ["3.94", "1.68"], wire
    assert model == ["model R_DDS/R_pub", "∞", "1.43"], model
    assert "24647" not in terminal.stdout
    note = next(line for line in terminal.stdout.splitlines() if line.startswith("∞ "))
    assert note.startswith("∞ default 256KiB: cannot complete: P(sample) = 3e-18 at PER 20 %")

    markdown = run("report", root, "--markdown")
    assert markdown.returncode == 0, markdown.stderr
    assert "| Wire bytes / published (model R_DDS/R_pub) | 3.94 (∞) | 1.68 (1.43) |" \
        in markdown.stdout
    assert "\n∞ default 256KiB: cannot complete: P(sample) = 3e-18" in markdown.stdout
    assert "24647" not in markdown.stdout


@pytest.mark.slow
def test_html_and_json_carry_the_reason(tmp_path):
    root = make_demo_run(tmp_path / "run", old=True)
    page = run("report", root, "--html", tmp_path / "r.html")
    assert page.returncode == 0, page.stderr
    html = (tmp_path / "r.html").read_text()
    assert "data-metric=model_amplification title='cannot complete: P(sample) = 3e-18" in html
    assert ">∞</td>" in html and "24647" not in html
    doc = json.loads(run("report", root, "--json").stdout)
    default, tuned = doc["blocks"][0]["columns"]
    assert default["model_amplification"]["value"] is None
    assert default["model_amplification"]["text"] == "∞"
    assert default["model_amplification"]["note"].startswith("cannot complete: P(sample)")
    assert tuned["model_amplification"]["value"] == pytest.approx(1.434)


def test_an_old_row_whose_link_is_not_recorded_shows_no_figure(tmp_path):
    root = make_demo_run(tmp_path / "run", old=True, links=False)
    result = run("report", root)
    assert result.returncode == 0, result.stderr
    assert "24647" not in result.stdout
    _, model = _wire_lines(result.stdout)
    assert model[1:] == ["—", "—"], model


def test_a_recorded_figure_the_link_cannot_carry_is_not_shown():
    """An old row of a cell the model now calls steady, but whose recorded figure is no
    steady state on its link (any model version that recorded it): "∞" with the reason."""
    links = {"wifi-severe": SEVERE}
    row = {"cell_id": "a", "middleware": "fastdds", "profile": "optimized",
           "link": "wifi-severe", "payload_bytes": 256 * KIB, "rate_hz": 30.0, "topics": 1,
           "model_amplification": 24647.58}
    value, note = model_verdict(row, links)
    assert math.isnan(value)
    assert note == ("cannot complete: the recorded figure 2.465e+04 needs 1551 Gbit/s on a "
                    "300 Mbit/s link (000 Eq. 2)")
    value, note = model_verdict(dict(row, model_amplification=1.43), links)
    assert value == 1.43 and note is None
    # a model that does not apply (zenoh) keeps "no figure"
    assert math.isnan(model_verdict(dict(row, middleware="zenoh", model_amplification=None),
                                    links)[0])


@pytest.mark.slow
def test_a_study_recorded_before_the_change_reports_sanely():
    """studies/paper-000-table2-calibrated holds 24927.65 and the like for the default
    profile at PER 20 % (docs/RESULTS.md printed them)."""
    result = run("report", OLD_STUDY, "--markdown", "--pool", "type")
    assert result.returncode == 0, result.stderr
    for nonsense in ("175.58", "28492.11", "26115.78", "24927.65", "24808.96"):
        assert nonsense not in result.stdout
    severe = next(line for line in result.stdout.splitlines()
                  if line.startswith("| Wire bytes") and "(∞)" in line)
    assert severe.count("(∞)") == 5  # the default profile's five payloads
    assert "∞ default 256KiB: cannot complete: P(sample) = 3e-18 at PER 20.02 %" \
        in result.stdout


# --- model-check and linklab model ------------------------------------------------------------

def test_model_check_neither_counts_nor_fails_a_cell_that_cannot_complete():
    links = {"wifi-severe": SEVERE}
    base = {"link": "wifi-severe", "payload_bytes": 256 * KIB, "rate_hz": 30.0, "topics": 1,
            "middleware": "fastdds"}
    tuned, _ = verdict_for("fastdds", "optimized", 256 * KIB, 30.0, SEVERE)
    rows = [dict(base, cell_id="tuned", profile="optimized", status="ok",
                 wire_amplification=tuned),
            dict(base, cell_id="default", profile="default", status="failed",
                 wire_amplification=3.94),
            # completed although the model says it cannot: named, not a miss
            dict(base, cell_id="lucky", profile="default", status="ok",
                 wire_amplification=3.94)]
    out = {c.cell_id: c for c in compare(rows, links)}
    assert out["default"].cannot_complete and out["default"].predicted == math.inf
    assert not out["lucky"].checked and not out["lucky"].missed
    assert out["tuned"].checked and out["tuned"].within
    lines = render(list(out.values()))
    assert lines[3].rstrip().endswith("model: cannot complete (but it did)")
    assert lines[4].startswith("  ∞ default and 1 more: cannot complete: P(sample) = 3e-18")
    assert lines[-1] == ("1/1 completed cells within 15% (largest error 0.0%); 1 not "
                         "completed; 2 the model says cannot complete (not compared; 1 of "
                         "them completed)")


def test_model_check_of_the_old_study_lists_the_cells_that_cannot_complete():
    result = run("model-check", OLD_STUDY, "--json")
    assert result.returncode == 0, result.stderr
    cells = json.loads(result.stdout)["cells"]
    impossible = [c for c in cells if c["model_note"]]
    # wifi-ac-severe x default x 4 types x 5 payloads x 5 trials
    assert len(impossible) == 100
    assert all(c["predicted"] == "inf" and not c["checked"] for c in impossible)
    assert {c["profile"] for c in impossible} == {"default"}


def test_linklab_model_says_a_strictly_reliable_stream_cannot_complete():
    default = run("model", "--rate", "30Hz", "--payload", "256KiB", "--link", "300Mbit/s",
                  "--per", "20%")
    assert default.returncode == 0, default.stderr
    row = next(line for line in default.stdout.splitlines()
               if "wire / payload, every loss repaired" in line)
    assert row.split()[6] == "∞", row
    assert "Verdict: fails: cannot complete: P(sample) = 3e-18 at PER 20 % with 181 IP " \
        "packets" in default.stdout
    tuned = run("model", "--rate", "30Hz", "--payload", "256KiB", "--link", "300Mbit/s",
                "--per", "20%", "--max-message-size", "1472", "--heartbeat-rate", "60Hz",
                "--json")
    doc = json.loads(tuned.stdout)
    assert doc["wire_note"] is None and doc["wire_amplification"] == pytest.approx(1.43,
                                                                                   abs=0.01)
    assert doc["verdict"] == "feasible"
