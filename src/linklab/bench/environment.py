"""The real side effects of a bench run: linklab.link testbeds, profiles, the model.

- links: ``linklab.link.testbed(preset=..., topology="pair")``; the publisher runs on the
  first host (robot), the subscriber on the second (edge); wire bytes are the interface
  byte counters of the link (both directions: data, retransmissions, heartbeats, acks).
- profiles: ``default`` and ``large_data`` are the files shipped in linklab/profiles/
  (Fast DDS as ROS 2 Humble configures it, and the paper's LARGE_DATA baseline: UDP for
  discovery, TCPv4 for data); ``optimized`` is ``linklab.tune`` for the cell's rate,
  payload and link (the preset's rate as T_OS->Link, its loss as PER); any other name is
  a file ``<name>.xml`` in linklab/profiles/.
- model: the seed-000 model's R_DDS / R_pub for the cell (NaN for TCP transports).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import Any

from linklab.bench.matrix import Cell
from linklab.bench.runner import ResolvedProfile
from linklab.errors import EnvironmentProblem, UsageError

TCP_PROFILES = ("large_data",)


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
    if cell.history == "tuned" or (cell.history == "profile" and cell.profile == "optimized"):
        return f"keep_last:{_tuned_for(cell).settings.history_depth}"
    if cell.history == "profile":
        return "keep_all"
    return cell.history


def resolve_profile(cell: Cell) -> ResolvedProfile:
    history = history_for(cell)
    if cell.middleware != "fastdds":
        return ResolvedProfile(None, None, history, {"profile": cell.profile})
    if cell.profile == "optimized":
        result = _tuned_for(cell)
        xml = result.fastdds_xml
        depth = history.split(":")[1] if history.startswith("keep_last:") else "all"
        if str(result.settings.history_depth) != depth:
            # the scenario asks for another history than N_HC (Fig. 7/8 sweeps): the
            # profile's history and resource limits follow the probe's --history
            xml = _with_history(xml, history)
        name = (f"optimized-{cell.payload_bytes}B-{cell.rate_hz:g}Hz-{cell.link}"
                f"-{history.replace(':', '')}.xml")
        meta = {"profile": "optimized", "tuning": result.to_dict()["inputs"],
                "settings": result.settings.to_dict(), "verdict": result.verdict}
        return ResolvedProfile(name, xml, history, meta)
    xml = shipped_profile(cell.profile)
    return ResolvedProfile(f"{cell.profile}.xml", xml, history, {"profile": cell.profile})


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
    if cell.profile == "optimized":
        settings = _tuned_for(cell).settings
        kw = {"max_message_size": settings.max_message_size,
              "heartbeat_hz": settings.heartbeat_hz}
    result = evaluate(ModelInput(rate_hz=cell.rate_hz, payload_bytes=cell.payload_bytes,
                                 link_bits_per_s=preset_rate_bits(cell.link),
                                 per=preset_loss(cell.link), **kw))
    return float(result.amplification)


# --- the environment ------------------------------------------------------------------

class LinkBed:
    """Adapts a linklab.link testbed to what the runner needs (runner.Bed)."""

    def __init__(self, bed: Any, preset_name: str):
        self.bed = bed
        self.preset_name = preset_name
        self.outage_s = preset_outage_s(preset_name)

    def _host(self, role: str):
        hosts = list(self.bed.hosts)
        return hosts[0] if role == "pub" else hosts[1]

    def spawn(self, role: str, argv: list[str], stdout: Any, stderr: Any):
        return self.bed.popen(self._host(role), argv, stdout=stdout, stderr=stderr)

    def peers(self, role: str) -> tuple[str, ...]:
        other = self._host("sub" if role == "pub" else "pub")
        address = getattr(other, "address", None)
        return (str(address),) if address else ()

    def interface(self, role: str) -> str | None:
        return None

    def wire_bytes(self) -> int | None:
        counters = self.bed.counters()
        return _total_bytes(counters)

    def start_traffic(self, publisher_start_s: float) -> None:
        starter = getattr(self.bed, "start_outage", None)
        if starter is not None and self.outage_s > 0:
            starter()

    def stages(self) -> dict[str, Any]:
        describe = getattr(self.bed, "describe", None)
        return describe() if callable(describe) else {"preset": self.preset_name}


def _total_bytes(counters: Any) -> int | None:
    if counters is None:
        return None
    if isinstance(counters, dict):
        total = 0
        for value in counters.values():
            sub = _total_bytes(value)
            if sub is None:
                continue
            total += sub
        return total
    if isinstance(counters, int):
        return counters
    return None


class LinklabEnvironment:
    def __init__(self) -> None:
        pass

    @contextlib.contextmanager
    def link(self, preset_name: str, run_tag: str) -> Iterator[LinkBed]:
        from linklab.link import testbed

        with testbed(preset=preset_name, topology="pair", name=run_tag) as bed:
            yield LinkBed(bed, preset_name)

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
    for profile in sorted({c.profile for c in cells} - {"optimized"}):
        if any(c.middleware == "fastdds" and c.profile == profile for c in cells):
            shipped_profile(profile)
