"""What a cell's ``profile:`` and ``history:`` mean for its middleware.

Per middleware -- a profile a middleware cannot take is an error before anything runs,
never a silent default:

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
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from linklab.bench.links import LinkChoice
from linklab.bench.matrix import Cell
from linklab.bench.protocols import ResolvedProfile
from linklab.errors import EnvironmentProblem, UsageError
from linklab.middleware import DDS_FAMILIES, TUNED_PROFILES, Middleware, middleware


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
          subscribers: int = 1, delay_s: float = 0.0, history_depth: int | None = None,
          cpu_competitors: int | None = None, cpu_cores: int | None = None,
          middlewares: tuple[str, ...] = DDS_FAMILIES):
    """linklab.tune for a cell: its rate and payload, the link's rate (T_OS->Link), loss
    (PER) and one-way delay, the topic's unicast subscribers, a history forced by the
    scenario (None: the tuner's own plan), and the CPU contention the cell declares
    (``cpu_load``: competitors on this machine's cores; None: not declared); the verdict
    is for ``middlewares``."""
    from linklab.tune import TuningInput, tune

    return tune(TuningInput(rate_hz=rate_hz, payload_bytes=payload_bytes,
                            link_bits_per_s=link_bits, per=per, subscribers=subscribers,
                            delay_s=delay_s, history_depth=history_depth,
                            cpu_competitors=cpu_competitors, cpu_cores=cpu_cores,
                            middlewares=middlewares))


def cpu_contention(cell: Cell) -> tuple[int | None, int | None]:
    """(competitors, cores) the cell's ``cpu_load`` puts beside its probes on this machine,
    for the tuner; (None, None) when the cell declares none."""
    from linklab.bench.fields import CPU_NONE, load_processes
    from linklab.link.competitors import online_cpus

    if cell.cpu_load == CPU_NONE:
        return None, None
    cores = online_cpus()
    return load_processes(cell.cpu_load, cores), cores


def _xml_root(text: str) -> str | None:
    match = re.search(r"<\s*([A-Za-z_][\w:.-]*)", re.sub(r"<\?.*?\?>|<!--.*?-->", "", text,
                                                         flags=re.S))
    return match[1].split(":")[-1] if match else None


def profile_refusal(entry: Middleware, profile: str) -> str | None:
    """Why ``entry`` cannot take ``profile`` (one line; None: it can). A shipped Fast DDS
    profile's name is checked by reading it (shipped_profile raises for an unknown one)."""
    rule = entry.profiles
    if profile.endswith((".xml", ".json5")):  # the scenario's own file
        if not (rule.own_suffix and profile.endswith(rule.own_suffix)) or (
                rule.own_roots and _xml_root(Path(profile).read_text()) not in rule.own_roots):
            return entry.refusal("not_own", profile=profile)
    elif profile not in rule.named:
        if not rule.shipped:
            return entry.refusal("not_named", profile=profile)
        shipped_profile(profile)
    if entry.only_default and profile != "default":
        return entry.refusal("only_default")
    return None


def _check_cyclonedds_security(entry: Middleware, profile: str) -> None:
    """A secured Cyclone cell needs the security plugins; a Cyclone file of the
    scenario's own with a <Security> section must name files that are there (else
    Cyclone refuses the participant only when the cell runs)."""
    from linklab.security.cyclonedds import check_plugins, check_security_config

    if entry.secured:
        check_plugins()
    if profile.endswith(".xml"):
        check_security_config(Path(profile))


class Profiles:
    """What each cell's ``profile`` and ``history`` mean for its middleware."""

    def __init__(self, links: Any):  # bench.namespace_environment.Links: presets and link specs
        self.links = links

    def tuned_for(self, cell: Cell, history_depth: int | None = None):
        choice = cell.link_choice or LinkChoice(cell.link)
        subscribers = len(cell.topics[0].subscribers) if cell.topics else 1
        competitors, cores = cpu_contention(cell)
        family = middleware(cell.middleware).probe
        chosen = (family.name,) if family.dds else DDS_FAMILIES
        return tuned(cell.rate_hz, cell.payload_bytes, self.links.rate_bits(choice),
                     self.links.loss(choice), subscribers, self.links.delay_s(choice),
                     history_depth, competitors, cores, chosen)

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
        entry = middleware(cell.middleware)
        profile = cell.profile
        for topic in cell.topics or ():
            if topic.history in ("tuned", "profile") and not entry.probe.history_cache:
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
            if profile == "optimized-paced" and not entry.profiles.paced:
                raise UsageError("optimized-paced paces a Fast DDS writer "
                                 "(throughputController); use optimized",
                                 argument="profile")
        if (cell.search or cell.rate_fraction is not None) and profile in TUNED_PROFILES:
            raise UsageError(f"profile {profile} is tuned for a known rate; a searched rate "
                             f"({cell.rate}) has none: use another profile", argument="profile")
        refusal = profile_refusal(entry, profile)
        if refusal is not None:
            raise UsageError(refusal, argument="profile")
        if entry.probe.name == "cyclonedds":
            _check_cyclonedds_security(entry, profile)

    def resolve(self, cell: Cell) -> ResolvedProfile:
        self.check(cell)
        history = self.history_for(cell)
        entry = middleware(cell.middleware)
        # the middleware's own configuration: Zenoh's and MQTT's, Cyclone's default
        if not entry.probe.dds or (not entry.profiles.shipped and cell.profile == "default"):
            if cell.profile.endswith(".json5"):
                path = Path(cell.profile)
                return ResolvedProfile(path.name, path.read_text(), history,
                                       {"profile": path.stem, "source": str(path)})
            return ResolvedProfile(None, None, history, {"profile": cell.profile})
        if cell.profile in TUNED_PROFILES:
            return self._tuned(cell, history, entry)
        if cell.profile.endswith(".xml"):  # the scenario's own file
            path = Path(cell.profile)
            return ResolvedProfile(path.name, path.read_text(), history,
                                   {"profile": path.stem, "source": str(path)})
        xml = shipped_profile(cell.profile)
        return ResolvedProfile(f"{cell.profile}.xml", xml, history, {"profile": cell.profile})

    def _tuned(self, cell: Cell, history: str, entry: Middleware) -> ResolvedProfile:
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
        if paced and not entry.profiles.paced:
            raise UsageError("optimized-paced paces a Fast DDS writer (throughputController); "
                             f"{entry.probe.label} takes optimized", argument="profile")
        base = entry.probe.name
        xml = getattr(result, f"{base}_xml")  # TuningResult.fastdds_xml / cyclonedds_xml
        if paced:
            from linklab.tune.fastdds import set_pacing

            xml = set_pacing(xml, result.settings.budget_bytes_per_s)
        competitors = result.inputs.cpu_competitors
        name = (f"{cell.profile}-{base}-{cell.payload_bytes}B-{cell.rate_hz:g}Hz-"
                f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', cell.link)}-"
                f"{history.replace(':', '')}"
                + ("" if competitors is None else f"-cpu{competitors:g}") + ".xml")
        meta = {"profile": cell.profile, "middleware": base,
                "tuning": result.to_dict()["inputs"],
                "settings": result.settings.to_dict(), "verdict": result.verdict,
                "summary": result.explanation.summary}
        if paced:
            meta["pacing_bytes_per_s"] = result.settings.budget_bytes_per_s
        return ResolvedProfile(name, xml, history, meta)
