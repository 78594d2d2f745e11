"""How cells ended, in every output: errors are "error" (never "—"), listed apart, exit 70;
gates listed with each miss, exit 1; failed cells with delivery and the rule that decided
them; the paper's link conditions only for links that are exactly the paper's preset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from linklab.bench.matrix import expand
from linklab.bench.spec import parse_scenario
from linklab.report.paper_000 import condition_of
from linklab.report.table import build_blocks
from report_checks import linklab, parse
from report_rundirs import TABLE_SCENARIO, Behaviour, make_run, table_run
from report_rundirs_streams import add_error_cell, fanout_run, search_run

ERROR_CELL = "wifi-ideal-optimized-64KiB"
ERROR_REASON = "could not run: fastdds probe not found at build/probes (run scripts/setup.sh)"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("outcomes")
    error = table_run(root / "error", skip=lambda c: c.cell_id == ERROR_CELL)
    cell = next(c for c in expand(parse_scenario(TABLE_SCENARIO.replace("TRIALS", "1"),
                                                 "s.yaml")) if c.cell_id == ERROR_CELL)
    add_error_cell(error, cell, ERROR_REASON)
    return {"error": error, "base": table_run(root / "base"),
            "search": search_run(root / "search"), "fan": fanout_run(root / "fan")}


@pytest.mark.slow
def test_an_error_row_is_shown_as_error_listed_apart_and_exits_70(runs):
    result = linklab("report", runs["error"])
    assert result.returncode == 70, result.stderr
    assert f"linklab error in cell {ERROR_CELL}: {ERROR_REASON}" in result.stderr
    out = result.stdout
    assert "1 error (not measured)" in out
    ideal = out.split("wifi-severe")[0]  # the wifi-ideal block: optimized 64KiB is error
    assert ideal.count("error") >= 4  # 3 metrics and Delivered
    assert "Errors: 1 cell linklab could not measure" in out
    errors, failed = out.split("Errors:")[1].split("Failed cells")
    assert ERROR_CELL in errors and ERROR_CELL not in failed
    doc = json.loads(linklab("report", runs["error"], "--json").stdout)
    assert doc["errors"] == [ERROR_CELL]
    column = next(c for b in doc["blocks"] for c in b["columns"]
                  if c["cell_ids"] == [ERROR_CELL])
    assert column["status"] == "error" and column["delivered_text"] == "error"
    record = doc["sections"]["errors"]["records"][0]
    assert record == {"cell_id": ERROR_CELL, "kind": "could not run", "message": ERROR_REASON}
    markdown = linklab("report", runs["error"], "--markdown")
    assert markdown.returncode == 70
    ideal = markdown.stdout.split("**wifi-severe")[0]
    header = next(line for line in ideal.splitlines() if line.startswith("| Profile"))
    column = header.split(" | ").index("optimized 64KiB")
    for label in ("Reception rate (Hz)", "Avg. latency (ms)", "Jitter (ms)", "Delivered"):
        line = next(x for x in ideal.splitlines() if x.startswith(f"| {label} |"))
        assert line.split(" | ")[column].strip(" |").split()[0] == "error", line  # (paper)
    assert "**Errors: 1 cell linklab could not measure**" in markdown.stdout


@pytest.mark.slow
def test_error_in_html_and_a_gate_miss_still_exits_70(runs, tmp_path):
    out = tmp_path / "error.html"
    result = linklab("report", runs["error"], "--html", out, "--gate", "latency_p99<=0.001ms")
    assert result.returncode == 70  # an error row wins over a missed gate, as in bench
    assert "gate missed:" in result.stderr
    page = out.read_text()
    ours = [c for c in parse(page).cells if "ours" in c.get("class", "").split()
            and c["data-cells"] == ERROR_CELL]
    assert len(ours) == 3 and all(c["_text"] == "error" for c in ours)
    assert all("error" in c["class"].split() for c in ours)
    assert f"id='error-{ERROR_CELL}'" in page and f"id='failed-{ERROR_CELL}'" not in page
    assert "data-errors=1" in page and "fastdds probe not found" in page
    assert "error.txt" in page  # its traceback, collapsible


def test_compare_shows_errors_apart_from_regressions(runs):
    result = linklab("report", runs["error"], "--compare", runs["base"], "--json",
                     "--fail-on-regression")
    assert result.returncode == 70
    doc = json.loads(result.stdout)
    cell = next(c for c in doc["cells"] if c["cell_ids"] == [ERROR_CELL])
    assert cell["status"] == "error" and cell["reference_status"] == "ok"
    assert cell["regressions"] == [] and cell["delivered"] == "error"
    assert cell["reference_delivered"] == "90/90"


@pytest.mark.slow
def test_gates_are_listed_met_and_missed(runs):
    met = linklab("report", runs["search"], "--gate", "max_rate>=50Hz")
    assert met.returncode == 0, met.stderr
    assert "Gates: 1 met, 0 missed" in met.stdout and "max_rate >= 50Hz" in met.stdout
    missed = linklab("report", runs["search"], "--gate", "max_rate>=10kHz", "--json")
    assert missed.returncode == 1
    doc = json.loads(missed.stdout)
    (gate,) = doc["gates"]
    # the 4 searches and the 4 cells at 75 % of their maximum (which carry it too)
    assert gate["origin"] == "--gate" and not gate["met"] and len(gate["missed"]) == 8
    assert len(doc["gates_missed"]) == 8
    assert missed.stderr.count("gate missed:") == 8
    markdown = linklab("report", runs["search"], "--gate", "max_rate>=10kHz", "--markdown")
    assert markdown.returncode == 1
    assert "**Gates: 0 met, 1 missed**" in markdown.stdout
    assert "| max_rate >= 10kHz | every cell | --gate | missed (8 places) |" in markdown.stdout
    assert markdown.stdout.count("gate missed: ") == 8  # each miss in the section


@pytest.mark.slow
def test_scenario_gates_and_the_rule_of_a_failed_cell(runs):
    result = linklab("report", runs["fan"])
    assert result.returncode == 1
    assert "reception_rate >= 19Hz │ every cell │ scenario" in result.stdout
    failed = result.stdout.split("Failed cells (1)")[1]
    assert "large_data: topic t subscriber sub-t-robot2: not completed" in failed
    assert "delivered 226/240; rule: RELIABLE KEEP_ALL: every published sample must arrive" \
        in failed
    page_dir = runs["fan"]
    linklab("report", page_dir, "--html")
    page = (page_dir / "report.html").read_text()
    article = page[page.index("id='failed-large_data'"):]
    article = article[:article.index("</article>")]
    assert "RELIABLE KEEP_ALL: every published sample must arrive" in article
    assert "226/240" in article
    assert "id='gates'" in page and "gate missed: large_data" in page


LINKS_SCENARIO = """\
name: handmade-links
fixed: {middleware: fastdds, rate: 30Hz, qos: reliable, history: profile, type: Bytes,
        count: 60, warmup: 1s, profile: optimized, payload: 64KiB}
axes:
  link: [wifi-severe, {preset: wifi-severe, loss: 10%}, {name: wifi-mild, rate: 50Mbit/s}]
"""


@pytest.mark.slow
def test_the_papers_conditions_only_for_the_exact_preset(tmp_path):
    run = make_run(tmp_path / "links", LINKS_SCENARIO, lambda c: Behaviour(latency_ms=20))
    doc = json.loads(linklab("report", run, "--json").stdout)
    by_link = {b["key"]["link"]: b for b in doc["blocks"]}
    assert set(by_link) == {"wifi-severe", "wifi-severe+loss=10%", "wifi-mild"}
    assert by_link["wifi-severe"]["condition"] == "severe"
    assert by_link["wifi-severe"]["columns"][0]["reception_rate_hz"]["paper_has_cell"]
    for label in ("wifi-severe+loss=10%", "wifi-mild"):  # overrides; an inline link
        assert by_link[label]["condition"] is None
        assert not by_link[label]["columns"][0]["reception_rate_hz"]["paper_has_cell"]
    out = linklab("report", run).stdout
    assert out.count("(c) Severe loss, PER 20 %") == 1
    assert "(b) Mild loss" not in out  # an inline link named like a preset is not it


def test_the_calibrated_presets_are_the_papers_conditions_too():
    for condition in ("ideal", "mild", "severe", "outage"):
        link = f"wifi-ac-{condition}"
        assert condition_of({"link": link, "link_preset": link,
                             "link_overrides": None}) == condition
    assert condition_of({"link": "wifi-ac-mild+delay=10ms", "link_preset": "wifi-ac-mild",
                         "link_overrides": '{"delay": "10ms"}'}) is None


def test_condition_of_reads_old_and_new_rows():
    assert condition_of({"link": "wifi-mild"}) == "mild"  # a run before link_preset
    assert condition_of({"link": "wifi-mild", "link_preset": "wifi-mild",
                         "link_overrides": None}) == "mild"
    assert condition_of({"link": "wifi-mild+loss=5%", "link_preset": "wifi-mild",
                         "link_overrides": '{"loss": "5%"}'}) is None
    assert condition_of({"link": "wifi-mild", "link_preset": None,
                         "link_overrides": '{"rate": "50Mbit/s"}'}) is None
    blocks = build_blocks([{"cell_id": "a", "link": "x", "link_preset": "wifi-ideal",
                            "profile": "default", "payload_bytes": 1024, "status": "ok"}])
    assert blocks[0].condition is None


def _row(cell_id: str, flow: str, **extra) -> dict:
    return {"cell_id": cell_id, "link": "ethernet-1g+overlay=vxlan", "flow": flow,
            "profile": "default", "payload_bytes": 1000, "status": "ok", "trial": 1,
            "subscribers": 1, "topics": 1, **extra}


def test_cells_that_differ_by_a_setting_never_share_a_column():
    # paper 001 Fig. 10: intra-host and cross-host cells once averaged into one column
    blocks = build_blocks([_row("intra", "intra-host"), _row("cross", "cross-host")])
    assert [b.key.get("flow") for b in blocks] == ["intra-host", "cross-host"]
    assert all(len(c.rows) == 1 for b in blocks for c in b.columns)
    # a difference no block key names still splits them (by their endpoints)
    twins = build_blocks([_row("a", "x", endpoints="robot -> edge"),
                          _row("b", "x", endpoints="robot2 -> edge")])
    assert len(twins) == 2 and twins[0].key["endpoints"] == "robot -> edge"
    # trials of one cell do share a column
    trials = build_blocks([_row("a", "x"), _row("a", "x", trial=2)])
    assert len(trials) == 1 and len(trials[0].columns[0].rows) == 2


def test_pooled_types_share_a_column_that_averages_all_their_trials():
    # seed 000 Table II averages over its message types (--pool type)
    rows = [_row(f"{kind}-t{trial}", "x", type=kind, trial=trial, reception_rate_hz=rate,
                 endpoints=f"t: robot->edge {kind} 1KiB")
            for kind, rates in (("Image", (30.0, 28.0)), ("String", (26.0, 24.0)))
            for trial, rate in zip((1, 2), rates, strict=True)]
    apart = build_blocks(rows)
    assert [b.key.get("type") for b in apart] == ["Image", "String"]
    pooled = build_blocks(rows, ("type",))
    assert len(pooled) == 1 and pooled[0].key["type"] == "Image/String"
    (column,) = pooled[0].columns
    assert len(column.rows) == 4 and column.measured("reception_rate_hz") == 27.0
    assert "type=Image/String" in pooled[0].title
    # one type only: nothing to name
    assert "type" not in build_blocks(rows[:2], ("type",))[0].key


def test_pool_takes_block_settings_only():
    from linklab.errors import UsageError
    from linklab.report.table import check_pool

    assert check_pool(["type", "type", "history"]) == ("type", "history")
    for bad in ("link", "colour", "payload_bytes"):
        with pytest.raises(UsageError, match=f"^--pool: cannot pool '{bad}'; accepted: "):
            check_pool([bad])


@pytest.mark.slow
def test_report_pool_on_the_command_line(runs):
    good = linklab("report", runs["base"], "--pool", "type", "--markdown")
    assert good.returncode == 0, good.stderr
    # one message type in the run: pooling it changes nothing
    assert good.stdout == linklab("report", runs["base"], "--markdown").stdout
    bad = linklab("report", runs["base"], "--pool", "colour")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        bad.stderr.strip()] and "--pool: cannot pool 'colour'" in bad.stderr


def test_each_cells_latency_distribution_is_a_table():
    from linklab.report.latency import latency_section

    rows = [_row("a", "intra-host", received=10, expected=10, latency_p50_ms=0.05,
                 latency_p95_ms=0.08, latency_p99_ms=0.11, latency_max_ms=1.3),
            _row("s", "x", rate_asked="max"), _row("k", "x", subscribers=4)]
    section = latency_section(rows)
    assert [r[0].text for r in section.rows] == ["a"]
    assert [c.text for c in section.rows[0][1:8]] == ["10/10", "—", "—", "0.050", "0.080",
                                                      "0.110", "1.300"]
    assert latency_section([rows[1]]) is None
    late = latency_section([_row("f", "x", status="failed", failure_reason="latency: mean",
                                 reception_rate_hz=11.5, latency_mean_ms=4000.0)])
    assert [c.text for c in late.rows[0][2:4]] == ["11.50", "—"]
    assert late.records[0]["latency_mean_ms"] == 4000.0
    broken = latency_section([_row("e", "x", status="error", latency_mean_ms=1.0,
                                   failure_reason="linklab bug: ZeroDivisionError")])
    assert broken.rows[0][3].text == "error"   # never "—": it is not a link result


def test_a_distance_sweep_is_one_table_of_loss_and_latency_per_curve():
    from linklab.report.distance import distance_section

    def cell(d, qos, **extra):
        return {"cell_id": f"{d}-{qos}", "link": f"wifi-80211a+distance={d}m",
                "link_overrides": f'{{"distance": "{d}m"}}', "middleware": "fastdds",
                "qos": qos, "status": "ok", "received": 190, "message_loss_rate": 0.05,
                "latency_mean_ms": 1.25, **extra}

    rows = [cell(24, "default"), cell(24, "sensor_data"), cell(25.6, "default"),
            cell(25.6, "sensor_data", status="failed", received=0, message_loss_rate=None,
                 failure_reason="discovery did not complete: matched no publisher")]
    section = distance_section(rows)
    assert section.columns == ["Distance (m)", "default", "sensor_data"]
    assert [[c.text for c in r] for r in section.rows] == [
        ["24", "5.0 % · 1.2 ms", "5.0 % · 1.2 ms"],
        ["25.6", "5.0 % · 1.2 ms", "no discovery"]]
    assert section.rows[1][2].klass == "failed" and "25 m" in section.notes[0]
    assert distance_section(rows[:2]) is None   # one distance: no sweep


def test_a_distance_sweep_says_how_many_of_several_subscribers_never_matched():
    from linklab.report.distance import distance_section

    unmatched = "discovery did not complete: this subscriber's reader matched no publisher"
    unwritten = "not completed: publisher wrote 0/200; crashed: exit status 1"

    def cell(d, failed):
        reason = "; ".join(f"topic t subscriber sub-t-robot{i}: "
                           + (unmatched if i in failed else unwritten) for i in range(1, 5))
        return {"cell_id": f"{d}", "link_overrides": f'{{"distance": "{d}m"}}',
                "middleware": "fastdds", "subscribers": 4, "status": "failed",
                "received": 0, "message_loss_rate": None, "failure_reason": reason}

    section = distance_section([cell(25.6, {2}), cell(25.8, {2, 4}), cell(26, {1, 2, 3, 4})])
    # runs recorded before the unmatched_subscribers column: counted from the reasons
    assert [r[1].text for r in section.rows] == [
        "no discovery (1 of 4 subscribers unmatched)",
        "no discovery (2 of 4 subscribers unmatched)",
        "no discovery (4 of 4 subscribers unmatched)"]
    assert all(r[1].klass == "failed" for r in section.rows)
    nothing = dict(cell(27, set()), failure_reason="topic t subscriber sub-t-robot1: "
                   + unwritten)
    assert distance_section([cell(26, {1}), nothing]).rows[1][1].text == "nothing arrived"
    # a cell not measured (the simulation fell behind real time) is an error, not a loss
    behind = dict(cell(27, set()), status="error", failure_reason="could not run: link "
                  "robot1-edge: the ns-3 simulation stayed more than 10 ms behind real time")
    text = distance_section([cell(26, {1}), behind]).rows[1][1]
    assert (text.text, text.klass) == ("error: simulation behind real time", "failed")
    # now: the matched subscribers were measured, the column says how many did not match
    measured = dict(cell(25.6, {2}), received=597, message_loss_rate=0.005,
                    latency_mean_ms=2.25, unmatched_subscribers=1)
    whole = dict(cell(25.4, set()), status="ok", failure_reason=None, received=800,
                 message_loss_rate=0.0, latency_mean_ms=1.5, unmatched_subscribers=0)
    texts = [r[1] for r in distance_section([whole, measured]).rows]
    assert [t.text for t in texts] == ["0.0 % · 1.5 ms", "0.5 % · 2.2 ms (1 of 4 unmatched)"]
    assert [t.klass for t in texts] == ["", "failed"]


def test_search_and_share_tables_name_the_flow_when_cells_ran_on_one():
    from linklab.report.searches import shares_section

    rows = [_row(f"{flow}-75", flow, rate_asked="75%", middleware="cyclonedds",
                 search_max_rate_hz=100.0, rate_hz=75.0) for flow in ("intra-pod", "cross-host")]
    section = shares_section(rows)
    assert section.columns[:3] == ["Middleware", "Link", "Flow"]
    assert [r[2].text for r in section.rows] == ["cross-host", "intra-pod"]
    assert [r["flow"] for r in section.records] == ["cross-host", "intra-pod"]
    assert "Flow" not in shares_section([dict(r, flow=None) for r in rows]).columns
