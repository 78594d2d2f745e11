"""A run as the report reads it: one run directory, or several read as one (``--with``).

``linklab report RUN_DIR --with RUN_B --with RUN_C`` reports the cells of all three
together (e.g. a study run in parts: seed 004's middlewares and its security study). A
later run's cell replaces an earlier one with the same cell id; run.json is RUN_DIR's
(each run's gates still apply to its own cells: gate_view.check); each cell's records
are read from the run directory it came from (:meth:`Run.cell_dir`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linklab.errors import UsageError
from linklab.report.searches import best_trial_dir
from linklab.rundir import RunStore


@dataclass
class Run:
    root: Path
    info: dict[str, Any]
    rows: list[dict[str, Any]]
    streams: list[dict[str, Any]]
    stores: list[RunStore] = field(default_factory=list)
    origin: dict[str, Path] = field(default_factory=dict)  # cell id -> its run directory
    pool: tuple[str, ...] = ()  # settings the Table II blocks pool (report --pool)

    def cell_dir(self, cell_id: str) -> Path:
        """records/<cell_id> in the run directory the cell came from."""
        return self.origin.get(cell_id, self.root) / "records" / cell_id

    def measurement_dir(self, cell_id: str) -> Path:
        """Where a cell's records are: records/<cell_id>, or for a throughput search the
        directory of the trial whose measurement is the row's (records/<cell>/trial-NN)."""
        path = self.cell_dir(cell_id)
        if (path / "search.json").is_file():
            return best_trial_dir(path) or path
        return path

    def own(self, store: RunStore) -> tuple[dict[str, Any], list[dict[str, Any]],
                                            list[dict[str, Any]]]:
        """(info, rows, streams) of the cells that came from ``store``."""
        ids = {c for c, root in self.origin.items() if root == store.root}
        return (store.info, [r for r in self.rows if r["cell_id"] in ids],
                [s for s in self.streams if s.get("cell_id") in ids])

    @property
    def planned(self) -> list[str]:
        """Every run's planned cell ids, in order, once each."""
        return list(dict.fromkeys(c for s in self.stores or [None] for c in (
            (s.info if s is not None else self.info).get("planned") or [])))

    @property
    def finished(self) -> bool:
        return all(s.info.get("finished") for s in self.stores) if self.stores else \
            bool(self.info.get("finished"))

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r.get("status") == "error"]


def load(run_dir: Path, others: list[Path] = (), pool: tuple[str, ...] = ()) -> Run:
    """RUN_DIR, then each --with run over it; a bad --with directory names --with.
    ``pool``: the settings its Table II blocks pool (report --pool, checked)."""
    stores = [RunStore.open(Path(run_dir))]
    for other in others:
        try:
            stores.append(RunStore.open(Path(other)))
        except UsageError as error:
            message = str(error)
            if error.argument and message.startswith(f"{error.argument}: "):
                message = message[len(error.argument) + 2:]
            raise UsageError(message, argument="--with") from None
    rows: dict[str, dict[str, Any]] = {}
    streams: dict[str, list[dict[str, Any]]] = {}
    origin: dict[str, Path] = {}
    for store in stores:
        mine: dict[str, list[dict[str, Any]]] = {}
        for stream in store.streams:
            mine.setdefault(str(stream.get("cell_id")), []).append(stream)
        for row in store.rows:
            cell_id = row["cell_id"]
            rows.pop(cell_id, None)  # a later run's cell goes to the end, in its order
            rows[cell_id] = row
            streams[cell_id] = mine.get(cell_id, [])
            origin[cell_id] = store.root
    first = stores[0]
    ordered = list(rows.values())
    return Run(first.root, first.info, ordered,
               [s for r in ordered for s in streams[r["cell_id"]]], stores, origin,
               tuple(pool))
