"""A run as CSV files and as one JSON document (``linklab report --csv DIR`` / ``--json``).

CSV files written to DIR:
- ``cells.csv``: every column of cells.parquet (lists such as rate_bins_hz as JSON text);
- ``table2.csv``: the Table II layout in long form: block, link, condition, profile,
  payload_bytes, metric, shown (empty = "—"), measured, paper (empty = "—" or no cell),
  paper_has_cell, status;
- ``rate_bins.csv`` (when cells have 1-second bins): cell_id, second, reception_rate_hz.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

from linklab.report.table import METRICS, build_blocks


def _cell(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return ""
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return value


def write_csv(rows: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    path = out_dir / "cells.csv"
    with open(path, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(row.get(k)) for k in columns})
    written.append(path)

    path = out_dir / "table2.csv"
    with open(path, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["block", "link", "condition", "profile", "payload_bytes", "metric",
                         "shown", "measured", "paper", "paper_has_cell", "status"])
        for block in build_blocks(rows):
            for col in block.columns:
                for metric, _label in METRICS:
                    has, paper = block.paper(col, metric)
                    writer.writerow([block.title, block.key["link"], block.condition or "",
                                     col.profile, col.payload_bytes, metric,
                                     _cell(col.shown(metric)), _cell(col.measured(metric)),
                                     _cell(paper), has, "failed" if col.failed else "ok"])
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
    return written


def run_document(info: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The run as one JSON-able document: run.json, Table II blocks, and every cell."""
    return {"run": info, "blocks": [b.to_dict() for b in build_blocks(rows)], "cells": rows}
