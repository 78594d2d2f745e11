"""Paper 001 Fig. 9: the scenario (maximum-throughput searches, Best Effort and Reliable
on the cross-host VXLAN path) and the report's table that sets the two QoS side by side
(linklab.report.qos_throughput)."""

from __future__ import annotations

from pathlib import Path

import pytest

from linklab.bench.matrix import expand
from linklab.bench.spec import load_scenario
from linklab.report.qos_throughput import PAPER, VERSIONS_NOTE, pairs, qos_section
from linklab.report.view import to_markdown

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "paper-001-fig9-qos.yaml"


def search_row(cell_id: str, qos: str, payload: int, mbit: float | None,
               middleware: str = "cyclonedds", flow: str = "cross-host") -> dict:
    """A search row as bench writes it now: the best trial's achieved figures."""
    return {"cell_id": cell_id, "middleware": middleware, "link": "ethernet-1g+overlay",
            "flow": flow, "qos": qos, "payload_bytes": payload, "rate_asked": "max",
            "status": "ok" if mbit else "failed", "search_asked_rate_hz": 100.0,
            "search_max_rate_hz": 99.0 if mbit else None,
            "search_max_throughput_bit_s": None if mbit is None else mbit * 1e6}


def test_scenario_searches_both_qos_for_cyclone_on_the_1g_cross_host_vxlan_path():
    cells = expand(load_scenario(SCENARIO))
    assert {(c.qos, c.payload_bytes) for c in cells} == {
        (q, p) for q in ("best_effort", "reliable") for p in (4096, 65536, 1 << 20)}
    assert {c.middleware for c in cells} == {"cyclonedds"}
    assert {str(c.rate) for c in cells} == {"max"}
    assert {c.flow for c in cells} == {"cross-host"}
    assert {c.history for c in cells} == {"keep_last:10"}
    assert all(c.link.startswith("ethernet-1g") for c in cells)
    quick = expand(load_scenario(SCENARIO, quick=True))
    assert sorted(c.qos for c in quick) == ["best_effort", "reliable"]


def test_pairs_keep_only_what_ran_under_both_reliabilities():
    rows = [search_row("be-64k", "best_effort", 65536, 960.0),
            search_row("re-64k", "reliable", 65536, 940.0),
            search_row("be-1m", "best_effort", 1 << 20, 960.0),  # no reliable twin
            search_row("de-64k", "default", 65536, 900.0),       # a ROS 2 profile
            dict(search_row("fixed", "reliable", 1 << 20, 10.0), rate_asked="30Hz")]
    found = pairs(rows)
    assert list(found) == [("cyclonedds", "ethernet-1g+overlay", "cross-host", 65536)]
    assert {q: r["cell_id"] for q, r in found[next(iter(found))].items()} == {
        "best_effort": "be-64k", "reliable": "re-64k"}


def test_table_sets_reliable_beside_best_effort_with_the_papers_reading():
    rows = [search_row("re-4k", "reliable", 4096, 300.0),
            search_row("be-4k", "best_effort", 4096, 400.0),
            search_row("be-64k", "best_effort", 65536, 960.0, middleware="fastdds"),
            search_row("re-64k", "reliable", 65536, None, middleware="fastdds")]
    section = qos_section(rows)
    assert section is not None and section.key == "qos-throughput"
    texts = [[c.text for c in row] for row in section.rows]
    assert texts[0] == ["cyclonedds", "ethernet-1g+overlay", "cross-host", "4KiB",
                        "400.0", "300.0", "0.750", PAPER]
    assert texts[1][:7] == ["fastdds", "ethernet-1g+overlay", "cross-host", "64KiB",
                            "960.0", "—", "—"]  # nothing sustained: no ratio
    rec = section.records[0]
    assert rec["reliable_over_best_effort"] == pytest.approx(0.75)
    assert (rec["best_effort_cell"], rec["reliable_cell"]) == ("be-4k", "re-4k")
    assert section.notes == [VERSIONS_NOTE]
    assert "rmw_cyclonedds (1.3.4 vs 2.2.3)" in VERSIONS_NOTE
    assert "Maximum throughput by QoS (paper 001 Fig. 9 layout)" in to_markdown(section)


def test_no_table_without_a_search_under_both_qos():
    assert qos_section([search_row("be", "best_effort", 4096, 400.0)]) is None
    assert qos_section([]) is None
