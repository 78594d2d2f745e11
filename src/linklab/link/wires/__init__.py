"""Wires: what connects the two ports of a link.

A wire makes the two interfaces of a link -- ``link.a.ifname`` inside namespace
``link.a.netns`` and ``link.b.ifname`` inside ``link.b.netns`` -- and may itself run
some stages in userspace. After the wire is built, linklab applies the kernel stages
(nft loss and outage, tbf rate, MTU, offloads off) to those two interfaces, and
addresses and routes, whatever the wire is.

Backends shipped: ``veth`` (a kernel veth pair; runs no stage itself), ``emu`` (the
userspace relay, tap_relay.py) and ``ns3`` (one ns-3 802.11a medium shared by every link of
a radio run, ns3.py: it builds in ``build_medium`` and reports ``faults``). To add one (the
emu TAP relay, for delay, jitter, burst loss and trace replay), drop a module into this
package -- e.g. ``linklab/link/wires/tap_relay.py`` -- that defines a subclass of
:class:`Wire`; it is found automatically, nothing else needs editing::

    class TapRelayWire(Wire):
        name = "tap-relay"
        executes = frozenset({"delay", "jitter", "burst_loss", "trace", "loss"})
        priority = 10   # among wires that can run the stages, the highest wins

        @classmethod
        def unavailable(cls) -> str | None:
            exe = repo_root() / "build/emu/release/linklab-emu"
            return None if exe.exists() else f"{exe} is not built: run scripts/setup.sh"

        def build(self, net, link, relay_stages):
            # start the relay inside a host namespace (never the root one), with the
            # stages of each direction, e.g. from stage.kind and stage.params():
            pid = net.journal.spawn(f"relay {link.name}",
                                    [exe, "--a", f"{link.a.netns}:{link.a.ifname}", ...],
                                    netns=link.a.netns, log=...)
            # wait until link.a.ifname / link.b.ifname exist in their namespaces;
            # anything made by hand must be recorded as data (linklab.link.made), e.g.
            # net.journal.record(what, made.files([...])): the undo is derived from it

        def counters(self, shell):
            # {(link.name, "up"|"down", stage.kind): {"passed_packets": .., ...}}
            return {}

Rules for a wire: create nothing in the root namespace; record every change in the
journal (``net.ip``, ``net.tc``, ``net.journal.change``/``record``/``spawn``) so
``down`` and ``clean`` undo it, also after the run's process was killed; leave the two
interfaces down or up (linklab sets them up after addressing).
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from linklab.errors import EnvironmentProblem
from linklab.link.impairments import Impairment
from linklab.link.netops import NetOps
from linklab.link.system import Shell
from linklab.link.topology import LinkPlan

TUN_DEVICE = "/dev/net/tun"


def binary_problem(find_binary: Callable[[], object]) -> str | None:
    """Why a wire's binary cannot be found (one line, with the fix), or None."""
    try:
        find_binary()
    except EnvironmentProblem as error:
        return str(error)
    return None


def tun_usable() -> bool:
    """Whether this user can open TAP devices (/dev/net/tun readable and writable)."""
    return os.access(TUN_DEVICE, os.R_OK | os.W_OK)


def repo_root() -> Path:
    """The checkout linklab runs from (where ``build/`` is)."""
    return Path(__file__).resolve().parents[4]


class Wire:
    """Base class of link backends. See the package docstring."""

    name: ClassVar[str] = ""
    executes: ClassVar[frozenset[str]] = frozenset()   # stage kinds the wire runs itself
    priority: ClassVar[int] = 0     # higher wins when several can run the stages
    journal: Any = None   # the run's Journal, set by Testbed before counters()/health()

    @classmethod
    def unavailable(cls) -> str | None:
        """None if this wire can be used here, else why not (one line, with the fix)."""
        return None

    def build_medium(self, net: NetOps, design: Any) -> None:
        """Called once per run, before ``build`` of any link, for a wire whose links share
        one medium (the ns-3 wire: one simulation for every station). Default: nothing."""

    def build(self, net: NetOps, link: LinkPlan, relay_stages: dict[str, list[Impairment]]) -> None:
        """Make ``link.a.ifname`` in ``link.a.netns`` and ``link.b.ifname`` in
        ``link.b.netns``; run ``relay_stages`` ({"up": [...], "down": [...]})."""
        raise NotImplementedError

    def counters(self, shell: Shell) -> dict[tuple[str, str, str], dict[str, Any]]:
        """Counters of the stages this wire runs: {(link, direction, kind): {...}}."""
        return {}

    def health(self, shell: Shell) -> dict[str, str]:
        """{link: "up" | "down: why"} for links whose wire can fail (a relay process)."""
        return {}

    def faults(self, shell: Shell) -> dict[str, str]:
        """{link: why} when the wire no longer carries the link that was asked for, so a
        measurement across it is void (Testbed.faults; the bench makes such a cell an
        error). Default: none."""
        return {}


def wire_classes() -> dict[str, type[Wire]]:
    """Every wire backend in this package, by name."""
    found: dict[str, type[Wire]] = {}
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")

    def walk(cls: type[Wire]) -> None:
        for sub in cls.__subclasses__():
            if sub.name:
                found[sub.name] = sub
            walk(sub)

    walk(Wire)
    return found


def choose_wire(needed: set[str], requested: str | None = None) -> type[Wire]:
    """The wire for a link whose relay stages are ``needed`` (kinds).

    Raises EnvironmentProblem naming the stages and what is missing, never drops a stage.
    """
    wires = wire_classes()
    if requested is not None:
        if requested not in wires:
            from linklab.errors import UsageError

            raise UsageError(f"unknown wire {requested!r}; known: {', '.join(sorted(wires))}",
                             argument="--wire")
        candidates = [wires[requested]]
    elif not needed:
        candidates = [wires["veth"]]  # the kernel wire whenever no stage needs userspace
    else:
        candidates = sorted(wires.values(), key=lambda w: -w.priority)
    able = [w for w in candidates if needed <= w.executes]
    if not able:
        kinds = ", ".join(sorted(needed))
        raise EnvironmentProblem(
            f"stage(s) {kinds} need the userspace link emulator (emu/, "
            f"build/emu/release/linklab-emu), which this linklab does not have; "
            f"build it with scripts/setup.sh, or drop those fields")
    reasons = []
    for wire in able:
        reason = wire.unavailable()
        if reason is None:
            return wire
        reasons.append(f"{wire.name}: {reason}")
    kinds = ", ".join(sorted(needed)) or "no userspace stage"
    raise EnvironmentProblem(f"stage(s) {kinds} need a wire that is not usable here: "
                             + "; ".join(reasons))
