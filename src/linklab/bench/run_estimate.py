"""How long a run will take: each cell's estimate, and the time the cells left need at the
pace the run's finished cells kept (bench.runner's estimates and observed pace)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from linklab.bench.matrix import Cell
from linklab.bench.runner import cell_estimates_s, finished_timing, observed_pace


@dataclass(frozen=True)
class RunEstimate:
    cell_s: list[float]     # each cell's estimate, in run order, as if none had run
    total_s: float          # the cells left, at the observed pace
    at_most_s: float        # the same if every search takes all its max_trials
    pace: float             # wall time over estimate of the finished cells (1.0: none yet)
    timed_cells: int        # finished cells the pace comes from
    left: int               # cells not finished yet


def estimate_run(cells: list[Cell], env: Any, search: Any, store: Any = None) -> RunEstimate:
    """The estimate of a run of ``cells``; ``store``: the run a --resume continues (its
    finished cells are not counted again, and set the pace), else None."""
    searched = set(store.info.get("searches") or {}) if store is not None else set()
    done = store.done_ids() if store is not None else set()
    todo = [c for c in cells if c.cell_id not in done]
    finished = finished_timing(store.rows if store else [], cells, env, search)
    pace = observed_pace(*finished)
    return RunEstimate(
        cell_s=cell_estimates_s(cells, env, search),
        total_s=pace * sum(cell_estimates_s(todo, env, search, searched)),
        at_most_s=pace * sum(cell_estimates_s(todo, env, search, searched, bound=True)),
        pace=pace, timed_cells=len(finished[0]), left=len(todo))
