"""The real side effects of a bench run: linklab.link testbeds, profiles, the model.

- links: ``linklab.link.testbed(preset=..., topology=..., hosts=...)`` with the cell's link
  fields written over the preset; every endpoint runs on the host its topic names; wire
  bytes are the interface byte counters of the publishers' hosts (both directions:
  data, retransmissions, heartbeats, acks).
- profiles: bench.profiles (what each ``profile:`` means per middleware);
- model: the seed-000 model's R_DDS / R_pub for the cell (NaN where it does not apply:
  not Fast DDS over UDP).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator
from typing import Any

from linklab.bench.discovery_gate import LOCAL
from linklab.bench.links import LinkChoice
from linklab.bench.matrix import Cell
from linklab.bench.profiles import Profiles
from linklab.bench.protocols import ResolvedProfile
from linklab.errors import UsageError
from linklab.middleware import family_of, middleware
from linklab.model.overhead import WirePath

# --- links ----------------------------------------------------------------------------

class Links:
    """The presets a run may use (shipped + the scenario's own) and each link's spec."""

    def __init__(self, user_presets: dict[str, dict[str, Any]] | None = None):
        self.user = dict(user_presets or {})

    def fields(self, preset: str | None) -> dict[str, Any] | None:
        if preset is None:
            return None
        if preset in self.user:
            return self.user[preset]
        from linklab.link.presets import get_preset

        return get_preset(preset)

    def spec(self, choice: LinkChoice, topology: str | None = None):
        """The link's LinkSpec, as the testbed builds it (a cluster's underlay runs at
        1 Gbit/s when nothing sets a rate; its own fields are not link stages)."""
        return self.cluster(choice, topology)[1]

    def cluster(self, choice: LinkChoice, topology: str | None = None):
        """(cluster options or None off a cluster, the link's LinkSpec)."""
        from linklab.bench.links import cluster_fields
        from linklab.link.blueprint import cluster_spec

        if cluster_fields(choice):
            topology = "cluster"
        options, _, spec = cluster_spec(topology or "pair", choice.preset,
                                        self.fields(choice.preset), choice.overrides_dict())
        return options, spec

    def outage(self, choice: LinkChoice):
        return self.spec(choice).up.outage

    def outage_s(self, choice: LinkChoice) -> float:
        outage = self.outage(choice)
        return 0.0 if outage is None else float(outage.length_s)

    def rate_bits(self, choice: LinkChoice) -> float:
        """T_OS->Link for the model and the tuner: the link's robot -> edge rate; on the
        802.11 medium its PHY rate (the most its airtime allows); 1 Gbit/s unlimited."""
        spec = self.spec(choice)
        if spec.up.rate_bps:
            return float(spec.up.rate_bps)
        return float(spec.medium.phy_rate_bps) if spec.medium is not None else 1e9

    def loss(self, choice: LinkChoice) -> float:
        return float(self.spec(choice).up.loss)

    def delay_s(self, choice: LinkChoice) -> float:
        """The link's one-way delay robot -> edge (0 without the emulator's delay)."""
        return float(self.spec(choice).up.delay_s or 0.0)

    def mtu(self, choice: LinkChoice) -> int:
        return int(self.spec(choice).mtu)


# --- the model ------------------------------------------------------------------------

def model_amplification(cell: Cell, links: Links, profiles: Profiles) -> float:
    """Interface bytes per published payload byte, as linklab.model.wire_traffic predicts them
    (first copies, repairs of lost fragments, fragments sent again while queued,
    heartbeats and acknowledgements, headers; linklab.tune.wirecheck), times k for k
    unicast subscribers (each sample goes out once per subscriber, seed 002 Fig. 15);
    infinity where the model says the cell cannot complete (``model_verdict``).

    NaN, by rule, where the model does not apply: middlewares other than Fast DDS and
    Cyclone DDS, profiles other than default and optimized (TCP's large_data, files of
    one's own), several topics in one cell, a rate not known. Any other failure is a bug.
    """
    return model_verdict(cell, links, profiles)[0]


def model_verdict(cell: Cell, links: Links, profiles: Profiles) -> tuple[float, str | None]:
    """(``model_amplification``, None), or (infinity, "cannot complete: ...") when the
    wire the model predicts is more than the link carries: no steady state, the figure
    is no result (linklab.model.completion, C1 from seed 000 Eq. 2)."""
    from linklab.tune.wirecheck import MIDDLEWARES, PROFILES, LinkInfo, verdict_for

    base = family_of(cell.middleware).name
    if base not in MIDDLEWARES or cell.middleware != base or cell.profile not in PROFILES \
            or len(cell.topics) > 1 or not cell.rate_hz:
        return math.nan, None
    choice = cell.link_choice or LinkChoice(cell.link)
    link = LinkInfo(links.rate_bits(choice), links.loss(choice), links.mtu(choice))
    value, note = verdict_for(base, cell.profile, cell.payload_bytes, cell.rate_hz, link,
                              len(cell.topics[0].subscribers), cell.topics[0].type)
    return float(value), note


# --- the environment ------------------------------------------------------------------

class LinkBed:
    """Adapts a linklab.link Testbed to what the runner needs (bench.protocols.Bed): endpoints run
    on the testbed's hosts by name."""

    gate_files = LOCAL  # probes run on this machine (bench.discovery_gate)
    shares_local_clock = True
    applies_cpu = True  # cpu_load competitors and cpu_quota groups (bench/cpu.py)
    runs_cells_whole = False

    def row_fields(self) -> dict[str, Any]:
        return {}

    def __init__(self, bed: Any, label: str, outage_s: float,
                 quotas: dict[str, Any] | None = None):
        self.bed = bed
        self.label = label
        self.outage_s = outage_s
        self.armed_t0_ns: int | None = None
        self.quotas = quotas or {}  # host -> its cpu_quota cgroup (bench.cpu.quota_groups)

    def spawn(self, host: str, argv: list[str], stdout: Any, stderr: Any):
        return self.bed.popen(host, argv, stdout=stdout, stderr=stderr,
                              cgroup=self.quotas.get(host))

    def address(self, host: str) -> str | None:
        return self.bed.hosts[host].address

    def host(self, name: str) -> Any:
        """The testbed Host (netns, address) (brokers need the edge's)."""
        return self.bed.hosts[name]

    def interface(self, host: str) -> str | None:
        return None

    def snapshot(self, hosts: tuple[str, ...] = ()) -> dict[str, Any]:
        """Link counters (stages, interfaces) and the hosts' UDP counters, right now."""
        faults = self.bed.faults()
        if faults:  # e.g. an ns-3 medium that fell behind real time: void, not a slow link
            from linklab.errors import LinklabError

            by_reason: dict[str, list[str]] = {}
            for link, why in sorted(faults.items()):
                by_reason.setdefault(why, []).append(link)
            raise LinklabError("; ".join(f"link {', '.join(links)}: {why}"
                                         for why, links in by_reason.items()))
        data: dict[str, Any] = {"link": self.bed.counters(), "udp": {}}
        for host in hosts:
            snmp = self.bed.run(host, ["cat", "/proc/net/snmp"]).stdout
            data["udp"][host] = parse_udp_counters(snmp)
        return data

    def start_traffic(self, first_sample_in_s: float) -> None:
        """Arm the outage clock at the expected first measured sample; the real start of
        the outage relative to that sample is recorded afterwards (outage_on_ns)."""
        if self.outage_s > 0 and self.armed_t0_ns is None:
            self.armed_t0_ns = self.bed.arm_outage(
                time.monotonic_ns() + int(first_sample_in_s * 1e9))

    def outage_on_ns(self) -> int | None:
        """When the outage really began (CLOCK_MONOTONIC ns), from the scheduler's log."""
        for event in self.bed.outage_events():
            if event.get("edge") == "on":
                return int(event.get("after_ns") or event.get("planned_ns"))
        return None

    def dark_windows_ns(self) -> list[tuple[int, int | None]]:
        """The declared outages so far, (on, off or None), from the scheduler's log."""
        windows: list[tuple[int, int | None]] = []
        for event in self.bed.outage_events():
            at = event.get("after_ns") or event.get("planned_ns")
            if at is None:
                continue
            if event.get("edge") == "on":
                windows.append((int(at), None))
            elif event.get("edge") == "off" and windows and windows[-1][1] is None:
                windows[-1] = (windows[-1][0], int(at))
        return windows

    def stages(self) -> dict[str, Any]:
        status = self.bed.status()
        return {"preset": self.label, "spec": status.get("spec"),
                "topology": status.get("topology"),
                "hosts": status.get("hosts"), "links": status.get("links"),
                "socket_buffers": status.get("socket_buffers"),
                "tcp_congestion": status.get("tcp_congestion"),
                "cluster": status.get("cluster"),   # overlay, encryption, datapath, MTUs
                "outage": {k: v for k, v in (status.get("outage") or {}).items()
                           if k in ("start_s", "length_s", "period_s")} or None}


def parse_udp_counters(snmp: str) -> dict[str, int]:
    """The ``Udp:`` lines of /proc/net/snmp as a dict (InErrors, RcvbufErrors, ...)."""
    rows = [line.split()[1:] for line in snmp.splitlines() if line.startswith("Udp:")]
    if len(rows) < 2:
        return {}
    return {k: int(v) for k, v in zip(rows[0], rows[1], strict=False) if v.lstrip("-").isdigit()}


class LinklabEnvironment:
    """Links from linklab.link, profiles from linklab.profiles / linklab.tune."""

    def __init__(self, user_presets: dict[str, dict[str, Any]] | None = None):
        self.links = Links(user_presets)
        self.profiles = Profiles(self.links)

    def link_key(self, cell: Cell) -> str:
        choice = cell.link_choice or LinkChoice(cell.link)
        return f"{choice.key()}|{cell.topology}|{cell.hosts}"

    @contextlib.contextmanager
    def link(self, cell: Cell, run_tag: str) -> Iterator[LinkBed]:
        from linklab.link import testbed

        choice = cell.link_choice or LinkChoice(cell.link)
        overrides: dict[str, Any] = dict(choice.overrides_dict())
        outage = self.links.outage(choice)
        length = 0.0
        if outage is not None:
            # the cell decides when the outage starts (after its publisher starts) and,
            # with outage_length, how long it lasts
            length = float(cell.outage_length_s or outage.length_s)
            overrides["outage"] = f"{cell.outage_start_s:g}s+{length:g}s"
        kwargs: dict[str, Any] = {}
        if choice.preset in self.links.user:
            kwargs["preset_fields"] = self.links.user[choice.preset]
        with testbed(preset=choice.preset, topology=cell.topology, hosts=cell.hosts or 1,
                     name=run_tag, arm_outage=False, **kwargs, **overrides) as bed:
            from linklab.bench.cpu import quota_groups

            yield LinkBed(bed, cell.link, length, quota_groups(bed, cell))

    def outage_s(self, cell: Cell) -> float:
        return self.links.outage_s(cell.link_choice or LinkChoice(cell.link))

    def profile(self, cell: Cell) -> ResolvedProfile:
        return self.profiles.resolve(cell)

    def history_for(self, cell: Cell, topic: Any) -> str:
        return self.profiles.history_for(cell, topic)

    def checked_history(self, cell: Cell, topic: Any) -> str:
        """The history check_settings gives a topic's QoS: its own, or keep_last:1 in a
        rate search's cell (no rate yet to size it by)."""
        return self.history_for(cell, topic) if cell.rate_hz else "keep_last:1"

    def check_settings(self, cell: Cell) -> None:
        """The cell's profile and each topic's QoS, as its middleware can take them; a
        refusal is tagged with the cell and topic (bench.checks.about)."""
        from linklab.bench.checks import about
        from linklab.bench.endpoints import qos_args

        with about(cell):
            self.profiles.check(cell)
        for topic in cell.topics:
            with about(cell, topic):
                qos_args(cell.middleware, topic, self.checked_history(cell, topic))

    def model_amplification(self, cell: Cell) -> float:
        return model_amplification(cell, self.links, self.profiles)

    def model_verdict(self, cell: Cell) -> tuple[float, str | None]:
        """The row's ``model_amplification`` and ``model_amplification_note``: the figure,
        or NaN and why the cell cannot complete (linklab.rundir). Asks
        ``model_amplification`` first, so an environment that says the model does not
        apply (linklab.field) is heard."""
        value = self.model_amplification(cell)
        if not math.isinf(value):
            return value, None
        return math.nan, model_verdict(cell, self.links, self.profiles)[1]

    def link_rate_bits(self, cell: Cell) -> float | None:
        choice = cell.link_choice or LinkChoice(cell.link)
        rate = self.links.spec(choice, cell.topology).up.rate_bps
        return float(rate) if rate else None

    def link_mtu(self, cell: Cell) -> int:
        return self.links.mtu(cell.link_choice or LinkChoice(cell.link))

    def wire_path(self, cell: Cell) -> WirePath:
        """How the first topic's samples reach the link, for the model: on a cluster by
        where its publisher and subscribers sit (link.cluster_plan.wire_path; with
        subscribers on different paths, the first whose path crosses the link: those
        copies load it), elsewhere IP packets at the link's MTU."""
        from linklab.link.cluster_plan import wire_path

        options, spec = self.links.cluster(cell.link_choice or LinkChoice(cell.link),
                                           cell.topology)
        mtu = int(spec.mtu)
        if options is None:
            return WirePath(mtu)
        topic = cell.topics[0]
        paths = [wire_path(options, mtu, topic.publisher, sub) for sub in topic.subscribers]
        return next((p for p in paths if p.bounded), paths[0])

    def check_ready(self, cells: list[Cell], *, connect: bool = True) -> None:  # noqa: ARG002
        """Fail before any link is touched: missing probes (and bridges), profiles a
        middleware cannot take, QoS a middleware has no policy for, links that cannot be
        built here. Nothing here changes the system or connects anywhere, so
        ``--dry-run`` runs it all (``connect`` is for environments that reach remote
        hosts). A refusal is tagged with its cell and topic (bench.checks.about: the CLI
        names the scenario's line)."""
        from linklab.bench import bridges
        from linklab.bench.checks import about
        from linklab.bench.probe_driver import probe_binary
        from linklab.link import blueprint

        for name in sorted({c.middleware for c in cells}):
            probe_binary(name)
            bridge = middleware(name).bridge
            if bridge:  # a bridged middleware's bridge program too
                bridges.binary(bridge)
        seen: set[str] = set()
        for cell in cells:
            self.check_settings(cell)
            key = self.link_key(cell)
            if key in seen:
                continue
            seen.add(key)
            choice = cell.link_choice or LinkChoice(cell.link)
            kwargs: dict[str, Any] = {}
            if choice.preset in self.links.user:
                kwargs["preset_fields"] = self.links.user[choice.preset]
            with about(cell, field="link"):
                try:
                    planned = blueprint.design(choice.preset, topology=cell.topology,
                                               hosts=cell.hosts or 1, name="check", **kwargs,
                                               **choice.overrides_dict())
                except UsageError as error:
                    raise UsageError(f"cell {cell.cell_id}: link {cell.link}: {error}") \
                        from None
            from linklab.link import cluster, userns

            cluster.check_ready(planned.plan.cluster, userns.is_root())
