"""`linklab report RUN_A --compare RUN_B`: per-cell change of every metric, flagged when
outside the run-to-run spread, exit 1 with --fail-on-regression; different matrices."""

from __future__ import annotations

import json

import pytest

from linklab.report.compare import metric_change
from report_checks import linklab
from report_rundirs import Behaviour, make_run, table_behaviour, table_run
from report_rundirs_streams import fanout_run, search_run, strip_new_columns


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cmp")
    return {
        # the same link and software measured twice (3 trials each, different noise)
        "base": table_run(root / "base", trials=3, seed=1),
        "again": table_run(root / "again", trials=3, seed=2),
        # 50 % more latency everywhere
        "slower": table_run(root / "slower", trials=3, seed=3, scale=1.5),
        # only the wifi-ideal half of the matrix
        "half": table_run(root / "half", trials=3, seed=4,
                          skip=lambda c: c.link != "wifi-ideal"),
    }


def compare_json(a, b, *extra):
    result = linklab("report", a, "--compare", b, "--json", *extra)
    return result, (json.loads(result.stdout) if result.stdout.strip() else None)


@pytest.mark.slow
def test_a_repeat_of_the_same_run_is_not_a_regression(runs):
    result, doc = compare_json(runs["again"], runs["base"], "--fail-on-regression")
    assert result.returncode == 0, (result.stderr, doc and doc["regressions"])
    assert doc["regressions"] == []
    assert len(doc["cells"]) == 8
    spreads = {m["spread_from"] for c in doc["cells"] for m in c["changes"]
               if m["delta"] is not None}
    assert spreads == {"trials"}


@pytest.mark.slow
def test_slower_latency_is_flagged_and_gates(runs):
    result, doc = compare_json(runs["slower"], runs["base"])
    assert result.returncode == 0  # without --fail-on-regression: report only
    regressed = {(r["cell"], r["what"]) for r in doc["regressions"]}
    ok_cells = [c for c in doc["cells"] if c["status"] == "ok"]
    assert len(ok_cells) == 6
    for cell in ok_cells:
        assert (cell["name"], "latency_mean_ms") in regressed
        change = next(m for m in cell["changes"] if m["metric"] == "latency_mean_ms")
        assert change["relative"] == pytest.approx(0.5, abs=0.08)
        assert change["flagged"] and change["direction"] == "worse"
        assert abs(change["delta"]) > change["spread"]
    # cells that failed in both runs show changes but are not gated on
    assert not any("wifi-severe, default" in name for name, _ in regressed)
    gated = linklab("report", runs["slower"], "--compare", runs["base"],
                    "--fail-on-regression")
    assert gated.returncode == 1
    assert "regressions:" in gated.stdout and "mean latency" in gated.stdout


def test_the_reverse_is_an_improvement(runs):
    result, doc = compare_json(runs["base"], runs["slower"], "--fail-on-regression")
    assert result.returncode == 0
    assert doc["regressions"] == []
    better = [m for c in doc["cells"] for m in c["changes"] if m["direction"] == "better"]
    assert any(m["metric"] == "latency_mean_ms" for m in better)


def test_terminal_view_names_both_runs_and_the_changes(runs):
    result = linklab("report", runs["slower"], "--compare", runs["base"])
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert str(runs["base"]) in out and "(reference)" in out and "8 cells in common" in out
    assert "wifi-ideal, default, 64KiB" in out
    assert "+5" in out and "%!" in out  # ~+50 %, flagged
    assert "Outside the spread" in out and "from trials" in out


def test_a_cell_that_now_fails_is_a_regression(tmp_path):
    base = table_run(tmp_path / "base", seed=1)
    normal = table_behaviour()

    def broken(cell):
        if cell.link == "wifi-ideal" and cell.profile == "optimized" and \
                cell.payload_bytes == 65536:
            return Behaviour(stop_after=10, crash="publisher")
        return normal(cell)

    text = (base / "run.json").read_text()
    scenario_text = json.loads(text)["scenario"]["text"]
    now = make_run(tmp_path / "now", scenario_text, broken, seed=1)
    result, doc = compare_json(now, base, "--fail-on-regression")
    assert result.returncode == 1
    assert any(r["cell"] == "wifi-ideal, optimized, 64KiB" and r["what"].startswith(
        "status: ok → failed (crashed: publisher") for r in doc["regressions"])
    # single trials: the spread comes from the per-metric tolerance
    assert {m["spread_from"] for c in doc["cells"] for m in c["changes"]} == {"tolerance"}


@pytest.mark.slow
def test_without_trials_small_changes_stay_inside_the_tolerance(tmp_path):
    base = table_run(tmp_path / "base", seed=1)
    same_noise_a_bit_slower = table_run(tmp_path / "now", seed=1, scale=1.05)
    result, doc = compare_json(same_noise_a_bit_slower, base, "--fail-on-regression")
    assert result.returncode == 0, doc["regressions"]
    much_slower = table_run(tmp_path / "much", seed=1, scale=1.6)
    result, doc = compare_json(much_slower, base, "--fail-on-regression")
    assert result.returncode == 1 and doc["regressions"]


def test_different_matrices_compare_the_common_cells_and_say_what_is_missing(runs):
    result, doc = compare_json(runs["base"], runs["half"])
    assert result.returncode == 0, result.stderr
    assert len(doc["cells"]) == 4
    assert len(doc["only_in_run"]) == 4 and doc["only_in_reference"] == []
    assert all("wifi-severe" in name for name in doc["only_in_run"])
    text = linklab("report", runs["base"], "--compare", runs["half"]).stdout
    assert "not compared" in text and "wifi-severe, optimized, 256KiB" in text


def test_nothing_in_common_is_a_one_line_error(runs, tmp_path):
    other = make_run(tmp_path / "other", """\
name: other
fixed: {middleware: fastdds, link: wifi-outage, profile: optimized, rate: 10Hz,
        qos: best_effort, history: keep_all, type: Bytes, count: 30, warmup: 1s,
        payload: 1KiB}
""", lambda c: Behaviour())
    result = linklab("report", runs["base"], "--compare", other)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("linklab: error: --compare:")
    assert "no cell in common" in lines[0]
    assert "link: wifi-ideal, wifi-severe vs wifi-outage" in lines[0]
    assert "rate: 30 Hz vs 10 Hz" in lines[0]


@pytest.mark.parametrize("problem", ["missing", "unknown format"])
def test_a_bad_reference_run_is_a_one_line_error(runs, tmp_path, problem):
    ref = tmp_path / "ref"
    if problem == "unknown format":
        ref = table_run(ref, skip=lambda c: c.index > 0)
        info = json.loads((ref / "run.json").read_text())
        info["format_version"] = 3
        (ref / "run.json").write_text(json.dumps(info))
    result = linklab("report", runs["base"], "--compare", ref, "--fail-on-regression")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("linklab: error: --compare:")
    assert ("not a run directory" if problem == "missing" else "format version 3") in lines[0]


@pytest.mark.slow
def test_html_with_compare_has_the_comparison(runs, tmp_path):
    out = tmp_path / "cmp.html"
    result = linklab("report", runs["slower"], "--compare", runs["base"], "--html", out)
    assert result.returncode == 0, result.stderr
    page = out.read_text()
    assert "id=comparison" in page and "class='regression' data-metric=latency_mean_ms" in page


def test_spread_rules():
    rows = lambda *v: [{"latency_mean_ms": x} for x in v]  # noqa: E731
    # trials: the larger range of the two runs
    m = metric_change("latency_mean_ms", rows(10.0, 12.0), rows(9.0, 9.5))
    assert m.spread == 2.0 and m.delta == pytest.approx(1.75) and not m.flagged
    m = metric_change("latency_mean_ms", rows(14.0, 14.5), rows(9.0, 9.5))
    assert m.flagged and m.direction == "worse"
    # one trial each: 20 % of the reference (latency), with an absolute floor of 0.5 ms
    assert metric_change("latency_mean_ms", rows(11.9), rows(10.0)).flagged is False
    assert metric_change("latency_mean_ms", rows(12.1), rows(10.0)).direction == "worse"
    assert metric_change("latency_mean_ms", rows(1.4), rows(1.0)).flagged is False
    # higher is better for the reception rate
    up = metric_change("reception_rate_hz", [{"reception_rate_hz": 30.0}],
                       [{"reception_rate_hz": 20.0}])
    assert up.direction == "better"
    # ... up to the publish rate: above it is a burst after a stall
    burst = metric_change("reception_rate_hz", [{"reception_rate_hz": 90.0, "rate_hz": 30.0}],
                          [{"reception_rate_hz": 29.0, "rate_hz": 30.0}])
    assert burst.direction == "worse"
    missing = metric_change("wire_amplification", [{}], [{"wire_amplification": 1.1}])
    assert missing.delta is None and not missing.flagged


@pytest.mark.slow
def test_a_run_made_before_the_newer_columns_still_loads_and_compares(runs, tmp_path):
    old = strip_new_columns(table_run(tmp_path / "old", trials=3, seed=7))
    result = linklab("report", old)  # no topology, expected, link_overrides ...: absent
    assert result.returncode == 0, result.stderr
    assert "270/270" in result.stdout  # delivered (3 trials) falls back on published
    for a, b in ((old, runs["base"]), (runs["base"], old)):
        result, doc = compare_json(a, b, "--fail-on-regression")
        assert result.returncode == 0, (result.stderr, doc and doc["regressions"])
        assert len(doc["cells"]) == 8 and not doc["only_in_run"]
        assert "topology" not in doc["cells"][0]["settings"]  # compared on what both have
    # the new setting columns are part of a cell's identity when both runs have them
    new = json.loads(linklab("report", runs["base"], "--compare", runs["again"],
                             "--json").stdout)
    assert {"topology", "subscribers", "endpoints", "link_overrides"} <= set(
        new["cells"][0]["settings"])


@pytest.mark.slow
def test_searches_and_fanout_runs_compare_with_themselves(tmp_path):
    one, two = search_run(tmp_path / "s1", seed=1), search_run(tmp_path / "s2", seed=2)
    result, doc = compare_json(two, one, "--fail-on-regression")
    assert result.returncode == 0, (result.stderr, doc and doc["regressions"])
    assert len(doc["cells"]) == 8  # searches matched on "max", not on the rate found
    rate = next(m for c in doc["cells"] for m in c["changes"]
                if m["metric"] == "search_max_rate_hz" and m["value"] is not None)
    assert rate["delta"] == pytest.approx(0.0)
    fan = fanout_run(tmp_path / "f1")
    result, doc = compare_json(fan, fanout_run(tmp_path / "f2", lossy=None))
    # without --fail-on-regression the change is reported only, but RUN_A's own gate
    # (reception rate >= 19 Hz) is checked with --compare too: its lossy cell misses it
    assert result.returncode == 1
    assert result.stderr.startswith("gate missed: large_data: reception_rate >= 19Hz")
    large = next(c for c in doc["cells"] if c["name"].startswith("large_data"))
    assert large["delivered"] == "226/240" and large["reference_delivered"] == "240/240"
    text = linklab("report", fan, "--compare", tmp_path / "f2").stdout
    assert "240/240→226/240" in text
