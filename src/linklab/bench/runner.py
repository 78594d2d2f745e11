"""Run the cells of a scenario, one after another, into a run directory.

For each cell: make the profile, bring a fresh link up (LinkKeeper says why nothing is
reused), run the cell's endpoints (cellrun.py), compute metrics per subscriber and for
the cell, mark failure, append the row and its streams, and take the link down. A cell
with ``rate: max`` is a throughput search (search.py); one with ``rate: 75%`` runs at
that share of the maximum found for its settings.

A cell whose measurement fails is a failed cell ("failed", "—" in tables). A cell that
could not be measured at all is an error ("error"): a linklab error (environment, input
found late) or a bug in linklab (any other exception, with its traceback in
records/<cell>/error.txt) -- never averaged into a study as if the link lost everything.

Side effects (links, probes) go through an Environment and its Beds (bench.protocols);
the real one is :class:`linklab.bench.namespace_environment.LinklabEnvironment`. One measurement is
bench.measure's, a throughput search bench.search_cells'. Nothing here prints: progress
is reported through a callback.
"""

from __future__ import annotations

import contextlib
import math
import signal
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from linklab.bench.matrix import Cell, estimate_s
from linklab.bench.measure import LinkKeeper, cell_row_base, measure
from linklab.bench.protocols import Environment
from linklab.bench.search_cells import (
    max_rate,
    search_budget_s,
    search_cell,
    search_key,
    search_key_text,
)
from linklab.errors import LinklabError
from linklab.held_signals import signals_held
from linklab.rundir import RunStore, complete_row, now_utc
from linklab.stop_signals import Interrupted


@dataclass
class Progress:
    """What the CLI's progress bar shows."""

    total_cells: int
    done_cells: int
    skipped_cells: int
    remaining_s: float
    current: Cell | None = None
    last_status: str | None = None
    detail: str = ""  # e.g. the search's current trial


ProgressCallback = Callable[[Progress], None]

# Finished cells needed before their pace corrects what is left (one cell also pays for
# bringing its link up; a few say how this machine and these cells really go).
PACE_AFTER_CELLS = 3


def observed_pace(estimated_s: list[float], wall_s: list[float]) -> float:
    """Wall time finished cells took over the time estimated for them (1.0 until
    PACE_AFTER_CELLS have both): what is left of a run is estimated times this. Measured:
    the calibrated Table II's 1200 cells took 0.95 of their estimate here
    (docs/RESULTS.md)."""
    pairs = [(e, w) for e, w in zip(estimated_s, wall_s, strict=True)
             if e > 0 and isinstance(w, (int, float)) and math.isfinite(w) and w > 0]
    if len(pairs) < PACE_AFTER_CELLS:
        return 1.0
    return sum(w for _, w in pairs) / sum(e for e, _ in pairs)


def finished_timing(rows: list[dict[str, Any]], cells: list[Cell], env: Any,
                    settings: Any) -> tuple[list[float], list[float]]:
    """(estimate, wall time) of each of ``cells`` a run's ``rows`` hold, in run order: a
    resumed run's finished cells say how fast its cells go on this machine
    (observed_pace of the two lists)."""
    walls = {r["cell_id"]: r.get("wall_s") for r in rows}
    done = [c for c in cells if c.cell_id in walls]
    return cell_estimates_s(done, env, settings), [walls[c.cell_id] for c in done]


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM ends a run like Ctrl-C: finished cells stay, the link is cleaned (exit 143:
    stop_signals.py)."""
    def handler(signum, frame):  # noqa: ARG001
        raise Interrupted(signum)

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_cells(store: RunStore, cells: list[Cell], env: Environment, *,
              run_tag: str, on_progress: ProgressCallback | None = None,
              search_settings: Any = None) -> list[dict]:
    """Run every cell not already in the store. Ctrl-C / SIGTERM: stop, clean, re-raise."""
    from linklab.bench.spec import SearchSettings

    settings = search_settings or SearchSettings()
    done = store.done_ids()
    todo = [c for c in cells if c.cell_id not in done]

    costs = dict(zip((c.cell_id for c in todo),
                     cell_estimates_s(todo, env, settings,
                                      searched=set(store.info.get("searches") or {})),
                     strict=True))

    def cost(c: Cell) -> float:
        return costs[c.cell_id]

    remaining = sum(costs.values())
    # the run's finished cells (earlier sessions', then this one's): estimate, wall time
    estimated, took = finished_timing(store.rows, cells, env, settings)
    progress = Progress(total_cells=len(cells), done_cells=len(cells) - len(todo),
                        skipped_cells=len(cells) - len(todo),
                        remaining_s=remaining * observed_pace(estimated, took))
    keeper = LinkKeeper(env, run_tag)
    results = []
    store.info.setdefault("link_run_names", [])
    if run_tag not in store.info["link_run_names"]:
        store.info["link_run_names"].append(run_tag)  # namespaces: linklab-<name>-<host>
    store.info["interrupted"] = False
    session = store.begin_session(run_tag)  # saves run.json

    def report(detail: str) -> None:
        progress.detail = detail
        if on_progress:
            on_progress(progress)

    try:
        with _sigterm_as_interrupt():
            for cell in todo:
                progress.current = cell
                report("")
                row, streams = run_one(store, cell, env, keeper, settings, report)
                store.append(row, streams)
                results.append(row)
                progress.done_cells += 1
                remaining -= cost(cell)
                estimated.append(cost(cell))
                took.append(row.get("wall_s", math.nan))
                progress.remaining_s = remaining * observed_pace(estimated, took)
                progress.last_status = row["status"]
                report("")
    except (KeyboardInterrupt, SystemExit):
        store.info["interrupted"] = True
        raise
    finally:
        # Clean the link and save run.json even on Ctrl-C; a Ctrl-C or SIGTERM during
        # clean-up takes effect after it.
        with signals_held():
            keeper.close()
            store.end_session(session)  # saves run.json
    progress.current = None
    report("")
    return results


# Trials a search typically takes before its bracket is within the precision: 7.05 on
# average over paper-001-fig6-latency's 40 searches (5-9 each), 7.7 over -fig7-datapath's
# 28 (6-10), both max_trials 12, precision 5 % (run alone 2026-11-25; docs/RESULTS.md).
TYPICAL_SEARCH_TRIALS = 8


def cell_estimates_s(cells: list[Cell], env: Any, settings: Any,
                     searched: set[str] | frozenset[str] = frozenset(),
                     bound: bool = False) -> list[float]:
    """Each cell's expected wall time, in run order. A ``rate: N %`` cell shares the search
    of every cell with its search_key: the first one that needs it pays for it, none when
    the run already holds it (``searched``: keys of store.info["searches"]); a
    ``rate: max`` cell runs its own. A search counts TYPICAL_SEARCH_TRIALS, or with
    ``bound`` all of max_trials (the most it may take)."""
    per_search = search_budget_s(settings, None if bound else TYPICAL_SEARCH_TRIALS)
    paid = set(searched)
    out = []
    for cell in cells:
        search_s = 0.0
        if cell.search:
            search_s = per_search
            paid.add(search_key(cell))
        elif cell.rate_fraction is not None and search_key(cell) not in paid:
            search_s = per_search
            paid.add(search_key(cell))
        out.append(estimate_s(cell, env.outage_s(cell), search_s))
    return out


def run_one(store: RunStore, cell: Cell, env: Environment, keeper: LinkKeeper,
            settings: Any, report: Callable[[str], None] = lambda _: None
            ) -> tuple[dict, list[dict]]:
    """One cell, start to finish: (its row, its streams). Errors become an "error" row."""
    row = cell_row_base(cell)
    row["started_utc"] = now_utc()
    started = time.monotonic()
    streams: list[dict] = []
    out_dir = store.cell_dir(cell.cell_id)
    try:
        if cell.search:
            row.update(search_cell(store, cell, env, keeper, settings, out_dir, report,
                                    streams))
        else:
            if cell.rate_fraction is not None:
                best = max_rate(store, cell, env, keeper, settings, out_dir, report)
                if best <= 0:
                    raise LinklabError(f"no rate was sustained for {search_key_text(cell)}; "
                                       f"{cell.rate} of it cannot be run")
                rate = cell.rate_fraction * best
                count = None if cell.duration_s is not None else cell.count
                cell = cell.with_rate(rate, count)
                row.update(rate_hz=rate, search_max_rate_hz=best)
            measured, streams = measure(store, cell, env, keeper, out_dir)
            row.update(measured)
    except (KeyboardInterrupt, SystemExit):
        raise
    except LinklabError as error:  # could not run: the environment or input found late
        (out_dir / "error.txt").write_text(traceback.format_exc())
        row.update(status="error", failure_reason=f"could not run: {error}")
        keeper.close()  # the link may be in an unknown state
    except Exception as error:  # noqa: BLE001 -- a bug in linklab, reported as such
        (out_dir / "error.txt").write_text(traceback.format_exc())
        row.update(status="error", failure_reason=(
            f"linklab bug: {type(error).__name__}: {error} (traceback in "
            f"records/{cell.cell_id}/error.txt)"))
        keeper.close()
    row["wall_s"] = time.monotonic() - started
    return complete_row(row), streams
