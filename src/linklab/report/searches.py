"""Throughput searches (``rate: max``) laid out like paper 001 Fig. 5, and the cells run
at a share of the maximum (``rate: 75%``) like its Fig. 6.

001_20e21b052d053958.txt §V-A: Fig. 5 is the maximum throughput per payload, "the
publish rate ... dynamically selected to ensure that the subscriber receive the
messages with minimal packet loss"; Fig. 6 the latency percentiles at 75 % of it. Per
search cell (linklab.bench.search; columns in linklab.bench.store): the maximum rate
sustained and the payload it carried, the model's bytes on the wire per sample, its
efficiency (payload / wire bytes) and the capacity of the link's rate by the model's
headers, measured / model, how many trials and why the search stopped. The trials
themselves are records/<cell>/search.json (:func:`trials`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from linklab.report.outcome import delivered_text, status_cell
from linklab.report.view import Cell, Section, count, fmt, num
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


def search_record(row: dict[str, Any]) -> dict[str, Any]:
    rate, capacity = num(row.get("search_max_rate_hz")), num(row.get("model_capacity_hz"))
    return {
        "cell_id": row["cell_id"], "middleware": row.get("middleware"),
        "link": row.get("link"), "qos": row.get("qos"), "payload_bytes": row.get("payload_bytes"),
        "status": row.get("status"), "max_rate_hz": rate,
        "max_throughput_bit_s": num(row.get("search_max_throughput_bit_s")),
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


def searches_section(rows: list[dict[str, Any]]) -> Section | None:
    found = sorted((r for r in rows if is_search(r)), key=_order)
    if not found:
        return None
    section = Section(
        "searches", "Maximum throughput per payload (paper 001 Fig. 5 layout)",
        ["Middleware", "Link", "QoS", "Payload", "Max Hz", "Mbit/s", "Wire B", "Eff.",
         "Model Hz", "Model Mbit/s", "Ratio", "Delivered", "Trials", "Stopped", "Status"],
        legend="Max Hz: the highest publish rate a trial sustained (the row's metrics are "
               "that trial's; where none was, the lowest trial's); Mbit/s: of payload at "
               "that rate. Model (paper 001 §V-A): "
               "Wire B = bytes on the link per sample (the serialized sample: payload, "
               "CDR encapsulation and the type's own fields; RTPS + UDP + IPv4 headers; on a "
               "cluster's underlay VXLAN and WireGuard too, at the pod MTU), Eff. = "
               "payload / wire bytes, Model Hz and Mbit/s = what the link's rate carries "
               "with those headers (Ethernet frames counted); none for TCP transports, "
               "nor where both ends sit on one cluster node (the link is not on the way). "
               "Ratio = Max Hz / Model Hz (measured / model). Stopped: why the search "
               "ended.",
        right=tuple(range(4, 13)))
    for row in found:
        rec = search_record(row)
        ratio = rec["measured_over_model"]
        eff = rec["model_efficiency"]
        section.add(str(row.get("middleware")), str(row.get("link")), str(row.get("qos")),
                    size_label(int(num(row.get("payload_bytes")) or 0)),
                    Cell(fmt(rec["max_rate_hz"], 1), data={"cell": row["cell_id"],
                                                           "metric": "max_rate_hz"}),
                    _mbit(rec["max_throughput_bit_s"]),
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
    return _with_flow(section, found)


def shares_section(rows: list[dict[str, Any]]) -> Section | None:
    found = sorted((r for r in rows if is_share(r)), key=_order)
    if not found:
        return None
    section = Section(
        "shares", "Latency at a share of the maximum rate (paper 001 Fig. 6 layout)",
        ["Middleware", "Link", "Payload", "Asked", "Max Hz", "Rate Hz", "Delivered",
         "p50 (ms)", "p95 (ms)", "p99 (ms)", "Mean (ms)", "Status"],
        legend="rate: N % runs the cell at that share (Asked) of the maximum a search "
               "found for the same settings (Max Hz); Rate Hz: the rate it ran at.",
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


def trials(cell_dir: Path) -> list[dict[str, Any]]:
    """A search's trials from records/<cell>/search.json (empty when absent)."""
    try:
        doc = json.loads((cell_dir / "search.json").read_text())
    except (OSError, json.JSONDecodeError):
        return []
    found = doc.get("trials") if isinstance(doc, dict) else None
    return [t for t in found or [] if isinstance(t, dict)]


def best_trial_dir(cell_dir: Path) -> Path | None:
    """records/<cell>/trial-NN of the highest sustained trial (the row's measurement)."""
    sustained = [t for t in trials(cell_dir) if t.get("sustained")]
    if not sustained:
        return None
    best = max(sustained, key=lambda t: num(t.get("rate_hz")) or 0)
    path = cell_dir / f"trial-{int(best.get('trial') or 0):02d}"
    return path if path.is_dir() else None


def trials_section(rows: list[dict[str, Any]], cell_dir) -> Section | None:
    """Every trial of every search (HTML and JSON)."""
    found = [(r, trials(cell_dir(str(r["cell_id"])))) for r in rows if is_search(r)]
    found = [(r, t) for r, t in found if t]
    if not found:
        return None
    section = Section(
        "search-trials", "Search trials", ["Cell", "Trial", "Rate (Hz)", "Sustained",
                                           "Delivered", "Publish rate (Hz)", "p50 (ms)",
                                           "Why not sustained"],
        legend="Each trial is a full measurement (records/<cell>/trial-NN/).",
        right=(1, 2, 4, 5, 6), outputs=("html", "json"))
    for row, cell_trials in found:
        for t in cell_trials:
            ok = bool(t.get("sustained"))
            got, want = t.get("received"), t.get("expected")
            section.add(str(row["cell_id"]), count(t.get("trial")), fmt(t.get("rate_hz"), 1),
                        Cell("yes" if ok else "no", "" if ok else "failed"),
                        f"{'—' if got is None else got}/{'—' if want is None else want}",
                        fmt(t.get("publish_rate_hz"), 1), fmt(t.get("latency_p50_ms")),
                        str(t.get("reason") or ""))
            section.records.append(dict(t, cell_id=row["cell_id"]))
    return section
