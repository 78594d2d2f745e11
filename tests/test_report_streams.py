"""`linklab report` of cells with several subscribers: per subscriber, per topic, fan-out
beside the model's and paper 002's Table III, delivered = received/expected, wire bytes
per interface (HTML, JSON), in every output."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from headless_chromium import open_page
from linklab.model.fanout import TABLE_III_NS
from report_checks import linklab, parse
from report_rundirs_streams import FANOUT_ORDER, FANOUT_STEP_MS, MODEL_STEP_MS, fanout_run


@pytest.fixture(scope="module")
def fan_dir(tmp_path_factory) -> Path:
    return fanout_run(tmp_path_factory.mktemp("runs") / "fan")


def streams_of(run_dir: Path) -> list[dict]:
    return pq.read_table(run_dir / "streams.parquet").to_pylist()


def test_terminal_shows_every_subscriber_each_topic_and_the_fanout(fan_dir):
    result = linklab("report", fan_dir)
    out = result.stdout
    assert "Per subscriber" in out and "Per topic" in out and "Fan-out" in out
    for s in streams_of(fan_dir):  # one line per subscriber, delivered as received/published
        assert f"{s['publisher']} → {s['subscriber']}" in out
        assert f"{s['received']}/{s['published']}" in out
        assert f"{s['latency_p99_ms']:.2f}" in out and f"{s['latency_p50_ms']:.2f}" in out
    # the lossy subscriber of the large_data cell: its loss and its status
    lossy = next(s for s in streams_of(fan_dir)
                 if s["cell_id"] == "large_data" and s["subscriber"] == "robot2")
    assert lossy["status"] == "failed" and lossy["message_loss_rate"] > 0.1
    assert f"{lossy['message_loss_rate'] * 100:.2f} %" in out
    assert "1 of 4 failed" in out  # the topic's aggregate
    # Table II's Delivered is received/expected: 4 subscribers x 60 samples, not 240/60
    assert "240/240" in out and "/60 " not in out.split("Per subscriber")[0]


def test_fanout_ranks_offsets_and_the_papers_table_iii(fan_dir):
    result = linklab("report", fan_dir, "--json")
    doc = json.loads(result.stdout)
    (default,) = [r for r in doc["sections"]["fanout"]["records"] if r["cell_id"] == "default"]
    assert [r["subscriber"] for r in default["ranks"]] == list(FANOUT_ORDER)
    assert default["fanout_step_ms"] == pytest.approx(FANOUT_STEP_MS, abs=0.05)
    assert default["model_fanout_step_ms"] == MODEL_STEP_MS
    assert [r["model_fanout_offset_ms"] for r in default["ranks"]] == pytest.approx(
        [MODEL_STEP_MS * i for i in range(4)])
    paper = default["paper_002_table_iii"]  # 1 publisher -> 4 subscribers: paper 002's case
    alone, nodes = TABLE_III_NS["Default"]  # qos: reliable is not a ROS 2 profile
    assert paper["profile"] == "Default" and paper["alone_ms"] == alone / 1e6
    assert paper["nodes_ms"] == [n / 1e6 for n in nodes]
    assert 9.9 < paper["step_ms"] < 10.1  # ~10 ms per subscriber in the paper
    # terminal: measured step beside the model's and the paper's
    terminal = linklab("report", fan_dir).stdout
    assert f"step per subscriber {default['fanout_step_ms']:.3f} ms measured, " \
           f"{MODEL_STEP_MS:.3f} ms model; paper 002 Table III (Default)" in terminal
    assert f"{nodes[3] / 1e6:.3f}" in terminal  # node 4: 30.793 ms


@pytest.mark.slow
def test_json_and_markdown_carry_the_same_subscribers(fan_dir):
    doc = json.loads(linklab("report", fan_dir, "--json").stdout)
    records = doc["sections"]["subscribers"]["records"]
    assert len(records) == 8 and {r["cell_id"] for r in records} == {"default", "large_data"}
    topics = doc["sections"]["topics"]["records"]
    large = next(t for t in topics if t["cell_id"] == "large_data")
    stored = [s for s in streams_of(fan_dir) if s["cell_id"] == "large_data"]
    assert large["received"] == sum(s["received"] for s in stored)
    assert large["expected"] == 240 and large["failed_subscribers"] == 1
    assert large["reception_rate_min_hz"] == pytest.approx(
        min(s["reception_rate_hz"] for s in stored))
    # wire bytes per interface: every host's interface of every cell
    interfaces = doc["sections"]["interfaces"]["records"]
    assert len(interfaces) == 10 and {i["host"] for i in interfaces} >= {"edge", "robot1"}
    markdown = linklab("report", fan_dir, "--markdown").stdout
    assert "**Per subscriber**" in markdown and "**Fan-out: one topic to several" in markdown
    assert "| Delivered | 240/240 |" in markdown
    for s in stored:
        assert f"| {s['received']}/{s['published']} |" in markdown


def test_csv_writes_the_streams(fan_dir, tmp_path):
    result = linklab("report", fan_dir, "--csv", tmp_path / "csv")
    assert (tmp_path / "csv" / "interfaces.csv").is_file()
    with open(tmp_path / "csv" / "streams.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 8 and {r["subscriber"] for r in rows} == set(FANOUT_ORDER)
    assert result.returncode == 1  # the large_data cell misses the run's gate


@pytest.mark.native
def test_html_has_the_subscriber_tables_and_interfaces(fan_dir, artifacts_dir):
    out = fan_dir / "report.html"
    result = linklab("report", fan_dir, "--html")
    assert result.returncode == 1, result.stderr  # a gate is missed; the page is written
    page = out.read_text()
    assert "id='subscribers'" in page and "id='fanout'" in page and "id='interfaces'" in page
    delivered = [c["_text"] for c in parse(page).cells if c.get("data-metric") == "delivered"]
    for s in streams_of(fan_dir):
        assert f"{s['received']}/{s['published']}" in delivered
    assert "226/240" in delivered  # Table II and per topic: received/expected
    assert "380000" in page  # edge's tx bytes
    check = open_page(out, artifacts_dir / "report-fanout.png", height=2400)
    assert check.problems == []
    assert check.marker["data-images-ok"] == check.marker["data-images-total"] != "0"
