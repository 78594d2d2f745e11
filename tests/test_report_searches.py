"""`linklab report` of throughput searches (rate: max) in paper 001 Fig. 5's layout, the
cells at a share of the maximum (rate: 75%, Fig. 6), the search trials, and the
throughput-vs-payload figure (headless Chromium).

Two runs: ``search_dir`` as bench wrote searches before issue 37 (the maximum stored is the
rate asked), ``achieved_dir`` as it writes them now (the rate the best trial's publisher
wrote and the payload that arrived, the rate asked beside them). Neither shows a
throughput above what arrived."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from headless_chromium import open_page
from linklab.report.searches import ACHIEVED, OLD_ROW, figures, searches_section, trials
from report_checks import linklab, parse
from report_rundirs_streams import PUBLISHED_SHARE, search_run


@pytest.fixture(scope="module")
def search_dir(tmp_path_factory) -> Path:
    """A run stored before issue 37: no search_asked_rate_hz, the maximum is asked."""
    return search_run(tmp_path_factory.mktemp("runs") / "search")


@pytest.fixture(scope="module")
def achieved_dir(tmp_path_factory) -> Path:
    return search_run(tmp_path_factory.mktemp("runs") / "achieved", achieved=True)


def rows_of(run_dir: Path) -> list[dict]:
    return pq.read_table(run_dir / "cells.parquet").to_pylist()


def test_terminal_search_table_per_payload_with_the_model(search_dir):
    result = linklab("report", search_dir)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Maximum throughput per payload (paper 001 Fig. 5 layout)" in out
    searches = [r for r in rows_of(search_dir) if r["rate_asked"] == "max"]
    assert len(searches) == 4 and all("search_asked_rate_hz" not in r for r in searches)
    for r in searches:
        # an old row's maximum is the rate asked: shown as asked, with the achieved
        # figures its best trial measured; never the rate asked times the payload
        assert f"{r['search_max_rate_hz']:.1f} †" in out
        assert f"{r['publish_rate_hz']:.1f}" in out
        assert f"{r['goodput_bit_s'] / 1e6:.3f}" in out
        assert f"{r['search_max_throughput_bit_s'] / 1e6:.3f}" not in out
        assert f"{r['expected']}/{r['expected']}" in out  # delivered in the best trial
    assert "recorded before searches kept what they achieved (issue 37)" in out
    fast = next(r for r in searches if r["middleware"] == "fastdds"
                and r["payload_bytes"] == 4096)
    assert f"{fast['model_wire_bytes_per_sample']:.0f}" in out
    assert f"{fast['model_capacity_hz']:.1f}" in out
    assert f"{fast['publish_rate_hz'] / fast['model_capacity_hz']:.3f}" in out  # ~0.951
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
    fast = records[("fastdds", 16384)]
    assert fast["basis"] == OLD_ROW and fast["asked_rate_hz"] / fast[
        "model_capacity_hz"] == pytest.approx(0.95)
    assert fast["measured_over_model"] == pytest.approx(
        fast["max_rate_hz"] / fast["model_capacity_hz"])
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


@pytest.mark.slow
def test_markdown_and_csv(search_dir, tmp_path):
    markdown = linklab("report", search_dir, "--markdown").stdout
    assert "**Maximum throughput per payload (paper 001 Fig. 5 layout)**" in markdown
    assert "| mqtt | r20 | best_effort | 4KiB |" in markdown
    linklab("report", search_dir, "--csv", tmp_path)
    with open(tmp_path / "searches.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and {r["stop"] for r in rows} == {"bracket within 3%"}


@pytest.mark.native
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


# --- achieved, not asked (issue 37) ---------------------------------------------------------

def test_terminal_reports_what_the_best_trial_achieved_beside_the_rate_asked(achieved_dir):
    out = linklab("report", achieved_dir).stdout
    rows = rows_of(achieved_dir)
    searches = [r for r in rows if r["rate_asked"] == "max"]
    assert len(searches) == 4
    for r in searches:
        asked = r["search_asked_rate_hz"]
        assert r["search_max_rate_hz"] == pytest.approx(r["publish_rate_hz"])
        assert r["search_max_rate_hz"] < PUBLISHED_SHARE * asked * 1.02  # written < asked
        assert f"{r['search_max_rate_hz']:.1f}" in out
        assert f"{r['search_max_throughput_bit_s'] / 1e6:.3f}" in out
        assert f"{asked:.1f}" in out and f"{asked:.1f} †" not in out
        assert f"{asked * r['payload_bytes'] * 8 / 1e6:.3f}" not in out
    assert "recorded before searches kept what they achieved" not in out
    # a rate: 75% cell runs at 75 % of the rate achieved
    for share in (r for r in rows if r["rate_asked"] == "75%"):
        search = next(r for r in searches if (r["middleware"], r["payload_bytes"])
                      == (share["middleware"], share["payload_bytes"]))
        assert share["search_max_rate_hz"] == pytest.approx(search["search_max_rate_hz"])
        assert share["rate_hz"] == pytest.approx(0.75 * search["search_max_rate_hz"])


def test_json_and_trials_name_the_best_trial_and_its_goodput(achieved_dir):
    doc = json.loads(linklab("report", achieved_dir, "--json").stdout)
    records = doc["sections"]["searches"]["records"]
    by_id = {r["cell_id"]: r for r in rows_of(achieved_dir)}
    for rec in records:
        row = by_id[rec["cell_id"]]
        assert rec["basis"] == ACHIEVED
        assert rec["max_rate_hz"] == pytest.approx(row["search_max_rate_hz"])
        assert rec["max_throughput_bit_s"] == pytest.approx(row["goodput_bit_s"])
        assert rec["asked_rate_hz"] == pytest.approx(row["search_asked_rate_hz"])
        assert rec["measured_over_model"] in (None, pytest.approx(
            row["search_max_rate_hz"] / (row["model_capacity_hz"] or 1)))
    best = [t for t in doc["sections"]["search-trials"]["records"] if t["best"]]
    assert len(best) == 4
    for t in best:
        row = by_id[t["cell_id"]]
        assert t["rate_hz"] == pytest.approx(row["search_asked_rate_hz"])
        assert t["publish_rate_hz"] == pytest.approx(row["search_max_rate_hz"])
        assert t["goodput_bit_s"] == pytest.approx(row["search_max_throughput_bit_s"])


def _texts(row: dict) -> list[str]:
    section = searches_section([row])
    assert section is not None
    return [c.text for c in section.rows[0]] + section.notes


USERS_ROW = {"cell_id": "fastdds-ratemax-64KiB", "rate_asked": "max", "status": "ok",
             "middleware": "fastdds", "link": "r200", "qos": "best_effort",
             "payload_bytes": 65536, "publish_rate_hz": 370.0, "goodput_bit_s": 193.8e6,
             "received": 555, "expected": 555, "search_trials": 7,
             "search_stop": "bracket within 5%", "model_capacity_hz": 381.0}


def test_the_users_search_reads_370_hz_and_193_8_mbit_s():
    """The search of issue 37: 380.1 Hz asked, 370.0 Hz written, ~193.8 Mbit/s of
    payload arrived on a 200 Mbit/s link -- as stored now, and as stored before."""
    now = dict(USERS_ROW, search_max_rate_hz=370.0, search_max_throughput_bit_s=193.8e6,
               search_asked_rate_hz=380.1)
    before = dict(USERS_ROW, search_max_rate_hz=380.1,
                  search_max_throughput_bit_s=380.1 * 65536 * 8)  # 199.28 Mbit/s
    for row, asked in ((now, "380.1"), (before, "380.1 †")):
        texts = _texts(row)
        assert texts[4:7] == ["370.0", "193.800", asked]
        assert not any("199.2" in t for t in texts)
        assert figures(row)["max_throughput_bit_s"] == pytest.approx(193.8e6)
        assert texts[11] == f"{370.0 / 381.0:.3f}"  # Ratio: achieved / model
    assert not any("issue 37" in t for t in _texts(now))
    assert any("issue 37" in t for t in _texts(before))


def test_an_old_search_that_sustained_nothing_shows_no_maximum():
    old = dict(USERS_ROW, status="failed", search_max_rate_hz=0.0,
               search_max_throughput_bit_s=0.0)
    assert _texts(old)[4:7] == ["0.0", "0.000", "0.0 †"]


def test_old_search_json_has_no_goodput_and_its_best_is_the_highest_rate_asked(search_dir):
    from linklab.report.searches import best_trial

    cell_dir = search_dir / "records" / "fastdds-ratemax-4KiB"
    assert all("goodput_bit_s" not in t for t in trials(cell_dir))
    assert best_trial(cell_dir) == 4
    doc = json.loads(linklab("report", search_dir, "--json").stdout)
    shown = [t for t in doc["sections"]["search-trials"]["records"]
             if t["cell_id"] == "fastdds-ratemax-4KiB"]
    assert [t["best"] for t in shown] == [False, False, False, True, False]
