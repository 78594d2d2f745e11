"""Each cell's one-way latency distribution: what paper 001 draws as box plots.

Paper 001 (001_20e21b052d053958.txt) reads its results from latency distributions --
p50/p95 per flow (Fig. 6), p95/p99 over payload x rate (Fig. 8), Reliable vs Best Effort
(Fig. 10), over Wi-Fi 7 channels and distances (Figs. 13, 14) -- where Table II's layout
has only the mean and the jitter. One row per cell with one subscriber stream (cells with
several are in the per-subscriber table); throughput searches are in their own table. A
failed cell shows "—" by Table II's rule (linklab.report.outcome.dashed), an error
"error"; --json keeps its measured numbers.
"""

from __future__ import annotations

from typing import Any

from linklab.report.outcome import delivered_text, is_error, is_ok, metric_text, status_cell
from linklab.report.view import Section, pct
from linklab.rundir import num

KEYS = ("cell_id", "trial", "received", "expected", "reception_rate_hz", "latency_mean_ms",
        "latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "latency_max_ms", "jitter_ms",
        "message_loss_rate", "gap_loss_rate", "stall_max_s", "stall_link_up_s", "status")


def stall_text(row: dict[str, Any]) -> str:
    """The longest stall in s ("—" not measured: an error row, a run of format 1); with
    a declared outage, the part with the link up after it: "20.3 (0.3 up)"."""
    stall, up = num(row.get("stall_max_s")), num(row.get("stall_link_up_s"))
    if stall is None or is_error(row):
        return "—"
    if up is not None and abs(up - stall) >= 0.05:
        return f"{stall:.1f} ({up:.1f} up)"
    return f"{stall:.2f}"


def _single_stream(row: dict[str, Any]) -> bool:
    return (int(num(row.get("subscribers")) or 1) == 1 and int(num(row.get("topics")) or 1) == 1
            and str(row.get("rate_asked") or "") != "max")


def latency_section(rows: list[dict[str, Any]]) -> Section | None:
    """The latency distribution of every single-stream cell (None when there is none)."""
    mine = [r for r in rows if _single_stream(r)]
    if not mine:
        return None
    trials = len({r.get("trial") for r in mine}) > 1
    section = Section(
        "latency", "Latency distribution per cell",
        ["Cell", "Delivered", "Rate (Hz)", "Mean (ms)", "p50", "p95", "p99", "Max",
         "Jitter (ms)", "Loss", "Stall (s)", "Status"],
        legend="One-way latency of every received sample, in ms (paper 001 draws these "
               "as box plots: Figs. 6, 8, 10, 13, 14); loss = 1 - delivered; stall = the "
               "longest time nothing arrived while samples were outstanding, shown for "
               "failed cells too (docs/metrics.md).", right=tuple(range(1, 11)))
    for row in mine:
        name = str(row.get("cell_id"))
        if trials:
            name += f" #{row.get('trial')}"
        section.add(name, delivered_text(row), metric_text(row, "reception_rate_hz"),
                    *(metric_text(row, k, 3) for k in (
                        "latency_mean_ms", "latency_p50_ms", "latency_p95_ms",
                        "latency_p99_ms", "latency_max_ms", "jitter_ms")),
                    pct(row.get("message_loss_rate")) if is_ok(row) else "—",
                    stall_text(row), status_cell(row))
        section.records.append({k: row.get(k) for k in KEYS})
    return section
