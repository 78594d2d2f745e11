"""The bench on real machines: bench.runner's Environment for a scenario with ``hosts:``.

``linklab bench`` takes this environment when the scenario names real hosts (its
top-level ``hosts:``; bench/host_address.py): the runner, the metrics and the run directory are the
bench's own, only where things run changes (host_bed.py):

- before any cell, every host is reached (OpenSSH for ``ssh://``, shell.py), the agent
  copied and started there, the probes checked or copied (probes_remote.py), and the
  preflight (preflight.py) and time-sync state (sync.py) collected for ``notes()``;
- each cell's endpoints run on the hosts its topics name (robot, edge, ...), remote ones
  through a local relay (relay.py) the runner reaps and stops as it would a local probe;
- before and after each cell the clock offsets are measured (clock.py) and the records,
  brought back from the hosts, are put on one clock (records.py, host_bed.py).

What cannot be applied to a real path is refused before anything runs: link fields
(rate, loss, outage, ...) or link axes, middlewares whose endpoints need this machine
(MQTT and Zenoh brokers, the Python Zenoh probe, DDS-Security keystores), hosts no cell
uses. ``link:`` may name a preset -- the measured one (``linklab link measure --out``):
it is not applied, it says what the path is, for the model and the tuned profile
(``optimized``: tuned for its rate, loss and MTU).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from functools import cache
from typing import Any

from linklab.bench.host_address import HostSpec, parse_hosts
from linklab.bench.links import LinkChoice
from linklab.bench.matrix import Cell
from linklab.bench.namespace_environment import LinklabEnvironment
from linklab.bench.profiles import Profiles
from linklab.errors import UsageError
from linklab.field import preflight, probes_remote, sync
from linklab.field.hosts import HostSet
from linklab.middleware import MIDDLEWARES, family_of

FIELD_MIDDLEWARES = tuple(name for name, m in MIDDLEWARES.items()  # plain DDS: native probes
                          if m.probe.dds and not m.secured and not m.bridged)
TUNED = ("optimized", "optimized-paced")


@cache
def tuned_for_path(rate_hz: float, payload_bytes: int, link_bits: float, per: float,
                   mtu: int):
    from linklab.tune import TuningInput, tune

    return tune(TuningInput(rate_hz=rate_hz, payload_bytes=payload_bytes,
                            link_bits_per_s=link_bits, per=per, mtu=mtu))


def path_inputs(spec: Any) -> tuple[float, float, int]:
    """The tuner's link inputs from a (measured) preset's spec: T_OS->Link = the robot ->
    edge rate (1 Gbit/s if none), PER = its mean loss (a Gilbert fit's p/(p+r) included),
    and the MTU."""
    up = spec.up
    loss = up.loss
    if up.burst_loss is not None:
        burst = up.burst_loss
        bad = burst.p / (burst.p + burst.r) if burst.p + burst.r else 0.0
        loss = 1 - (1 - loss) * (1 - (bad * burst.loss_bad + (1 - bad) * burst.loss_good))
    return float(up.rate_bps or 1e9), float(loss), int(spec.mtu)


class FieldProfiles(Profiles):
    """As the bench's, but tuned for the measured path: its burst loss and MTU too."""

    def tuned_for(self, cell: Cell):
        choice = cell.link_choice or LinkChoice(cell.link)
        return tuned_for_path(cell.rate_hz, cell.payload_bytes,
                              *path_inputs(self.links.spec(choice)))


class FieldEnvironment(LinklabEnvironment):
    """Cells on the hosts of ``hosts:`` (see the module docstring)."""

    def __init__(self, scenario: Any):
        super().__init__(scenario.presets)
        self.profiles = FieldProfiles(self.links)
        self.specs: dict[str, HostSpec] = parse_hosts(scenario.hosts)
        self.hosts: HostSet | None = None
        self.probes: dict[tuple[str, str], dict[str, Any]] = {}
        self.findings: list[preflight.Finding] = []
        self.sync: dict[str, list[str]] = {}
        self.reference = ""
        self.copied_profiles: dict[tuple[str, str], str] = {}  # (host, digest) -> its path

    # --- before anything runs --------------------------------------------------------

    def refuse(self, cells: list[Cell]) -> None:
        """Everything a real path cannot take, as one-line errors (no connection yet)."""
        used: set[str] = set()
        for cell in cells:
            choice = cell.link_choice or LinkChoice(cell.link)
            if choice.overrides:
                raise UsageError(f"cell {cell.cell_id}: link {cell.link}: a real path cannot "
                                 "be given link fields (rate, loss, ...); link: names the "
                                 "measured preset of the path, or is left out",
                                 argument="link")
            if choice.preset is not None and self.links.outage(choice) is not None:
                raise UsageError(f"link {choice.preset}: an outage cannot be applied to a "
                                 "real path", argument="link")
            hosts = {t.publisher for t in cell.topics} | {h for t in cell.topics
                                                         for h in t.subscribers}
            unknown = sorted(hosts - set(self.specs))
            if unknown:
                raise UsageError(f"cell {cell.cell_id} runs endpoints on {', '.join(unknown)}, "
                                 f"which hosts: does not name (it names "
                                 f"{', '.join(self.specs)})", argument="hosts")
            used |= hosts
            remote = any(self.specs[h].remote for h in hosts)
            if remote and cell.middleware not in FIELD_MIDDLEWARES:
                raise UsageError(f"{cell.middleware} on a remote host: field runs take "
                                 f"{' and '.join(FIELD_MIDDLEWARES)} (native probes); brokers, "
                                 "the Python Zenoh probe and DDS-Security keystores stay on "
                                 "this machine", argument="middleware")
            if cell.profile in TUNED and choice.preset is None:
                raise UsageError(f"profile {cell.profile} is tuned for the path's rate, loss "
                                 "and MTU: measure it (linklab link measure robot edge --out "
                                 "path.yaml) and name it: presets: path.yaml, link: <its name>",
                                 argument="profile")
        unused = sorted(set(self.specs) - used)
        if unused:
            raise UsageError(f"no cell runs an endpoint on {', '.join(unused)}; remove it from "
                             "hosts: (linklab connects only to hosts it uses)",
                             argument=f"hosts.{unused[0]}")

    def checked_history(self, cell: Cell, topic: Any) -> str:
        """A topic's own history, but for a tuned or profile history in a rate search's
        cell (no rate yet to size it by): keep_last:1."""
        return self.history_for(cell, topic) \
            if topic.history not in ("tuned", "profile") or cell.rate_hz else "keep_last:1"

    def check_ready(self, cells: list[Cell], *, connect: bool = True) -> None:
        """Refuse what cannot run, then (``connect``) connect, place probes, and run the
        preflight. Without ``connect`` (``linklab bench --dry-run``) nothing reaches the
        hosts: the refusals, the profiles and QoS, and the probes built here."""
        from linklab.bench.probe_driver import probe_binary

        self.refuse(cells)
        for cell in cells:
            self.check_settings(cell)
        for middleware in sorted({c.middleware for c in cells}):
            probe_binary(middleware)
        if not connect:
            return
        specs = dict(self.specs)
        local = [n for n, s in specs.items() if s.kind == "local"]
        if not local:  # the runner's clock is this machine's: an agent here anchors it
            specs["_here"] = HostSpec("_here", "local", text="local")
        self.reference = local[0] if local else "_here"
        self.hosts = HostSet(specs)
        self.hosts.open()
        for cell in cells:
            binary = probe_binary(cell.middleware)
            for topic in cell.topics:
                for name in {topic.publisher, *topic.subscribers}:
                    key = (name, cell.middleware)
                    if key not in self.probes:
                        self.probes[key] = probes_remote.install(self.hosts[name].host, binary)
        self.findings = preflight.check(self.hosts, [self._need(c) for c in cells])
        for name in self.specs:
            self.sync[name] = sync.state(self.hosts[name].host)

    def _need(self, cell: Cell) -> preflight.Need:
        profile = self.profiles.resolve(cell)
        buffers, max_message = preflight.profile_numbers(profile.xml, cell.middleware)
        choice = cell.link_choice or LinkChoice(cell.link)
        loss = mtu = None
        if choice.preset is not None:
            _rate, loss, mtu = path_inputs(self.links.spec(choice))
        hosts = tuple({t.publisher for t in cell.topics} | {h for t in cell.topics
                                                           for h in t.subscribers})
        return preflight.Need(hosts, cell.profile, buffers, max_message, cell.rate_hz or 1.0,
                              cell.payload_bytes or 1, loss, mtu)

    def notes(self) -> list[str]:
        """What the CLI prints before the run: hosts, probes, preflight, time sync."""
        lines = []
        assert self.hosts is not None
        for name, spec in self.specs.items():
            item = self.hosts[name]
            hello = item.agent.hello
            lines.append(f"host {name}: {spec.text}, {hello.get('hostname')} "
                         f"({hello.get('machine')}, Linux {hello.get('kernel')}), address "
                         f"{item.address} on {item.route.get('device')} (MTU "
                         f"{item.route.get('mtu')})")
            for (host, middleware), probe in sorted(self.probes.items()):
                if host == name:
                    lines.append(f"  probe {middleware}: {probe['how']}")
            for state in self.sync.get(name, []):
                lines.append(f"  time: {state}")
        lines += [f.line() for f in self.findings]
        return lines

    def description(self) -> dict[str, Any]:
        """What run.json records for the real path (under links, by the cell's label)."""
        hosts = {}
        for name, spec in self.specs.items():
            item = self.hosts[name] if self.hosts else None
            hosts[name] = {**spec.to_dict(), "address": item.address if item else None,
                           "interface": item.route.get("device") if item else None,
                           "interface_mtu": item.route.get("mtu") if item else None,
                           "hostname": item.agent.hello.get("hostname") if item else None,
                           "kernel": item.agent.hello.get("kernel") if item else None,
                           "time_sync": self.sync.get(name, []),
                           "probes": {mw: p for (h, mw), p in self.probes.items() if h == name}}
        return {"field": True, "hosts": hosts, "clock_reference": self.reference,
                "preflight": [f.to_dict() for f in self.findings]}

    # --- per cell --------------------------------------------------------------------

    @contextlib.contextmanager
    def link(self, cell: Cell, run_tag: str) -> Iterator[Any]:
        from linklab.field.host_bed import FieldBed

        if self.hosts is None:
            raise UsageError("the field environment is not connected (check_ready first)")
        bed = FieldBed(self, cell)
        try:
            bed.begin()
            yield bed
        finally:
            bed.end()

    def outage_s(self, cell: Cell) -> float:
        return 0.0

    def link_rate_bits(self, cell: Cell) -> float | None:
        choice = cell.link_choice or LinkChoice(cell.link)
        if choice.preset is None:
            return None
        return super().link_rate_bits(cell)

    def model_amplification(self, cell: Cell) -> float:
        choice = cell.link_choice or LinkChoice(cell.link)
        if choice.preset is None or family_of(cell.middleware).name != "fastdds":
            return math.nan   # the model needs the path's rate and loss (a measured preset)
        return super().model_amplification(cell)

    def close(self) -> None:
        if self.hosts is not None:
            self.hosts.close()
            self.hosts = None

