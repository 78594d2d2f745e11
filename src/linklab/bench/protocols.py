"""What the runner needs from a place where cells run: an Environment (links, profiles,
the model) and, while a cell's link is up, its Bed (hosts, processes, counters).

The namespace testbeds (bench.namespace_environment), real hosts over SSH (linklab.field) and a
Kubernetes cluster (linklab.k8s) implement them. Every member of Bed is required: what a
place can and cannot do is said, not guessed from which attributes it has. A bed that says
``runs_cells_whole`` is a WholeCellBed: it runs each measurement itself instead of cellrun
spawning processes on it (linklab.k8s.cluster_bed.KubeBed: endpoints are pods).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Protocol

from linklab.bench.matrix import Cell
from linklab.model.overhead import WirePath


class Bed(Protocol):
    """A link that is up: named hosts, processes in them, counters (namespace_environment.py)."""

    outage_s: float
    # the probes' CLOCK_MONOTONIC is this machine's (a subscriber's end, as the runner saw
    # it, is then on the records' clock: metrics.longest_stall)
    shares_local_clock: bool
    # the discovery gate's ready/start files of its probes (bench.discovery_gate): this
    # machine's (LOCAL), a bed's own (field hosts over SSH), or None (it takes no part)
    gate_files: Any
    # cpu_load competitors and cpu_quota groups can be applied on it (bench/cpu.py)
    applies_cpu: bool
    # it runs a cell whole (WholeCellBed.run_cell) instead of cellrun spawning its probes
    runs_cells_whole: bool

    def row_fields(self) -> dict[str, Any]: ...   # the bed's own columns of a cell's row
    def spawn(self, host: str, argv: list[str], stdout: Any, stderr: Any) -> Any: ...
    def address(self, host: str) -> str | None: ...
    def host(self, name: str) -> Any: ...
    def interface(self, host: str) -> str | None: ...
    def snapshot(self, hosts: tuple[str, ...] = ()) -> dict[str, Any]: ...
    def start_traffic(self, first_sample_in_s: float) -> None: ...
    def outage_on_ns(self) -> int | None: ...
    def dark_windows_ns(self) -> list[tuple[int, int | None]]: ...
    def stages(self) -> dict[str, Any]: ...


class WholeCellBed(Bed, Protocol):
    def run_cell(self, cell: Cell, profile: Any, profile_path: Any, out_dir: Any,
                 probes: list, history_of: Any,
                 model_fanout: Any) -> tuple[dict[str, Any], list]: ...


class Environment(Protocol):
    def link(self, cell: Cell, run_tag: str) -> contextlib.AbstractContextManager[Bed]: ...
    def outage_s(self, cell: Cell) -> float: ...
    def profile(self, cell: Cell) -> ResolvedProfile: ...
    def history_for(self, cell: Cell, topic: Any) -> str: ...
    def model_amplification(self, cell: Cell) -> float: ...
    def model_verdict(self, cell: Cell) -> tuple[float, str | None]: ...
    def link_rate_bits(self, cell: Cell) -> float | None: ...
    def link_mtu(self, cell: Cell) -> int: ...
    def wire_path(self, cell: Cell) -> WirePath: ...


@dataclass(frozen=True)
class ResolvedProfile:
    file_name: str | None  # under the run's profiles/ directory
    xml: str | None
    history: str  # what the probe gets: keep_all | keep_last:N
    meta: dict[str, Any] = field(default_factory=dict)
