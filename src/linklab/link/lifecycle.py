"""Bringing a testbed up, looking at it, and taking it down (also from another process).

``up()`` validates everything first (preset, values, topology, which wire each link
needs) and touches nothing until all of it is valid; then it builds through the
journal, and if anything fails or is interrupted half-way it undoes what it made
(``interrupts.py``: SIGINT, SIGTERM and SIGHUP included). A run is recorded with its
owner process from the moment its state file exists; a detached run (``linklab link
up``) is marked ``detached`` only once it is fully up (journal.py, runs.kept_by).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from linklab.errors import EnvironmentProblem, LinklabError, UsageError
from linklab.held_signals import signals_held
from linklab.link import cluster, interrupts, made, userns
from linklab.link.blueprint import DEFAULT_NAME, design
from linklab.link.host_settings import SocketBufferStage, TcpCongestionStage
from linklab.link.impairments import OutageStage
from linklab.link.journal import (
    Journal,
    StateFileError,
    process_start_time,
    state_dir,
)
from linklab.link.namespace_bed import Testbed
from linklab.link.netops import NetOps, ifb_unavailable
from linklab.link.placement import allowed_cpus, plan_placement
from linklab.link.presets import check_not_shipped
from linklab.link.runs import (
    check_privileges,
    clean,
    journal_down,
    list_runs,
    open_store,
    residue,
)
from linklab.link.spec import DIRECTIONS
from linklab.link.spec_checks import check_tcp_congestion, check_traces
from linklab.link.system import Shell, list_netns, require_tools
from linklab.link.topology import (
    TopologyPlan,
    check_name,
)

# --- up ----------------------------------------------------------------------------------

def up(preset: str | None = None, *, preset_fields: Mapping[str, Any] | None = None,
       topology: str = "pair", hosts: int = 1, name: str = DEFAULT_NAME,
       wire: str | None = None, owner: bool = False, arm_outage: bool = True,
       finish_once_up: bool = False, relay_cpu: str | None = None,
       **overrides: Any) -> Testbed:
    """Build a testbed and return it (it stays up until ``down``; see ``testbed()``).

    ``owner=True`` records this process as the owner: ``clean`` leaves the run alone while
    this process lives and takes it down once it is gone. Otherwise the run is detached:
    this process is its owner only while building it (a build killed half-way is left
    behind, for ``clean``); once it is fully up its state says ``detached`` and names no
    owner, and it stays until ``down`` (``clean`` never takes it down).
    An interrupt while building (SIGINT; SIGTERM and SIGHUP raise SystemExit(128 + signal)
    unless the caller handles them) undoes everything made so far and is raised again.
    ``finish_once_up`` (a command that only reports the run once it is up: ``linklab link
    up``): this process ignores SIGINT, SIGTERM and SIGHUP for good from the moment the
    run is recorded as up, so an interrupt either undoes everything or changes nothing.
    Overrides: loss, rate, outage, mtu, tcp_congestion (and the relay fields delay,
    jitter, burst_loss, trace), as strings with units or per-direction mappings.
    ``preset_fields``: a preset from a user's file (see ``design``).
    ``relay_cpu``: where a relay runs and the endpoints do not (placement.py; None: no
    pinning).
    """
    placement = plan_placement(relay_cpu, allowed_cpus())
    plan_design = design(preset, preset_fields=preset_fields, topology=topology,
                         hosts=hosts, name=name, wire=wire, **overrides)
    if not any(w.name == "emu" for w in plan_design.wires.values()):
        placement = None   # no relay: nothing to keep the endpoints away from
    check_not_shipped(preset, preset_fields)
    check_traces(plan_design.spec)
    check_tcp_congestion(plan_design.spec, "--tcp-congestion"
                         if overrides.get("tcp_congestion") is not None or not preset
                         else f"preset {preset!r}: tcp_congestion")
    check_privileges()
    require_tools()
    cluster.check_ready(plan_design.plan.cluster, userns.is_root())
    if not userns.is_root():
        # The holder gets the preset's fields, not its file (which it may not read).
        kwargs = {"preset": preset, "preset_fields": plan_design.inputs["preset_fields"],
                  "topology": topology, "hosts": hosts, "name": name,
                  "wire": wire, "arm_outage": arm_outage, "relay_cpu": relay_cpu,
                  **{k: v for k, v in overrides.items() if v is not None}}
        with interrupts.stop_raises():
            userns.start_holder(kwargs, owner_pid=os.getpid() if owner else None,
                                on_ready=interrupts.ignore_from_now if finish_once_up
                                else None)
        return open_run(name)
    shell = Shell()
    present = set(list_netns(shell))
    clash = [h.netns for h in plan_design.plan.hosts if h.netns in present]
    if clash:
        raise UsageError(f"namespace(s) {', '.join(clash)} already exist; a run named "
                         f"{name!r} is up or was left behind: linklab link down --name {name} "
                         f"(or linklab link clean --name {name})", argument="--name")
    bed: Testbed | None = None
    with interrupts.stop_raises():
        try:
            with signals_held():   # the state file, and the object that undoes it
                journal = Journal.claim(
                    name, shell, inputs=plan_design.inputs, owner=this_process(),
                    wires={k: w.name for k, w in plan_design.wires.items()})
                bed = Testbed(journal, plan_design)
            if placement is not None:
                journal.update(placement=placement.describe())
            _build(bed, arm_outage=arm_outage)
            if not owner:
                if finish_once_up:
                    interrupts.ignore_from_now()
                journal.update(owner=None, detached=True)   # up: it lives until `down`
        except BaseException:
            if bed is not None:
                bed.down()
            raise
    assert bed is not None
    return bed


def this_process() -> dict[str, Any]:
    """This process as a run's owner: pid and kernel start time."""
    return {"pid": os.getpid(), "start": process_start_time(os.getpid())}


def _build(bed: Testbed, *, arm_outage: bool) -> None:
    plan, journal = bed.plan, bed.journal
    _check_ifb(bed)
    net = NetOps(journal, plan.tag)
    buffers: dict[str, Any] = {}
    congestion: dict[str, Any] = {}
    for host in plan.hosts:
        net.add_netns(host.netns)
        buffers[host.name] = SocketBufferStage().install(net, host.netns)
        congestion[host.name] = TcpCongestionStage(bed.spec.tcp_congestion).install(
            net, host.netns)
        # No IPv6: keeps router solicitations and MLD reports off the measured wire.
        net.sysctl(host.netns, "net.ipv6.conf.all.disable_ipv6", "1")
        net.sysctl(host.netns, "net.ipv6.conf.default.disable_ipv6", "1")
        if host.forwarding:
            net.sysctl(host.netns, "net.ipv4.ip_forward", "1")
        if host.bridge:
            net.ip(host.netns, ["link", "add", host.bridge, "type", "bridge", "stp_state", "0",
                                "forward_delay", "0", "mcast_snooping", "0"],
                   undo=made.link(host.netns, host.bridge))
    journal.update(socket_buffers=buffers, tcp_congestion=congestion)
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


__all__ = ["clean", "down", "list_runs", "open_run", "residue", "testbed", "up"]
