"""Loss and latency against distance: paper 002's figures as one table.

Paper 002 (002_d18906a16de1bd6a.txt §IV) plots the message loss rate (received over what
the subscriber was supposed to receive: 1 - delivered, docs/metrics.md) and the latency
against the distance between publisher and subscribers, one curve per QoS profile
(Fig. 5-7), security setting (Figs. 8-12) or number of subscribers. Where a run sweeps
``link.distance``, this table has a row per distance and a column per curve: what else
varies between the cells (middleware, QoS, history, subscribers, the rest of the link).
The paper's readings stand under the table.
"""

from __future__ import annotations

import json
from typing import Any

from linklab.bench.discovery_gate import UNMATCHED
from linklab.bench.links import LinkChoice
from linklab.errors import UsageError
from linklab.link.radio import parse_metres
from linklab.report.view import Cell, Section
from linklab.rundir import num

# settings that name a curve when they vary (the distance is the row)
CURVE_KEYS = ("middleware", "profile", "qos", "history", "durability", "subscribers",
              "topology", "rate_hz", "payload_bytes", "count")
PAPER_READINGS = (
    "Paper 002: loss of 60-byte packets begins at 25 m (Fig. 4); Default loses less than "
    "Sensor until about 25.7 m and more after (Fig. 5); Parameters delivers all or "
    "nothing, nothing from about 25.2 m (Fig. 5); with security, loss begins at a "
    "shorter distance for every profile (Figs. 8-10).")


def link_overrides(row: dict[str, Any]) -> dict[str, Any]:
    try:
        found = json.loads(row.get("link_overrides") or "{}")
    except (TypeError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _distance_m(row: dict[str, Any]) -> float | None:
    value = link_overrides(row).get("distance")
    try:
        return None if value is None else parse_metres(value, "link.distance")
    except UsageError:
        return None


def _curve_link(row: dict[str, Any]) -> str:
    """The cell's link label without its distance (as linklab.bench.links labels it)."""
    rest = tuple((k, v) for k, v in link_overrides(row).items() if k != "distance")
    return LinkChoice(row.get("link_preset"), rest).label


def _unmatched_count(row: dict[str, Any]) -> int:
    """How many subscribers matched no publisher before the go: the row's
    ``unmatched_subscribers``, or for runs recorded before that column, the failure reasons
    that say so (a one-stream cell's reason begins with UNMATCHED; a cell with several
    subscribers joins one "topic T subscriber S: <reason>" per failed stream)."""
    value = num(row.get("unmatched_subscribers"))
    if value is not None:
        return int(value)
    reason = str(row.get("failure_reason") or "")
    return 1 if reason.startswith(UNMATCHED) else reason.count(f": {UNMATCHED}")


def _cell_text(row: dict[str, Any]) -> Cell:
    loss = num(row.get("message_loss_rate"))
    received = num(row.get("received"))
    latency = num(row.get("latency_mean_ms"))
    reason = str(row.get("failure_reason") or "")
    unmatched = _unmatched_count(row)
    subscribers = max(int(num(row.get("subscribers")) or 1), unmatched)
    if row.get("status") == "error":
        # not measured (e.g. the ns-3 simulation fell behind real time): not a loss
        behind = "behind real time" in reason
        return Cell("error: simulation behind real time" if behind else "error", "failed",
                    reason)
    if not received:
        # no match across the medium is not a data-plane loss: say which it was
        if not unmatched:
            return Cell("nothing arrived", "failed", reason)
        if subscribers <= 1:
            return Cell("no discovery", "failed", reason)
        return Cell(f"no discovery ({unmatched} of {subscribers} subscribers unmatched)",
                    "failed", reason)
    text = "—" if loss is None else f"{loss * 100:.1f} %"
    if latency is not None:
        text += f" · {latency:.1f} ms"
    if unmatched:
        # the matched subscribers were measured; the others never discovered the publisher
        text += f" ({unmatched} of {subscribers} unmatched)"
    return Cell(text, "" if row.get("status") == "ok" else "failed", reason)


def distance_section(rows: list[dict[str, Any]]) -> Section | None:
    """The table, or None when the run does not sweep the distance."""
    mine = [(d, r) for r in rows
            if (d := _distance_m(r)) is not None and str(r.get("rate_asked")) != "max"]
    if len({d for d, _ in mine}) < 2:
        return None
    varying = [k for k in CURVE_KEYS if len({str(r.get(k)) for _, r in mine}) > 1]
    links = len({_curve_link(r) for _, r in mine}) > 1

    def curve(row: dict[str, Any]) -> str:
        parts = [_curve_link(row)] if links else []
        parts += [str(row.get(k)) for k in varying]
        return " / ".join(parts) or "cells"

    curves = list(dict.fromkeys(curve(r) for _, r in mine))
    table: dict[float, dict[str, list[dict[str, Any]]]] = {}
    for d, row in mine:
        table.setdefault(d, {}).setdefault(curve(row), []).append(row)
    section = Section(
        "distance", "Message loss rate and latency vs distance (paper 002 Figs. 5-12 layout)",
        ["Distance (m)", *curves],
        legend="Each cell: message loss rate (1 - delivered) · mean one-way "
               "latency; a failed cell in red (its reason on hover in the HTML); no "
               "discovery: the endpoints never matched across the link (its announcements "
               "were lost), so no sample could be sent; with several subscribers, how many "
               "never matched, beside the loss and latency of those that did (runs before "
               "the column unmatched_subscribers ended such a cell before anything was "
               "published). Several trials: one entry each.",
        right=tuple(range(1, len(curves) + 1)))
    section.notes.append(PAPER_READINGS)
    for d in sorted(table):
        cells = []
        for name in curves:
            found = table[d].get(name, [])
            if not found:
                cells.append(Cell(""))
            elif len(found) == 1:
                cells.append(_cell_text(found[0]))
            else:
                texts = [_cell_text(r) for r in found]
                bad = any(t.klass for t in texts)
                cells.append(Cell("; ".join(t.text for t in texts), "failed" if bad else ""))
            for row in found:
                section.records.append({
                    "distance_m": d, "curve": name, "cell_id": row.get("cell_id"),
                    "trial": row.get("trial"), "message_loss_rate": row.get("message_loss_rate"),
                    "latency_mean_ms": row.get("latency_mean_ms"),
                    "received": row.get("received"), "status": row.get("status")})
        section.add(f"{d:g}", *cells)
    return section
