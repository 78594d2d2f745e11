"""Gates that cannot be fooled: checked against the scenario before anything runs, met
only when evaluated on at least one value, one line per miss, labelled by where they came
from (issue 37 items 3 and 8, and the metrics of item 1).

The command-line tests drive the real `linklab bench` / `linklab report` entry points;
finished runs are the hand-made run directories of tests/report_rundirs.py (real record
files, rows computed by linklab.bench.metrics as the runner does).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from linklab.bench import gates as G
from linklab.bench.matrix import expand
from linklab.bench.spec import parse_scenario
from linklab.errors import UsageError
from report_rundirs import table_run

REPO = Path(__file__).resolve().parents[1]
BASE = "name: s\nfixed:\n  payload: 1KiB\n  rate: 30Hz\n  count: 10\n"


def linklab(*args, cwd=REPO, timeout=120):
    return subprocess.run([sys.executable, "-m", "linklab.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd)


def one_line_error(result) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout[-300:], result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("linklab: error: "), result.stderr
    return lines[0].removeprefix("linklab: error: ")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """Eight cells (2 links x 2 profiles x 2 payloads), topic t; two of them failed."""
    return table_run(tmp_path_factory.mktemp("gates") / "run")


# --- checked against the scenario before anything runs ---------------------------------

@pytest.mark.parametrize("gate, expected", [
    ("nosuchtopic:delivery>=90%",
     "--gate: 'nosuchtopic:delivery>=90%': topic 'nosuchtopic' is in none of the scenario's "
     "cells; their topics: t"),
    ("t:wire_amplification<=2",
     "--gate: 't:wire_amplification<=2': wire_amplification is measured per cell; it has no "
     "topic (give it without topic 't')"),
])
def test_a_cli_gate_that_matches_nothing_is_refused_at_the_dry_run(gate, expected):
    """Before: exit 0 (the typo silently disabled the check)."""
    result = linklab("bench", "scenarios/demo.yaml", "--dry-run", "--gate", gate)
    assert one_line_error(result) == expected


def test_k8s_dry_run_checks_the_gates_too():
    """`linklab k8s run --dry-run` touches no cluster, and now makes the run's checks:
    before, a gate on a missing topic printed the manifests and exited 0."""
    result = linklab("k8s", "run", "scenarios/k8s-flows.yaml", "--dry-run", "--gate",
                     "nosuch:delivery>=1%")
    assert one_line_error(result) == ("--gate: 'nosuch:delivery>=1%': topic 'nosuch' is in "
                                      "none of the scenario's cells; their topics: t")


@pytest.mark.slow
@pytest.mark.parametrize("gates, expected", [
    ("gates:\n  - topic: camera\n    delivery: '>= 90%'\n",
     "s.yaml:10: gates[0].delivery: topic 'camera' is in none of the scenario's cells; their "
     "topics: t"),
    ("gates:\n  - where: {link: wifi-mild}\n    delivery: '>= 90%'\n",
     "s.yaml:10: gates[0].delivery: where: link=wifi-mild selects no cell of the matrix; the "
     "cells have link: wifi-ideal, wifi-severe"),
    ("gates:\n  - where: {payload: 4KiB}\n    latency_p99: '<= 1s'\n",
     "s.yaml:10: gates[0].latency_p99: where: payload=4KiB selects no cell of the matrix; the "
     "cells have payload: 1KiB"),
    ("gates:\n  - where: {link: wifi-severe}\n    topic: cam\n    delivery: '>= 90%'\n",
     "s.yaml:11: gates[0].delivery: topic 'cam' is in none of the cells where: selects; their "
     "topics: t"),
])
def test_a_scenario_gate_that_matches_nothing_is_refused_with_its_line(tmp_path, gates,
                                                                      expected):
    """Before: --dry-run passed (exit 0) and the run reported such a gate as met."""
    (tmp_path / "s.yaml").write_text(BASE + "axes:\n  link: [wifi-ideal, wifi-severe]\n"
                                     + gates)
    assert one_line_error(linklab("bench", "s.yaml", "--dry-run", cwd=tmp_path)) == expected
    out = tmp_path / "runs"  # the run itself refuses it the same way, before it starts
    assert one_line_error(linklab("bench", "s.yaml", "--out", out, cwd=tmp_path)) == expected
    assert not out.exists()


def test_where_on_a_link_selects_the_cells_on_that_link():
    """A gate scoped with where: {link: ...} or {link.FIELD: ...} applied to no cell before
    (the where value was a LinkChoice, the row holds the label): it was always "met"."""
    scenario = parse_scenario(BASE + "axes:\n  link: [wifi-ideal, wifi-severe]\n"
                              "  link.loss: [1%, 2%]\ngates:\n"
                              "  - where: {link: wifi-severe}\n    delivery: '>= 90%'\n"
                              "  - where: {link.loss: 2%}\n    delivery: '>= 80%'\n"
                              "  - where: {link: wifi-ideal+loss=1%}\n    delivery: '>= 70%'\n",
                              "s.yaml")
    rows = [dict(c.axes(), status="ok") for c in expand(scenario)]
    streams = [{"cell_id": r["cell_id"], "topic": "t", "subscriber": "edge",
                "delivery_ratio": 0.5} for r in rows]
    missed = [(m.cell_id, m.gate) for m in G.evaluate(scenario.gates, rows, streams)]
    assert missed == [("wifi-ideal-loss1pct", "delivery >= 70%"),
                      ("wifi-ideal-loss2pct", "delivery >= 80%"),
                      ("wifi-severe-loss1pct", "delivery >= 90%"),
                      ("wifi-severe-loss2pct", "delivery >= 90%"),
                      ("wifi-severe-loss2pct", "delivery >= 80%")]


def test_a_topic_entrys_own_gates_apply_to_that_topic():
    """`gates:` inside a topic entry were parsed and then dropped: nothing evaluated them.
    They are the scenario's gates on that topic (each copy of a topic with pairs: N)."""
    scenario = parse_scenario(BASE + "  link: wifi-ideal\n  topics:\n"
                              "    - {name: cam, pairs: 2, gates: {delivery: '>= 99%'}}\n"
                              "    - {name: imu, gates: {latency_p99: '<= 5ms'}}\n"
                              "    - {}\n", "s.yaml")
    assert [(g.text, g.topic) for g in scenario.gates] == [
        ("delivery >= 99%", "cam_1"), ("delivery >= 99%", "cam_2"),
        ("latency_p99 <= 5ms", "imu")]
    (cell,) = expand(scenario)
    assert [t.name for t in cell.topics] == ["cam_1", "cam_2", "imu", "t4"]
    with pytest.raises(UsageError, match=r"s.yaml:8: fixed.topics\[0\].gates.wire_amplif"
                                         r"ication: wire_amplification is measured per cell"):
        parse_scenario(BASE + "  link: wifi-ideal\n  topics:\n"
                       "    - {name: cam, gates: {wire_amplification: '<= 2'}}\n", "s.yaml")


# --- met only when evaluated ------------------------------------------------------------

def test_a_gate_that_applied_to_nothing_is_a_miss_not_evaluated():
    rows = [{"cell_id": "a", "status": "ok", "payload_bytes": 1024,
             "endpoints": "t: robot->edge Bytes 1KiB @30Hz reliable"}]
    streams = [{"cell_id": "a", "topic": "t", "subscriber": "edge", "delivery_ratio": 1.0}]
    met = G.make_gate("delivery", ">= 90%", topic="t")
    typo = G.make_gate("delivery", ">= 90%", topic="cam")
    nowhere = G.Gate("delivery", ">=", 0.9, "delivery >= 90%", None, (("payload", 2048),))
    assert G.evaluate([met], rows, streams) == []
    lines = [m.line() for m in G.evaluate([met, typo, nowhere], rows, streams)]
    assert lines == [
        "gate missed: run topic cam: delivery >= 90% (not evaluated: no cell has topic cam; "
        "the cells' topics: t)",
        "gate missed: run: delivery >= 90% (not evaluated: where: payload=2KiB selects no "
        "cell of the run; the cells have payload: 1KiB)"]
    assert [m.line() for m in G.evaluate([met], [], [])] == [
        "gate missed: run topic t: delivery >= 90% (not evaluated: the run has no cells)"]


@pytest.mark.slow
def test_report_says_a_gate_on_a_topic_the_run_lacks_is_not_evaluated(run_dir):
    """Before: `linklab report RUN --gate nosuch:...` exited 0 and listed the gate as met.
    Now it is missed (exit 1, as any gate not met: the report cannot tell a typo from
    cells not yet measured), one line saying why, "missed (not evaluated)" in the table."""
    result = linklab("report", run_dir, "--gate", "nosuch:delivery>=90%", "--json")
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines() == [
        "gate missed: run topic nosuch: delivery >= 90% (not evaluated: no cell has topic "
        "nosuch; the cells' topics: t)"]
    (gate,) = json.loads(result.stdout)["gates"]
    assert not gate["met"] and not gate["evaluated"] and gate["origin"] == "--gate"
    markdown = linklab("report", run_dir, "--gate", "nosuch:delivery>=90%", "--markdown")
    assert "| delivery >= 90% | topic nosuch | --gate | missed (not evaluated) |" in \
        markdown.stdout


# --- one line per miss; "--gate" gates labelled so ---------------------------------------

def _miss_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("gate missed: ")]


@pytest.mark.native
def test_every_miss_is_one_line_whatever_the_width(run_dir, tmp_path):
    """stderr is a pipe here (rich takes it as 80 columns): before, a miss longer than
    that was wrapped onto two lines, by `linklab report` and by `linklab bench`."""
    gate = "latency_p99<=0.001ms"
    report = linklab("report", run_dir, "--gate", gate)
    assert report.returncode == 1
    lines = _miss_lines(report.stderr)
    assert len(lines) == 8 and max(len(line) for line in lines) > 100
    assert all(line.endswith(")") for line in lines)
    # bench: a finished run resumed (nothing left to measure) concludes with its gates
    copy = tmp_path / "run"
    subprocess.run(["cp", "-r", str(run_dir), str(copy)], check=True)
    bench = linklab("bench", "--resume", copy, "--gate", gate)
    assert bench.returncode == 1, bench.stderr
    assert _miss_lines(bench.stderr) == lines


def test_gates_given_to_bench_are_labelled_gate_not_scenario(tmp_path):
    run = table_run(tmp_path / "run")
    info = json.loads((run / "run.json").read_text())
    info["options"]["gates"] = ["latency_p99<=10s"]
    info["scenario"]["gates"] = [G.make_gate("delivery", ">= 1%").to_dict()]
    (run / "run.json").write_text(json.dumps(info))
    doc = json.loads(linklab("report", run, "--json").stdout)
    assert [(g["gate"]["text"], g["origin"]) for g in doc["gates"]] == [
        ("delivery >= 1%", "scenario"), ("latency_p99 <= 10s", "--gate")]


# --- the metrics of issue 37's definitions ---------------------------------------------

def test_stall_and_gap_loss_gates():
    """stall: seconds (its column stall_max_s), unlike the *_ms latency columns;
    gap_loss: paper 002's counter-gap figure under its own name."""
    stall = G.parse_cli_gate("stall<=500ms")
    assert (stall.target, G.METRICS["stall"].key) == (0.5, "stall_max_s")
    assert G.parse_cli_gate("stall<2s").target == 2.0
    gap = G.parse_cli_gate("cam:gap_loss<=1%")
    assert (gap.target, gap.topic, G.METRICS["gap_loss"].key) == (0.01, "cam", "gap_loss_rate")
    rows = [{"cell_id": "a", "status": "ok"}]
    streams = [{"cell_id": "a", "topic": "cam", "subscriber": "edge", "stall_max_s": 7.25,
                "gap_loss_rate": 0.002}, {"cell_id": "a", "topic": "cam", "subscriber": "b",
                                          "stall_max_s": 0.0123, "gap_loss_rate": 0.05}]
    assert [m.line() for m in G.evaluate([stall, gap], rows, streams)] == [
        "gate missed: a topic cam subscriber edge: stall <= 500ms (measured 7.25 s)",
        "gate missed: a topic cam subscriber b: gap_loss <= 1% (measured 5.00 %)"]
    assert G.METRICS["stall"].show(0.0123) == "12.3 ms"


def test_an_old_runs_gate_now_refused_still_reports_as_not_evaluated(tmp_path):
    """A run recorded `bench --gate t:wire_amplification<=2` (a cell metric on a topic:
    accepted then, never evaluated). Its report still opens; the gate is a miss."""
    run = table_run(tmp_path / "run")
    info = json.loads((run / "run.json").read_text())
    info["options"]["gates"] = ["t:wire_amplification<=2"]
    (run / "run.json").write_text(json.dumps(info))
    result = linklab("report", run)
    assert result.returncode == 1, result.stderr
    assert _miss_lines(result.stderr) == [
        "gate missed: run topic t: wire_amplification <= 2 (not evaluated: "
        "wire_amplification is measured per cell; it has no topic)"]


def test_k8s_dry_run_refuses_cpu_contention_it_cannot_apply(tmp_path):
    """Pods get no CPU competitors or quota groups: refused at the dry run with the line,
    never a cell measured without them."""
    text = Path("scenarios/k8s-flows.yaml").read_text().replace(
        "  qos: reliable\n", "  qos: reliable\n  cpu_load: 1/core\n")
    scenario = tmp_path / "k8s-cpu.yaml"
    scenario.write_text(text)
    result = linklab("k8s", "run", str(scenario), "--dry-run")
    line = one_line_error(result)
    assert "cpu_load: cell " in line and "linklab k8s runs pods" in line, line
    assert line.startswith(f"{scenario}:"), line
