"""A busy robot: CPU contention as cell settings (README "A busy robot").

- ``cpu_load`` (fields.parse_cpu_load): CPU-bound competitors (link/competitors.py)
  started for each measurement before its first probe (and broker) and stopped after its
  last probe, ``N/core`` x the machine's online CPUs or a count, placed round robin over
  ``cpu_load_on`` (default: the cell's endpoint hosts). They stay in the runner's cgroup,
  as the probes would be without a quota.
- ``cpu_quota`` (fields.parse_cpu_quota): a cgroup per host of ``cpu_quota_on`` (default:
  the hosts that run the cell's probes) made with the link (``quota_groups``, called by
  environment.LinklabEnvironment.link), quota = cores x 100 ms per 100 ms period
  (link/cgroups.py); each probe started on that host (LinkBed.spawn) is in it before it
  runs. A broker (MQTT, Zenoh's router) is not a probe: it is not in it. Per host: with
  ``1.5cores`` on robot and edge, each host's probes may use 1.5 cores.

Both are recorded in the run's journal, so ``linklab link down``/``clean`` remove them
also after linklab was killed. ``check_cell`` refuses, before anything runs (checks.py,
``--dry-run`` too), what this machine cannot apply; each cell's row holds what was asked
(the four fields) and what was applied (``CPU_COLUMNS``, rundir/columns.py),
``records/<cell>/cpu.json`` each competitor's CPU seconds and each quota group's
throttling.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from linklab.bench.fields import (
    CPU_NONE,
    LOAD_ACCEPTED,
    MAX_LOAD_PER_CORE,
    QUOTA_ACCEPTED,
    host_list,
    load_processes,
    quota_cores,
)
from linklab.bench.matrix import Cell
from linklab.errors import LinklabError, UsageError
from linklab.link import cgroups, competitors


def asked(cell: Cell) -> bool:
    return cell.cpu_load != CPU_NONE or cell.cpu_quota != CPU_NONE


def endpoint_hosts(cell: Cell) -> tuple[str, ...]:
    """The hosts that run the cell's probes, publishers first, in order."""
    return tuple(dict.fromkeys(h for t in cell.topics for h in (t.publisher, *t.subscribers)))


def load_hosts(cell: Cell) -> tuple[str, ...]:
    return host_list(cell.cpu_load_on) or endpoint_hosts(cell)


def quota_hosts(cell: Cell) -> tuple[str, ...]:
    return host_list(cell.cpu_quota_on) or endpoint_hosts(cell)


def placement(cell: Cell, cpus: int) -> list[str]:
    """The host of each competitor: round robin over ``load_hosts``."""
    hosts = load_hosts(cell)
    return [hosts[i % len(hosts)] for i in range(load_processes(cell.cpu_load, cpus))]


# --- before anything runs -------------------------------------------------------------

def check_cell(cell: Cell, *, remote: bool, cpus: int,
               controller: cgroups.Controller | str | None) -> None:
    """Refuse (UsageError naming the field) what cannot be applied to ``cell`` here:
    ``cpus`` online CPUs, ``controller`` the cgroup cpu controller (or why there is
    none; None: not looked up, as no cell asks a quota)."""
    if not asked(cell):
        return
    if remote:
        field = "cpu_load" if cell.cpu_load != CPU_NONE else "cpu_quota"
        raise UsageError(
            f"{getattr(cell, field)}: applied on linklab's namespace testbeds only; on real "
            "hosts (hosts:) linklab does not start competitors or make cgroups: remove "
            f"{field} or run the scenario without hosts:", argument=field)
    from linklab.bench.topics import cluster_size, topology_hosts

    size = cluster_size({"link": cell.link_choice}) if cell.topology == "cluster" else (2, 2)
    known = topology_hosts(cell.topology, cell.hosts, size)
    for host in host_list(cell.cpu_load_on) or ():
        if host not in known:
            raise UsageError(f"host {host!r} is not in the cell's {cell.topology} topology; "
                             f"accepted: {', '.join(known)}", argument="cpu_load_on")
    probes = endpoint_hosts(cell)
    for host in host_list(cell.cpu_quota_on) or ():
        if host not in probes:
            raise UsageError(f"host {host!r} runs no probe of this cell, and the quota is "
                             f"for a host's probes; accepted: {', '.join(probes)}",
                             argument="cpu_quota_on")
    count = load_processes(cell.cpu_load, cpus)
    if count > MAX_LOAD_PER_CORE * cpus:
        raise UsageError(f"{cell.cpu_load}: {count} competitors is more than "
                         f"{MAX_LOAD_PER_CORE} per online CPU ({MAX_LOAD_PER_CORE * cpus} on "
                         f"this machine of {cpus}); expected {LOAD_ACCEPTED}",
                         argument="cpu_load")
    cores = quota_cores(cell.cpu_quota)
    if cores is None:
        return
    if not isinstance(controller, cgroups.Controller):
        raise UsageError(f"{cell.cpu_quota} cannot be applied here: {controller}; "
                         "remove cpu_quota or run where a cpu cgroup can be made",
                         argument="cpu_quota")
    if cores > cpus:
        raise UsageError(f"{cell.cpu_quota} is more than the {cpus} online CPUs of this "
                         f"machine; expected {QUOTA_ACCEPTED}", argument="cpu_quota")
    limit = cgroups.limit_cores(controller)
    if limit is not None and cores > limit:
        raise UsageError(f"{cell.cpu_quota} is more than the {limit:g} cores the cgroup "
                         f"linklab runs in may use ({controller.parent}); expected at most "
                         f"{limit:g}cores", argument="cpu_quota")


def check_cells(cells: list[Cell], *, remote: bool, about: Any) -> None:
    """``check_cell`` for every cell, each inside ``about(cell)`` (checks.about: the
    error names the cell and the scenario's line)."""
    if not any(asked(c) for c in cells):
        return
    cpus = competitors.online_cpus()
    controller = cgroups.find() if any(c.cpu_quota != CPU_NONE for c in cells) else None
    for cell in cells:
        with about(cell):
            check_cell(cell, remote=remote, cpus=cpus, controller=controller)


def refuse_unapplied(cell: Cell, bed: Any) -> None:
    """A bed that cannot apply the cell's CPU settings (a Kubernetes cell) is an error,
    never a cell measured without them."""
    if asked(cell) and not bed.applies_cpu:
        raise LinklabError(f"cpu_load {cell.cpu_load}, cpu_quota {cell.cpu_quota}: applied "
                           "on linklab's namespace testbeds only, not here")


def run_info() -> dict[str, Any]:
    """For run.json's ``cpu``: the competitor, and the cpu controller the quota uses."""
    controller = cgroups.find()
    return {"competitor": competitors.definition(),
            "cgroup": controller.describe() if isinstance(controller, cgroups.Controller)
            else {"unavailable": controller}}


# --- with the link ----------------------------------------------------------------------

def quota_groups(testbed: Any, cell: Cell) -> dict[str, Path]:
    """The quota's group of each host of ``cpu_quota_on`` on a fresh link (none without
    a quota); recorded in the link's journal, removed with it."""
    cores = quota_cores(cell.cpu_quota)
    if cores is None:
        return {}
    controller = cgroups.find()
    if isinstance(controller, str):
        raise LinklabError(f"cpu_quota {cell.cpu_quota}: {controller}")
    quota = cgroups.quota_us(cores)
    return {host: cgroups.make(testbed.journal, controller, testbed.journal.name, host, quota)
            for host in quota_hosts(cell)}


class CellLoad:
    """The competitors of one measurement (cellrun): ``start`` before the first probe,
    ``stop`` after the last (also as one of the cell's probes: measure.py stops them if
    the cell fails), then ``fields`` for the row."""

    def __init__(self, cell: Cell, bed: Any, out_dir: Path):
        refuse_unapplied(cell, bed)
        self.cell = cell
        self.bed = bed
        self.out_dir = out_dir
        self.running: list[competitors.Competitor] = []

    def start(self) -> None:
        if self.cell.cpu_load != CPU_NONE:
            hosts = placement(self.cell, competitors.online_cpus())
            competitors.start(self.bed.bed, hosts, into=self.running)

    def stop(self, timeout_s: float = 0.0) -> None:  # noqa: ARG002 (as a probe's stop)
        if self.running:
            competitors.stop(self.bed.bed, self.running)

    def fields(self) -> dict[str, Any]:
        """The row's columns (rundir CPU_COLUMNS) for this measurement; also written to
        records/<cell>/cpu.json with each competitor and each quota group."""
        self.stop()
        early = [c for c in self.running if c.ended_early]
        if early:
            raise LinklabError(f"cpu_load {self.cell.cpu_load}: the competitor in "
                               f"{early[0].host} (pid {early[0].pid}) ended during the cell, "
                               "not by linklab: the load asked was not applied throughout")
        out: dict[str, Any] = {"cpu_load_processes": len(self.running)}
        if self.running:
            hosts: dict[str, int] = {}
            for c in self.running:
                hosts[c.host] = hosts.get(c.host, 0) + 1
            out["cpu_load_placement"] = ",".join(f"{h}:{n}" for h, n in hosts.items())
            out["cpu_load_cpu_s"] = sum(c.cpu_s or 0.0 for c in self.running)
            out["cpu_load_wall_s"] = max(c.wall_s or 0.0 for c in self.running)
            waits = [c.runqueue_s for c in self.running]
            out["cpu_load_runqueue_s"] = math.nan if None in waits else sum(waits)
        groups = getattr(self.bed, "quotas", {})
        per_group = []
        for host, path in groups.items():
            quota = cgroups.read_quota(path)
            per_group.append({"host": host, "cgroup": str(path),
                              "quota_us": quota[0] if quota else None,
                              "period_us": quota[1] if quota else None,
                              **cgroups.throttling(path)})
        if per_group:
            out.update(
                cpu_quota_hosts=",".join(g["host"] for g in per_group),
                cpu_quota_us=per_group[0]["quota_us"], cpu_period_us=per_group[0]["period_us"],
                cpu_quota_periods=sum(g["periods"] for g in per_group),
                cpu_quota_throttled_periods=sum(g["throttled"] for g in per_group),
                cpu_quota_throttled_s=sum(g["throttled_s"] for g in per_group))
        if self.running or per_group:
            (self.out_dir / "cpu.json").write_text(json.dumps(
                {"cpu_load": self.cell.cpu_load, "cpu_quota": self.cell.cpu_quota,
                 "competitors": [c.to_dict() for c in self.running],
                 "quota_groups": per_group}, indent=1) + "\n")
        return out
