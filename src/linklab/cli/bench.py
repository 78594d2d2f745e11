"""``linklab bench SCENARIO.yaml``: run a scenario's matrix into a run directory.

Exit status: 0 every cell ran (failed cells included: a link that loses everything is a
result); 1 a gate was missed (each miss is printed, one line each); 2 bad input; 70 a cell
could not be measured because of a linklab error or bug ("error" rows), whatever else
happened; 130 interrupted (143 by SIGTERM, 129 SIGHUP; the same clean-up).

``--dry-run`` makes every check the run makes before its first cell (bench.checks) and
exits as the run would on a refusal (same line, same status); it only leaves out what
changes the system or reaches a remote host.
"""

from __future__ import annotations

import json
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path

import click
import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from linklab.bench.matrix import expand
from linklab.bench.spec import Scenario, load_scenario, parse_scenario
from linklab.cli.options import FORMAT_OPTION, output_format
from linklab.errors import UsageError
from linklab.output import (
    err_console,
    err_line,
    layout_console,
    print_json,
    print_text,
    to_markdown,
)
from linklab.rundir import RunStore
from linklab.stop_signals import exit_status
from linklab.units import format_duration, size_label

EXIT_GATES_MISSED = 1
EXIT_LINKLAB_ERROR = 70


def conclude_run(store: RunStore, gates: list, rows: list, as_json: bool, *,
                 failed_cells: bool = False, fmt: str = "text") -> None:
    """The end of a run (bench, k8s): gates judged and kept in gates.json, the table (as
    ``fmt``: text or markdown) or JSON, one line per missed gate and per linklab error
    (and per failed cell with ``failed_cells``); exit 70 for a linklab error, 1 for a
    missed gate."""
    from linklab.bench.gates import evaluate

    misses = evaluate(gates, store.rows, store.streams)
    (store.root / "gates.json").write_text(json.dumps(
        {"gates": [g.to_dict() for g in gates], "missed": [m.to_dict() for m in misses]},
        indent=1) + "\n")
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
        raise typer.Exit(EXIT_LINKLAB_ERROR)
    if misses:
        raise typer.Exit(EXIT_GATES_MISSED)


def _fmt_eta(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _cell_value(cell, key: str) -> str:
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


def _matrix_table(scenario: Scenario, cells, env, estimates: list[float]) -> Table:

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


def register(app: typer.Typer) -> None:
    @app.command("bench")
    def bench(
        scenario_path: Path | None = typer.Argument(
            None, metavar="SCENARIO.yaml",
            help="Scenario file (examples in scenarios/). Not needed with --resume."),
        quick: bool = typer.Option(False, "--quick",
                                   help="Apply the scenario's quick: overrides (fewer, "
                                        "shorter cells)."),
        resume: Path | None = typer.Option(None, "--resume", metavar="RUN_DIR",
                                           help="Continue an interrupted run: skip its "
                                                "finished cells."),
        dry_run: bool = typer.Option(False, "--dry-run",
                                     help="Make every check the run makes before its "
                                          "first cell, then print the matrix and its "
                                          "estimated duration; change nothing."),
        out: Path = typer.Option(Path("runs"), "--out", metavar="DIR",
                                 help="Parent directory of the new run directory."),
        repeat_text: str | None = typer.Option(None, "--repeat", metavar="N",
                                               help="Trials of every cell, 1 to 1000. "
                                                    "Default: the scenario's trials."),
        presets: list[Path] = typer.Option([], "--presets", metavar="FILE",
                                           help="Link presets of your own (format: "
                                                "linklab link presets --help); "
                                                "repeatable."),
        gate: list[str] = typer.Option([], "--gate", metavar="[TOPIC:]METRIC OP VALUE",
                                       help="A pass/fail target on every cell (or one "
                                            "topic), e.g. 'reception_rate>=29Hz'; "
                                            "repeatable. Missed: exit 1."),
        as_json: bool = typer.Option(False, "--json",
                                     help="Print the matrix (--dry-run) or the finished "
                                          "cells as JSON."),
        fmt: str = FORMAT_OPTION,
    ) -> None:
        """Run a benchmark scenario and keep every result in a run directory.

        Every cell of the scenario's matrix (each combination of link, middleware,
        payload, rate ...) runs across an emulated link, or between the real hosts the
        scenario names; the run directory (run.json, cells.parquet, streams.parquet,
        records/) is what linklab report reads. The results table is printed at the end.
        Ctrl-C keeps the finished cells (continue with --resume).

        Exit 1 when a gate is missed, 70 when a cell could not be measured because of a
        linklab error."""
        from linklab.bench.gates import parse_cli_gate
        from linklab.bench.spec import check_repeat

        fmt = output_format(fmt, json_flag=as_json)
        as_json = fmt == "json"
        repeat = None if repeat_text is None else check_repeat(repeat_text)
        cli_gates = [parse_cli_gate(g) for g in gate]
        store = None
        if resume is not None:
            store = RunStore.open(resume)
            saved = store.info.get("scenario") or {}
            if not isinstance(saved.get("text"), str) or not saved.get("path"):
                raise UsageError(f"{resume}/run.json does not hold its scenario (text and "
                                 "path); it cannot be resumed", argument="--resume")
            options = store.info.get("options", {})
            if scenario_path is not None and Path(scenario_path).stem != saved.get("name") \
                    and load_scenario(scenario_path).name != saved.get("name"):
                raise UsageError(f"{resume} is a run of {saved.get('name')!r}, not of "
                                 f"{scenario_path}", argument="--resume")
            scenario = parse_scenario(saved["text"], saved["path"],
                                      quick=options.get("quick", False),
                                      repeat=options.get("repeat"),
                                      saved_presets=saved.get("presets") or {})
            cli_gates += [parse_cli_gate(g) for g in options.get("gates", [])
                          if isinstance(g, str)]
        else:
            if scenario_path is None:
                raise UsageError("give a scenario file (e.g. scenarios/demo.yaml) or "
                                 "--resume RUN_DIR", argument="SCENARIO.yaml")
            scenario = load_scenario(scenario_path, quick=quick, repeat=repeat,
                                     preset_files=presets)
        cells = expand(scenario)  # at most MAX_CELLS: refused before expanding

        from linklab.bench.checks import check_before_run
        from linklab.bench.environment import LinklabEnvironment
        from linklab.bench.runner import (
            cell_estimates_s,
            finished_timing,
            observed_pace,
            run_cells,
        )

        if scenario.hosts:  # real machines (hosts: in the scenario): linklab.field
            from linklab.field.environment import FieldEnvironment

            env = FieldEnvironment(scenario)
            click.get_current_context().call_on_close(env.close)  # ssh, agents, host dirs
        else:
            env = LinklabEnvironment(scenario.presets)
        # everything the run checks before its first cell, --dry-run too (a field run's
        # hosts are reached only by the run itself)
        check_before_run(scenario, cells, env, list(scenario.gates) + cli_gates,
                         connect=not dry_run)
        searched = set(store.info.get("searches") or {}) if store is not None else set()
        done = store.done_ids() if store is not None else set()
        todo = [c for c in cells if c.cell_id not in done]
        estimates = cell_estimates_s(cells, env, scenario.search)
        finished = finished_timing(store.rows if store else [], cells, env, scenario.search)
        pace = observed_pace(*finished)
        total = pace * sum(cell_estimates_s(todo, env, scenario.search, searched))
        most = pace * sum(cell_estimates_s(todo, env, scenario.search, searched, bound=True))
        if dry_run:
            if as_json:
                print_json({"scenario": scenario.to_dict(), "estimated_s": total,
                            "at_most_s": most, "pace": pace,
                            "cells": [dict(c.axes(), index=c.index) for c in cells]})
            else:
                table = _matrix_table(scenario, cells, env, estimates)
                bound = (f"; at most {_fmt_eta(most)} if every search takes its "
                         f"{scenario.search.max_trials} trials" if most > total else "")
                left = f" ({len(todo)} left)" if len(todo) < len(cells) else ""
                paced = (f"; its {len(finished[0])} finished cells took {pace:.2f} of their "
                         "estimate, and so will the rest" if pace != 1.0 else "")
                summary = (f"{len(cells)} cells{left}, estimated {_fmt_eta(total)} "
                           f"(h:mm:ss{bound}{paced})")
                if fmt == "markdown":
                    typer.echo(to_markdown(table, Text(summary)))
                else:
                    print_text(table)
                    print_text(summary)
            return

        for line in getattr(env, "notes", list)():  # the field's hosts, preflight, time sync
            err_console.print(line, markup=False, highlight=False, soft_wrap=True)
        if store is None:
            stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
            root = out / f"{scenario.name}-{stamp}"
            store = RunStore.create(root, scenario=dict(scenario.to_dict(), text=scenario.text),
                                    options={"quick": quick, "repeat": repeat, "gates": gate},
                                    planned=[c.cell_id for c in cells], estimated_s=total)
        err_console.print(f"run directory: {store.root}")
        run_tag = f"b{os.getpid() % 100000}{secrets.token_hex(1)}"

        columns = (TextColumn("[bold]{task.fields[done]}/{task.fields[cells]} cells"),
                   BarColumn(), TextColumn("ETA {task.fields[eta]}"), TimeElapsedColumn(),
                   TextColumn("{task.fields[current]}"))
        with Progress(*columns, console=err_console, transient=False) as bar:
            task = bar.add_task("bench", total=len(cells), done=0, cells=len(cells),
                                eta=_fmt_eta(total), current="")

            def on_progress(p) -> None:
                current = p.current.cell_id if p.current else "done"
                if p.detail:
                    current += f" ({p.detail})"
                bar.update(task, completed=p.done_cells, done=p.done_cells,
                           eta=_fmt_eta(p.remaining_s), current=current)

            try:
                rows = run_cells(store, cells, env, run_tag=run_tag,
                                 on_progress=on_progress, search_settings=scenario.search)
            except (KeyboardInterrupt, SystemExit) as stop:
                bar.stop()
                err_line(   # one line, never wrapped
                    f"linklab: interrupted: {len(store.rows)}/{len(cells)} cells kept in "
                    f"{store.root}; continue with: linklab bench --resume {store.root}")
                raise typer.Exit(exit_status(stop) or 130) from None
        conclude_run(store, list(scenario.gates) + cli_gates, rows, as_json, fmt=fmt)
