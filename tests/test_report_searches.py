"""`linklab report` of throughput searches (rate: max) in paper 001 Fig. 5's layout, the
cells at a share of the maximum (rate: 75%, Fig. 6), the search trials, and the
throughput-vs-payload figure (headless Chromium)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from headless_chromium import open_page
from report_checks import linklab, parse
from report_rundirs_streams import search_run


@pytest.fixture(scope="module")
def search_dir(tmp_path_factory) -> Path:
    return search_run(tmp_path_factory.mktemp("runs") / "search")


def rows_of(run_dir: Path) -> list[dict]:
    return pq.read_table(run_dir / "cells.parquet").to_pylist()


def test_terminal_search_table_per_payload_with_the_model(search_dir):
    result = linklab("report", search_dir)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Maximum throughput per payload (paper 001 Fig. 5 layout)" in out
    searches = [r for r in rows_of(search_dir) if r["rate_asked"] == "max"]
    assert len(searches) == 4
    for r in searches:
        assert f"{r['search_max_rate_hz']:.1f}" in out
        assert f"{r['search_max_throughput_bit_s'] / 1e6:.3f}" in out
        assert f"{r['expected']}/{r['expected']}" in out  # delivered in the best trial
    fast = next(r for r in searches if r["middleware"] == "fastdds"
                and r["payload_bytes"] == 4096)
    assert f"{fast['model_wire_bytes_per_sample']:.0f}" in out
    assert f"{fast['model_capacity_hz']:.1f}" in out
    assert f"{fast['search_max_rate_hz'] / fast['model_capacity_hz']:.3f}" in out  # 0.950
    assert "bracket within 3%" in out
    assert "the lowest failing rate above the maximum failed because best effort" in out
    # rate: 75% -- at a share of the maximum, with its latency percentiles
    assert "Latency at a share of the maximum rate (paper 001 Fig. 6 layout)" in out
    share = next(r for r in rows_of(search_dir) if r["rate_asked"] == "75%"
                 and r["middleware"] == "fastdds" and r["payload_bytes"] == 4096)
    assert share["rate_hz"] == pytest.approx(0.75 * fast["search_max_rate_hz"])
    assert f"{share['rate_hz']:.1f}" in out and f"{share['latency_p95_ms']:.2f}" in out


def test_json_records_ratio_and_tcp_has_no_model(search_dir):
    doc = json.loads(linklab("report", search_dir, "--json").stdout)
    records = {(r["middleware"], r["payload_bytes"]): r
               for r in doc["sections"]["searches"]["records"]}
    assert records[("fastdds", 16384)]["measured_over_model"] == pytest.approx(0.95)
    mqtt = records[("mqtt", 4096)]
    assert mqtt["model_capacity_hz"] is None and mqtt["measured_over_model"] is None
    assert "TCP" in mqtt["model_note"]
    trials = doc["sections"]["search-trials"]["records"]
    assert len(trials) == 4 * 5
    for r in rows_of(search_dir):  # the maximum is the highest sustained trial
        if r["rate_asked"] == "max":
            best = max(t["rate_hz"] for t in trials
                       if t["cell_id"] == r["cell_id"] and t["sustained"])
            assert best == pytest.approx(r["search_max_rate_hz"])
    # searches are not Table II columns (their rate is a result, not a setting)
    assert all(c["cell_ids"][0].split("-")[1] != "ratemax" for b in doc["blocks"]
               for c in b["columns"])


def test_markdown_and_csv(search_dir, tmp_path):
    markdown = linklab("report", search_dir, "--markdown").stdout
    assert "**Maximum throughput per payload (paper 001 Fig. 5 layout)**" in markdown
    assert "| mqtt | r20 | best_effort | 4KiB |" in markdown
    linklab("report", search_dir, "--csv", tmp_path)
    with open(tmp_path / "searches.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and {r["stop"] for r in rows} == {"bracket within 3%"}


def test_html_throughput_figure_and_tables(search_dir, artifacts_dir):
    out = search_dir / "report.html"
    result = linklab("report", search_dir, "--html")
    assert result.returncode == 0, result.stderr
    page = out.read_text()
    assert "id=fig-throughput" in page and "Maximum throughput vs payload" in page
    assert "id='searches'" in page and "id='search-trials'" in page
    max_cells = [c for c in parse(page).cells if c.get("data-metric") == "max_rate_hz"]
    assert len(max_cells) == 4
    # the search cells' latency comes from their best trial's records, nothing is missing
    assert "What is missing" not in page
    check = open_page(out, artifacts_dir / "report-search.png", height=2400,
                      screenshot_from="#throughput")
    assert check.problems == []
    assert check.marker["data-images-ok"] == check.marker["data-images-total"]
    assert int(check.marker["data-images-total"]) >= 4  # CDF, sweep, throughput, bars
