"""A run as CSV files and as one JSON document (``linklab report --csv DIR`` / ``--json``).

CSV files written to DIR:
- ``cells.csv``: every column of cells.parquet (lists such as rate_bins_hz as JSON text);
- ``table2.csv``: the Table II layout in long form: block, link, condition, profile,
  payload_bytes, metric, shown (empty = "—"), measured, paper (empty = "—" or no cell),
  paper_has_cell, status;
- ``rate_bins.csv`` (when cells have 1-second bins): cell_id, second, reception_rate_hz;
- ``streams.csv``: every subscriber's row of streams.parquet; ``searches.csv``: one row
  per throughput search (paper 001 Fig. 5 columns); ``interfaces.csv``: bytes and
  packets per cell, host and interface; ``gates.csv``: every gate missed (cell_id,
  gate, measured, topic, subscriber) -- each when the run has any.

``--json`` is one document: ``run`` (run.json), ``blocks`` (Table II), ``sections`` (per
subscriber, per topic, fan-out, searches, shares, search trials, interfaces, gates,
errors, failed cells: each with its title, columns, the rows as printed, and
``records``, the same facts as numbers), ``paper_004`` (its tables, for a run of that
study), ``gates`` and ``gates_missed``, ``errors`` (cell ids linklab could not measure)
and ``cells`` (every row of cells.parquet).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from linklab.errors import UsageError
from linklab.report import outcome
from linklab.report.outcome import delivered_text
from linklab.report.table import METRICS, build_blocks
from linklab.report.view import to_markdown

if TYPE_CHECKING:
    from linklab.report.sections import Report


def _cell(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return ""
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return value


def _write_dicts(path: Path, rows: list[dict[str, Any]]) -> Path:
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    with open(path, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(row.get(k)) for k in columns})
    return path


def write_csv(rows: list[dict[str, Any]], out_dir: Path,
              report: Report | None = None) -> list[Path]:
    """Write the CSV files into ``out_dir`` (made if missing); a path that is not a
    directory, or one that cannot be written, is a one-line UsageError naming --csv."""
    try:
        if out_dir.exists() and not out_dir.is_dir():
            raise UsageError(f"{out_dir} exists and is not a directory; --csv takes a "
                             "directory to write cells.csv, table2.csv and rate_bins.csv "
                             "into", argument="--csv")
        return _write_csv(rows, out_dir, report)
    except OSError as error:
        raise UsageError(f"cannot write into {out_dir}: {error.strerror or error} "
                         f"({error.filename or out_dir})", argument="--csv") from None


def _write_csv(rows: list[dict[str, Any]], out_dir: Path,
               report: Report | None = None) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [_write_dicts(out_dir / "cells.csv", rows)]

    path = out_dir / "table2.csv"
    with open(path, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["block", "link", "condition", "profile", "payload_bytes", "metric",
                         "shown", "measured", "paper", "paper_has_cell", "status"])
        for block in build_blocks(rows, _pool(report)):
            for col in block.columns:
                for metric, _label in METRICS:
                    has, paper = block.paper(col, metric)
                    writer.writerow([block.title, block.key["link"], block.condition or "",
                                     col.profile, col.payload_bytes, metric,
                                     _cell(col.shown(metric)), _cell(col.measured(metric)),
                                     _cell(paper), has, col.state])
    written.append(path)

    binned = [r for r in rows if r.get("rate_bins_hz")]
    if binned:
        path = out_dir / "rate_bins.csv"
        with open(path, "w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(["cell_id", "second", "reception_rate_hz"])
            for row in binned:
                for second, value in enumerate(row["rate_bins_hz"]):
                    writer.writerow([row["cell_id"], second, value])
        written.append(path)
    if report is not None:
        if report.run.streams:
            written.append(_write_dicts(out_dir / "streams.csv", report.run.streams))
        for key, name in (("searches", "searches.csv"), ("interfaces", "interfaces.csv")):
            section = next((s for s in report.sections if s.key == key), None)
            if section is not None and section.records:
                written.append(_write_dicts(out_dir / name, section.records))
        if report.misses:
            written.append(_write_dicts(out_dir / "gates.csv",
                                        [m.to_dict() for m in report.misses]))
    return written


def run_document(info: dict[str, Any], rows: list[dict[str, Any]],
                 report: Report | None = None) -> dict[str, Any]:
    """The run as one JSON-able document (see the module docstring)."""
    checked = _checked(info, rows, report)
    doc: dict[str, Any] = {"run": info,
                           "blocks": [b.to_dict() for b in build_blocks(checked,
                                                                        _pool(report))]}
    if report is not None:
        sections = report.to_dict()
        doc["paper_004"] = sections.pop("paper_004", None)
        doc["sections"] = sections
        doc["gates"] = [g.to_dict() for g in report.gates]
        doc["gates_missed"] = [m.to_dict() for m in report.misses]
        doc["errors"] = [r["cell_id"] for r in rows if r.get("status") == "error"]
        if len(report.run.stores) > 1:
            doc["with"] = [str(s.root) for s in report.run.stores[1:]]
    doc["cells"] = rows
    return doc


def _md_value(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def markdown(info: dict[str, Any], rows: list[dict[str, Any]],
             report: Report | None = None) -> str:
    """The Table II blocks as Markdown tables ("ours (paper)") -- or seed 004's tables for
    a run of that study -- then outage recovery, and every section of ``report``."""
    lines: list[str] = []
    old = outcome.format1_note(rows)
    if old:
        lines.append(f"> {old}\n")
    if report is not None and report.paper_004 is not None:
        lines.extend(to_markdown(s) for s in report.paper_004)
    else:
        lines.extend(table2_markdown(_checked(info, rows, report), _pool(report)))
    lines.extend(outage_markdown(rows))
    if report is not None:
        lines.extend(to_markdown(s) for s in report.shown("markdown"))
    else:
        failed = [(r["cell_id"], r["failure_reason"]) for r in rows if r.get("failure_reason")]
        if failed:
            lines.append("Failed cells:\n")
            lines.extend(f"- `{cell_id}`: {reason}" for cell_id, reason in failed)
            lines.append("")
    return "\n".join(lines)


def _checked(info: dict[str, Any], rows: list[dict[str, Any]],
             report: Report | None) -> list[dict[str, Any]]:
    """``rows`` with the model's verdict on each figure (report/interface_counters.py), links
    from every run the report reads."""
    from linklab.report.interface_counters import run_links, with_model_verdicts

    return with_model_verdicts(rows, run_links(report.run if report is not None else info))


def _pool(report: Report | None) -> tuple[str, ...]:
    """The settings the report pools in its Table II blocks (report --pool)."""
    return report.run.pool if report is not None else ()


def table2_markdown(rows: list[dict[str, Any]], pool: Sequence[str] = ()) -> list[str]:
    from linklab.report.interface_counters import model_text
    from linklab.report.table import model_notes, profile_label
    from linklab.units import size_label

    lines: list[str] = []
    for block in build_blocks(rows, pool):
        lines.append(f"**{block.title}**\n")
        header = ["Profile / payload"] + [
            f"{profile_label(c.profile)} {size_label(c.payload_bytes)}" for c in block.columns]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        for metric, label in METRICS:
            cells = []
            for col in block.columns:
                text = col.text(metric)
                has, paper = block.paper(col, metric)
                if has:
                    text += f" ({_md_value(paper)})"
                cells.append(text)
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        delivered = [c.delivered_text() for c in block.columns]
        lines.append("| Delivered | " + " | ".join(delivered) + " |")
        wire = []
        for col in block.columns:
            model = model_text(col.rows)[0]
            wire.append(_md_value(col.measured("wire_amplification"))
                        + (f" ({model})" if model != "—" else ""))
        lines.append("| Wire bytes / published (model R_DDS/R_pub) | " + " | ".join(wire)
                     + " |")
        lines.append("")
        notes = model_notes(block.columns)
        for col, note in notes:
            lines.append(f"∞ {profile_label(col.profile)} {size_label(col.payload_bytes)}: "
                         f"{note}  ")
        if notes:
            lines.append("")
    return lines


def recovery(row: dict[str, Any]) -> dict[str, Any] | None:
    """Seed 000 Fig. 7/8 numbers of one outage cell, from its 1-second bins.

    before: mean Hz in the whole seconds before the outage; after10: mean Hz in the 10 s
    after the link came back; recover_s: seconds from the link's return until the first
    bin at >= 90 % of the publish rate (None: never within the run).
    """
    bins = list(row.get("rate_bins_hz") or [])
    start = row.get("outage_at_s")
    length = row.get("outage_s")
    if not bins or start is None or length is None or not length or start != start:
        return None
    rate = float(row.get("rate_hz") or 0)
    first_out = int(start)  # the bin the outage begins in
    back = int(start + length) + 1  # the first whole second after it
    before = bins[:first_out]
    after = bins[back:back + 10]
    recover = next((i - back for i in range(back, len(bins)) if bins[i] >= 0.9 * rate), None)
    return {"before_hz": sum(before) / len(before) if before else None,
            "after10_hz": sum(after) / len(after) if after else None,
            "recover_s": recover, "back_at_s": back}


def outage_markdown(rows: list[dict[str, Any]]) -> list[str]:
    """Recovery summary and per-second bins of the cells that had an outage."""
    from linklab.units import size_label

    cells = [(r, recovery(r)) for r in rows]
    cells = [(r, rec) for r, rec in cells if rec is not None]
    if not cells:
        return []
    lines = ["**Recovery after the outage** (1-second bins from the first measured sample; "
             "seed 000 Fig. 7/8)\n",
             "| Cell | payload | history | outage | Hz before | Hz in 10 s after | "
             "s to >= 90 % rate | delivered |",
             "|---|---|---|---|---|---|---|---|"]
    for r, rec in cells:
        lines.append(
            f"| {r['cell_id']} | {size_label(r['payload_bytes'])} | {r.get('history_applied')} "
            f"| {r['outage_at_s']:.1f} s + {r['outage_s']:g} s "
            f"| {_md_value(rec['before_hz'], 1)} | {_md_value(rec['after10_hz'], 1)} "
            f"| {'never' if rec['recover_s'] is None else rec['recover_s']} "
            f"| {delivered_text(r)} |")
    lines.append("")
    width = max(len(r.get("rate_bins_hz") or []) for r, _ in cells)
    lines.append("**Reception rate per second (Hz)**\n")
    lines.append("| s | " + " | ".join(r["cell_id"] for r, _ in cells) + " |")
    lines.append("|" + "---|" * (len(cells) + 1))
    for second in range(width):
        values = [r["rate_bins_hz"][second] if second < len(r["rate_bins_hz"]) else ""
                  for r, _ in cells]
        lines.append(f"| {second} | " + " | ".join(str(v) for v in values) + " |")
    lines.append("")
    return lines
