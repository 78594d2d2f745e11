"""Bytes and packets on every interface of every host during each cell (``interfaces``
of cells.parquet: the link's counters before and after the cell), for the HTML page and
``--json``; the terminal has the cell's sum (wire bytes / published) in its tables.

And the model's figure under it ("model R_DDS/R_pub"): shown only where the model calls
it a steady state, "∞" and the reason where it says the cell cannot complete (below)."""

from __future__ import annotations

import math
from typing import Any

from linklab.report.view import Section, count


def interfaces_section(rows: list[dict[str, Any]]) -> Section | None:
    found = [(r, r.get("interfaces")) for r in rows]
    found = [(r, list(i)) for r, i in found if isinstance(i, (list, tuple)) and len(i)]
    if not found:
        return None
    section = Section(
        "interfaces", "Wire bytes per interface",
        ["Cell", "Host", "Interface", "rx bytes", "tx bytes", "rx packets", "tx packets"],
        legend="Counted by the kernel on each interface of each host during the cell "
               "(data, retransmissions, discovery, acks, headers). wire_bytes of a cell is "
               "rx + tx of its publishers' hosts.", right=(3, 4, 5, 6),
        outputs=("html", "json"))
    for row, interfaces in found:
        for entry in interfaces:
            if not isinstance(entry, dict):
                continue
            section.add(str(row["cell_id"]), str(entry.get("host")),
                        str(entry.get("interface")), count(entry.get("rx_bytes")),
                        count(entry.get("tx_bytes")), count(entry.get("rx_packets")),
                        count(entry.get("tx_packets")))
            section.records.append(dict(entry, cell_id=row["cell_id"]))
    return section


# --- the model row of the Table II layout ("model R_DDS/R_pub") ---------------------------
#
# A row's model_amplification is a steady-state figure only where the model says the cell
# can complete (linklab.model.completion, C1: the wire it predicts fits the link). Rows
# recorded since issue 37 carry the verdict (model_amplification NaN and
# model_amplification_note "cannot complete: ..."); older rows hold the bare figure, e.g.
# 24647.58 for Fast DDS's default at PER 20 %. The report asks the model again from the
# row's settings and its link in run.json, and shows a figure only when the model calls it
# a steady state; where it cannot ask (the link is not in run.json), an older row's figure
# is not shown.

NOTE = "model_amplification_note"


def run_links(run: Any) -> dict[str, Any]:
    """{link label: tune.wirecheck.LinkInfo} of ``run`` (a report.run.Run: every run it
    reads, ``--with``'s later run winning for a label, as its cells do; or one run.json
    dict). A link without a rate is 1 Gbit/s, as the bench's model took it
    (bench/namespace_environment.py Links.rate_bits)."""
    from linklab.tune.wirecheck import link_infos

    if isinstance(run, dict):
        infos = [run]
    else:
        infos = [s.info for s in getattr(run, "stores", None) or []] or [run.info]
    out: dict[str, Any] = {}
    for info in infos:
        out.update(link_infos(info if isinstance(info, dict) else {},
                              unlimited_bits_per_s=1e9))
    return out


def _number(value: Any) -> float:
    try:
        return float(value) if value is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def model_verdict(row: dict[str, Any], links: dict[str, Any]) -> tuple[float, str | None]:
    """(the figure to show or NaN, why there is none) for one row (see above)."""
    from linklab.errors import LinklabError
    from linklab.model.completion import CANNOT_COMPLETE, steady, wire_bits_per_s
    from linklab.tune.wirecheck import row_verdict
    from linklab.units import format_bitrate

    if row.get(NOTE):
        return math.nan, str(row[NOTE])
    stored = _number(row.get("model_amplification"))
    if math.isnan(stored):  # no figure: the model does not apply (as the bench said)
        return math.nan, None
    try:
        verdict = row_verdict(row, links)
    except (LinklabError, ValueError):  # settings the model refuses (e.g. PER 100 %)
        verdict = None
    if verdict is not None and verdict[1]:
        return math.nan, verdict[1]
    link = links.get(row.get("link"))
    payload, rate = _number(row.get("payload_bytes")), _number(row.get("rate_hz"))
    if link is None or math.isnan(payload) or math.isnan(rate):
        # a row that records the verdict was judged by the bench; an older one cannot be
        return (stored, None) if NOTE in row else (math.nan, None)
    if not steady(stored, payload, rate, link.rate_bits_per_s):
        need = wire_bits_per_s(stored, payload, rate)
        return math.nan, (f"{CANNOT_COMPLETE}: the recorded figure {stored:.4g} needs "
                          f"{format_bitrate(need)} on a {format_bitrate(link.rate_bits_per_s)}"
                          " link (000 Eq. 2)")
    return stored, None


def with_model_verdicts(rows: list[dict[str, Any]], links: dict[str, Any]
                        ) -> list[dict[str, Any]]:
    """Copies of ``rows`` whose model_amplification / model_amplification_note are the
    verdicts of ``model_verdict``: what the Table II layouts print."""
    out = []
    for row in rows:
        value, note = model_verdict(row, links)
        out.append({**row, "model_amplification": value, NOTE: note})
    return out


def model_text(rows: list[dict[str, Any]], digits: int = 2) -> tuple[str, str | None]:
    """(the model row's text, the note behind it) for a column's rows (checked with
    ``with_model_verdicts``): "∞" when a trial cannot complete, the mean figure, or "—"."""
    notes = [r[NOTE] for r in rows if r.get(NOTE)]
    if notes:
        return "∞", notes[0]
    values = [v for v in (_number(r.get("model_amplification")) for r in rows)
              if not math.isnan(v)]
    if not values:
        return "—", None
    return f"{sum(values) / len(values):.{digits}f}", None
