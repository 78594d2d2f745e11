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
from linklab.errors import UsageError
from linklab.output import console, err_console, print_json


def load(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(run.json, cell rows) of a run directory; raises UsageError naming RUN_DIR."""
    store = RunStore.open(run_dir)
    return store.info, store.rows


def gates_missed(info: dict[str, Any], rows: list[dict[str, Any]],
                 streams: list[dict[str, Any]], extra: list[str]) -> list[Any]:
    """The run's gates (its scenario's, those given to bench with --gate) and ``extra``,
    checked against its rows (linklab.bench.gates)."""
    from linklab.bench.gates import Gate, evaluate, parse_cli_gate

    gates = [Gate.from_dict(g) for g in (info.get("scenario") or {}).get("gates") or []
             if isinstance(g, dict)]
    gates += [parse_cli_gate(g) for g in (info.get("options") or {}).get("gates") or []
              if isinstance(g, str)]
    gates += [parse_cli_gate(g) for g in extra]
    return evaluate(gates, rows, streams)


def register(app: typer.Typer) -> None:
    from linklab.report.html import OptionalValueCommand

    @app.command("report", cls=OptionalValueCommand)
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
        html_out: str | None = typer.Option(None, "--html", metavar="[OUT.html]",
                                            help="Also write one self-contained HTML page "
                                                 "(default RUN_DIR/report.html)."),
        compare_dir: Path | None = typer.Option(None, "--compare", metavar="RUN_B",
                                                help="Show the change of every metric per "
                                                     "cell from RUN_B (the reference) to "
                                                     "RUN_DIR."),
        fail_on_regression: bool = typer.Option(False, "--fail-on-regression",
                                                help="With --compare: exit 1 if a cell got "
                                                     "worse beyond the run-to-run spread."),
        gate: list[str] = typer.Option([], "--gate", metavar="[TOPIC:]METRIC OP VALUE",
                                       help="Also check this target (repeatable); the run's "
                                            "own gates are always checked. Missed: exit 1."),
    ) -> None:
        """Print a bench run laid out like seed 000's Table II (paper values beside ours).
        Exit 1 when a gate of the run (or a --gate) is missed, naming each cell and target."""
        from linklab.report import export, table

        if fail_on_regression and compare_dir is None:
            raise UsageError("needs --compare RUN_B", argument="--fail-on-regression")
        store = RunStore.open(run_dir)
        info, rows, streams = store.info, store.rows, store.streams
        misses = gates_missed(info, rows, streams, gate)
        from linklab.report import compare, html

        html_path = None if html_out is None else html.output_path(run_dir, html_out)
        comparison = None if compare_dir is None else compare.compare_runs(run_dir, rows,
                                                                          compare_dir)
        if csv_dir is not None:
            written = export.write_csv(rows, csv_dir)
            if not as_json:
                err_console.print("wrote " + ", ".join(str(p) for p in written))
        # --- other outputs (--html, --compare) go here -------------------------------
        if html_path is not None:
            html.write_report(run_dir, info, rows, html_path, comparison)
            err_console.print(f"wrote {html_path}")
        if comparison is not None:
            if as_json:
                print_json(comparison)
            else:
                console.print(compare.render(comparison, console.width))
            if fail_on_regression and comparison.regressions:
                raise typer.Exit(1)
            return
        if as_json:
            print_json(dict(export.run_document(info, rows),
                            gates_missed=[m.to_dict() for m in misses]))
        elif as_markdown:
            typer.echo(export.markdown(info, rows))
        else:
            console.print(table.render_run(info, rows, console, streams))
        for miss in misses:
            err_console.print(miss.line(), highlight=False)
        if misses:
            raise typer.Exit(1)
