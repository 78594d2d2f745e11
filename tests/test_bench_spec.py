"""Scenario files: validation errors name file, line and field; axes expand to cells."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from linklab.bench.matrix import deadline_s, estimate_s, expand
from linklab.bench.spec import load_scenario, parse_scenario
from linklab.errors import UsageError

REPO = Path(__file__).resolve().parents[1]

GOOD = textwrap.dedent("""\
    name: demo-matrix
    fixed:
      middleware: fastdds
      rate: 30Hz
      qos: reliable
      history: keep_all
      count: 300
    axes:
      link: [wifi-ideal, wifi-severe]
      payload: [32KiB, 256KiB]
      profile: [default, optimized]
    trials: 2
    quick:
      count: 30
      payload: [64KiB]
    """)


def error_of(text: str) -> str:
    with pytest.raises(UsageError) as info:
        parse_scenario(textwrap.dedent(text), "s.yaml")
    return str(info.value)


def test_axes_expand_to_the_product_with_the_link_outermost():
    cells = expand(parse_scenario(GOOD, "s.yaml"))
    assert len(cells) == 2 * 2 * 2 * 2
    assert [c.link for c in cells[:8]] == ["wifi-ideal"] * 8
    assert cells[0].payload_bytes == 32 * 1024 and cells[0].rate_hz == 30.0
    assert len({c.cell_id for c in cells}) == len(cells)
    assert cells[0].cell_id == "wifi-ideal-default-32KiB-t1"
    assert [c.index for c in cells] == list(range(16))
    # the same scenario gives the same ids (resume relies on it)
    assert [c.cell_id for c in expand(parse_scenario(GOOD, "s.yaml"))] == \
        [c.cell_id for c in cells]


def test_quick_and_repeat_override_the_file():
    quick = expand(parse_scenario(GOOD, "s.yaml", quick=True, repeat=1))
    assert len(quick) == 2 * 2 * 1
    assert {c.payload_bytes for c in quick} == {64 * 1024}
    assert {c.count for c in quick} == {30}


def test_estimated_duration_counts_publishing_and_setup():
    cells = expand(parse_scenario(GOOD, "s.yaml", quick=True, repeat=1))
    total = sum(estimate_s(c) for c in cells)
    assert 4 * 1.0 < total < 4 * 30  # 1 s of publishing per cell plus setup
    assert deadline_s(cells[0]) >= 1.0 + 10.0
    assert deadline_s(cells[0], outage_s=20) >= 31.0


def test_an_outage_lengthens_the_estimate_only_beyond_publishing():
    """The publisher goes on through an outage: 20 s from 5 s into 33.3 s of publishing
    ends before it does; 20 s from 5 s into 10 s of publishing adds 15 s."""
    def cell(count):
        text = ("name: o\nfixed: {rate: 30Hz, link: wifi-outage, payload: 32KiB, "
                f"count: {count}, warmup: 2s, outage_start: 5s}}\n")
        return expand(parse_scenario(text, "o.yaml"))[0]
    long_cell, short_cell = cell(1000), cell(300)
    assert estimate_s(long_cell, outage_s=20) == pytest.approx(estimate_s(long_cell))
    assert estimate_s(short_cell, outage_s=20) == pytest.approx(estimate_s(short_cell) + 15)
    assert deadline_s(long_cell, outage_s=20) == pytest.approx(deadline_s(long_cell) + 20)


def test_the_pace_of_finished_cells_scales_what_is_left():
    from linklab.bench.runner import PACE_AFTER_CELLS, observed_pace
    assert observed_pace([40.0] * (PACE_AFTER_CELLS - 1), [20.0] * (PACE_AFTER_CELLS - 1)) \
        == 1.0  # too few to say
    assert observed_pace([40.0, 40.0, 40.0, 40.0], [30.0, 34.0, 32.0, float("nan")]) == \
        pytest.approx(96 / 120)  # a cell without a wall time (an error row) is left out
    assert observed_pace([], []) == 1.0


def test_a_search_is_counted_once_for_the_cells_that_share_it():
    from linklab.bench.runner import (
        TYPICAL_SEARCH_TRIALS,
        cell_estimates_s,
        search_budget_s,
        search_key,
    )

    class NoOutage:
        def outage_s(self, cell):
            return 0.0

    scenario = parse_scenario(textwrap.dedent("""\
        name: shared-search
        fixed: {link: ethernet-1g, middleware: cyclonedds, qos: best_effort, duration: 20s}
        axes:
          rate: [max, 75%, 50%]
          payload: [256B, 64KiB]
        search: {trial: 2s, precision: 5%, max_trials: 12}
        """), "s.yaml")
    cells = expand(scenario)
    typical = cell_estimates_s(cells, NoOutage(), scenario.search)
    most = cell_estimates_s(cells, NoOutage(), scenario.search, bound=True)
    one = search_budget_s(scenario.search, TYPICAL_SEARCH_TRIALS)
    searched = {c.cell_id: c.search for c in cells}
    by_id = dict(zip((c.cell_id for c in cells), typical, strict=True))
    # the max cells search; the 75 % and 50 % cells run 20 s at a share of that maximum
    for cell in cells:
        if searched[cell.cell_id]:
            assert by_id[cell.cell_id] >= one
        else:
            assert by_id[cell.cell_id] < one + 10 + 20 + 10
            assert by_id[cell.cell_id] > 20
    assert sum(most) - sum(typical) == pytest.approx(
        2 * (search_budget_s(scenario.search) - one))
    # without the max cells, the first share of each setting pays the search, the second not
    shares = [c for c in cells if not c.search]
    costs = cell_estimates_s(shares, NoOutage(), scenario.search)
    paying = [c for c, s in zip(shares, costs, strict=True) if s > one]
    assert len(paying) == 2 and len({search_key(c) for c in paying}) == 2
    # a resumed run that holds the searches pays for none
    keys = {search_key(c) for c in shares}
    assert max(cell_estimates_s(shares, NoOutage(), scenario.search, keys)) < one


@pytest.mark.parametrize("text, where", [
    ("name: x\nfixed:\n  rate: 30Hz\n  link: lan-2.5g\n  count: 1\naxes:\n  payload: [32KiB, 12]\n",
     "s.yaml:7: axes.payload[1]: '12' has no unit"),
    ("name: x\nfixed:\n  rate: 30\n  link: lan-2.5g\n  payload: 1KiB\n  count: 1\n",
     "s.yaml:3: fixed.rate: '30' has no unit"),
    ("name: x\nfixed:\n  rate: 30Hz\n  link: lan-2.5g\n  payload: 1KiB\n  count: 1\n  qos: maybe\n",
     "s.yaml:7: fixed.qos: 'maybe' is not one of reliable, best_effort"),
    ("name: x\nfixed:\n  rate: 30Hz\n  link: lan-2.5g\n  payload: 1KiB\n  colour: red\n",
     "s.yaml:6: fixed.colour: unknown field"),
    ("name: x\nfixed:\n  rate: 30Hz\n  link: lan-2.5g\n  payload: 1KiB\n  count: 1\n"
     "  history: keep_some\n", "s.yaml:7: fixed.history: 'keep_some' is not a history"),
    ("name: x\nfixed:\n  rate: 30Hz\n  link: lan-2.5g\n  count: 0\n  payload: 1KiB\n",
     "s.yaml:5: fixed.count: 0 must be a whole number greater than zero"),
    ("name: x\nfixed:\n  rate: 30Hz\n  link: lan-2.5g\n  count: 3\naxes:\n  payload: 1KiB\n",
     "s.yaml:7: axes.payload: an axis is a list"),
    ("name: x\nfixed:\n  rate: 30Hz\n  count: 3\n  payload: 1KiB\n",
     "s.yaml:2: link: missing"),
    ("name: x\nfixed: [1, 2\n", "s.yaml:3: not valid YAML"),
    ("name: x\nfixed:\n  rate: 30Hz\n  link: lan-2.5g\n  count: 3\n  payload: 1KiB\nextra: 1\n",
     "s.yaml:7: extra: unknown key"),
    ("name: x\nfixed:\n  rate: 30Hz\n  link: lan-2.5g\n  count: 3\n  payload: 1KiB\naxes:\n"
     "  type: [Bytes, Array7k]\n", "s.yaml:8: axes.type[1]: 'Array7k' is not one of"),
])
def test_validation_errors_name_file_line_and_field(text, where):
    assert where in error_of(text)


def test_missing_file_is_a_usage_error():
    with pytest.raises(UsageError, match="cannot read scenario"):
        load_scenario("/nonexistent/x.yaml")


@pytest.mark.parametrize("name", [
    "paper-000-table2", "paper-000-outage", "paper-000-512k-severe", "paper-000-512k-paced",
    "paper-000-tuned-severe",
    "diagnosis-tcp-severe", "demo"])
def test_shipped_scenarios_validate(name):
    scenario = load_scenario(REPO / "scenarios" / f"{name}.yaml")
    assert expand(scenario)
    assert expand(load_scenario(REPO / "scenarios" / f"{name}.yaml", quick=True))


def test_the_cubic_scenario_needs_cubic_allowed_for_namespaces(monkeypatch, tmp_path):
    # it pins tcp_congestion: cubic, which a child namespace may take only when the host's
    # allowed list has it (linklab.link.spec_checks); both cases, host-independent
    from linklab.link import spec_checks

    path = REPO / "scenarios" / "paper-000-table2-calibrated-cubic.yaml"
    allowed = tmp_path / "allowed"
    monkeypatch.setattr(spec_checks, "ALLOWED_CONGESTION", allowed)
    monkeypatch.setattr(spec_checks, "AVAILABLE_CONGESTION", tmp_path / "available")
    (tmp_path / "available").write_text("reno bbr cubic\n")
    allowed.write_text("reno bbr\n")
    with pytest.raises(UsageError, match="allow it on the host first: sysctl -w "
                       "net.ipv4.tcp_allowed_congestion_control='reno bbr cubic'"):
        load_scenario(path)
    allowed.write_text("reno bbr cubic\n")
    cells = expand(load_scenario(path))
    assert len(cells) == 4 * 5 * 5
    assert {c.link_choice.overrides_dict()["tcp_congestion"] for c in cells} == {"cubic"}
    assert {c.profile for c in cells} == {"large_data"}
    assert expand(load_scenario(path, quick=True))


def test_table2_scenario_is_the_papers_matrix():
    scenario = load_scenario(REPO / "scenarios" / "paper-000-table2.yaml")
    cells = expand(scenario)
    assert len(cells) == 4 * 5 * 3
    assert {c.payload_bytes // 1024 for c in cells} == {32, 64, 128, 256, 512}
    assert {c.profile for c in cells} == {"default", "large_data", "optimized"}
    assert {(c.rate_hz, c.qos, c.history, c.count) for c in cells} == \
        {(30.0, "reliable", "profile", 1000)}


def test_a_profile_file_is_found_next_to_the_scenario(tmp_path):
    (tmp_path / "mine.xml").write_text("<dds/>")
    text = ("name: x\nfixed:\n  rate: 30Hz\n  link: lan-2.5g\n  count: 3\n  payload: 1KiB\n"
            "axes:\n  profile: [default, mine.xml]\n")
    path = tmp_path / "s.yaml"
    path.write_text(text)
    cells = expand(load_scenario(path))
    assert cells[1].profile == str(tmp_path / "mine.xml") and cells[1].cell_id == "mine"
    path.write_text(text.replace("mine.xml", "theirs.xml"))
    with pytest.raises(UsageError, match=r"s.yaml:8: axes.profile\[1\]: profile file"):
        load_scenario(path)
