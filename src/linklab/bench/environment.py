"""The real side effects of a bench run: linklab.link testbeds, profiles, the model.

- links: ``linklab.link.testbed(preset=..., topology="pair")``; the publisher runs on the
  first host (robot), the subscriber on the second (edge); wire bytes are the interface
  byte counters of the link (both directions: data, retransmissions, heartbeats, acks).
- profiles: ``default`` and ``large_data`` are the files shipped in linklab/profiles/
  (Fast DDS as ROS 2 Humble configures it, and the paper's LARGE_DATA baseline: UDP for
  discovery, TCPv4 for data); ``optimized`` is ``linklab.tune`` for the cell's rate,
  payload and link (the preset's rate as T_OS->Link, its loss as PER);
  ``optimized-paced`` is that profile with the writer paced at T*omega (see with_pacing);
  any other name is a file ``<name>.xml`` in linklab/profiles/, a name ending in .xml a
  file of the scenario's own.
- model: the seed-000 model's R_DDS / R_pub for the cell (NaN for TCP transports).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from linklab.bench.matrix import Cell
from linklab.bench.runner import ResolvedProfile
from linklab.errors import EnvironmentProblem, UsageError

TCP_PROFILES = ("large_data",)
TUNED_PROFILES = ("optimized", "optimized-paced")


# --- link presets ---------------------------------------------------------------------

def preset(name: str) -> dict[str, Any]:
    from linklab.link.presets import get_preset

    return get_preset(name)


def preset_outage(name: str):
    from linklab.link.spec import parse_outage

    text = preset(name).get("outage")
    return None if not text else parse_outage(str(text), argument=f"preset {name}")


def preset_outage_s(name: str) -> float:
    outage = preset_outage(name)
    return 0.0 if outage is None else float(outage.length_s)


def preset_rate_bits(name: str) -> float:
    from linklab.units import parse_bitrate

    rate = preset(name).get("rate")
    if isinstance(rate, dict):
        rate = rate.get("up")
    return parse_bitrate(str(rate)) if rate else 1e9


def preset_loss(name: str) -> float:
    from linklab.units import parse_fraction

    loss = preset(name).get("loss")
    if isinstance(loss, dict):
        loss = loss.get("up")
    return parse_fraction(loss) if loss is not None else 0.0


# --- profiles -------------------------------------------------------------------------

def shipped_profile(name: str) -> str:
    """The XML of a profile file shipped in linklab/profiles/."""
    try:
        base = resources.files("linklab.profiles")
    except ModuleNotFoundError:
        raise EnvironmentProblem("linklab.profiles is missing (the probes branch ships "
                                 "default.xml and large_data.xml)") from None
    for candidate in (f"{name}.xml", f"fastdds/{name}.xml", f"fastdds_{name}.xml"):
        path = base.joinpath(candidate)
        if path.is_file():
            return path.read_text()
    known = sorted(p.name for p in base.iterdir() if p.name.endswith(".xml"))
    raise UsageError(f"unknown profile {name!r}; shipped: {', '.join(known)} or optimized",
                     argument="profile")


@cache
def tuned(rate_hz: float, payload_bytes: int, link_bits: float, per: float):
    from linklab.tune import TuningInput, tune

    return tune(TuningInput(rate_hz=rate_hz, payload_bytes=payload_bytes,
                            link_bits_per_s=link_bits, per=per))


def _tuned_for(cell: Cell):
    return tuned(cell.rate_hz, cell.payload_bytes, preset_rate_bits(cell.link),
                 preset_loss(cell.link))


def history_for(cell: Cell) -> str:
    """What the probe's --history gets (spec.parse_history documents the choices)."""
    tuned_profile = cell.profile in ("optimized", "optimized-paced")
    if cell.history == "tuned" or (cell.history == "profile" and tuned_profile):
        return f"keep_last:{_tuned_for(cell).settings.history_depth}"
    if cell.history == "profile":
        return "keep_all"
    return cell.history


def resolve_profile(cell: Cell) -> ResolvedProfile:
    history = history_for(cell)
    if cell.middleware != "fastdds":
        return ResolvedProfile(None, None, history, {"profile": cell.profile})
    if cell.profile in ("optimized", "optimized-paced"):
        result = _tuned_for(cell)
        xml = result.fastdds_xml
        paced = cell.profile == "optimized-paced"
        if paced:
            xml = with_pacing(xml, result.settings.budget_bytes_per_s)
        depth = history.split(":")[1] if history.startswith("keep_last:") else "all"
        if str(result.settings.history_depth) != depth:
            # the scenario asks for another history than N_HC (Fig. 7/8 sweeps): the
            # profile's history and resource limits follow the probe's --history
            xml = _with_history(xml, history)
        name = (f"{cell.profile}-{cell.payload_bytes}B-{cell.rate_hz:g}Hz-{cell.link}"
                f"-{history.replace(':', '')}.xml")
        meta = {"profile": cell.profile, "tuning": result.to_dict()["inputs"],
                "settings": result.settings.to_dict(), "verdict": result.verdict}
        if paced:
            meta["pacing_bytes_per_s"] = result.settings.budget_bytes_per_s
        return ResolvedProfile(name, xml, history, meta)
    if cell.profile.endswith(".xml"):  # the scenario's own file
        path = Path(cell.profile)
        return ResolvedProfile(path.name, path.read_text(), history,
                               {"profile": path.stem, "source": str(path)})
    xml = shipped_profile(cell.profile)
    return ResolvedProfile(f"{cell.profile}.xml", xml, history, {"profile": cell.profile})


PACING_PERIOD_MS = 5


def with_pacing(xml: str, budget_bytes_per_s: float) -> str:
    """Add a Fast DDS 2.x throughputController to the writer: at most T*omega on the wire.

    The tuned profile bounds how much a burst *can* hold (N_HC, seed 000 Eq. 6) but the
    ASYNCHRONOUS writer still sends each burst at memory speed; on a rate-limited link
    the burst overflows the link's queue, the drops add retransmissions, and those make
    the next burst larger (the feedback loop of seed 000 §IV-E). Pacing the writer at the
    DDS share of the link, T*omega, in 5 ms periods keeps bursts inside the queue.
    (Fast DDS 2.9 reads throughputController; flow_controller_descriptor_list came later.)
    """
    per_period = max(1500, int(budget_bytes_per_s * PACING_PERIOD_MS / 1000))
    block = (f"<throughputController>\n        <bytesPerPeriod>{per_period}</bytesPerPeriod>"
             f"\n        <periodMillisecs>{PACING_PERIOD_MS}</periodMillisecs>\n"
             "      </throughputController>\n      ")
    writer = xml.index("<data_writer")
    at = xml.index("<historyMemoryPolicy>", writer)
    return xml[:at] + block + xml[at:]


def _with_history(xml: str, history: str) -> str:
    """Replace historyQos / resourceLimitsQos of a tuned profile with ``history``."""
    import re

    if history == "keep_all":
        xml = re.sub(r"<kind>KEEP_LAST</kind>", "<kind>KEEP_ALL</kind>", xml)
        depth = "5000"
    else:
        depth = history.split(":")[1]
    for tag in ("depth", "max_samples", "max_samples_per_instance"):
        xml = re.sub(rf"<{tag}>\d+</{tag}>", f"<{tag}>{depth}</{tag}>", xml)
    xml = re.sub(r"<allocated_samples>\d+</allocated_samples>",
                 f"<allocated_samples>{min(int(depth), 100)}</allocated_samples>", xml)
    return xml


# --- the model ------------------------------------------------------------------------

def model_amplification(cell: Cell) -> float:
    """R_DDS / R_pub (seed 000 Eq. 4 over Eq. 1) for the cell's profile, PER and link."""
    if cell.middleware != "fastdds" or cell.profile in TCP_PROFILES:
        return math.nan
    from linklab.model.scenario import ModelInput, evaluate

    kw: dict[str, Any] = {}
    if cell.profile in TUNED_PROFILES:
        settings = _tuned_for(cell).settings
        kw = {"max_message_size": settings.max_message_size,
              "heartbeat_hz": settings.heartbeat_hz}
    result = evaluate(ModelInput(rate_hz=cell.rate_hz, payload_bytes=cell.payload_bytes,
                                 link_bits_per_s=preset_rate_bits(cell.link),
                                 per=preset_loss(cell.link), **kw))
    return float(result.amplification)


# --- the environment ------------------------------------------------------------------

# The publisher starts measuring after discovery (well under a second on these links),
# a 1 s settle and the warm-up; the outage clock is armed that far ahead, and the real
# start of the outage relative to the first measured sample is recorded afterwards.
PUBLISH_START_DELAY_S = 1.3


class LinkBed:
    """Adapts a linklab.link Testbed (pair topology) to what the runner needs (runner.Bed):
    the publisher runs on ``robot``, the subscriber on ``edge``."""

    HOSTS = {"pub": "robot", "sub": "edge"}

    def __init__(self, bed: Any, preset_name: str, outage_s: float):
        self.bed = bed
        self.preset_name = preset_name
        self.outage_s = outage_s
        self.armed_t0_ns: int | None = None

    def spawn(self, role: str, argv: list[str], stdout: Any, stderr: Any):
        return self.bed.popen(self.HOSTS[role], argv, stdout=stdout, stderr=stderr)

    def peers(self, role: str) -> tuple[str, ...]:
        other = self.bed.hosts[self.HOSTS["sub" if role == "pub" else "pub"]]
        return (other.address,) if other.address else ()

    def interface(self, role: str) -> str | None:
        return None

    def host(self, role: str) -> Any:
        """The testbed Host (netns, address) a role runs on (brokers need the edge's)."""
        return self.bed.hosts[self.HOSTS[role]]

    def snapshot(self) -> dict[str, Any]:
        """Link counters (stages, interfaces) and each host's UDP counters, right now."""
        data = {"link": self.bed.counters(), "udp": {}}
        for role, host in self.HOSTS.items():
            snmp = self.bed.run(host, ["cat", "/proc/net/snmp"]).stdout
            data["udp"][role] = parse_udp_counters(snmp)
        return data

    def start_traffic(self, warmup_s: float) -> None:
        if self.outage_s > 0 and self.armed_t0_ns is None:
            delay = PUBLISH_START_DELAY_S + warmup_s
            self.armed_t0_ns = self.bed.arm_outage(time.monotonic_ns() + int(delay * 1e9))

    def outage_on_ns(self) -> int | None:
        """When the outage really began (CLOCK_MONOTONIC ns), from the scheduler's log."""
        for event in self.bed.outage_events():
            if event.get("edge") == "on":
                return int(event.get("after_ns") or event.get("planned_ns"))
        return None

    def stages(self) -> dict[str, Any]:
        status = self.bed.status()
        return {"preset": self.preset_name, "spec": status.get("spec"),
                "hosts": status.get("hosts"), "links": status.get("links"),
                "socket_buffers": status.get("socket_buffers"),
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

    @contextlib.contextmanager
    def link(self, cell: Cell, run_tag: str) -> Iterator[LinkBed]:
        from linklab.link import testbed

        outage = preset_outage(cell.link)
        overrides: dict[str, Any] = {}
        length = 0.0
        if outage is not None:
            # the cell decides when the outage starts (after its publisher starts) and,
            # with outage_length, how long it lasts
            length = float(cell.outage_length_s or outage.length_s)
            overrides["outage"] = f"{cell.outage_start_s:g}s+{length:g}s"
        with testbed(preset=cell.link, topology="pair", name=run_tag,
                     arm_outage=False, **overrides) as bed:
            yield LinkBed(bed, cell.link, length)

    def outage_s(self, preset_name: str) -> float:
        return preset_outage_s(preset_name)

    def profile(self, cell: Cell) -> ResolvedProfile:
        return resolve_profile(cell)

    def model_amplification(self, cell: Cell) -> float:
        return model_amplification(cell)


def check_ready(cells: list[Cell]) -> None:
    """Fail before any link is touched: unknown presets, missing probes or profiles."""
    from linklab.bench.probe_driver import probe_binary

    for middleware in sorted({c.middleware for c in cells}):
        probe_binary(middleware)
    for name in sorted({c.link for c in cells}):
        preset(name)
    for profile in sorted({c.profile for c in cells if not c.profile.endswith(".xml")}
                          - {"optimized", "optimized-paced"}):
        if any(c.middleware == "fastdds" and c.profile == profile for c in cells):
            shipped_profile(profile)
