"""Tables read well anywhere (issue 39 part 4): with stdout not a terminal (a pipe, a CI
log, where rich assumes 80 columns) ``--format text`` cuts no table cell across lines, and
``text``, ``markdown`` and ``json`` carry the same numbers: report, the end of a bench
run, model-check, tune, model and link status."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from linklab.rundir import RunStore
from linklab.tune.wirecheck import LinkInfo, predicted_for

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
KIB = 1024


def run(args: list[str], *, code: str | None = None,
        status: int = 0) -> subprocess.CompletedProcess:
    """``linklab ARGS`` (or ``python -c CODE``) with stdout a pipe and COLUMNS=80; it must
    end with ``status``."""
    env = dict(os.environ, COLUMNS="80")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), str(TESTS),
                                                      env.get("PYTHONPATH")]))
    env.pop("FORCE_COLOR", None)
    argv = [sys.executable, "-c", code] if code else [sys.executable, "-m", "linklab.cli",
                                                       *args]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=240, env=env,
                            cwd=REPO)
    assert result.returncode == status, (result.returncode, result.stderr)
    return result


def formats(args: list[str], status: int = 0) -> tuple[str, str, dict]:
    text, markdown, data = (run([*args, "--format", f], status=status).stdout
                            for f in ("text", "markdown", "json"))
    return text, markdown, json.loads(data)


def on_one_line(output: str, cells: list[str]) -> bool:
    """Whether one line of ``output`` holds every cell, whole and in order: a cell cut
    into a narrow column ("defau/lt", "0/10/00") is on no single line."""
    pattern = r".*?".join(re.escape(c) for c in cells if c.strip())
    return any(re.search(pattern, line) for line in output.splitlines())


def markdown_rows(markdown: str) -> list[list[str]]:
    """The body rows of every GitHub table in ``markdown``, as cell texts (not the header:
    the line before the alignment row)."""
    lines = markdown.splitlines()
    rule = re.compile(r"\|(?:-+:?\|)+")
    rows = []
    for line, after in zip(lines, [*lines[1:], ""], strict=True):
        if line.startswith("|") and not rule.fullmatch(line) and not rule.fullmatch(after):
            rows.append([c.strip().replace("\\|", "|")
                         for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows


@pytest.fixture(scope="module")
def table_run(tmp_path_factory) -> Path:
    from report_rundirs import table_run as make

    return make(tmp_path_factory.mktemp("formats") / "run")


# Sections the terminal prints as a list of long reasons, one cell per row then the reason
# (report.outcome): the cell and its reason on one line.
LISTED = {"errors": 2, "failed-cells": 2}


def test_text_is_not_cut_at_80_columns_when_piped(table_run):
    text = run(["report", str(table_run)]).stdout
    assert "Delivered" in text and "wifi-ideal-default-256KiB" in text
    assert max(map(len, text.splitlines())) > 80  # laid out as wide as it needs


@pytest.mark.slow   # several linklab commands, ~3-5 s
def test_report_formats_agree(table_run):
    text, markdown, data = formats(["report", str(table_run)])
    # Table II: the shown value of every column, in order, on one line of each output
    for block in data["blocks"]:
        for metric in ("reception_rate_hz", "latency_mean_ms", "jitter_ms"):
            shown = ["—" if c[metric]["shown"] is None else f"{c[metric]['shown']:.2f}"
                     for c in block["columns"]]
            assert on_one_line(text, shown), (block["title"], metric, shown)
            assert on_one_line(markdown, shown), (block["title"], metric, shown)
        delivered = [c["delivered_text"] for c in block["columns"]]
        assert on_one_line(text, ["Delivered", *delivered])
        assert on_one_line(markdown, ["Delivered", *delivered])
    # every other table: each row, cell for cell as JSON has it, on one line of each
    assert data["sections"]["latency"]["rows"]
    md_rows = markdown_rows(markdown)
    for key, section in data["sections"].items():
        for row in section["rows"]:
            assert row in md_rows, row
            if key in LISTED:   # printed as a list: "  CELL: WHY" (then more lines)
                assert on_one_line(text, [row[0], row[LISTED[key]]]), row
            else:
                assert on_one_line(text, row), row
        if section["rows"] and key not in LISTED:
            assert on_one_line(text, section["columns"]), section["columns"]


@pytest.mark.slow   # several linklab commands, ~3-5 s
def test_the_end_of_a_bench_run_in_every_format(table_run, tmp_path):
    """``linklab bench``'s table at the end of a run (conclude_run, as k8s run's too)."""
    data = json.loads(run(["report", str(table_run), "--json"]).stdout)
    outputs = {}
    for fmt in ("text", "markdown"):
        code = textwrap.dedent(f"""
            from pathlib import Path
            from linklab.cli.run_outcome import conclude_run
            from linklab.rundir import RunStore
            store = RunStore.open(Path({str(table_run)!r}))
            conclude_run(store, [], store.rows, False, fmt={fmt!r})
            """)
        outputs[fmt] = run([], code=code).stdout
    for block in data["blocks"]:
        shown = ["—" if c["latency_mean_ms"]["shown"] is None
                 else f"{c['latency_mean_ms']['shown']:.2f}" for c in block["columns"]]
        assert on_one_line(outputs["text"], shown) and on_one_line(outputs["markdown"], shown)
    latency = data["sections"]["latency"]
    for row in latency["rows"]:
        assert on_one_line(outputs["text"], row) and row in markdown_rows(outputs["markdown"])
    assert "run directory:" in outputs["text"]


@pytest.fixture
def checked_run(tmp_path) -> Path:
    store = RunStore.create(tmp_path / "run", scenario={"name": "x"}, options={},
                            planned=["a", "b"], estimated_s=1.0, versions={})
    store.info["links"] = {"wifi-severe": {"spec": {"mtu": 1500, "up": {
        "loss": "20 %", "rate": "300 Mbit/s"}}}}
    store.save_info()
    good = predicted_for("cyclonedds", "optimized", 512 * KIB, 30.0, LinkInfo(300e6, 0.2))
    for cell_id, measured in (("wifi-severe-cyclonedds-optimized-a-long-cell-name", good),
                              ("wifi-severe-cyclonedds-optimized-another-one", good * 2)):
        store.append({"index": len(store.rows), "cell_id": cell_id,
                      "middleware": "cyclonedds", "profile": "optimized",
                      "link": "wifi-severe", "payload_bytes": 512 * KIB, "rate_hz": 30.0,
                      "topics": 1, "status": "ok", "wire_amplification": measured})
    return store.root


@pytest.mark.slow   # several linklab commands, ~3-5 s
def test_model_check_formats_agree(checked_run):
    # the run has one cell beyond 15 %: model-check's status 1
    text, markdown, data = formats(["model-check", str(checked_run)], status=1)
    md_rows = markdown_rows(markdown)
    for cell in data["cells"]:
        numbers = [f"{cell['measured']:.3f}", f"{cell['predicted']:.3f}",
                   f"{cell['error']:+.1%}"]
        assert on_one_line(text, [cell["cell_id"], *numbers])
        row = next(r for r in md_rows if r[0] == cell["cell_id"])
        assert row[2:5] == numbers
    assert "OUTSIDE 15 %" in text and "OUTSIDE 15 %" in markdown


@pytest.mark.slow   # several linklab commands, ~3-5 s
def test_tune_formats_agree(tmp_path):
    args = ["tune", "--rate", "30Hz", "--payload", "256KiB", "--link", "50Mbit/s",
            "--out", str(tmp_path / "profiles")]
    text, markdown, data = formats(args)
    md_rows = markdown_rows(markdown)
    for setting in data["explanation"]["settings"]:
        assert f"  {setting['setting']} = {setting['value']}  [" in text
        assert [setting["setting"], setting["value"], setting["cause"],
                setting["reason"]] in md_rows
    for condition in data["explanation"]["conditions"]:
        verdicts = [condition["before"]["verdict"], condition["after"]["verdict"]]
        assert on_one_line(text, ["verdict", *verdicts])
        per = f"{condition['per'] * 100:g} %"
        assert [per, "verdict", *verdicts, ""] in md_rows


@pytest.mark.slow   # several linklab commands, ~3-5 s
def test_model_formats_agree():
    args = ["model", "--rate", "30Hz", "--payload", "256KiB", "--per", "1%"]
    text, markdown, data = formats(args)
    rows = {r[0]: r for r in markdown_rows(markdown)}
    assert rows["N_RT = ceil(u/M)"][1] == str(data["n_rt"])
    assert rows["N_IP"][1] == str(data["n_ip"])
    assert rows["q = p^N_IP"][1] == f"{data['q']:.4g}"
    for row in rows.values():
        assert on_one_line(text, row), row
    sweep = ["model", "--rate", "30Hz", "--payload", "256KiB", "--sweep", "per=0..20%:5%"]
    text, markdown, data = formats(sweep)
    for point, row in zip(data["rows"], markdown_rows(markdown), strict=True):
        assert row[2] == str(point["n_ip"]) and math.isclose(float(row[3]), point["q"],
                                                             rel_tol=1e-2)
        assert on_one_line(text, row), row


STATUS = {
    "name": "wide", "topology": "pair",
    "spec": {"preset": "wifi-severe", "mtu": 1500, "source": "a measured path, 20 % loss"},
    "hosts": {"robot": {"netns": "linklab-wide-robot", "addresses": ["10.77.0.1/24"]},
              "edge": {"netns": "linklab-wide-edge", "addresses": ["10.77.0.100/24"]}},
    "links": [{"name": "wifi", "wire": "veth", "robot_side": "robot:eth0",
               "edge_side": "edge:eth0"}],
    "counters": {"stages": [
        {"link": "wifi", "direction": "up", "kind": "netem",
         "params": {"text": "loss 20% rate 300Mbit delay 3ms"}, "passed_packets": 1234567,
         "passed_bytes": 1876543210, "dropped_packets": 246913},
        {"link": "wifi", "direction": "down", "kind": "netem",
         "params": {"text": "loss 20% rate 300Mbit delay 3ms"}, "passed_packets": 7654321,
         "passed_bytes": 9876543210, "dropped_packets": 1530864}]},
    "socket_buffers": {}, "outage": None,
    "notes": ["a note long enough that a terminal of 80 columns would have to wrap it "
              "somewhere in the middle of a word or two"]}


def test_link_status_formats_agree():
    outputs = {}
    for fmt, call in (("text", "_print_status(status)"),
                      ("markdown", "print(_status_markdown(status), end='')")):
        code = ("import json\nfrom linklab.cli.link_status import print_status as "
                "_print_status, status_markdown as _status_markdown\n"
                f"status = json.loads({json.dumps(json.dumps(STATUS))})\n{call}\n")
        outputs[fmt] = run([], code=code).stdout
    md_rows = markdown_rows(outputs["markdown"])
    for stage in STATUS["counters"]["stages"]:
        numbers = [str(stage["passed_packets"]), str(stage["passed_bytes"]),
                   str(stage["dropped_packets"])]
        assert on_one_line(outputs["text"], [stage["direction"], stage["params"]["text"],
                                             *numbers])
        assert [stage["link"], stage["direction"], stage["kind"], stage["params"]["text"],
                *numbers] in md_rows
    assert on_one_line(outputs["text"], [STATUS["notes"][0]])
