"""The end of a scenario run (linklab bench, linklab k8s run): the gates judged, the
results as asked for, one line per miss and per linklab error, and the exit status."""

from __future__ import annotations

import typer

from linklab.bench.gate_outcome import judge_gates
from linklab.output import err_console, err_line, layout_console, print_json, print_text
from linklab.report.outcome import EXIT_ERROR_ROWS, EXIT_GATES_MISSED
from linklab.rundir import RunStore


def conclude_run(store: RunStore, gates: list, rows: list, as_json: bool, *,
                 failed_cells: bool = False, fmt: str = "text") -> None:
    """The end of a run (bench, k8s): gates judged and kept in gates.json, the table (as
    ``fmt``: text or markdown) or JSON, one line per missed gate and per linklab error
    (and per failed cell with ``failed_cells``); exit 70 for a linklab error, 1 for a
    missed gate."""
    misses = judge_gates(store, gates)
    if as_json:
        print_json({"run_dir": str(store.root), "cells": rows,
                    "gates_missed": [m.to_dict() for m in misses]})
    elif fmt == "markdown":
        from linklab.report.export import markdown
        from linklab.report.table import run_report

        made = run_report(store.info, store.rows, store.streams, root=store.root)
        typer.echo(markdown(store.info, store.rows, made))
        typer.echo(f"run directory: `{store.root}` (linklab report {store.root})")
    else:
        from linklab.report.table import render_report, run_report

        made = run_report(store.info, store.rows, store.streams, root=store.root)
        print_text(render_report(made, layout_console()))
        print_text(f"run directory: {store.root}  (linklab report {store.root})")
    for miss in misses:  # one line each, whatever the terminal's width
        err_line(miss.line())
    for row in store.rows:
        if row.get("status") == "error":
            err_console.print(f"linklab error in cell {row['cell_id']}: "
                              f"{row.get('failure_reason')}", highlight=False, soft_wrap=True)
        elif failed_cells and row.get("status") == "failed":
            err_console.print(f"cell {row['cell_id']} failed: {row.get('failure_reason')}",
                              highlight=False, soft_wrap=True)
    if any(r.get("status") == "error" for r in store.rows):
        raise typer.Exit(EXIT_ERROR_ROWS)
    if misses:
        raise typer.Exit(EXIT_GATES_MISSED)
