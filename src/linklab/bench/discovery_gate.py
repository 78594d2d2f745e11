"""The discovery gate: a cell's publishers send their first sample only once every
subscriber's reader has matched its publisher.

Under packet loss the two halves of DDS discovery finish apart: a writer can match a
reader (it received the reader's SEDP announcement) seconds before that reader matches the
writer (the writer's announcement, or its participant's, was lost and waits for the next
period: Fast DDS re-announces a participant every 3 s, Cyclone DDS every 30 s). Best-effort
samples sent in between are dropped by the reader's side and would count as link loss --
measured here before the gate: 6 of 33 Cyclone DDS cells at 24.8 m on the ns-3 802.11a
medium, and a Fast DDS cell at 30 % Bernoulli loss, delivered nothing in a 3 s cell while
their writers had matched the readers within 20 ms (the readers: max_matched 0).

So a sub creates its ready file when its reader first matches (``--ready-file``), a pub
when its writer has matched all its readers; a pub then waits for the start file
(``--start-file``), which the runner creates when every endpoint is ready. The go is also
the publishers' start: they skip their 1 s settle and begin their warm-up within 5 ms of
it, so the runner knows when the first measured sample leaves and times a link outage
from it (``outage_start`` after that sample; before, the outage clock assumed 1.3 s and
began up to 1.3 s off when discovery took longer on one side). If not every endpoint is
ready within the match timeout (or an endpoint ended: an unmatched subscriber leaves at its
own match timeout) the runner starts the publishers anyway and the cell's row names the
subscribers that had matched no publisher -- discovery across the link did not complete,
which is not a data-plane loss. A publisher serves the readers it had matched at the go
(one that matched none ends with its own error), and the end of an unmatched endpoint does
not end the cell (bench/cellrun.py): with several subscribers the matched ones are
measured, as paper 002's runs measured whoever had discovered the publisher.

Beds whose probes share this machine's files take part (linklab.link hosts), and beds
that say how to reach their probes' files (``gate_files``: field hosts over SSH, where the
same asymmetry happens on a real lossy path -- field/gate_files.py); the probes of Fast
DDS, Cyclone DDS and MQTT implement the flags (probes/common/; the registry's
``discovery_gate``, linklab.middleware.families).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from linklab.middleware import family_of

POLL_S = 0.01
# A gated publisher, matched before the go, starts its warm-up once it sees the start file
# (it looks every 5 ms, probes/common/publish.cpp): an outage clock is armed that far ahead.
GO_LATENCY_S = 0.005


class GateFiles(Protocol):
    """Where the gate looks for ready files and creates the start file."""

    def ready(self, paths: list[Path]) -> set[Path]: ...

    def create(self, path: Path) -> None: ...


class LocalFiles:
    """This machine's file system: the probes write and read the paths they were given."""

    def ready(self, paths: list[Path]) -> set[Path]:
        return {path for path in paths if path.exists()}

    def create(self, path: Path) -> None:
        path.touch()


LOCAL = LocalFiles()


def files_of(bed) -> GateFiles | None:
    """The gate's files on ``bed`` (bench.protocols.Bed.gate_files): this machine's
    (LOCAL), the bed's own, or None (the bed takes no part)."""
    return bed.gate_files


def applies(middleware: str, bed) -> GateFiles | None:
    """The gate's files for a cell on ``bed`` with ``middleware``; None: it has no gate."""
    return files_of(bed) if family_of(middleware).discovery_gate else None


def ready_path(out_dir: Path, endpoint: str) -> Path:
    return out_dir / f"{endpoint}.ready"


def start_path(out_dir: Path) -> Path:
    return out_dir / "publishers.start"


def clear(out_dir: Path) -> None:
    for path in [*out_dir.glob("*.ready"), start_path(out_dir)]:
        path.unlink(missing_ok=True)


def open_when_ready(out_dir: Path, endpoints: list[str], timeout_s: float,
                    gave_up: Callable[[], bool], files: GateFiles = LOCAL) -> list[str]:
    """Wait until every endpoint's ready file exists (or ``timeout_s``, or ``gave_up()``:
    a probe ended), then create the start file. Returns the endpoints not ready."""
    end = time.monotonic() + timeout_s
    waiting = list(endpoints)
    while waiting and time.monotonic() < end and not gave_up():
        ready = files.ready([ready_path(out_dir, name) for name in waiting])
        waiting = [name for name in waiting if ready_path(out_dir, name) not in ready]
        if waiting:
            time.sleep(POLL_S)
    files.create(start_path(out_dir))
    return waiting


UNMATCHED = "discovery did not complete"   # how every such failure reason begins


def unmatched_reason(timeout_s: float) -> str:
    return (f"{UNMATCHED}: this subscriber's reader matched no publisher "
            f"within {timeout_s:g} s (the link lost its announcements; not a data-plane loss)")
