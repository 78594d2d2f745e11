"""``linklab bench SCENARIO.yaml``: run a scenario's matrix into a run directory."""

from __future__ import annotations

import os
import secrets
from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from linklab.bench.matrix import estimate_s, expand, size_label
from linklab.bench.spec import Scenario, load_scenario, parse_scenario
from linklab.bench.store import RunStore
from linklab.errors import UsageError
from linklab.output import console, err_console, print_json
from linklab.units import format_duration


def _fmt_eta(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _outage_of(preset: str) -> float:
    try:
        from linklab.bench.environment import preset_outage_s

        return preset_outage_s(preset)
    except Exception:  # unknown preset: the run itself will say so
        return 0.0


def _matrix_table(scenario: Scenario, cells) -> Table:
    table = Table(title=f"{scenario.name}: {len(cells)} cells", title_justify="left")
    keys = list(scenario.axes) + (["trial"] if scenario.trials > 1 else [])
    table.add_column("#", justify="right")
    table.add_column("cell id", no_wrap=True)
    for key in keys:
        table.add_column(key)
    table.add_column("estimate", justify="right")
    for cell in cells:
        values = []
        for key in keys:
            if key == "payload":
                values.append(size_label(cell.payload_bytes))
            elif key == "rate":
                values.append(f"{cell.rate_hz:g} Hz")
            elif key == "trial":
                values.append(str(cell.trial))
            else:
                values.append(str(getattr(cell, {"duration": "duration_s", "warmup": "warmup_s",
                                                  "outage_start": "outage_start_s",
                                                  "outage_length": "outage_length_s",
                                                  "grace": "grace_s"}.get(key, key))))
        table.add_row(str(cell.index), cell.cell_id, *values,
                      format_duration(estimate_s(cell, _outage_of(cell.link))))
    return table


def register(app: typer.Typer) -> None:
    @app.command("bench")
    def bench(
        scenario_path: Path | None = typer.Argument(
            None, metavar="SCENARIO.yaml",
            help="Scenario file (see scenarios/). Not needed with --resume."),
        quick: bool = typer.Option(False, "--quick",
                                   help="Apply the scenario's quick: overrides (fewer, "
                                        "shorter cells)."),
        resume: Path | None = typer.Option(None, "--resume", metavar="RUN_DIR",
                                           help="Continue an interrupted run: skip its "
                                                "finished cells."),
        dry_run: bool = typer.Option(False, "--dry-run",
                                     help="Print the matrix and its estimated duration; "
                                          "run nothing."),
        out: Path = typer.Option(Path("runs"), "--out", metavar="DIR",
                                 help="Parent directory of the new run directory."),
        repeat: int | None = typer.Option(None, "--repeat", metavar="N",
                                          help="Trials of every cell (overrides the "
                                               "scenario's trials)."),
        as_json: bool = typer.Option(False, "--json",
                                     help="Print the matrix (--dry-run) or the finished "
                                          "cells as JSON."),
    ) -> None:
        """Run a scenario: every cell of its matrix across an emulated link, into a run
        directory (run.json, cells.parquet, records/). Ctrl-C keeps finished cells."""
        if repeat is not None and repeat < 1:
            raise UsageError(f"{repeat} must be 1 or more", argument="--repeat")
        store = None
        if resume is not None:
            store = RunStore.open(resume)
            saved = store.info["scenario"]
            options = store.info.get("options", {})
            if scenario_path is not None and Path(scenario_path).stem != saved["name"] and \
                    load_scenario(scenario_path).name != saved["name"]:
                raise UsageError(f"{resume} is a run of {saved['name']!r}, not of "
                                 f"{scenario_path}", argument="--resume")
            scenario = parse_scenario(saved["text"], saved["path"],
                                      quick=options.get("quick", False),
                                      repeat=options.get("repeat"))
        else:
            if scenario_path is None:
                raise UsageError("give a scenario file (e.g. scenarios/demo.yaml) or "
                                 "--resume RUN_DIR", argument="SCENARIO.yaml")
            scenario = load_scenario(scenario_path, quick=quick, repeat=repeat)
        cells = expand(scenario)
        total = sum(estimate_s(c, _outage_of(c.link)) for c in cells)

        if dry_run:
            if as_json:
                print_json({"scenario": scenario.to_dict(), "estimated_s": total,
                            "cells": [dict(c.axes(), index=c.index) for c in cells]})
            else:
                console.print(_matrix_table(scenario, cells))
                console.print(f"{len(cells)} cells, estimated {_fmt_eta(total)} "
                              "(h:mm:ss)")
            return

        from linklab.bench.environment import LinklabEnvironment, check_ready
        from linklab.bench.runner import run_cells

        check_ready(cells)
        if store is None:
            stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
            root = out / f"{scenario.name}-{stamp}"
            store = RunStore.create(root, scenario=dict(scenario.to_dict(), text=scenario.text),
                                    options={"quick": quick, "repeat": repeat},
                                    planned=[c.cell_id for c in cells], estimated_s=total)
        err_console.print(f"run directory: {store.root}")
        run_tag = f"b{os.getpid() % 100000}{secrets.token_hex(1)}"
        env = LinklabEnvironment()

        columns = (TextColumn("[bold]{task.fields[done]}/{task.fields[cells]} cells"),
                   BarColumn(), TextColumn("ETA {task.fields[eta]}"), TimeElapsedColumn(),
                   TextColumn("{task.fields[current]}"))
        with Progress(*columns, console=err_console, transient=False) as bar:
            task = bar.add_task("bench", total=len(cells), done=0, cells=len(cells),
                                eta=_fmt_eta(total), current="")

            def on_progress(p) -> None:
                bar.update(task, completed=p.done_cells, done=p.done_cells,
                           eta=_fmt_eta(p.remaining_s),
                           current=p.current.cell_id if p.current else "done")

            try:
                rows = run_cells(store, cells, env, run_tag=run_tag,
                                 on_progress=on_progress)
            except (KeyboardInterrupt, SystemExit):
                bar.stop()
                err_console.print(
                    f"linklab: interrupted: {len(store.rows)}/{len(cells)} cells kept in "
                    f"{store.root}; continue with: linklab bench --resume {store.root}")
                raise typer.Exit(130) from None
        if as_json:
            print_json({"run_dir": str(store.root), "cells": rows})
            return
        from linklab.report.table import render_run

        console.print(render_run(store.info, store.rows, console))
        console.print(f"run directory: {store.root}  (linklab report {store.root})")
