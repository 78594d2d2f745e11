"""Throughput searches with Reliable and Best Effort side by side, laid out like paper
001 Fig. 9.

001_20e21b052d053958.txt §V-C, Fig. 9: "Max. throughput comparison between ROS 2
versions (Humble vs. Jazzy) and QoS (Best effort vs. Reliable)"; the text gives no
numbers: "Fig. 9 shows improved bandwidth in Jazzy ... since the throughput reduction
with Reliable is minor, the measured with Best Effort can be used as the maximum
capability for scheduling". A row is one middleware, link, flow and payload whose search
(``rate: max``) ran under both reliabilities; each maximum is what the best sustained
trial achieved (linklab.report.searches.figures), Reliable / Best Effort their ratio.
The paper's column is its qualitative reading; its Humble/Jazzy half is a note: linklab's
probes call the DDS C API with no rmw layer, so rmw_cyclonedds 1.3.4 vs 2.2.3 (over the
same Cyclone DDS 0.10) is not a thing it can vary (docs/RESULTS.md, "Fig. 9").
"""

from __future__ import annotations

from typing import Any

from linklab.report.searches import figures, is_search
from linklab.report.view import Cell, Section, fmt
from linklab.rundir import num
from linklab.units import size_label

QOS = ("best_effort", "reliable")
PAPER = "Reliable slightly below Best Effort"
COLUMNS = ("Middleware", "Link", "Flow", "Payload", "Best Effort (Mbit/s)",
           "Reliable (Mbit/s)", "Reliable / Best Effort", "Paper (Fig. 9)")
LEGEND = (
    "Each maximum is the payload Mbit/s that arrived in the best sustained trial of a "
    "throughput search (rate: max; the \"Maximum throughput per payload\" table has its "
    "rate, trials and why it stopped); a row is one middleware, link, flow and payload "
    "searched under both QoS. Paper 001 Fig. 9 gives no numbers: its text reads "
    "\"the throughput reduction with Reliable is minor\" and \"improved bandwidth in "
    "Jazzy\".")
VERSIONS_NOTE = (
    "Humble vs Jazzy (paper: Jazzy > Humble) is not measured: the paper's two "
    "distributions differ only in rmw_cyclonedds (1.3.4 vs 2.2.3) over Cyclone DDS 0.10, "
    "and linklab's probes call the DDS C API directly, with no rmw layer to vary.")


def _key(row: dict[str, Any]) -> tuple:
    return (str(row.get("middleware")), str(row.get("link")), str(row.get("flow") or ""),
            num(row.get("payload_bytes")) or 0)


def pairs(rows: list[dict[str, Any]]) -> dict[tuple, dict[str, dict[str, Any]]]:
    """Search rows by (middleware, link, flow, payload), then by QoS; only the keys
    searched under both Best Effort and Reliable, in the table's order."""
    found: dict[tuple, dict[str, dict[str, Any]]] = {}
    for row in rows:
        if is_search(row) and row.get("qos") in QOS:
            found.setdefault(_key(row), {})[str(row["qos"])] = row
    return {k: found[k] for k in sorted(found) if set(found[k]) == set(QOS)}


def _mbit(row: dict[str, Any]) -> float | None:
    bits = figures(row)["max_throughput_bit_s"]
    return None if bits is None else bits / 1e6


def qos_section(rows: list[dict[str, Any]]) -> Section | None:
    """The Fig. 9 table, or None when no search ran under both reliabilities."""
    found = pairs(rows)
    if not found:
        return None
    section = Section("qos-throughput", "Maximum throughput by QoS (paper 001 Fig. 9 "
                      "layout)", list(COLUMNS), legend=LEGEND, right=(3, 4, 5, 6),
                      notes=[VERSIONS_NOTE])
    for (middleware, link, flow, payload), by_qos in found.items():
        best, reliable = _mbit(by_qos["best_effort"]), _mbit(by_qos["reliable"])
        ratio = reliable / best if best and reliable is not None else None
        section.add(middleware, link, flow or "—", size_label(int(payload)),
                    Cell(fmt(best, 1), data={"cell": by_qos["best_effort"]["cell_id"]}),
                    Cell(fmt(reliable, 1), data={"cell": by_qos["reliable"]["cell_id"]}),
                    fmt(ratio, 3), Cell(PAPER, "paper"))
        section.records.append({
            "middleware": middleware, "link": link, "flow": flow or None,
            "payload_bytes": int(payload), "best_effort_mbit_s": best,
            "reliable_mbit_s": reliable, "reliable_over_best_effort": ratio,
            "best_effort_cell": by_qos["best_effort"]["cell_id"],
            "reliable_cell": by_qos["reliable"]["cell_id"], "paper": PAPER})
    return section
