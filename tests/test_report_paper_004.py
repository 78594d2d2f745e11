"""`linklab report RUN_DIR` renders seed 004's tables itself when the run is one of its
studies (judged by its cells, not its name), with delivery in every table; --with reads
a study run in parts; `python -m linklab.report.paper_004` prints the same tables."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from report_checks import linklab
from report_rundirs import Behaviour, make_run
from report_rundirs_streams import PAPER_004_CRASH, PAPER_004_ERROR, paper_004_run, security_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("p4")
    return {"study": paper_004_run(root / "study"), "security": security_run(root / "sec"),
            "clean": paper_004_run(root / "clean", with_error=False)}


def stored(run_dir: Path) -> dict[str, dict]:
    return {r["cell_id"]: r for r in pq.read_table(run_dir / "cells.parquet").to_pylist()}


def test_terminal_shows_seed_004_tables_instead_of_table_ii(runs):
    result = linklab("report", runs["study"], columns=250)
    assert result.returncode == 70  # the study has a cell linklab could not measure
    out = result.stdout
    assert "Table 2 (ethernet): mean latency, ms — ours / paper" in out
    assert "Fig. 6 (ethernet): throughput, KB/s (ours)" in out
    assert "Table 3 (ethernet): CPU % of one core" in out
    assert "Reception rate (Hz)" not in out  # no Table II layout for this study
    assert "_wifi: pending — needs the `wifi` preset" in out
    rows = stored(runs["study"])
    array1k = rows["fastdds-Array1k"]
    assert f"{array1k['latency_mean_ms']:.2f} / 13.63" in out
    assert "error / 1.30" in out  # Cyclone DDS Array4k: not measured, not "—"
    crashed = rows[PAPER_004_CRASH]
    # MQTT with its broker on the edge host: the paper's MQTT-nobroker column
    assert f"— [{crashed['latency_mean_ms']:.2f}] / 86.59" in out
    assert "Errors: 1 cell" in out and PAPER_004_ERROR in out.split("Errors:")[1]


def test_markdown_tables_have_delivery_in_every_table(runs):
    result = linklab("report", runs["clean"], "--markdown")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    rows = stored(runs["clean"])
    deliveries = {m: f"{rows[f'{m}-Array4k']['received']}/{rows[f'{m}-Array4k']['published']}"
                  for m in ("fastdds", "cyclonedds", "mqtt")}
    expected = (f"{deliveries['fastdds']} · {deliveries['cyclonedds']} · not run · not run · "
                f"{deliveries['mqtt']} · not run |")
    lines = [line for line in text.splitlines() if line.startswith("| Array4k |")]
    assert len(lines) == 3  # Table 2, Fig. 6, Table 3 (ethernet)
    assert all(line.endswith(expected) for line in lines)
    assert "#### Table 2 (ethernet): mean latency, ms — ours / paper" in text
    fast = rows["fastdds-Array1k"]
    goodput = f"{fast['goodput_bit_s'] / 8 / 1000:.1f}"
    assert any(line.startswith(f"| Array1k | {goodput} |") for line in text.splitlines())
    assert "| 0.40 / 0.20 / n/a (6.04) |" in text  # CPU % from the probes' pub/sub.json


@pytest.mark.slow
def test_the_module_prints_the_same_tables(runs):
    module = subprocess.run([sys.executable, "-m", "linklab.report.paper_004",
                             str(runs["clean"])], capture_output=True, text=True, timeout=60)
    assert module.returncode == 0, module.stderr
    report = linklab("report", runs["clean"], "--markdown").stdout
    tables = [line for line in module.stdout.splitlines() if line.startswith("|")]
    assert len(tables) > 30
    for line in tables:
        assert line in report
    bad = subprocess.run([sys.executable, "-m", "linklab.report.paper_004", "/nonexistent"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("linklab: error: RUN_DIR:")
    assert len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_with_reads_a_study_in_parts(runs, tmp_path):
    alone = linklab("report", runs["security"], "--markdown").stdout
    assert "#### Table 4: security on/off, Array1k at 10 Hz" in alone
    assert "Table 2 (" not in alone  # the security study alone: Table 4 only
    sec = stored(runs["security"])
    line = f"| ethernet | fastdds | on | {sec['fastdds-secure']['latency_mean_ms']:.2f} |"
    assert line in alone and alone.split(line)[1].split("\n")[0].endswith(" | 30/30 |")
    both = linklab("report", runs["clean"], "--with", runs["security"], "--markdown")
    assert both.returncode == 0, both.stderr
    assert "#### Table 4" in both.stdout and "#### Table 2 (ethernet)" in both.stdout
    doc = json.loads(linklab("report", runs["clean"], "--with", runs["security"],
                             "--json").stdout)
    assert doc["with"] == [str(runs["security"])]
    assert len(doc["cells"]) == 6 + 4
    assert {s["key"] for s in doc["paper_004"]} >= {"paper-004-table4",
                                                   "paper-004-table2-ethernet"}
    missing = linklab("report", runs["clean"], "--with", tmp_path)
    assert missing.returncode == 2 and missing.stderr.startswith("linklab: error: --with:")


@pytest.mark.slow
def test_html_has_the_seed_004_tables(runs, tmp_path):
    out = tmp_path / "p4.html"
    result = linklab("report", runs["clean"], "--html", out)
    assert result.returncode == 0, result.stderr
    page = out.read_text()
    assert "Results (seed 004's tables)" in page
    assert "id='paper-004-table2-ethernet'" in page and "id='paper-004-table3-ethernet'" in page


def test_a_run_of_other_messages_keeps_the_table_ii_layout(tmp_path):
    run = make_run(tmp_path / "bytes", """\
name: paper-004-middlewares
fixed: {rate: 10Hz, qos: reliable, count: 30, link: ethernet-1g, payload: 1KiB}
axes:
  middleware: [fastdds, mqtt]
""", lambda c: Behaviour(latency_ms=1.0))
    out = linklab("report", run).stdout  # named like the study, but Bytes messages
    assert "Reception rate (Hz)" in out and "Table 2 (ethernet)" not in out


def test_the_papers_wifi_on_the_medium_gets_its_own_tables_with_the_papers_wifi_beside(
        tmp_path):
    """wifi-n-medium stands for the paper's Wi-Fi on the shared 802.11 medium: its cells
    get tables of their own (never mixed into the `wifi` preset's), with the paper's Wi-Fi
    values beside them; the same medium with overrides is another link, paper "n/a"."""
    from linklab.report.paper_004 import paper_network, paper_table2, paper_table3

    assert paper_network("wifi-n-medium") == "wifi" and paper_network("wifi") == "wifi"
    assert paper_network("wifi-severe") is None
    run = make_run(tmp_path / "medium", """\
name: handmade-004-medium
fixed: {rate: 10Hz, qos: reliable, history: keep_last:10, profile: default, count: 30,
        warmup: 1s}
axes:
  link: [wifi-n-medium, {preset: wifi-n-medium, medium: {per: 10%}}]
  middleware: [fastdds, cyclonedds]
  type: [Array1k, Array4k]
""", lambda c: Behaviour(latency_ms=2.0, cpu_s=(0.02, 0.01)))
    out = linklab("report", run, "--markdown").stdout
    wifi_1k = paper_table2()["wifi"]["Array1k"]
    assert "Table 2 (wifi-n-medium): mean latency" in out
    assert f"/ {wifi_1k[0]:.2f}" in out and f"/ {wifi_1k[1]:.2f}" in out
    assert f"({paper_table3()['Array1k'][0][1]:.2f})" in out
    lossy = out.split("Table 2 (wifi-n-medium+medium={per=10%})")[1].split("####")[0]
    assert "n/a" in lossy and f"/ {wifi_1k[0]:.2f}" not in lossy
    assert "_wifi: pending" in out  # the wifi preset's own tables stay empty
