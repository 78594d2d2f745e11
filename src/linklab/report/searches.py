"""Throughput searches (``rate: max``) laid out like paper 001 Fig. 5, and the cells run
at a share of the maximum (``rate: 75%``) like its Fig. 6.

001_20e21b052d053958.txt §V-A: Fig. 5 is the maximum throughput per payload, "the
publish rate ... dynamically selected to ensure that the subscriber receive the
messages with minimal packet loss"; Fig. 6 the latency percentiles at 75 % of it. Per
search cell (linklab.bench.search; columns in linklab.rundir): the maximum --
what the best sustained trial achieved: its publisher's measured rate and the payload
bit/s that arrived -- with the rate that trial asked beside it, the model's bytes on the
wire per sample, its efficiency (payload / wire bytes) and the capacity of the link's
rate by the model's headers, measured / model, how many trials and why the search
stopped. No figure shown is the rate asked times the payload (a 64 KiB search once
printed 380.1 Hz = 199.28 Mbit/s on a 200 Mbit/s link: asked, not carried). A row
recorded before the asked rate had its own column (issue 37) stored the rate asked as
its maximum: it is shown as asked, and the achieved figures are its best trial's own
``publish_rate_hz`` and ``goodput_bit_s`` (:func:`figures`). The trials themselves are
records/<cell>/search.json (:func:`trials`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from linklab.report.outcome import delivered_text, status_cell
from linklab.report.view import Cell, Section, count, fmt
from linklab.rundir import num
from linklab.units import size_label


def is_search(row: dict[str, Any]) -> bool:
    asked = str(row.get("rate_asked") or "")
    if asked:
        return asked == "max"
    return row.get("search_trials") is not None  # a run stored before rate_asked


def is_share(row: dict[str, Any]) -> bool:
    return str(row.get("rate_asked") or "").endswith("%")


def _mbit(value: Any) -> str:
    value = num(value)
    return "—" if value is None else f"{value / 1e6:.3f}"


def _order(row: dict[str, Any]) -> tuple:
    return (str(row.get("middleware")), str(row.get("link")), str(row.get("flow") or ""),
            str(row.get("qos")), num(row.get("payload_bytes")) or 0)


def _with_flow(section: Section, found: list[dict[str, Any]]) -> Section:
    """A Flow column after Link when the cells ran on deployment flows (paper 001 Fig. 5
    and 6 compare bare metal, intra-pod, intra-host and cross-host on one link)."""
    if not any(r.get("flow") for r in found):
        return section
    section.columns.insert(2, "Flow")
    for cells, row in zip(section.rows, found, strict=True):
        cells.insert(2, Cell(str(row.get("flow") or "—")))
    for rec, row in zip(section.records, found, strict=True):
        rec["flow"] = row.get("flow")
    section.right = tuple(i + 1 if i >= 2 else i for i in section.right)
    return section


ACHIEVED = "achieved"
OLD_ROW = ("recorded before searches kept what they achieved (issue 37): the maximum stored "
           "is the rate asked (Asked Hz); Max Hz and Mbit/s are the best trial's measured "
           "publish_rate_hz and goodput_bit_s")


def figures(row: dict[str, Any]) -> dict[str, Any]:
    """A search row's maximum as achieved -- ``max_rate_hz`` (the publisher's measured
    rate), ``max_throughput_bit_s`` (payload bit/s that arrived) -- ``asked_rate_hz``
    beside them, and ``basis`` (ACHIEVED, or OLD_ROW for a row stored with the rate
    asked as its maximum: its achieved figures are then the row's own measurement, the
    best trial's, and none when nothing was sustained)."""
    asked = num(row.get("search_asked_rate_hz"))
    if asked is not None:
        return {"max_rate_hz": num(row.get("search_max_rate_hz")),
                "max_throughput_bit_s": num(row.get("search_max_throughput_bit_s")),
                "asked_rate_hz": asked, "basis": ACHIEVED}
    asked = num(row.get("search_max_rate_hz"))
    if not asked or row.get("status") != "ok":  # nothing sustained: no maximum
        nothing = 0.0 if asked == 0 else None
        return {"max_rate_hz": nothing, "max_throughput_bit_s": nothing,
                "asked_rate_hz": asked, "basis": OLD_ROW}
    return {"max_rate_hz": num(row.get("publish_rate_hz")),
            "max_throughput_bit_s": num(row.get("goodput_bit_s")),
            "asked_rate_hz": asked, "basis": OLD_ROW}


def search_record(row: dict[str, Any]) -> dict[str, Any]:
    got = figures(row)
    rate, capacity = got["max_rate_hz"], num(row.get("model_capacity_hz"))
    return {
        "cell_id": row["cell_id"], "middleware": row.get("middleware"),
        "link": row.get("link"), "qos": row.get("qos"), "payload_bytes": row.get("payload_bytes"),
        "status": row.get("status"), "max_rate_hz": rate,
        "max_throughput_bit_s": got["max_throughput_bit_s"],
        "asked_rate_hz": got["asked_rate_hz"], "basis": got["basis"],
        "link_rate_bit_s": num(row.get("link_rate_bit_s")),
        "model_wire_bytes_per_sample": num(row.get("model_wire_bytes_per_sample")),
        "model_ip_packets_per_sample": num(row.get("model_ip_packets_per_sample")),
        "model_efficiency": num(row.get("model_efficiency")),
        "model_capacity_hz": capacity,
        "model_capacity_bit_s": num(row.get("model_capacity_bit_s")),
        "measured_over_model": rate / capacity if rate is not None and capacity else None,
        "trials": row.get("search_trials"), "stop": row.get("search_stop"),
        "next_failure": row.get("search_next_failure"), "model_note": row.get("model_note"),
        "received": row.get("received"), "expected": row.get("expected"),
    }


SEARCH_COLUMNS = ("Middleware", "Link", "QoS", "Payload", "Max Hz", "Mbit/s", "Asked Hz",
                  "Wire B", "Eff.", "Model Hz", "Model Mbit/s", "Ratio", "Delivered", "Trials",
                  "Stopped", "Status")
SEARCH_LEGEND = (
    "Max Hz: the publish rate achieved in the best sustained trial (its publisher's "
    "measured rate; the row's metrics are that trial's, where none was sustained the lowest "
    "trial's); Mbit/s: the payload bits per second that arrived in it; Asked Hz: the rate "
    "that trial asked for. Model (paper 001 §V-A): Wire B = bytes on the link per sample "
    "(the serialized sample: payload, CDR encapsulation and the type's own fields; RTPS + "
    "UDP + IPv4 headers; on a cluster's underlay VXLAN and WireGuard too, at the pod MTU), "
    "Eff. = payload / wire bytes, Model Hz and Mbit/s = what the link's rate carries with "
    "those headers (Ethernet frames counted); none for TCP transports, nor where both ends "
    "sit on one cluster node (the link is not on the way). Ratio = Max Hz / Model Hz "
    "(measured / model). Stopped: why the search ended.")
SHARE_COLUMNS = ("Middleware", "Link", "Payload", "Asked", "Max Hz", "Rate Hz", "Delivered",
                 "p50 (ms)", "p95 (ms)", "p99 (ms)", "Mean (ms)", "Status")
SHARE_LEGEND = (
    "rate: N % runs the cell at that share (Asked) of the maximum a search found for the "
    "same settings (Max Hz: the publish rate its best trial achieved; in runs recorded "
    "before issue 37, the rate that trial asked); Rate Hz: the rate it ran at.")


def _found(rows: list[dict[str, Any]], kind: Callable[[dict[str, Any]], bool]
           ) -> list[dict[str, Any]]:
    """The rows of this kind (is_search, is_share), in the tables' order."""
    return sorted((r for r in rows if kind(r)), key=_order)


def searches_section(rows: list[dict[str, Any]]) -> Section | None:
    found = _found(rows, is_search)
    if not found:
        return None
    section = Section("searches", "Maximum throughput per payload (paper 001 Fig. 5 layout)",
                      list(SEARCH_COLUMNS), legend=SEARCH_LEGEND, right=tuple(range(4, 14)))
    old = []
    for row in found:
        rec = search_record(row)
        ratio = rec["measured_over_model"]
        eff = rec["model_efficiency"]
        asked = fmt(rec["asked_rate_hz"], 1)
        if rec["basis"] != ACHIEVED:
            old.append(str(row["cell_id"]))
            asked = Cell(f"{asked} †", title=OLD_ROW)
        section.add(str(row.get("middleware")), str(row.get("link")), str(row.get("qos")),
                    size_label(int(num(row.get("payload_bytes")) or 0)),
                    Cell(fmt(rec["max_rate_hz"], 1), data={"cell": row["cell_id"],
                                                           "metric": "max_rate_hz"}),
                    _mbit(rec["max_throughput_bit_s"]), asked,
                    fmt(rec["model_wire_bytes_per_sample"], 0),
                    "—" if eff is None else f"{eff * 100:.1f} %",
                    fmt(rec["model_capacity_hz"], 1), _mbit(rec["model_capacity_bit_s"]),
                    fmt(ratio, 3), delivered_text(row), count(rec["trials"]),
                    Cell(str(rec["stop"] or "—"),
                         title=f"next rate up failed: {rec['next_failure']}"
                         if rec["next_failure"] else ""),
                    status_cell(row))
        section.records.append(rec)
        if rec["next_failure"]:
            section.notes.append(f"{row['cell_id']}: the lowest failing rate above the "
                                 f"maximum failed because {rec['next_failure']}")
    if old:
        section.notes.append(f"† {', '.join(old)}: {OLD_ROW}")
    return _with_flow(section, found)


def shares_section(rows: list[dict[str, Any]]) -> Section | None:
    found = _found(rows, is_share)
    if not found:
        return None
    section = Section("shares", "Latency at a share of the maximum rate (paper 001 Fig. 6 "
                      "layout)", list(SHARE_COLUMNS), legend=SHARE_LEGEND,
                      right=tuple(range(4, 11)))
    for row in found:
        section.add(str(row.get("middleware")), str(row.get("link")),
                    size_label(int(num(row.get("payload_bytes")) or 0)),
                    str(row.get("rate_asked")), fmt(row.get("search_max_rate_hz"), 1),
                    fmt(row.get("rate_hz"), 1), delivered_text(row),
                    fmt(row.get("latency_p50_ms")), fmt(row.get("latency_p95_ms")),
                    fmt(row.get("latency_p99_ms")), fmt(row.get("latency_mean_ms")),
                    status_cell(row))
        section.records.append({k: row.get(k) for k in (
            "cell_id", "middleware", "link", "payload_bytes", "rate_asked",
            "search_max_rate_hz", "rate_hz", "received", "expected", "latency_p50_ms",
            "latency_p95_ms", "latency_p99_ms", "latency_mean_ms", "status")})
    return _with_flow(section, found)


def _search_doc(cell_dir: Path) -> dict[str, Any]:
    try:
        doc = json.loads((cell_dir / "search.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return doc if isinstance(doc, dict) else {}


def trials(cell_dir: Path) -> list[dict[str, Any]]:
    """A search's trials from records/<cell>/search.json (empty when absent)."""
    return [t for t in _search_doc(cell_dir).get("trials") or [] if isinstance(t, dict)]


def best_trial(cell_dir: Path) -> int | None:
    """The number of the search's best trial (the row's measurement): as search.json
    names it, or in one written before it did (issue 37), the highest rate asked that
    was sustained."""
    doc = _search_doc(cell_dir)
    if "best_trial" in doc:
        best = num(doc["best_trial"])
        return None if best is None else int(best)
    sustained = [t for t in trials(cell_dir) if t.get("sustained")]
    if not sustained:
        return None
    return int(num(max(sustained, key=lambda t: num(t.get("rate_hz")) or 0).get("trial"))
               or 0)


def best_trial_dir(cell_dir: Path) -> Path | None:
    """records/<cell>/trial-NN of the best trial (the row's measurement)."""
    best = best_trial(cell_dir)
    path = None if best is None else cell_dir / f"trial-{best:02d}"
    return path if path is not None and path.is_dir() else None


def trials_section(rows: list[dict[str, Any]], cell_dir) -> Section | None:
    """Every trial of every search (HTML and JSON)."""
    found = [(r, cell_dir(str(r["cell_id"]))) for r in rows if is_search(r)]
    found = [(r, trials(d), best_trial(d)) for r, d in found]
    found = [(r, t, b) for r, t, b in found if t]
    if not found:
        return None
    section = Section(
        "search-trials", "Search trials", ["Cell", "Trial", "Asked (Hz)", "Sustained",
                                           "Delivered", "Achieved (Hz)", "Goodput (Mbit/s)",
                                           "p50 (ms)", "Why not sustained"],
        legend="Each trial is a full measurement (records/<cell>/trial-NN/). Asked: the "
               "rate the trial asked for; Achieved: the rate its publisher wrote; Goodput: "
               "the payload bits per second that arrived (— in searches recorded before "
               "it was kept); best: the trial the search reports.",
        right=(1, 2, 4, 5, 6, 7), outputs=("html", "json"))
    for row, cell_trials, best in found:
        for t in cell_trials:
            ok = bool(t.get("sustained"))
            is_best = ok and best is not None and num(t.get("trial")) == best
            got, want = t.get("received"), t.get("expected")
            section.add(str(row["cell_id"]), count(t.get("trial")), fmt(t.get("rate_hz"), 1),
                        Cell(("yes, best" if is_best else "yes") if ok else "no",
                             "" if ok else "failed"),
                        f"{'—' if got is None else got}/{'—' if want is None else want}",
                        fmt(t.get("publish_rate_hz"), 1), _mbit(t.get("goodput_bit_s")),
                        fmt(t.get("latency_p50_ms")), str(t.get("reason") or ""))
            section.records.append(dict(t, cell_id=row["cell_id"], best=is_best))
    return section
