"""Bringing a testbed up, looking at it, and taking it down (also from another process).

``up()`` validates everything first (preset, values, topology, which wire each link
needs) and touches nothing until all of it is valid; then it builds through the
journal, and if anything fails or is interrupted half-way it undoes what it made.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from linklab.errors import EnvironmentProblem, LinklabError, UsageError
from linklab.link import cluster, made, userns
from linklab.link.cluster_plan import cluster_spec
from linklab.link.journal import (
    Journal,
    StateFileError,
    _unblock_signals,
    process_start_time,
    signals_held,
    state_dir,
)
from linklab.link.netops import NetOps, Snapshot, ifb_unavailable
from linklab.link.presets import check_not_shipped, get_preset
from linklab.link.runs import (
    check_privileges,
    clean,
    journal_down,
    list_runs,
    open_store,
    remove_state,
    residue,
)
from linklab.link.spec import DIRECTIONS, LinkSpec
from linklab.link.spec_checks import check_spec, check_traces
from linklab.link.stages import (
    OutageStage,
    SocketBufferStage,
    Stage,
    direction_stages,
)
from linklab.link.system import Shell, list_netns, require_tools
from linklab.link.topology import (
    LinkPlan,
    PathView,
    TopologyPlan,
    check_name,
    plan_topology,
)
from linklab.link.wires import Wire, choose_wire

DEFAULT_NAME = "default"


@dataclass(frozen=True)
class Host:
    """A host of the testbed: its namespace, main address and interface."""

    name: str
    netns: str
    address: str | None
    interface: str | None
    addresses: tuple[tuple[str, str], ...] = ()


@dataclass
class Design:
    """Everything ``up`` will build, decided before anything is touched."""

    name: str
    plan: TopologyPlan
    spec: LinkSpec
    stages: dict[str, dict[str, list[Stage]]]           # link -> direction -> stages
    wires: dict[str, type[Wire]]                        # link -> wire class
    inputs: dict[str, Any] = field(default_factory=dict)


def design(preset: str | None = None, *, preset_fields: Mapping[str, Any] | None = None,
           topology: str = "pair", hosts: int = 1, name: str = DEFAULT_NAME,
           wire: str | None = None, **overrides: Any) -> Design:
    """Validate a request and decide the topology, stages and wires (pure, no changes).

    ``preset_fields``: a preset's fields (``presets.resolve_preset``, e.g. from a user's
    file; ``preset`` is then only its name). Recorded in ``inputs`` with the rest, so
    any process reopens the run without that file."""
    check_name(name)
    if preset_fields is None and preset:
        preset_fields = get_preset(preset)
    fields = dict(preset_fields) if preset_fields is not None else None
    # a cluster's own fields (overlay, encryption, datapath, nodes, pods): cluster_plan.py
    options, link_fields, spec = cluster_spec(topology, preset, fields, overrides)
    check_spec(spec, link_fields)
    plan = plan_topology(topology, name, hosts, cluster=options, mtu=spec.mtu)
    stages: dict[str, dict[str, list[Stage]]] = {}
    if spec.radio is not None:  # a distance-based Wi-Fi medium (paper 002)
        from linklab.link.radio_plan import radio_design
        plan, stages = radio_design(plan, spec)
    wires: dict[str, type[Wire]] = {}
    for link in plan.links:
        if spec.radio is None:
            stages[link.name] = {d: direction_stages(spec.direction(d), link.carries)
                                 for d in DIRECTIONS}
        needed = {s.kind for d in DIRECTIONS for s in stages[link.name][d]
                  if s.runs_in == "relay"}
        wires[link.name] = choose_wire(needed, wire)
    inputs = {"preset": preset, "preset_fields": fields, "topology": topology,
              "hosts": hosts, "wire": wire,
              "overrides": {k: v for k, v in overrides.items() if v is not None}}
    return Design(name, plan, spec, stages, wires, inputs)


# --- the testbed object --------------------------------------------------------------

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
        return self.shell.exec_argv(self.plan.host(host).netns, [str(a) for a in argv])

    def popen(self, host: str, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Start ``argv`` inside ``host``. The process is recorded in the run's journal
        (pid and start time): ``down`` and ``clean`` end it if it still runs, also after
        this process was killed."""
        full = self.argv(host, argv)
        with signals_held():
            # (the child must not inherit the signals held back here: SIGINT/SIGTERM
            # would stay blocked in it, and a probe could not be stopped gracefully)
            kwargs.setdefault("preexec_fn", _unblock_signals)
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
            "outage": {**(state.get("outage") or {}), "events": self.outage_events()}
            if state.get("outage") else None,
            "counters": self.counters(),
        }

    # -- teardown --

    def down(self) -> list[str]:
        """Undo everything this run made (newest first); idempotent."""
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


# --- up ----------------------------------------------------------------------------------

def up(preset: str | None = None, *, preset_fields: Mapping[str, Any] | None = None,
       topology: str = "pair", hosts: int = 1, name: str = DEFAULT_NAME,
       wire: str | None = None, owner: bool = False, arm_outage: bool = True,
       **overrides: Any) -> Testbed:
    """Build a testbed and return it (it stays up until ``down``; see ``testbed()``).

    ``owner=True`` records this process as the owner: ``clean`` leaves the run alone
    while this process lives. Overrides: loss, rate, outage, mtu (and the relay fields
    delay, jitter, burst_loss, trace), as strings with units or per-direction mappings.
    ``preset_fields``: a preset from a user's file (see ``design``).
    """
    plan_design = design(preset, preset_fields=preset_fields, topology=topology,
                         hosts=hosts, name=name, wire=wire, **overrides)
    check_not_shipped(preset, preset_fields)
    check_traces(plan_design.spec)
    check_privileges()
    require_tools()
    cluster.check_ready(plan_design.plan.cluster, userns.is_root())
    if not userns.is_root():
        # The holder gets the preset's fields, not its file (which it may not read).
        kwargs = {"preset": preset, "preset_fields": plan_design.inputs["preset_fields"],
                  "topology": topology, "hosts": hosts, "name": name,
                  "wire": wire, "arm_outage": arm_outage,
                  **{k: v for k, v in overrides.items() if v is not None}}
        userns.start_holder(kwargs, owner_pid=os.getpid() if owner else None)
        return open_run(name)
    shell = Shell()
    present = set(list_netns(shell))
    clash = [h.netns for h in plan_design.plan.hosts if h.netns in present]
    if clash:
        raise UsageError(f"namespace(s) {', '.join(clash)} already exist; a run named "
                         f"{name!r} is up or was left behind: linklab link down --name {name} "
                         f"(or linklab link clean --name {name})", argument="--name")
    journal = Journal.claim(
        name, shell, inputs=plan_design.inputs,
        owner={"pid": os.getpid(), "start": process_start_time(os.getpid())} if owner else None,
        wires={k: w.name for k, w in plan_design.wires.items()})
    bed = Testbed(journal, plan_design)
    try:
        _build(bed, arm_outage=arm_outage)
    except BaseException:
        bed.down()
        raise
    return bed


def _build(bed: Testbed, *, arm_outage: bool) -> None:
    plan, journal = bed.plan, bed.journal
    _check_ifb(bed)
    net = NetOps(journal, plan.tag)
    buffers: dict[str, Any] = {}
    for host in plan.hosts:
        net.add_netns(host.netns)
        buffers[host.name] = SocketBufferStage().install(net, host.netns)
        # No IPv6: keeps router solicitations and MLD reports off the measured wire.
        net.sysctl(host.netns, "net.ipv6.conf.all.disable_ipv6", "1")
        net.sysctl(host.netns, "net.ipv6.conf.default.disable_ipv6", "1")
        if host.forwarding:
            net.sysctl(host.netns, "net.ipv4.ip_forward", "1")
        if host.bridge:
            net.ip(host.netns, ["link", "add", host.bridge, "type", "bridge", "stp_state", "0",
                                "forward_delay", "0", "mcast_snooping", "0"],
                   undo=made.link(host.netns, host.bridge))
    journal.update(socket_buffers=buffers)
    bridges = {h.name: h.bridge for h in plan.hosts if h.bridge}
    for wire_cls in dict.fromkeys(bed.design.wires.values()):
        wire_cls().build_medium(net, bed.design)   # a medium shared by links (ns3), if any
    for link in plan.links:
        relay = {d: [s for s in bed.design.stages[link.name][d] if s.runs_in == "relay"]
                 for d in DIRECTIONS}
        bed.design.wires[link.name]().build(net, link, relay)
        for port in (link.a, link.b):
            net.ip(port.netns, ["link", "set", port.ifname, "mtu", str(bed.spec.mtu)], undo=None)
            net.offloads_off(port.netns, port.ifname)
            if port.host in bridges:
                net.ip(port.netns, ["link", "set", port.ifname, "master", bridges[port.host]],
                       undo=made.master(port.netns, port.ifname))
    for host in plan.hosts:
        if host.bridge:
            net.ip(host.netns, ["link", "set", host.bridge, "mtu", str(bed.spec.mtu)], undo=None)
            net.offloads_off(host.netns, host.bridge)
            net.ip(host.netns, ["link", "set", host.bridge, "up"],
                   undo=made.link_up(host.netns, host.bridge))
        for ifname, cidr in host.addresses:
            net.ip(host.netns, ["addr", "add", cidr, "dev", ifname],
                   undo=made.address(host.netns, ifname, cidr))
    for link in plan.links:
        for port in (link.a, link.b):
            net.ip(port.netns, ["link", "set", port.ifname, "up"],
                   undo=made.link_up(port.netns, port.ifname))
    for host in plan.hosts:
        for destination, via, dev in host.routes:
            route = [destination] + (["via", via] if via else []) + ["dev", dev]
            net.ip(host.netns, ["route", "add", *route],
                   undo=made.route(host.netns, destination, via, dev))
    _static_neighbours(bed, net)
    cluster.build_cluster(bed, net)  # a cluster's pods, overlay, encryption, datapath
    switches = []
    for link in plan.links:
        for direction in DIRECTIONS:
            path = bed.path(link, direction)
            for stage in bed.design.stages[link.name][direction]:
                if stage.runs_in == "kernel":
                    stage.install(net, path)
                if isinstance(stage, OutageStage):
                    switches.append((stage, stage.switch(net.table, path)))
    if switches:
        outage = switches[0][0].outage
        journal.update(outage={"schedule": outage.text(), "start_s": outage.start_s,
                               "length_s": outage.length_s, "period_s": outage.period_s,
                               "t0_ns": None, "switches": [s for _, s in switches]})
        if arm_outage:
            bed.arm_outage()




def _check_ifb(bed: Testbed) -> None:
    """A rate shaped at a port's ingress needs ifb devices; refuse before building if the
    kernel cannot make them without loading a module (linklab loads none: netops.py)."""
    for link in bed.plan.links:
        for direction in DIRECTIONS:
            path = bed.path(link, direction)
            if path.sender != path.shaper and any(
                    s.kind == "rate" and s.runs_in == "kernel"
                    for s in bed.design.stages[link.name][direction]):
                reason = ifb_unavailable()
                if reason is not None:
                    raise EnvironmentProblem(reason)
                return


def _static_neighbours(bed: Testbed, net: NetOps) -> None:
    """Permanent ARP entries between hosts of one segment.

    Without them, an outage or a lossy link also eats ARP, and the first packets after
    an outage wait up to a second for neighbour resolution -- that would blur the
    outage's measured end. The entries live inside the run's namespaces.
    """
    macs: dict[tuple[str, str], str] = {}
    segments: dict[str, list[tuple[str, str, str]]] = {}
    for host in bed.plan.hosts:
        for ifname, cidr in host.addresses:
            out = bed.shell.run(["ip", "-n", host.netns, "-j", "link", "show", "dev", ifname])
            mac = json.loads(out.stdout)[0]["address"]
            macs[(host.netns, ifname)] = mac
            address = cidr.split("/")[0]
            segments.setdefault(address.rsplit(".", 1)[0], []).append(
                (host.netns, ifname, address))
    for members in segments.values():
        for netns, ifname, _ in members:
            lines = [f"neigh replace {addr} lladdr {macs[(other_ns, other_if)]} "
                     f"dev {ifname} nud permanent"
                     for other_ns, other_if, addr in members if other_ns != netns]
            if lines:
                net.journal.change(f"static neighbours {netns}/{ifname}",
                                   ["ip", "-n", netns, "-batch", "-"],
                                   made.neighbours(netns, ifname),
                                   input="\n".join(lines) + "\n")


# --- the context manager ------------------------------------------------------------------

@contextlib.contextmanager
def testbed(preset: str | None = None, *, preset_fields: Mapping[str, Any] | None = None,
            topology: str = "pair", hosts: int = 1, name: str | None = None,
            arm_outage: bool = True, **overrides: Any) -> Iterator[Testbed]:
    """Build a testbed for the duration of a ``with`` block (see the package docstring).

    Teardown happens on normal exit, on an exception, and on SIGINT/SIGTERM/SIGHUP of
    this process (turned into an exception while the block runs, when used from the
    main thread). If the process is killed with SIGKILL, ``linklab link clean`` removes
    what is left, because this process is recorded as the run's owner.
    """
    name = name or f"bed{os.getpid()}"
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        def _raise(signum: int, _frame: object) -> None:
            raise SystemExit(128 + signum)

        for sig in (signal.SIGTERM, signal.SIGHUP):
            previous[sig] = signal.signal(sig, _raise)
    try:
        bed = up(preset, preset_fields=preset_fields, topology=topology, hosts=hosts,
                 name=name, owner=True, arm_outage=arm_outage, **overrides)
        try:
            yield bed
        finally:
            problems = bed.down()
            if problems and sys.exc_info()[0] is None:
                raise LinklabError("teardown incomplete: " + "; ".join(problems))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# --- finding runs, down, clean --------------------------------------------------------------

def state_path(name: str) -> Path:
    return state_dir() / f"{name}.json"


def _load(name: str) -> Journal:
    check_name(name)
    store = open_store()
    try:
        if store is None:
            raise FileNotFoundError(name)
        return Journal.load(store, name)
    except FileNotFoundError:
        runs = ", ".join(list_runs()) or "none"
        raise UsageError(f"no link named {name!r} is up (runs: {runs})",
                         argument="--name") from None


def _testbed(journal: Journal) -> Testbed:
    holder = journal.state.get("holder")
    if holder and not userns.is_root():
        journal.shell = Shell(userns.holder_prefix(holder))
    inputs = journal.state.get("inputs")
    if not isinstance(inputs, dict):
        raise StateFileError(f"state file {journal.path} has no inputs")
    overrides = inputs.get("overrides", {})
    if not isinstance(overrides, dict):
        raise StateFileError(f"state file {journal.path}: overrides is not an object")
    preset_fields = inputs.get("preset_fields")
    if preset_fields is not None and not isinstance(preset_fields, dict):
        raise StateFileError(f"state file {journal.path}: preset_fields is not an object")
    try:
        # Runs recorded before preset_fields was recorded name a shipped preset only.
        plan_design = design(inputs.get("preset"), preset_fields=preset_fields,
                             topology=inputs.get("topology", "pair"),
                             hosts=inputs.get("hosts", 1), name=journal.name,
                             wire=inputs.get("wire"), **overrides)
    except (TypeError, ValueError, AttributeError, KeyError) as error:
        raise StateFileError(f"state file {journal.path}: its inputs do not describe a "
                             f"testbed ({type(error).__name__})") from None
    return Testbed(journal, plan_design)


def open_run(name: str) -> Testbed:
    """The testbed of a run that is up (from its state file, from any process)."""
    return _testbed(_load(name))


def down(name: str) -> list[str]:
    check_privileges()
    journal = _load(name)
    try:
        bed = _testbed(journal)
    except LinklabError:
        if journal.state.get("holder"):
            raise
        return journal_down(journal)  # inputs no longer valid (preset gone): the journal knows
    return bed.down()


def asdict_plan(plan: TopologyPlan) -> dict[str, Any]:
    return asdict(plan)


__all__ = ["Design", "Host", "LinkPlan", "Testbed", "clean", "design", "down", "open_run",
           "residue", "testbed", "up"]
