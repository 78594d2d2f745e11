"""``linklab report RUN_A --compare RUN_B``: what changed from RUN_B (the reference) to
RUN_A, cell by cell, and whether a change is outside the run-to-run spread.

Cells are matched by their settings (link and its overrides, middleware, profile,
topology, subscribers, endpoints, history, durability, type, rate, QoS, payload, count,
duration, warm-up, outage start, grace; linklab.report.settings), not by their ids, so
runs of differently written scenarios still meet where they measured the same thing. A
setting column one run lacks (made before it existed) is left out of the match; a
throughput search is matched on the rate asked ("max"), not the rate found. Trials of a
setting are pooled: the value compared is their mean. A cell linklab could not measure
(status "error") is shown as such and is never a regression: it is no measurement
(linklab report exits 70 for it).

Spread (when is a change real?):
- with trials in either run, the spread is the larger of the two runs' ranges
  (max - min over trials) for that cell and metric: a change larger than what repeating
  the same cell produced;
- without trials, a relative tolerance per metric (TOLERANCE below) of the reference.
A floor per metric (FLOOR) keeps tiny absolute changes (0.1 ms on a 0.5 ms latency) from
being flagged. A flagged change in the worse direction is a regression; so is a cell
that was ok in RUN_B and failed in RUN_A. ``--fail-on-regression`` exits 1 on any.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from linklab.errors import UsageError
from linklab.report.outcome import delivered_sum
from linklab.report.settings import (
    common_keys,
    format_setting,
    group_by_settings,
    label,
    num,
    varying_keys,
)
from linklab.rundir import RunStore

# metric -> (label, higher is better, relative tolerance without trials, absolute floor)
METRICS: dict[str, tuple[str, bool, float, float]] = {
    "reception_rate_hz": ("reception rate (Hz)", True, 0.05, 0.2),
    "delivery_ratio": ("delivery ratio", True, 0.02, 0.005),
    "latency_mean_ms": ("mean latency (ms)", False, 0.20, 0.5),
    "latency_p50_ms": ("p50 latency (ms)", False, 0.20, 0.5),
    "latency_p95_ms": ("p95 latency (ms)", False, 0.25, 1.0),
    "latency_p99_ms": ("p99 latency (ms)", False, 0.30, 1.0),
    "jitter_ms": ("jitter (ms)", False, 0.30, 0.5),
    "goodput_bit_s": ("goodput (bit/s)", True, 0.05, 1e5),
    "wire_amplification": ("wire amplification", False, 0.05, 0.01),
    "pub_cpu_s": ("publisher CPU (s)", False, 0.30, 0.05),
    "sub_cpu_s": ("subscriber CPU (s)", False, 0.30, 0.05),
    "message_loss_rate": ("message loss rate", False, 0.30, 0.005),
    "stall_max_s": ("longest stall (s)", False, 0.30, 0.2),
    "search_max_rate_hz": ("max rate of a search (Hz)", True, 0.05, 0.5),
}
TOLERANCE = {k: v[2] for k, v in METRICS.items()}
FLOOR = {k: v[3] for k, v in METRICS.items()}
# Columns of the terminal's table, with short headers (all metrics are in --json and the
# HTML); a narrow terminal gets the first five.
TERMINAL_METRICS = {"reception_rate_hz": "rate\nHz", "delivery_ratio": "deliv.\nratio",
                    "latency_mean_ms": "latency\nmean", "latency_p95_ms": "latency\np95",
                    "jitter_ms": "jitter\n", "wire_amplification": "wire\nampl.",
                    "pub_cpu_s": "CPU\npub", "sub_cpu_s": "CPU\nsub"}
NARROW_COLUMNS = 110


@dataclass
class MetricChange:
    metric: str
    reference: float | None  # RUN_B, mean over its trials
    value: float | None  # RUN_A
    spread: float | None  # the change a cell may show by chance (see module docstring)
    spread_from: str  # "trials" | "tolerance"
    publish_rate_hz: float | None = None  # a reception rate is best at the publish rate

    @property
    def delta(self) -> float | None:
        if self.reference is None or self.value is None:
            return None
        return self.value - self.reference

    @property
    def relative(self) -> float | None:
        if self.delta is None or not self.reference:
            return None
        return self.delta / abs(self.reference)

    @property
    def flagged(self) -> bool:
        return (self.delta is not None and self.spread is not None
                and abs(self.delta) > self.spread)

    @property
    def direction(self) -> str | None:
        """"better" | "worse" when flagged, else None."""
        if not self.flagged:
            return None
        if self.metric == "reception_rate_hz" and self.publish_rate_hz:
            # above the publish rate is a burst after a stall, not an improvement
            closer = abs(self.value - self.publish_rate_hz) < abs(
                self.reference - self.publish_rate_hz)
            return "better" if closer else "worse"
        higher_better = METRICS[self.metric][1]
        return "better" if (self.delta > 0) == higher_better else "worse"

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "reference": self.reference, "value": self.value,
                "delta": self.delta, "relative": self.relative, "spread": self.spread,
                "spread_from": self.spread_from, "flagged": self.flagged,
                "direction": self.direction}


@dataclass
class CellChange:
    name: str
    settings: dict[str, Any]
    cell_ids: list[str]  # RUN_A's
    reference_ids: list[str]  # RUN_B's
    status: str  # RUN_A: "ok" | "failed" | "error" (the worst of its trials)
    reference_status: str
    reasons: list[str]
    changes: list[MetricChange] = field(default_factory=list)
    delivered: str = "—"            # RUN_A, received/expected over its trials
    reference_delivered: str = "—"

    @property
    def delivered_text(self) -> str:
        if self.delivered == self.reference_delivered:
            return self.delivered
        return f"{self.reference_delivered}→{self.delivered}"

    @property
    def status_regression(self) -> bool:
        """Ok in RUN_B, failed in RUN_A (an error is no measurement, so no regression)."""
        return self.reference_status == "ok" and self.status == "failed"

    @property
    def regressions(self) -> list[str]:
        """What got worse. A cell failed in both runs only measured fragments: its
        changes are shown but are not regressions."""
        if self.status_regression:
            return [f"status: ok → failed ({'; '.join(self.reasons) or 'no reason'})"]
        if self.status != "ok":
            return []
        return [m.metric for m in self.changes if m.direction == "worse"]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "settings": self.settings, "cell_ids": self.cell_ids,
                "reference_cell_ids": self.reference_ids, "status": self.status,
                "reference_status": self.reference_status, "failure_reasons": self.reasons,
                "delivered": self.delivered, "reference_delivered": self.reference_delivered,
                "regressions": self.regressions,
                "changes": [m.to_dict() for m in self.changes]}


@dataclass
class Comparison:
    run: Path  # RUN_A
    reference: Path  # RUN_B
    cells: list[CellChange]
    only_in_run: list[str]  # names of settings RUN_A has and RUN_B lacks
    only_in_reference: list[str]

    @property
    def regressions(self) -> list[tuple[str, str]]:
        return [(c.name, what) for c in self.cells for what in c.regressions]

    def to_dict(self) -> dict[str, Any]:
        return {"run": str(self.run), "reference": str(self.reference),
                "meaning": "change = run - reference (RUN_A - RUN_B); flagged when outside "
                           "the run-to-run spread",
                "regressions": [{"cell": n, "what": w} for n, w in self.regressions],
                "only_in_run": self.only_in_run, "only_in_reference": self.only_in_reference,
                "cells": [c.to_dict() for c in self.cells]}


def _values(group: list[dict[str, Any]], metric: str) -> list[float]:
    return [v for v in (num(r.get(metric)) for r in group) if v is not None]


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def metric_change(metric: str, run: list[dict[str, Any]],
                  reference: list[dict[str, Any]]) -> MetricChange:
    a, b = _values(run, metric), _values(reference, metric)
    mean_a, mean_b = _mean(a), _mean(b)
    if len(a) > 1 or len(b) > 1:
        spread = max((max(v) - min(v)) for v in (a, b) if v) if (a or b) else None
        source = "trials"
    else:
        spread = TOLERANCE[metric] * abs(mean_b) if mean_b is not None else None
        source = "tolerance"
    if spread is not None:
        spread = max(spread, FLOOR[metric])
    rate = num(reference[0].get("rate_hz")) if reference else None
    return MetricChange(metric, mean_b, mean_a, spread, source, rate)


def _status(group: list[dict[str, Any]]) -> str:
    if any(r.get("status") == "error" for r in group):
        return "error"
    return "ok" if all(r.get("status") == "ok" for r in group) else "failed"


def _differences(rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]]) -> str:
    """Which settings keep two runs apart, e.g. "count: 150 here, 1000 in RUN_B"."""
    parts = []
    for key in common_keys(rows_a, rows_b):
        values_a = {_plain(key, r.get(key)) for r in rows_a}
        values_b = {_plain(key, r.get(key)) for r in rows_b}
        if not values_a & values_b:
            parts.append(f"{key.removesuffix('_bytes').removesuffix('_hz').removesuffix('_s')}"
                         f": {', '.join(sorted(values_a))} vs {', '.join(sorted(values_b))}")
    return "; ".join(parts) or "no single setting; the combinations differ"


def _plain(key: str, value: Any) -> str:
    text = format_setting(key, value)
    prefix = {"history": "history ", "duration_s": "duration ", "warmup_s": "warmup ",
              "outage_start_s": "outage start ", "outage_length_s": "outage length ",
              "grace_s": "grace "}.get(key, "")
    return text.removeprefix(prefix)


def compare_rows(run_dir: Path, rows: list[dict[str, Any]], reference_dir: Path,
                 reference_rows: list[dict[str, Any]]) -> Comparison:
    setting_keys = common_keys(rows, reference_rows)
    groups_a = group_by_settings(rows, setting_keys)
    groups_b = group_by_settings(reference_rows, setting_keys)
    common = [k for k in groups_a if k in groups_b]
    if not common:
        if not rows or not reference_rows:
            empty = run_dir if not rows else reference_dir
            raise UsageError(f"nothing to compare: {empty} has no finished cell",
                             argument="--compare")
        raise UsageError(f"{run_dir} and {reference_dir} have no cell in common "
                         f"(settings here vs there: {_differences(rows, reference_rows)})",
                         argument="--compare")
    keys = varying_keys(rows + reference_rows, setting_keys)
    cells = []
    for key in common:
        group_a, group_b = groups_a[key], groups_b[key]
        cell = CellChange(name=label(group_a[0], keys), settings=dict(key),
                          cell_ids=[r["cell_id"] for r in group_a],
                          reference_ids=[r["cell_id"] for r in group_b],
                          status=_status(group_a), reference_status=_status(group_b),
                          reasons=[r["failure_reason"] for r in group_a
                                   if r.get("failure_reason")],
                          delivered=delivered_sum(group_a),
                          reference_delivered=delivered_sum(group_b))
        cell.changes = [metric_change(m, group_a, group_b) for m in METRICS]
        cells.append(cell)
    only_a = [label(g[0], keys) for k, g in groups_a.items() if k not in groups_b]
    only_b = [label(g[0], keys) for k, g in groups_b.items() if k not in groups_a]
    return Comparison(run_dir, reference_dir, cells, only_a, only_b)


def compare_runs(run_dir: Path, rows: list[dict[str, Any]], reference_dir: Path) -> Comparison:
    """RUN_A (already loaded) against the run directory RUN_B."""
    try:
        reference = RunStore.open(reference_dir)
    except UsageError as error:  # name --compare, not RUN_DIR, as the argument at fault
        message = str(error)
        if error.argument and message.startswith(f"{error.argument}: "):
            message = message[len(error.argument) + 2:]
        raise UsageError(message, argument="--compare") from None
    return compare_rows(Path(run_dir), rows, Path(reference_dir), reference.rows)


# --- output ----------------------------------------------------------------------------

def _fmt(value: float | None, metric: str) -> str:
    if value is None:
        return "—"
    if metric == "goodput_bit_s":
        return f"{value / 1e6:.2f}M"
    if metric == "delivery_ratio" or metric == "wire_amplification":
        return f"{value:.3f}"
    return f"{value:.2f}"


def change_text(m: MetricChange) -> str:
    if m.delta is None:
        return "n/a"
    if m.relative is not None:
        return f"{m.relative * 100:+.1f}%"
    return f"{m.delta:+.3g}"


def render(comparison: Comparison, width: int = 200) -> Group:
    """The terminal view: one row per cell, the relative change of the main metrics."""
    shown = list(TERMINAL_METRICS)[:5 if width < NARROW_COLUMNS else None]
    head = Text()
    head.append(f"{comparison.run}", style="bold")
    head.append(" compared with ")
    head.append(f"{comparison.reference}", style="bold")
    head.append(f" (reference): {len(comparison.cells)} cells in common\n")
    head.append("change = this run − reference, relative; ", style="dim")
    head.append("red", style="bold red")
    head.append("/", style="dim")
    head.append("green", style="bold green")
    head.append(": worse/better by more than the run-to-run spread (trials where "
                "present, else a tolerance per metric)", style="dim")
    table = Table(show_lines=False, pad_edge=False, title_justify="left")
    table.add_column("cell", ratio=1, min_width=16)
    table.add_column("status", no_wrap=True, min_width=6)
    table.add_column("delivered", no_wrap=True, justify="right")
    for metric in shown:
        table.add_column(TERMINAL_METRICS[metric], justify="right", no_wrap=True,
                         min_width=7)
    for cell in comparison.cells:
        status = Text(cell.status if cell.status == cell.reference_status
                      else f"{cell.reference_status}→{cell.status}",
                      style="bold red" if cell.status_regression else
                      "bold magenta" if cell.status == "error" else
                      ("green" if cell.status == "ok" and cell.reference_status != "ok"
                       else ""))
        values = []
        for m in cell.changes:
            if m.metric not in shown:
                continue
            style = {"worse": "bold red", "better": "bold green"}.get(m.direction or "",
                                                                      "dim")
            values.append(Text(change_text(m) + ("!" if m.flagged else ""), style=style))
        table.add_row(cell.name, status, cell.delivered_text, *values)
    parts: list[Any] = [head, table]
    flagged = [(c, m) for c in comparison.cells for m in c.changes if m.flagged]
    if flagged:
        detail = Text("Outside the spread:\n", style="bold")
        for cell, m in flagged:
            detail.append(f"  {cell.name}: {METRICS[m.metric][0]} "
                          f"{_fmt(m.reference, m.metric)} → {_fmt(m.value, m.metric)} "
                          f"({change_text(m)}; spread ±{_fmt(m.spread, m.metric)} from "
                          f"{m.spread_from})", style="red" if m.direction == "worse" else
                          "green")
            detail.append("\n")
        parts.append(detail)
    missing = _missing_text(comparison)
    if missing:
        parts.append(Text(missing, style="yellow"))
    regressions = comparison.regressions
    if regressions:
        done = Text(f"{len(regressions)} regression{'s' if len(regressions) != 1 else ''}:\n",
                    style="bold red")
        for name, what in regressions:
            what = METRICS[what][0] if what in METRICS else what
            done.append(f"  {name}: {what}\n", style="red")
        parts.append(done)
    else:
        parts.append(Text("no regression", style="bold green"))
    return Group(*parts)


def _missing_text(comparison: Comparison) -> str:
    lines = []
    if comparison.only_in_run:
        lines.append(f"only in {comparison.run} (not compared): "
                     + "; ".join(comparison.only_in_run))
    if comparison.only_in_reference:
        lines.append(f"only in {comparison.reference} (not compared): "
                     + "; ".join(comparison.only_in_reference))
    return "\n".join(lines)


def comparison_html(comparison: Comparison) -> str:
    """The comparison as an HTML section (for ``--html`` together with ``--compare``)."""
    from linklab.report.view import e

    head = "".join(f"<th>{e(METRICS[m][0])}</th>" for m in METRICS)
    body = []
    for cell in comparison.cells:
        tds = []
        for m in cell.changes:
            klass = {"worse": "regression", "better": "improvement"}.get(m.direction or "", "")
            title = (f"reference {_fmt(m.reference, m.metric)}, this run "
                     f"{_fmt(m.value, m.metric)}, spread ±{_fmt(m.spread, m.metric)} "
                     f"({m.spread_from})")
            tds.append(f"<td class='{klass}' data-metric={m.metric} title='{e(title)}'>"
                       f"{e(_fmt(m.value, m.metric))}<br><small>{e(change_text(m))}</small>"
                       "</td>")
        status = cell.status if cell.status == cell.reference_status else \
            f"{cell.reference_status} → {cell.status}"
        klass = "regression" if cell.status_regression else (
            "error" if cell.status == "error" else "")
        body.append(f"<tr><td><code>{e(cell.name)}</code></td><td class='{klass}'>"
                    f"{e(status)}</td><td data-metric=delivered>{e(cell.delivered_text)}"
                    f"</td>{''.join(tds)}</tr>")
    missing = _missing_text(comparison)
    missing_html = f"<p class=warn>{e(missing)}</p>" if missing else ""
    n = len(comparison.regressions)
    return (f"<section id=comparison><h2>Comparison with {e(comparison.reference)}</h2>"
            f"<p class=legend>Each cell: this run's value, and below it the change relative "
            f"to the reference run. <span class=worse>Red</span> / <span class=better>"
            f"green</span>: worse / better by more than the run-to-run spread (the range "
            f"over trials where present, else a tolerance per metric). {n} regression"
            f"{'s' if n != 1 else ''}.</p>{missing_html}<div class=scroll>"
            f"<table class=cells id=comparison-table><thead><tr><th>cell</th><th>status"
            f"</th><th>delivered</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div></section>")

