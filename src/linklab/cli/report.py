"""``linklab report RUN_DIR``: a finished (or partial) bench run, for people and programs.

Outputs are independent: the terminal view (report/table.py) unless --json or
--markdown; --csv DIR (report/export.py); --html (report/html.py); --compare RUN_B
(report/compare.py). Every output reads the same :class:`linklab.report.run.Run`
(RUN_DIR, and the runs given with --with) and the same sections
(linklab.report.sections.build), whose format is linklab.rundir (docs/run-directory.md).

Exit status: 0 the report was made; 1 a gate of the run (or a --gate) was missed (with
--compare too), or with --compare --fail-on-regression a cell regressed; 2 bad input;
70 the run has cells linklab could not measure (status "error"), whatever else happened
-- as linklab bench.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from linklab.cli.options import FORMAT_OPTION, options_from, output_format
from linklab.errors import UsageError
from linklab.output import (
    UNBOUNDED_WIDTH,
    err_console,
    err_line,
    layout_console,
    print_json,
    print_text,
    to_markdown,
)
from linklab.report.outcome import EXIT_ERROR_ROWS, EXIT_GATES_MISSED

HELP = """Show the results of a bench run, finished or not.

The cells laid out as Table II of paper 000 (Optimizing ROS 2 Communication for
Wireless Robotic Systems), with the paper's value under ours where it measured the same
cell, or as the tables of paper 004 (Comparison of DDS, MQTT and Zenoh in
Edge-to-Edge/Cloud Communication) for a run of that study; then per subscriber, per
topic and fan-out tables for cells with several subscribers or topics, throughput
searches (as paper 001's Fig. 5), gates, errors and failed cells.

Exit status: 0 ok; 1 a gate of the run (or a --gate) was missed, each miss named on
stderr, or with --compare --fail-on-regression a cell regressed; 2 bad input; 70 the run
has cells linklab could not measure (status "error": "could not run" or "linklab bug"),
whatever else happened."""


# Each option's help, as --help shows it.
OPTION_HELP = {
    "--with": "Also read the cells of RUN_B (repeatable): one report of all runs' cells (e.g. a "
              "study run in parts); a later run's cell replaces one with the same id.",
    "--csv": "Also write cells.csv, table2.csv, rate_bins.csv, streams.csv, searches.csv, "
             "interfaces.csv and gates.csv (those with rows) into DIR.",
    "--markdown": "Print the tables as Markdown (ours, the paper's in parentheses), as the "
                  "project's results page shows them; the same as --format markdown.",
    "--json": "Print the run, its tables (per link condition, per subscriber, searches, gates, "
              "errors, paper 004's ...) and every cell as JSON; the same as --format json.",
    "--html": "Also write one self-contained HTML page (OUT.html; without it "
              "RUN_DIR/report.html).",
    "--compare": "Show the change of every metric per cell from RUN_B (the reference) to RUN_DIR.",
    "--fail-on-regression": "With --compare: exit 1 if a cell got worse beyond the run-to-run "
                            "spread.",
    "--pool": "Pool the cells that differ only in this setting (repeatable): one column averages "
              "them all, e.g. --pool type, as paper 000 averages over its message types.",
    "--gate": "Also check this target (repeatable); the run's own gates are always checked. "
              "Missed: exit 1.",
}
_option = options_from(OPTION_HELP)

WITH = _option([], "--with", metavar="RUN_B")
CSV = _option(None, "--csv", metavar="DIR")
MARKDOWN = _option(False, "--markdown")
JSON = _option(False, "--json")
HTML = _option(None, "--html", metavar="[OUT.html]")
COMPARE = _option(None, "--compare", metavar="RUN_B")
FAIL_ON_REGRESSION = _option(False, "--fail-on-regression")
POOL = _option([], "--pool", metavar="SETTING")
GATE = _option([], "--gate", metavar="[TOPIC:]METRIC OP VALUE")


def report(
    run_dir: Path = typer.Argument(..., help="A run directory made by linklab bench."),
    with_dirs: list[Path] = WITH, csv_dir: Path | None = CSV, as_markdown: bool = MARKDOWN,
    as_json: bool = JSON, html_out: str | None = HTML, compare_dir: Path | None = COMPARE,
    fail_on_regression: bool = FAIL_ON_REGRESSION, pool: list[str] = POOL,
    gate: list[str] = GATE, fmt: str = FORMAT_OPTION,
) -> None:
    from linklab.report import compare, export, html, table
    from linklab.report.run import load as load_run
    from linklab.report.sections import build

    fmt = output_format(fmt, json_flag=as_json, markdown_flag=as_markdown)
    if fail_on_regression and compare_dir is None:
        raise UsageError("needs --compare RUN_B", argument="--fail-on-regression")
    run = load_run(run_dir, list(with_dirs), pool=table.check_pool(pool))
    for store in run.stores:  # what reading the run skipped, one line each
        for warning in store.warnings:
            err_line(f"linklab: warning: {warning}")
    made = build(run, gate)
    html_path = None if html_out is None else html.output_path(run_dir, html_out)
    comparison = None if compare_dir is None else compare.compare_runs(run_dir, run.rows,
                                                                      compare_dir)
    if csv_dir is not None:
        written = export.write_csv(run.rows, csv_dir, made)
        if fmt != "json":
            err_console.print("wrote " + ", ".join(str(p) for p in written))
    if html_path is not None:
        html.write_report(run, made, html_path, comparison)
        err_console.print(f"wrote {html_path}")
    regressed = False
    if comparison is not None:
        _print_comparison(comparison, fmt)
        regressed = fail_on_regression and bool(comparison.regressions)
    else:
        _print_report(run, made, fmt)
    _exit(made.misses, run.errors, regressed)


def _print_comparison(comparison: Any, fmt: str) -> None:
    """--compare: the change of every metric per cell, as ``fmt``."""
    from linklab.report import compare

    if fmt == "json":
        print_json(comparison)
    elif fmt == "markdown":
        typer.echo(to_markdown(compare.render(comparison, UNBOUNDED_WIDTH)))
    else:
        print_text(compare.render(comparison, layout_console().width))


def _print_report(run: Any, made: Any, fmt: str) -> None:
    """The report's tables, as ``fmt``."""
    from linklab.report import export, table

    if fmt == "json":
        print_json(export.run_document(run.info, run.rows, made))
    elif fmt == "markdown":
        typer.echo(export.markdown(run.info, run.rows, made))
    else:
        print_text(table.render_report(made, layout_console()))


def _exit(misses: list, errors: list[dict[str, Any]], regressed: bool) -> None:
    """Each missed gate and each linklab error on stderr, one line each; exit 70 for a
    linklab error, 1 for a missed gate or a regression."""
    for miss in misses:  # one line each, whatever the terminal's width
        err_line(miss.line())
    for row in errors:
        err_console.print(f"linklab error in cell {row['cell_id']}: "
                          f"{row.get('failure_reason')}", highlight=False, soft_wrap=True)
    if errors:
        raise typer.Exit(EXIT_ERROR_ROWS)
    if misses or regressed:
        raise typer.Exit(EXIT_GATES_MISSED)


def register(app: typer.Typer) -> None:
    from linklab.report.html import OptionalValueCommand

    app.command("report", cls=OptionalValueCommand, help=HELP)(report)
