"""``linklab report RUN_DIR``: a finished (or partial) bench run, for people and programs.

Outputs are independent: the terminal table (report/table.py) unless --json; --csv DIR
(report/export.py). To add another output (--html, --compare RUN_DIR ...), add its option
to ``report`` below and one call into its own module in the "other outputs" section;
every output reads the same (info, rows) pair from :func:`load`, whose format is the
docstring of linklab.bench.store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from linklab.bench.store import RunStore
from linklab.output import console, err_console, print_json


def load(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(run.json, cell rows) of a run directory; raises UsageError naming RUN_DIR."""
    store = RunStore.open(run_dir)
    return store.info, store.rows


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        run_dir: Path = typer.Argument(..., help="A run directory made by linklab bench."),
        csv_dir: Path | None = typer.Option(None, "--csv", metavar="DIR",
                                            help="Also write cells.csv, table2.csv and "
                                                 "rate_bins.csv into DIR."),
        as_markdown: bool = typer.Option(False, "--markdown",
                                         help="Print the Table II blocks as Markdown "
                                              "(ours, paper in parentheses)."),
        as_json: bool = typer.Option(False, "--json",
                                     help="Print the run, its Table II blocks and every "
                                          "cell as JSON instead of the table."),
    ) -> None:
        """Print a bench run laid out like seed 000's Table II (paper values beside ours)."""
        from linklab.report import export, table

        info, rows = load(run_dir)
        if csv_dir is not None:
            written = export.write_csv(rows, csv_dir)
            if not as_json:
                err_console.print("wrote " + ", ".join(str(p) for p in written))
        # --- other outputs (--html, --compare) go here -------------------------------
        if as_json:
            print_json(export.run_document(info, rows))
            return
        if as_markdown:
            typer.echo(export.markdown(info, rows))
            return
        console.print(table.render_run(info, rows, console))
