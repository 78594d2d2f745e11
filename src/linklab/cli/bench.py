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

import os
import secrets
from pathlib import Path

import click
import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from linklab.bench.matrix import Cell, expand
from linklab.bench.run_start import create_run, holds_scenario, saved_gates, saved_scenario
from linklab.bench.spec import Scenario, load_scenario
from linklab.cli.bench_plan import fmt_eta, print_plan
from linklab.cli.options import (
    FORMAT_OPTION,
    GATE_OPTION,
    PRESETS_OPTION,
    QUICK_OPTION,
    RUNS_OUT_OPTION,
    SCENARIO_ARGUMENT,
    dry_run_option,
    output_format,
    repeat_option,
    resume_option,
)
from linklab.cli.run_outcome import conclude_run
from linklab.errors import UsageError
from linklab.output import err_console, err_line
from linklab.rundir import RunStore
from linklab.stop_signals import exit_status


def bench(
    scenario_path: Path | None = SCENARIO_ARGUMENT, quick: bool = QUICK_OPTION,
    resume: Path | None = resume_option("Continue an interrupted run: skip its finished "
                                        "cells."),
    dry_run: bool = dry_run_option("Make every check the run makes before its first cell, "
                                   "then print the matrix and its estimated duration; change "
                                   "nothing."),
    out: Path = RUNS_OUT_OPTION,
    repeat_text: str | None = repeat_option("Trials of every cell, 1 to 1000. Default: the "
                                            "scenario's trials."),
    presets: list[Path] = PRESETS_OPTION, gate: list[str] = GATE_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the matrix (--dry-run) or the "
                                 "finished cells as JSON."),
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
    from linklab.bench.checks import check_before_run
    from linklab.bench.gates import parse_cli_gate
    from linklab.bench.run_estimate import estimate_run
    from linklab.bench.spec import check_repeat

    fmt = output_format(fmt, json_flag=as_json)
    repeat = None if repeat_text is None else check_repeat(repeat_text)
    cli_gates = [parse_cli_gate(g) for g in gate]
    store = None
    if resume is not None:
        store = RunStore.open(resume)
        scenario = _resumed(store, resume, scenario_path)
        cli_gates += [parse_cli_gate(g) for g in saved_gates(store.info)]
    elif scenario_path is None:
        raise UsageError("give a scenario file (e.g. scenarios/demo.yaml) or "
                         "--resume RUN_DIR", argument="SCENARIO.yaml")
    else:
        scenario = load_scenario(scenario_path, quick=quick, repeat=repeat,
                                 preset_files=presets)
    cells = expand(scenario)  # at most MAX_CELLS: refused before expanding
    env = _environment(scenario)
    # everything the run checks before its first cell, --dry-run too (a field run's
    # hosts are reached only by the run itself)
    check_before_run(scenario, cells, env, list(scenario.gates) + cli_gates,
                     connect=not dry_run)
    estimate = estimate_run(cells, env, scenario.search, store)
    if dry_run:
        print_plan(scenario, cells, estimate, fmt)
        return
    for line in getattr(env, "notes", list)():  # the field's hosts, preflight, time sync
        err_console.print(line, markup=False, highlight=False, soft_wrap=True)
    if store is None:
        store = create_run(out, scenario, [c.cell_id for c in cells], estimated_s=estimate.total_s,
                           options={"quick": quick, "repeat": repeat, "gates": gate})
    err_console.print(f"run directory: {store.root}")
    rows = _run_with_progress(store, cells, env, scenario, estimate.total_s)
    conclude_run(store, list(scenario.gates) + cli_gates, rows, fmt == "json", fmt=fmt)


def _resumed(store: RunStore, resume: Path, scenario_path: Path | None) -> Scenario:
    """The scenario of the run --resume continues; SCENARIO.yaml, if given, must be its."""
    saved = store.info.get("scenario") or {}
    if not holds_scenario(store.info):
        raise UsageError(f"{resume}/run.json does not hold its scenario (text and "
                         "path); it cannot be resumed", argument="--resume")
    if scenario_path is not None and Path(scenario_path).stem != saved.get("name") \
            and load_scenario(scenario_path).name != saved.get("name"):
        raise UsageError(f"{resume} is a run of {saved.get('name')!r}, not of "
                         f"{scenario_path}", argument="--resume")
    return saved_scenario(store.info)


def _environment(scenario: Scenario):
    """Where the cells run: the scenario's real hosts (hosts:, linklab.field), else emulated
    links here."""
    if scenario.hosts:
        from linklab.field.host_environment import FieldEnvironment

        env = FieldEnvironment(scenario)
        click.get_current_context().call_on_close(env.close)  # ssh, agents, host dirs
        return env
    from linklab.bench.namespace_environment import LinklabEnvironment

    return LinklabEnvironment(scenario.presets)


def _run_with_progress(store: RunStore, cells: list[Cell], env, scenario: Scenario,
                       total_s: float) -> list:
    """Run the cells under a progress bar on stderr; an interruption keeps the finished
    cells and says how to continue (exit 130, 143 SIGTERM, 129 SIGHUP)."""
    from linklab.bench.runner import run_cells

    run_tag = f"b{os.getpid() % 100000}{secrets.token_hex(1)}"
    columns = (TextColumn("[bold]{task.fields[done]}/{task.fields[cells]} cells"),
               BarColumn(), TextColumn("ETA {task.fields[eta]}"), TimeElapsedColumn(),
               TextColumn("{task.fields[current]}"))
    with Progress(*columns, console=err_console, transient=False) as bar:
        task = bar.add_task("bench", total=len(cells), done=0, cells=len(cells),
                            eta=fmt_eta(total_s), current="")

        def on_progress(p) -> None:
            current = p.current.cell_id if p.current else "done"
            if p.detail:
                current += f" ({p.detail})"
            bar.update(task, completed=p.done_cells, done=p.done_cells,
                       eta=fmt_eta(p.remaining_s), current=current)

        try:
            return run_cells(store, cells, env, run_tag=run_tag, on_progress=on_progress,
                             search_settings=scenario.search)
        except (KeyboardInterrupt, SystemExit) as stop:
            bar.stop()
            err_line(   # one line, never wrapped
                f"linklab: interrupted: {len(store.rows)}/{len(cells)} cells kept in "
                f"{store.root}; continue with: linklab bench --resume {store.root}")
            raise typer.Exit(exit_status(stop) or 130) from None


def register(app: typer.Typer) -> None:
    app.command("bench")(bench)
