"""The real side effects of a bench run: linklab.link testbeds, profiles, the model.

- links: ``linklab.link.testbed(preset=..., topology=..., hosts=...)`` with the cell's link
  fields written over the preset; every endpoint runs on the host its topic names; wire
  bytes are the interface byte counters of the publishers' hosts (both directions:
  data, retransmissions, heartbeats, acks).
- profiles (``profile:``), per middleware — a profile a middleware cannot take is an error
  before anything runs, never a silent default:
  * Fast DDS: ``default`` and ``large_data`` are the files shipped in linklab/profiles/
    (Fast DDS as ROS 2 Humble configures it, and the paper's LARGE_DATA baseline: UDP for
    discovery, TCPv4 for data); ``step1`` and ``step1-2`` the default with paper 000's
    first optimization step alone and with the second (Figs. 4 and 6); ``optimized`` is
    ``linklab.tune`` for the cell's rate, payload and link (the link's rate as
    T_OS->Link, its loss as PER, its delay, the topic's unicast subscribers);
    ``optimized-paced`` is that profile with the writer paced at T*omega
    (linklab.tune.fastdds.set_pacing); any other name is a file ``<name>.xml`` in
    linklab/profiles/, a name ending in .xml a Fast DDS XML file of the scenario's own.
  * Cyclone DDS: ``default`` is Cyclone's own configuration (no CYCLONEDDS_URI, as
    rmw_cyclonedds without one); ``optimized`` the tuner's Cyclone file; a .xml file of
    the scenario's own must be a Cyclone configuration (<CycloneDDS>).
  * Zenoh: ``default``, or a .json5 configuration of the scenario's own.
  * MQTT: ``default`` only (mosquitto's and libmosquitto's defaults).
- model: the seed-000 model's R_DDS / R_pub for the cell (NaN where it does not apply:
  not Fast DDS over UDP).
"""

from __future__ import annotations

import contextlib
import math
import re
import time
from collections.abc import Iterator
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from linklab.bench.links import LinkChoice
from linklab.bench.matrix import Cell
from linklab.bench.middlewares import base_middleware
from linklab.bench.runner import ResolvedProfile
from linklab.errors import EnvironmentProblem, UsageError
from linklab.model.overhead import WirePath

TUNED_PROFILES = ("optimized", "optimized-paced")


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
        from linklab.link.cluster_plan import cluster_spec

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
        """T_OS->Link for the model and the tuner: the link's robot -> edge rate."""
        rate = self.spec(choice).up.rate_bps
        return float(rate) if rate else 1e9

    def loss(self, choice: LinkChoice) -> float:
        return float(self.spec(choice).up.loss)

    def delay_s(self, choice: LinkChoice) -> float:
        """The link's one-way delay robot -> edge (0 without the emulator's delay)."""
        return float(self.spec(choice).up.delay_s or 0.0)

    def mtu(self, choice: LinkChoice) -> int:
        return int(self.spec(choice).mtu)


# --- profiles -------------------------------------------------------------------------

def shipped_profile(name: str) -> str:
    """The XML of a Fast DDS profile file shipped in linklab/profiles/."""
    try:
        base = resources.files("linklab.profiles")
    except ModuleNotFoundError:
        raise EnvironmentProblem("linklab.profiles is missing (the probes branch ships "
                                 "default.xml and large_data.xml)") from None
    for candidate in (f"{name}.xml", f"fastdds/{name}.xml", f"fastdds_{name}.xml"):
        path = base.joinpath(candidate)
        if path.is_file():
            return path.read_text()
    known = sorted(p.name.removesuffix(".xml") for p in base.iterdir()
                   if p.name.endswith(".xml"))
    raise UsageError(f"unknown profile {name!r}; shipped Fast DDS profiles: "
                     f"{', '.join(known)}, or optimized, optimized-paced", argument="profile")


@cache
def tuned(rate_hz: float, payload_bytes: int, link_bits: float, per: float,
          subscribers: int = 1, delay_s: float = 0.0, history_depth: int | None = None):
    """linklab.tune for a cell: its rate and payload, the link's rate (T_OS->Link), loss
    (PER) and one-way delay, the topic's unicast subscribers, and a history forced by the
    scenario (None: the tuner's own plan)."""
    from linklab.tune import TuningInput, tune

    return tune(TuningInput(rate_hz=rate_hz, payload_bytes=payload_bytes,
                            link_bits_per_s=link_bits, per=per, subscribers=subscribers,
                            delay_s=delay_s, history_depth=history_depth))


def _xml_root(text: str) -> str | None:
    match = re.search(r"<\s*([A-Za-z_][\w:.-]*)", re.sub(r"<\?.*?\?>|<!--.*?-->", "", text,
                                                         flags=re.S))
    return match[1].split(":")[-1] if match else None


class Profiles:
    """What each cell's ``profile`` and ``history`` mean for its middleware."""

    def __init__(self, links: Links):
        self.links = links

    def tuned_for(self, cell: Cell, history_depth: int | None = None):
        choice = cell.link_choice or LinkChoice(cell.link)
        subscribers = len(cell.topics[0].subscribers) if cell.topics else 1
        return tuned(cell.rate_hz, cell.payload_bytes, self.links.rate_bits(choice),
                     self.links.loss(choice), subscribers, self.links.delay_s(choice),
                     history_depth)

    def history_for(self, cell: Cell, topic: Any = None) -> str:
        """What the probe's --history gets for ``topic`` (default: the cell's first; the
        choices are documented at spec.parse_history). A tuned profile brings its own
        history where the scenario did not ask for one (linklab's KEEP_ALL default does
        not apply to it)."""
        topic = topic if topic is not None else (cell.topics[0] if cell.topics else None)
        history = topic.history if topic is not None else cell.history
        tuned_profile = cell.profile in TUNED_PROFILES
        if tuned_profile and history == "keep_all" and topic is not None \
                and "history" not in topic.explicit:
            history = "profile"
        if history == "tuned" or (history == "profile" and tuned_profile):
            return f"keep_last:{self.tuned_for(cell).settings.history_depth}"
        if history == "profile":
            return "keep_all"
        return history

    def check(self, cell: Cell) -> None:
        """Refuse what the cell's middleware cannot take (before anything runs)."""
        base = base_middleware(cell.middleware)
        profile = cell.profile
        own = profile.endswith((".xml", ".json5"))
        for topic in cell.topics or ():
            if topic.history in ("tuned", "profile") and base not in ("fastdds", "cyclonedds"):
                raise UsageError(f"history {topic.history} is the tuner's DDS writer history "
                                 f"(N_HC); {cell.middleware} has no history cache",
                                 argument="history")
        if profile in TUNED_PROFILES:
            for topic in cell.topics or ():
                if self.history_for(cell, topic) == "keep_all" and cell.rate_hz:
                    raise UsageError(f"history keep_all with profile {profile}: the tuned "
                                     "profile sizes a KEEP_LAST history (and its readers' "
                                     "limits) from it; use history: profile, tuned or "
                                     "keep_last:N", argument="history")
            if profile == "optimized-paced" and base != "fastdds":
                raise UsageError("optimized-paced paces a Fast DDS writer "
                                 "(throughputController); use optimized",
                                 argument="profile")
        if (cell.search or cell.rate_fraction is not None) and profile in TUNED_PROFILES:
            raise UsageError(f"profile {profile} is tuned for a known rate; a searched rate "
                             f"({cell.rate}) has none: use another profile", argument="profile")
        if base == "fastdds":
            if own:
                if not profile.endswith(".xml") or _xml_root(Path(profile).read_text()) not in (
                        "dds", "profiles"):
                    raise UsageError(f"{profile} is not a Fast DDS XML profile (<dds> or "
                                     "<profiles>)", argument="profile")
            elif profile not in TUNED_PROFILES:
                shipped_profile(profile)
            if cell.middleware == "fastdds-secure" and profile != "default":
                raise UsageError("fastdds-secure runs linklab's default profile with "
                                 "DDS-Security; another profile cannot be combined with it",
                                 argument="profile")
            return
        if base == "cyclonedds":
            if own:
                if not profile.endswith(".xml") or _xml_root(Path(profile).read_text()) != \
                        "CycloneDDS":
                    raise UsageError(f"{profile} is not a Cyclone DDS configuration "
                                     "(<CycloneDDS>)", argument="profile")
            elif profile not in ("default", "optimized"):
                raise UsageError(f"profile {profile!r} is a Fast DDS profile; Cyclone DDS "
                                 "takes default, optimized or a <CycloneDDS> file of your own",
                                 argument="profile")
            return
        if base == "zenoh":
            if profile != "default" and not profile.endswith(".json5"):
                raise UsageError(f"profile {profile!r} is not for Zenoh; Zenoh takes default "
                                 "or a .json5 configuration of your own", argument="profile")
            if cell.middleware.endswith("-tls") and profile != "default":
                raise UsageError(f"{cell.middleware} brings its own TLS configuration; "
                                 "another profile cannot be combined with it", argument="profile")
            return
        if profile != "default":
            raise UsageError(f"profile {profile!r}: MQTT takes default only (mosquitto's and "
                             "libmosquitto's settings)", argument="profile")

    def resolve(self, cell: Cell) -> ResolvedProfile:
        self.check(cell)
        history = self.history_for(cell)
        base = base_middleware(cell.middleware)
        if base not in ("fastdds", "cyclonedds") or (base == "cyclonedds"
                                                     and cell.profile == "default"):
            if cell.profile.endswith(".json5"):
                path = Path(cell.profile)
                return ResolvedProfile(path.name, path.read_text(), history,
                                       {"profile": path.stem, "source": str(path)})
            return ResolvedProfile(None, None, history, {"profile": cell.profile})
        if cell.profile in TUNED_PROFILES:
            return self._tuned(cell, history, base)
        if cell.profile.endswith(".xml"):  # the scenario's own file
            path = Path(cell.profile)
            return ResolvedProfile(path.name, path.read_text(), history,
                                   {"profile": path.stem, "source": str(path)})
        xml = shipped_profile(cell.profile)
        return ResolvedProfile(f"{cell.profile}.xml", xml, history, {"profile": cell.profile})

    def _tuned(self, cell: Cell, history: str, base: str) -> ResolvedProfile:
        result = self.tuned_for(cell)
        if history == "keep_all":
            raise UsageError(f"history keep_all with profile {cell.profile}: the tuned "
                             "profile sizes a KEEP_LAST history (and its readers' limits) "
                             "from it; use history: profile, tuned or keep_last:N",
                             argument="history")
        depth = int(history.split(":")[1])
        if depth != result.settings.history_depth:
            # the scenario asks for another history than the tuner's (Fig. 7/8 sweeps):
            # tune again with it, so the readers' limits and Cyclone's follow in step
            result = self.tuned_for(cell, history_depth=depth)
        paced = cell.profile == "optimized-paced"
        if base == "cyclonedds":
            if paced:
                raise UsageError("optimized-paced paces a Fast DDS writer "
                                 "(throughputController); Cyclone DDS takes optimized",
                                 argument="profile")
            xml = result.cyclonedds_xml
        else:
            xml = result.fastdds_xml
            if paced:
                from linklab.tune.fastdds import set_pacing

                xml = set_pacing(xml, result.settings.budget_bytes_per_s)
        name = (f"{cell.profile}-{base}-{cell.payload_bytes}B-{cell.rate_hz:g}Hz-"
                f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', cell.link)}-"
                f"{history.replace(':', '')}.xml")
        meta = {"profile": cell.profile, "middleware": base,
                "tuning": result.to_dict()["inputs"],
                "settings": result.settings.to_dict(), "verdict": result.verdict}
        if paced:
            meta["pacing_bytes_per_s"] = result.settings.budget_bytes_per_s
        return ResolvedProfile(name, xml, history, meta)


# --- the model ------------------------------------------------------------------------

def model_amplification(cell: Cell, links: Links, profiles: Profiles) -> float:
    """Interface bytes per published payload byte, as linklab.model.wire predicts them
    (first copies, repairs of lost fragments, fragments sent again while queued,
    heartbeats and acknowledgements, headers; linklab.tune.wirecheck), times k for k
    unicast subscribers (each sample goes out once per subscriber, seed 002 Fig. 15).

    NaN, by rule, where the model does not apply: middlewares other than Fast DDS and
    Cyclone DDS, profiles other than default and optimized (TCP's large_data, files of
    one's own), several topics in one cell, a rate not known. Any other failure is a bug.
    """
    from linklab.tune.wirecheck import MIDDLEWARES, PROFILES, LinkInfo, predicted_for

    base = base_middleware(cell.middleware)
    if base not in MIDDLEWARES or cell.middleware != base or cell.profile not in PROFILES \
            or len(cell.topics) > 1 or not cell.rate_hz:
        return math.nan
    choice = cell.link_choice or LinkChoice(cell.link)
    link = LinkInfo(links.rate_bits(choice), links.loss(choice), links.mtu(choice))
    return float(predicted_for(base, cell.profile, cell.payload_bytes, cell.rate_hz, link,
                               len(cell.topics[0].subscribers), cell.topics[0].type))


# --- the environment ------------------------------------------------------------------

class LinkBed:
    """Adapts a linklab.link Testbed to what the runner needs (runner.Bed): endpoints run
    on the testbed's hosts by name."""

    shares_local_files = True  # probes run on this machine (bench.discovery_gate)

    def __init__(self, bed: Any, label: str, outage_s: float):
        self.bed = bed
        self.label = label
        self.outage_s = outage_s
        self.armed_t0_ns: int | None = None

    def spawn(self, host: str, argv: list[str], stdout: Any, stderr: Any):
        return self.bed.popen(host, argv, stdout=stdout, stderr=stderr)

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
            yield LinkBed(bed, cell.link, length)

    def outage_s(self, cell: Cell) -> float:
        return self.links.outage_s(cell.link_choice or LinkChoice(cell.link))

    def profile(self, cell: Cell) -> ResolvedProfile:
        return self.profiles.resolve(cell)

    def history_for(self, cell: Cell, topic: Any) -> str:
        return self.profiles.history_for(cell, topic)

    def model_amplification(self, cell: Cell) -> float:
        return model_amplification(cell, self.links, self.profiles)

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

    def check_ready(self, cells: list[Cell]) -> None:
        """Fail before any link is touched: missing probes, profiles a middleware cannot
        take, QoS a middleware has no policy for, links that cannot be built here."""
        from linklab.bench.endpoints import qos_args
        from linklab.bench.probe_driver import probe_binary
        from linklab.link import blueprint

        for middleware in sorted({c.middleware for c in cells}):
            probe_binary(middleware)
        seen: set[str] = set()
        for cell in cells:
            self.profiles.check(cell)
            for topic in cell.topics:
                qos_args(cell.middleware, topic, self.history_for(cell, topic)
                         if cell.rate_hz else "keep_last:1")
            key = self.link_key(cell)
            if key in seen:
                continue
            seen.add(key)
            choice = cell.link_choice or LinkChoice(cell.link)
            kwargs: dict[str, Any] = {}
            if choice.preset in self.links.user:
                kwargs["preset_fields"] = self.links.user[choice.preset]
            try:
                planned = blueprint.design(choice.preset, topology=cell.topology,
                                           hosts=cell.hosts or 1, name="check", **kwargs,
                                           **choice.overrides_dict())
            except UsageError as error:
                raise UsageError(f"cell {cell.cell_id}: link {cell.link}: {error}") from None
            from linklab.link import cluster, userns

            cluster.check_ready(planned.plan.cluster, userns.is_root())
