"""model.wire_traffic against a bench run: measured interface bytes per payload byte vs predicted,
cell by cell. Pure: ``linklab model-check RUN_DIR`` (cli/model.py) reads the run and
prints these rows.

A cell is predicted when it ran Fast DDS or Cyclone DDS with the ``default`` or the
``optimized`` profile over one UDP topic; ``optimized`` is what the bench generates
(linklab.tune with the cell's rate, payload, link rate and loss, as
bench/profiles.py's ``tuned`` calls it). The target (issue 15): every completed cell
within 15 %.

A cell whose wire the link cannot carry (model/completion.py, C1: the repairs of a
strictly reliable stream need more than T_OS->Link) has no steady-state figure:
``verdict_for`` gives it infinity and the reason, and ``compare`` lists it as "model:
cannot complete", counted neither within nor outside 15 % (whether it completed or not).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

from linklab.middleware import DDS_FAMILIES
from linklab.model.completion import completion
from linklab.model.fanout import interleaved_step, shared_link_completion
from linklab.model.wire_traffic import (
    datagram_rtps_bytes,
    datagram_wire,
    repair_datagram_packets,
    sample_ip_packets,
)
from linklab.probes.types import sample_extra_bytes
from linklab.tune import TuningInput, tune
from linklab.tune.predict import default_profile, predict_wire, tuned_profile

TARGET = 0.15
PROFILES = ("default", "optimized")
MIDDLEWARES = DDS_FAMILIES  # the DDS probe families (linklab.middleware)


@dataclass(frozen=True)
class LinkInfo:
    rate_bits_per_s: float
    per: float
    mtu: int = 1500


@dataclass(frozen=True)
class Comparison:
    cell_id: str
    middleware: str
    profile: str
    payload_bytes: int
    per: float
    completed: bool
    measured: float
    predicted: float  # math.inf: the model says the cell cannot complete (``note``)
    note: str | None = None  # why it cannot complete (model/completion.py)

    @property
    def cannot_complete(self) -> bool:
        return self.note is not None

    @property
    def error(self) -> float:
        """(predicted - measured) / measured; NaN without a finite figure."""
        if not self.measured or math.isnan(self.measured) or not math.isfinite(
                self.predicted):
            return math.nan
        return (self.predicted - self.measured) / self.measured

    @property
    def within(self) -> bool:
        return abs(self.error) <= TARGET

    @property
    def checked(self) -> bool:
        """Completed with a measured wire / payload (a cell whose publisher left no
        summary has wire bytes but no known divisor: bench/cell_analysis.py) and a steady-state
        figure of the model to hold it against (not one it says cannot complete)."""
        return self.completed and not self.cannot_complete and not math.isnan(self.error)

    @property
    def missed(self) -> bool:
        return self.checked and not self.within

    def to_dict(self) -> dict:
        return {"cell_id": self.cell_id, "middleware": self.middleware, "profile": self.profile,
                "payload_bytes": self.payload_bytes, "per": self.per,
                "completed": self.completed, "measured": self.measured,
                "predicted": self.predicted, "error": self.error, "within": self.within,
                "checked": self.checked, "model_note": self.note}


def _model(middleware: str, profile: str, payload_bytes: int, rate_hz: float,
           link: LinkInfo, subscribers: int = 1, type_name: str = "Bytes"):
    """The profile the cell ran (``optimized``: what the bench generated, which the tuner
    sizes for the probe's Bytes sample) sending samples of ``type_name``: its serialized
    sample's own bytes (linklab.probes.types) go on the wire beside the payload."""
    if profile == "optimized":
        settings = tune(TuningInput(rate_hz=rate_hz, payload_bytes=payload_bytes,
                                    link_bits_per_s=link.rate_bits_per_s, per=link.per,
                                    subscribers=subscribers)).settings
        model = tuned_profile(middleware, settings)
    else:
        model = default_profile(middleware)
    return replace(model, serialized_extra=sample_extra_bytes(type_name))


def predicted_for(middleware: str, profile: str, payload_bytes: int, rate_hz: float,
                  link: LinkInfo, subscribers: int = 1, type_name: str = "Bytes") -> float:
    """Interface bytes per published payload byte; k unicast subscribers get k copies."""
    model = _model(middleware, profile, payload_bytes, rate_hz, link, subscribers, type_name)
    return subscribers * predict_wire(model, profile, payload_bytes, rate_hz, link.per,
                                      link.rate_bits_per_s, link.mtu).amplification


@lru_cache(maxsize=4096)
def verdict_for(middleware: str, profile: str, payload_bytes: int, rate_hz: float,
                link: LinkInfo, subscribers: int = 1,
                type_name: str = "Bytes") -> tuple[float, str | None]:
    """(wire bytes per payload byte, None) for a cell that reaches the model's steady
    state; (math.inf, "cannot complete: ...") for one whose wire the link cannot carry
    (model/completion.py, C1 from 000 Eq. 2). Cached: a report asks once per row."""
    model = _model(middleware, profile, payload_bytes, rate_hz, link, subscribers, type_name)
    amplification = subscribers * predict_wire(
        model, profile, payload_bytes, rate_hz, link.per, link.rate_bits_per_s,
        link.mtu).amplification
    verdict = completion(amplification, payload_bytes, rate_hz, link.rate_bits_per_s,
                         link.per, sample_ip_packets(model, payload_bytes, link.mtu),
                         repair_datagram_packets(model, payload_bytes, link.mtu))
    return verdict.amplification, verdict.reason


def row_verdict(row: dict, links: dict[str, LinkInfo]) -> tuple[float, str | None] | None:
    """``verdict_for`` a bench row's settings over its link (run.json ``links``), or None
    when the model does not apply to it (middleware, profile, several topics, no rate)
    or its link is not known."""
    middleware, profile = row.get("middleware"), row.get("profile")
    link = links.get(row.get("link"))
    if middleware not in MIDDLEWARES or profile not in PROFILES or link is None:
        return None
    if (row.get("topics") or 1) != 1 or not row.get("rate_hz") or not row.get(
            "payload_bytes"):
        return None
    return verdict_for(middleware, profile, int(row["payload_bytes"]), float(row["rate_hz"]),
                       link, int(row.get("subscribers") or 1), row.get("type") or "Bytes")


def link_infos(info: dict, unlimited_bits_per_s: float | None = None) -> dict[str, LinkInfo]:
    """run.json's links -> {label: LinkInfo} (robot -> edge rate and loss, MTU). A link
    on the 802.11 medium has its PHY rate (the most its airtime allows); another link
    without a rate is left out, or given ``unlimited_bits_per_s`` (the bench's model uses
    1 Gbit/s for it: bench/namespace_environment.py Links.rate_bits)."""
    from linklab.units import parse_bitrate, parse_fraction

    out = {}
    for label, entry in (info.get("links") or {}).items():
        spec = (entry.get("spec") if isinstance(entry, dict) else None) or {}
        up = spec.get("up") or {}
        stated = up.get("rate") or (spec.get("medium") or {}).get("phy_rate")
        if not stated and unlimited_bits_per_s is None:
            continue
        loss = str(up.get("loss") or "0%").replace(" ", "")
        rate = parse_bitrate(str(stated).replace(" ", ""), "run.json") \
            if stated else unlimited_bits_per_s
        out[label] = LinkInfo(rate, parse_fraction(loss, "run.json"),
                              int(spec.get("mtu") or 1500))
    return out


@dataclass(frozen=True)
class FanoutComparison:
    """A 1 -> k cell: the step between subscribers and the latency k copies add."""

    cell_id: str
    subscribers: int
    measured_step_ms: float
    model_step_ms: float  # one datagram's copy time (model.fanout.interleaved_step)
    measured_growth_ms: float  # mean latency minus the same cell's with one subscriber
    model_growth_ms: float  # (k - 1) sample copies (model.fanout.shared_link_completion)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def fanout(rows: list[dict], links: dict[str, LinkInfo]) -> list[FanoutComparison]:
    """One FanoutComparison per predictable row with two or more subscribers."""
    def key(row: dict) -> tuple:
        return (row.get("middleware"), row.get("profile"), row.get("payload_bytes"),
                row.get("rate_hz"), row.get("link"), row.get("topology"), row.get("trial"))

    single = {key(r): r for r in rows if (r.get("subscribers") or 1) == 1}
    out = []
    for row in rows:
        k = int(row.get("subscribers") or 1)
        middleware, profile = row.get("middleware"), row.get("profile")
        link = links.get(row.get("link"))
        if k < 2 or link is None or middleware not in MIDDLEWARES or profile not in PROFILES \
                or row.get("status") != "ok" or not row.get("payload_bytes"):
            continue
        step_s, sample_wire = _fanout_model(middleware, profile, int(row["payload_bytes"]),
                                            float(row["rate_hz"]), link,
                                            row.get("type") or "Bytes")
        base = single.get(key(row))
        growth = math.nan
        if base is not None and base.get("latency_mean_ms") is not None:
            growth = float(row["latency_mean_ms"]) - float(base["latency_mean_ms"])
        step = row.get("fanout_step_ms")
        out.append(FanoutComparison(
            cell_id=str(row.get("cell_id")), subscribers=k,
            measured_step_ms=float(step) if step is not None else math.nan,
            model_step_ms=step_s * 1e3,
            measured_growth_ms=growth,
            model_growth_ms=(shared_link_completion(k, sample_wire, link.rate_bits_per_s)
                             - shared_link_completion(1, sample_wire,
                                                      link.rate_bits_per_s)) * 1e3))
    return out


def _fanout_model(middleware: str, profile: str, payload_bytes: int, rate_hz: float,
                  link: LinkInfo, type_name: str = "Bytes") -> tuple[float, float]:
    """(seconds between two subscribers' copies, wire bytes of one sample's first copy):
    the writer sends every datagram to all readers in turn, so the step is one datagram's
    copy time (model.fanout.interleaved_step)."""
    model = _model(middleware, profile, payload_bytes, rate_hz, link, type_name=type_name)
    wire = predict_wire(model, profile, payload_bytes, rate_hz, 0.0, link.rate_bits_per_s,
                        link.mtu).wire
    full = model.fragments_per_datagram  # a full datagram of first copies, as the
    # middleware lays it out (model.wire_traffic: Fast DDS 144 B, Cyclone 48 + 36 B per fragment)
    datagram = min(wire.data_bytes, datagram_wire(
        datagram_rtps_bytes(model, full, full * model.fragment_bytes), link.mtu)[1])
    return interleaved_step(datagram, link.rate_bits_per_s), wire.data_bytes


def fanout_step_s(middleware: str, profile: str, payload_bytes: int, rate_hz: float,
                  link: LinkInfo, type_name: str = "Bytes") -> float:
    """The model's time between two subscribers' copies of one sample (paper 002 Table
    III, as Fast DDS and Cyclone send: interleaved per datagram)."""
    return _fanout_model(middleware, profile, payload_bytes, rate_hz, link, type_name)[0]


FANOUT_TITLE = "Fan-out (1 -> k): step between subscribers and latency added by k copies, ms"
FANOUT_COLUMNS = ("cell", "k", "step", "model", "added", "model")


def fanout_rows(comparisons: list[FanoutComparison]) -> list[list[str]]:
    """One row per fan-out cell, as printed (FANOUT_COLUMNS)."""
    return [[c.cell_id, str(c.subscribers), f"{c.measured_step_ms:.3f}",
             f"{c.model_step_ms:.3f}", f"{c.measured_growth_ms:.2f}",
             f"{c.model_growth_ms:.2f}"] for c in comparisons]


def render_fanout(comparisons: list[FanoutComparison]) -> list[str]:
    lines = ["", FANOUT_TITLE,
             f"{'cell':<44} {'k':>2} {'step':>8} {'model':>8} {'added':>9} {'model':>9}"]
    for cell, k, step, model, added, grown in fanout_rows(comparisons):
        lines.append(f"{cell:<44} {k:>2} {step:>8} {model:>8} {added:>9} {grown:>9}")
    return lines


def compare(rows: list[dict], links: dict[str, LinkInfo]) -> list[Comparison]:
    """One Comparison per predictable row (module docstring), in the run's order."""
    out = []
    for row in rows:
        middleware, profile = row.get("middleware"), row.get("profile")
        if middleware not in MIDDLEWARES or profile not in PROFILES:
            continue
        if (row.get("topics") or 1) != 1 or not row.get("rate_hz") or not row.get(
                "payload_bytes"):
            continue
        link = links.get(row.get("link"))
        if link is None:
            continue
        measured = row.get("wire_amplification")
        measured = float(measured) if measured is not None else math.nan
        predicted, note = verdict_for(middleware, profile, int(row["payload_bytes"]),
                                      float(row["rate_hz"]), link,
                                      int(row.get("subscribers") or 1),
                                      row.get("type") or "Bytes")
        out.append(Comparison(
            cell_id=str(row.get("cell_id")), middleware=middleware, profile=profile,
            payload_bytes=int(row["payload_bytes"]), per=link.per,
            completed=row.get("status") == "ok", measured=measured,
            predicted=predicted, note=note))
    return out


COLUMNS = ("cell", "done", "measured", "model", "error", "verdict")


def rows(comparisons: list[Comparison]) -> list[list[str]]:
    """One row per cell, as printed (COLUMNS): measured and predicted wire bytes per
    payload byte, the error, and the verdict."""
    out = []
    for c in comparisons:
        if c.cannot_complete:
            mark = "model: cannot complete" + (" (but it did)" if c.completed else "")
        else:
            mark = "" if not c.completed else (
                "no wire / payload" if not c.checked else (
                    "ok" if c.within else "OUTSIDE 15 %"))
        model = f"{c.predicted:.3f}" if math.isfinite(c.predicted) else "∞"
        error = f"{c.error:+.1%}" if not c.cannot_complete else "—"
        out.append([c.cell_id, "yes" if c.completed else "no", f"{c.measured:.3f}", model,
                    error, mark])
    return out


def render(comparisons: list[Comparison]) -> list[str]:
    """One line per cell, then the reasons of the cells the model says cannot complete,
    then the count: those cells are neither within nor outside 15 %."""
    lines = [f"{'cell':<44} {'done':<5} {'measured':>9} {'model':>7} {'error':>7}  "]
    for cell, done, measured, model, error, mark in rows(comparisons):
        lines.append(f"{cell:<44} {done:<5} {measured:>9} {model:>7} {error:>7}  {mark}")
    return lines + summary(comparisons)


def summary(comparisons: list[Comparison]) -> list[str]:
    """The reasons of the cells the model says cannot complete, then the count."""
    lines = []
    impossible = [c for c in comparisons if c.cannot_complete]
    by_note: dict[str, list[str]] = {}
    for c in impossible:
        by_note.setdefault(str(c.note), []).append(c.cell_id)
    for note, cells in by_note.items():
        more = f" and {len(cells) - 1} more" if len(cells) > 1 else ""
        lines.append(f"  ∞ {cells[0]}{more}: {note}")
    done = [c for c in comparisons if c.checked]
    inside = [c for c in done if c.within]
    worst = max((abs(c.error) for c in done), default=math.nan)
    unmeasured = sum(c.completed and not c.checked and not c.cannot_complete
                     for c in comparisons)
    line = (f"{len(inside)}/{len(done)} completed cells within {TARGET:.0%} "
            f"(largest error {worst:.1%}); "
            f"{sum(not c.completed for c in comparisons)} not completed")
    if unmeasured:
        line += f"; {unmeasured} completed without a measured wire / payload"
    if impossible:
        done_anyway = sum(c.completed for c in impossible)
        line += (f"; {len(impossible)} the model says cannot complete (not compared"
                 + (f"; {done_anyway} of them completed" if done_anyway else "") + ")")
    lines.append(line)
    return lines
