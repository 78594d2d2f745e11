"""A testbed that is up: its hosts, commands run inside them, the outage schedule,
counters, status and teardown (``lifecycle.up``/``testbed``/``open_run`` make one)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from linklab.errors import LinklabError, UsageError
from linklab.held_signals import signals_held
from linklab.link import cgroups, cluster, userns
from linklab.link.blueprint import Design
from linklab.link.journal import Journal
from linklab.link.netops import NetOps, Snapshot
from linklab.link.placement import from_state
from linklab.link.runs import remove_state
from linklab.link.spec import DIRECTIONS
from linklab.link.system import list_netns
from linklab.link.topology import LinkPlan, PathView
from linklab.link.wires import Wire


@dataclass(frozen=True)
class Host:
    """A host of the testbed: its namespace, main address and interface."""

    name: str
    netns: str
    address: str | None
    interface: str | None
    addresses: tuple[tuple[str, str], ...] = ()


class Testbed:
    """A testbed that is up: hosts, commands inside them, counters, teardown."""

    def __init__(self, journal: Journal, plan_design: Design):
        self.journal = journal
        self.design = plan_design
        self.name = plan_design.name
        self.plan = plan_design.plan
        self.spec = plan_design.spec
        self.shell = journal.shell
        self.hosts: dict[str, Host] = {
            h.name: Host(h.name, h.netns, h.address, h.interface, h.addresses)
            for h in self.plan.hosts}
        for host, netns, address, ifname in cluster.endpoint_hosts(self.plan.cluster):
            self.hosts[host] = Host(host, netns, address, ifname, ((ifname, f"{address}/32"),))
        self._closed = False

    def path(self, link: LinkPlan, direction: str) -> PathView:
        """One direction of a link, with where its stages hook in."""
        path = link.path(direction)
        shaped = (path.receiver == path.shaper and any(
            s.kind == "rate" and s.runs_in == "kernel"
            for s in self.design.stages[link.name][direction]))
        return replace(path, receiver_shaped=shaped)

    # -- running things inside hosts --

    def argv(self, host: str, argv: Sequence[str]) -> list[str]:
        """The command line that runs ``argv`` inside ``host`` (a cluster's pod or
        container: inside that container, ``cluster.container_argv``)."""
        inside = cluster.container_argv(self, host, [str(a) for a in argv])
        if inside is not None:
            return inside
        command = [str(a) for a in argv]
        placement = from_state(self.journal.state)
        if placement is not None:   # off the relay's CPU (placement.py)
            command = ["taskset", "-c", placement.cpu_list(), *command]
        return self.shell.exec_argv(self.plan.host(host).netns, command)

    def popen(self, host: str, argv: Sequence[str], *, cgroup: Path | None = None,
              **kwargs: Any) -> subprocess.Popen[Any]:
        """Start ``argv`` inside ``host``. The process is recorded in the run's journal
        (pid and start time): ``down`` and ``clean`` end it if it still runs, also after
        this process was killed. ``cgroup``: a group of the run (cgroups.make) the process
        is in before it runs (a host's CPU quota)."""
        full = self.argv(host, argv)
        if cgroup is not None:
            full = cgroups.join_argv(cgroup, full)
        with signals_held():
            child = subprocess.Popen(full, **kwargs)
            try:
                self.journal.adopt(f"process in {host}: {' '.join(full[-len(argv):])}", child)
            except BaseException:
                child.kill()
                child.wait()
                raise
        return child

    def run(self, host: str, argv: Sequence[str], *, input: Any = None,
            timeout: float | None = None, check: bool = False,
            **kwargs: Any) -> subprocess.CompletedProcess[Any]:
        """Run ``argv`` inside ``host`` to its end (like ``subprocess.run``; output is
        captured as text unless told otherwise); recorded like ``popen`` while it runs."""
        kwargs.setdefault("text", True)
        if kwargs.pop("capture_output", True):
            kwargs.setdefault("stdout", subprocess.PIPE)
            kwargs.setdefault("stderr", subprocess.PIPE)
        if input is not None:
            kwargs["stdin"] = subprocess.PIPE
        with self.popen(host, argv, **kwargs) as child:
            try:
                out, err = child.communicate(input, timeout=timeout)
            except BaseException:
                child.kill()
                child.wait()
                raise
        self.journal.forget(child)
        result = subprocess.CompletedProcess(child.args, child.returncode, out, err)
        if check:
            result.check_returncode()
        return result

    # -- outage schedule --

    @property
    def outage_t0(self) -> int | None:
        """CLOCK_MONOTONIC ns that the outage schedule counts from (None: no outage)."""
        outage = self.journal.state.get("outage")
        return outage.get("t0_ns") if outage else None

    def arm_outage(self, t0_ns: int | None = None) -> int:
        """Start the outage scheduler; its t=0 is ``t0_ns`` (default: now). Returns t0."""
        outage = self.journal.state.get("outage")
        if not outage:
            raise UsageError("this run has no outage schedule", argument="--outage")
        if outage.get("t0_ns") is not None:
            raise UsageError("the outage schedule is already armed", argument="--outage")
        t0 = time.monotonic_ns() if t0_ns is None else int(t0_ns)
        config = {**{k: outage[k] for k in ("start_s", "length_s", "period_s", "switches")},
                  "t0_ns": t0, "shell_prefix": [],  # spawn() already runs it in place
                  "events": str(events_path(self.journal.path)), "state": str(self.journal.path)}
        self.journal.update(outage={**outage, "t0_ns": t0})
        self.journal.spawn("outage scheduler", [sys.executable, "-m", "linklab.link.outage",
                                               json.dumps(config)],
                          log=self.journal.path.with_name(self.journal.path.stem + ".outage.log"))
        return t0

    def outage_events(self) -> list[dict[str, Any]]:
        """Switches the scheduler made so far: planned and measured times (monotonic ns)."""
        name = events_path(self.journal.path).name
        try:
            text = self.journal.store.read(name).decode("utf-8", "replace")
        except FileNotFoundError:
            return []
        events = []
        for line in text.splitlines():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict):
                    events.append(event)
        return events

    # -- counters --

    def counters(self) -> dict[str, Any]:
        """Per-stage packets/bytes passed and dropped, and per-interface byte counters."""
        relay: dict[tuple[str, str, str], dict[str, Any]] = {}
        for wire in self._wires():
            relay.update(wire.counters(self.shell))
        snap = Snapshot(self.journal, NetOps(self.journal, self.plan.tag).table, relay)
        stages = []
        for link in self.plan.links:
            for direction in DIRECTIONS:
                path = self.path(link, direction)
                for stage in self.design.stages[link.name][direction]:
                    counters = stage.counters(snap, path)
                    stages.append({"link": link.name, "direction": direction,
                                   "kind": stage.kind, "runs_in": stage.runs_in,
                                   "params": stage.params(),
                                   **(counters.to_dict() if counters else {})})
        interfaces: dict[str, dict[str, Any]] = {}
        for host in self.plan.hosts:
            interfaces[host.name] = {}
            for entry in snap.links(host.netns):
                if entry.get("ifname") == "lo":
                    continue
                stats = entry.get("stats64", {})
                interfaces[host.name][entry["ifname"]] = {
                    "rx_bytes": stats.get("rx", {}).get("bytes"),
                    "rx_packets": stats.get("rx", {}).get("packets"),
                    "rx_dropped": stats.get("rx", {}).get("dropped"),
                    "tx_bytes": stats.get("tx", {}).get("bytes"),
                    "tx_packets": stats.get("tx", {}).get("packets"),
                    "tx_dropped": stats.get("tx", {}).get("dropped"),
                }
        return {"stages": stages, "interfaces": interfaces,
                "monotonic_ns": time.monotonic_ns()}

    def _wires(self) -> list[Wire]:
        wires = []
        for wire_name in sorted(set(self.journal.state.get("wires", {}).values())):
            wire_cls = _wire_by_name(wire_name)
            if wire_cls is not None:
                wire = wire_cls()
                wire.journal = self.journal
                wires.append(wire)
        return wires

    def faults(self) -> dict[str, str]:
        """{link: why} for links no longer what was asked for (Wire.faults): void."""
        return {k: v for wire in self._wires() for k, v in wire.faults(self.shell).items()}

    def status(self) -> dict[str, Any]:
        state = self.journal.state
        health: dict[str, str] = {}
        for wire in self._wires():
            health.update(wire.health(self.shell))
        return {
            "name": self.name,
            "topology": self.plan.kind,
            "state_file": str(self.journal.path),
            "owner_pid": (state.get("owner") or {}).get("pid"),
            "spec": self.spec.describe(),
            "hosts": {h.name: {"netns": h.netns, "address": h.address, "interface": h.interface,
                               "addresses": [f"{i} {a}" for i, a in h.addresses]}
                      for h in self.hosts.values()},
            "links": [{"name": link.name, "wire": state.get("wires", {}).get(link.name),
                       "state": health.get(link.name, "up"),
                       "robot_side": f"{link.a.host}/{link.a.ifname}",
                       "edge_side": f"{link.b.host}/{link.b.ifname}"}
                      for link in self.plan.links],
            "notes": list(self.plan.notes),
            "cluster": self.plan.cluster.describe() if self.plan.cluster is not None else None,
            "socket_buffers": state.get("socket_buffers", {}),
            "tcp_congestion": state.get("tcp_congestion", {}),
            "placement": state.get("placement"),
            "outage": {**(state.get("outage") or {}), "events": self.outage_events()}
            if state.get("outage") else None,
            "counters": self.counters(),
        }

    # -- teardown --

    def down(self) -> list[str]:
        """Undo everything this run made (newest first); idempotent. SIGINT/SIGTERM/SIGHUP
        meanwhile take effect when it is done (held_signals.py)."""
        with signals_held():
            return self._down()

    def _down(self) -> list[str]:
        if self._closed:
            return []
        self._closed = True
        self.journal.reload()  # processes other processes of this run recorded
        holder = self.journal.state.get("holder")
        if holder and not userns.is_root():
            self.journal.stop_processes(role="host")
            userns.stop_holder(holder, self.journal.path)
            if self.journal.exists():
                return [f"the holder of run {self.name!r} did not take it down; "
                        f"run linklab link clean --name {self.name}"]
            return []
        problems = self.journal.undo_all()
        left = [ns for ns in (h.netns for h in self.plan.hosts)
                if ns in list_netns(self.shell)]
        if left:
            problems.append(f"namespaces still present: {', '.join(left)}")
        if not problems:
            remove_state(self.journal)
        return problems

    def __enter__(self) -> Testbed:
        return self

    def __exit__(self, *exc: object) -> None:
        problems = self.down()
        if problems and exc[0] is None:
            raise LinklabError("teardown incomplete: " + "; ".join(problems))


def events_path(state_path: Path) -> Path:
    return state_path.with_name(state_path.stem + ".outage.jsonl")


def _wire_by_name(name: str) -> type[Wire] | None:
    from linklab.link.wires import wire_classes

    return wire_classes().get(name)
