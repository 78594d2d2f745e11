"""``linklab bench --dry-run``: the matrix of cells a run would make and how long it would
take (bench.run_estimate), as a table, Markdown or JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.table import Table
from rich.text import Text

from linklab.bench.matrix import Cell
from linklab.bench.spec import Scenario
from linklab.output import print_json, print_text, to_markdown
from linklab.units import format_duration, size_label

if TYPE_CHECKING:  # bench.runner, which it uses, is a slow import
    from linklab.bench.run_estimate import RunEstimate


def fmt_eta(seconds: float) -> str:
    """h:mm:ss."""
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def print_plan(scenario: Scenario, cells: list[Cell], estimate: RunEstimate,
               fmt: str) -> None:
    """The cells and the estimated duration, as ``fmt``."""
    if fmt == "json":
        print_json({"scenario": scenario.to_dict(), "estimated_s": estimate.total_s,
                    "at_most_s": estimate.at_most_s, "pace": estimate.pace,
                    "cells": [dict(c.axes(), index=c.index) for c in cells]})
        return
    table = _matrix_table(scenario, cells, estimate.cell_s)
    summary = _summary(scenario, len(cells), estimate)
    if fmt == "markdown":
        typer.echo(to_markdown(table, Text(summary)))
    else:
        print_text(table)
        print_text(summary)


def _summary(scenario: Scenario, cells: int, estimate: RunEstimate) -> str:
    """'N cells (M left), estimated h:mm:ss (...)': the bound and the pace where they say
    something."""
    total, most, pace = estimate.total_s, estimate.at_most_s, estimate.pace
    bound = (f"; at most {fmt_eta(most)} if every search takes its "
             f"{scenario.search.max_trials} trials" if most > total else "")
    left = f" ({estimate.left} left)" if estimate.left < cells else ""
    paced = (f"; its {estimate.timed_cells} finished cells took {pace:.2f} of their "
             "estimate, and so will the rest" if pace != 1.0 else "")
    return f"{cells} cells{left}, estimated {fmt_eta(total)} (h:mm:ss{bound}{paced})"


def _cell_value(cell: Cell, key: str) -> str:
    if key == "payload":
        return size_label(cell.payload_bytes)
    if key == "rate":
        return f"{cell.rate_hz:g} Hz" if cell.rate_hz else str(cell.rate)
    if key == "trial":
        return str(cell.trial)
    if key == "link" or key.startswith("link."):
        return cell.link
    attr = {"duration": "duration_s", "warmup": "warmup_s", "outage_start": "outage_start_s",
            "outage_length": "outage_length_s", "grace": "grace_s"}.get(key, key)
    return str(getattr(cell, attr, ""))


def _matrix_table(scenario: Scenario, cells: list[Cell], estimates: list[float]) -> Table:
    table = Table(title=f"{scenario.name}: {len(cells)} cells", title_justify="left")
    keys = [k for k in scenario.axes if not k.startswith("link.")] + (
        ["link"] if any(k.startswith("link.") for k in scenario.axes)
        and "link" not in scenario.axes else []) + (["trial"] if scenario.trials > 1 else [])
    table.add_column("#", justify="right")
    table.add_column("cell id", no_wrap=True)
    for key in keys:
        table.add_column(key)
    table.add_column("endpoints")
    table.add_column("estimate", justify="right")
    for cell, estimate in zip(cells, estimates, strict=True):
        table.add_row(str(cell.index), cell.cell_id, *(_cell_value(cell, k) for k in keys),
                      f"{len(cell.topics)} topic(s), {cell.streams} sub(s)",
                      format_duration(estimate))
    return table
