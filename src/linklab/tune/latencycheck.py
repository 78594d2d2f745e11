"""model.latency against a bench run: measured one-way latency (mean and p95) vs the
replay of the tuned profile's repair protocol, cell by cell. Pure: ``linklab model-check
--latency RUN_DIR`` reads the run and prints these rows.

A cell is predicted when it ran the ``optimized`` profile of Fast DDS or Cyclone DDS
over one UDP topic to one subscriber: the profile the bench generated (linklab.tune with
the cell's rate, payload, link rate, loss and declared CPU load, as
bench/profiles.py's ``tuned`` calls it) gives the fragments, the heartbeat, the pacing;
the middleware's fixed behaviour and this machine's sending and receiving rates are
below. The target (issue 38): mean and p95 within 15 % on every completed cell.
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache

from linklab.middleware import DDS_FAMILIES, FAMILIES
from linklab.model.cpu import fair_share_cores
from linklab.model.latency import (
    NACK_ALL,
    NACK_ONE,
    LatencyInput,
    LatencyPrediction,
    predict,
)
from linklab.model.shaper import bucket_bytes
from linklab.model.wire_traffic import datagram_rtps_bytes, datagram_wire
from linklab.probes.types import sample_extra_bytes
from linklab.tune import TuningInput, tune
from linklab.tune.latencymachine import STORED, Calibration
from linklab.tune.predict import tuned_profile
from linklab.tune.settings import competitors_per_core
from linklab.tune.wirecheck import LinkInfo
from linklab.units import format_percent

TARGET = 0.15
MIDDLEWARES = DDS_FAMILIES  # the DDS probe families (linklab.middleware)


# Fast DDS 2.9 defaults the tuned profile keeps: ReaderTimes.heartbeatResponseDelay and
# WriterTimes.nackResponseDelay, 5 ms each.
FASTDDS_RESPONSE_S = 0.005
# Cyclone DDS 0.10 Internal/AckDelay's default, which the tuned profile keeps
CYCLONE_ACK_DELAY_S = 0.010
# Cyclone's writer blocks in sendmsg while its socket's send buffer is full: the kernel's
# default (net.core.wmem_default, 212 992 B on Debian 12; Cyclone 0.10 keeps it) holds 93
# datagrams of 1472 B, each charged its skb's truesize, 2290 B (measured:
# scripts/udp_sndbuf_datagrams.py on 2026-11-28's VM; 94 at 2266 B on 2026-11-29's: the
# truesize is the machine's, RESULTS "Cyclone" in the latency model)
CYCLONE_SOCKET_DATAGRAMS = 93


@dataclass(frozen=True)
class LatencyComparison:
    cell_id: str
    middleware: str
    payload_bytes: int
    per: float
    cpu_load: str
    completed: bool
    measured_mean_ms: float
    measured_p95_ms: float
    model_mean_ms: float
    model_p95_ms: float
    model_rounds: float = math.nan  # AckNacks that asked for a sample, on average
    fitted: bool = False  # the machine's values were fitted on this cell (tune/latencyfit.py)
    trials: int = 1  # trials pooled into the measured mean and p95 (bench/pooling.py)
    trial_spread: float = math.nan  # the largest difference of one trial's from the pooled

    @property
    def mean_error(self) -> float:
        return _error(self.model_mean_ms, self.measured_mean_ms)

    @property
    def p95_error(self) -> float:
        return _error(self.model_p95_ms, self.measured_p95_ms)

    @property
    def cannot_keep_up(self) -> bool:
        """The replay did not keep up (model.latency: no figure), as the wire check's
        "cannot complete": listed, counted apart, never within or outside 15 %."""
        return not math.isfinite(self.model_mean_ms)

    @property
    def checked(self) -> bool:
        return self.completed and not math.isnan(self.mean_error) \
            and not math.isnan(self.p95_error)

    @property
    def within(self) -> bool:
        return abs(self.mean_error) <= TARGET and abs(self.p95_error) <= TARGET

    @property
    def missed(self) -> bool:
        return self.checked and not self.within

    def to_dict(self) -> dict:
        return {**self.__dict__, "mean_error": self.mean_error, "p95_error": self.p95_error,
                "checked": self.checked, "within": self.within,
                "cannot_keep_up": self.cannot_keep_up}


def _error(model: float, measured: float) -> float:
    if not measured or math.isnan(measured) or not math.isfinite(model):
        return math.nan
    return (model - measured) / measured


@lru_cache(maxsize=1024)
def tuned_settings(payload_bytes: int, rate_hz: float, link: LinkInfo,
                   competitors: float = 0.0, cores: float = 1.0):
    """The settings the bench generated for an ``optimized`` cell (bench/profiles.py
    ``tuned``): the cell's rate, payload, link and declared CPU load. Cached: the machine
    fit (tune/latencyfit.py) asks for the same cell's once per candidate."""
    declared = competitors if competitors > 0 else None
    return tune(TuningInput(rate_hz=rate_hz, payload_bytes=payload_bytes,
                            link_bits_per_s=link.rate_bits_per_s, per=link.per,
                            cpu_competitors=declared,
                            cpu_cores=cores if declared else None)).settings


def latency_input(middleware: str, settings, payload_bytes: int, rate_hz: float,
                  link: LinkInfo, competitors: float = 0.0, cores: float = 1.0,
                  delay_s: float = 0.0, type_name: str = "Bytes",
                  calibration: Calibration = STORED) -> LatencyInput:
    """The replay's input for ``middleware`` under tuned ``settings``
    (tune.settings.TunedSettings) over ``link`` (one-way ``delay_s``), with
    ``competitors`` CPU-bound tasks beside it on ``cores`` cores, on the machine
    ``calibration`` describes (tune/latencymachine.py: the share competitors leave scales
    the writer's rate, the timers' wake-ups grow, the reader's sometimes wait a slice)."""
    if middleware not in MIDDLEWARES:
        raise ValueError(f"no latency model for {middleware!r}")
    profile = tuned_profile(middleware, settings)
    size = payload_bytes + sample_extra_bytes(type_name)
    fragments = max(1, math.ceil(size / profile.fragment_bytes))
    rtps = datagram_rtps_bytes(profile, 1, profile.fragment_bytes)
    wire = datagram_wire(rtps, link.mtu)[1]
    machine = calibration.machine(middleware)
    share = fair_share_cores(cores, competitors) if competitors else 1.0
    per_core = competitors / cores if cores else 0.0
    lateness = calibration.lateness_s(per_core)
    common = dict(
        rate_hz=rate_hz, fragments=fragments, fragment_wire_bytes=wire, per=link.per,
        link_bytes_per_s=link.rate_bits_per_s / 8,
        bucket_bytes=bucket_bytes(link.rate_bits_per_s), delay_s=delay_s,
        # the writer, busy for a whole sample, gets the share competitors leave; the
        # reader's thread sleeps between samples and, woken by a packet, runs at once
        # (the scheduler favours a waking sleeper) but for the slice wait below
        cpu_bytes_per_s=machine.send_bytes_per_s * share,
        receive_bytes_per_s=machine.receive_bytes_per_s, lateness_s=lateness,
        reader_wake_s=calibration.reader_wake_s,
        receive_s=machine.receive_s, control_s=machine.control_s,
        slice_share=calibration.busy_wake_share if competitors else 0.0,
        slice_s=calibration.busy_slice_s * per_core)
    if middleware == "fastdds":
        return LatencyInput(
            **common, heartbeat_s=settings.heartbeat_period_ns / 1e9,
            reader_delay_s=FASTDDS_RESPONSE_S, writer_delay_s=FASTDDS_RESPONSE_S,
            nack_scope=NACK_ALL, heartbeat_needs_sent=True,
            pacer_bytes=settings.pacing_bytes_per_period * wire / rtps,
            pacer_period_s=settings.pacing_period_ms / 1000)
    # Cyclone answers a Heartbeat asking for it at once (its writer asks after every
    # sample and repair), asks again for what it asked for last only after a directed
    # Heartbeat or NackDelay later (model/latency.py: Cyclone 0.10.2's rules)
    return LatencyInput(
        **common, heartbeat_s=settings.cyclone_heartbeat_ns / 1e9, reader_delay_s=0.0,
        writer_delay_s=0.0, nack_scope=NACK_ONE, heartbeat_after_data=True,
        nack_gap_s=settings.cyclone_nack_delay_ns / 1e9, ack_delay_s=CYCLONE_ACK_DELAY_S,
        socket_paced=True, pacer_bytes=CYCLONE_SOCKET_DATAGRAMS * wire, nackfrag_window=fragments)


@lru_cache(maxsize=1024)
def replay(x: LatencyInput) -> LatencyPrediction:
    """model.latency.predict, once per input: ``tune --verify`` asks for the same profile
    for its summary line and for each verify row."""
    return predict(x)


def predicted_for(middleware: str, payload_bytes: int, rate_hz: float, link: LinkInfo,
                  competitors: float = 0.0, cores: float = 1.0,
                  type_name: str = "Bytes",
                  calibration: Calibration = STORED) -> LatencyPrediction:
    """The replay of a bench cell that ran the ``optimized`` profile."""
    settings = tuned_settings(payload_bytes, rate_hz, link, competitors, cores)
    return replay(latency_input(middleware, settings, payload_bytes, rate_hz, link,
                                competitors, cores, type_name=type_name,
                                calibration=calibration))


def for_tuning(t, settings, middleware: str) -> LatencyPrediction:
    """The replay of the profile ``tune`` made (``t``: tune.inputs.TuningInput) for
    ``middleware``, over its link at the loss the settings were sized for, beside the CPU
    load it declared (--cpu-load, or --cpu-share as that many competitors on one core)."""
    if t.cpu_competitors is not None:
        competitors, cores = t.cpu_competitors, t.cpu_cores or float(os.cpu_count() or 1)
    else:
        competitors, cores = competitors_per_core(t), 1.0
    link = LinkInfo(t.link_bits_per_s, settings.sizing_per, t.mtu)
    return replay(latency_input(middleware, settings, t.payload_bytes, t.rate_hz, link,
                                competitors, cores, delay_s=t.delay_s))


def summary_line(t, settings) -> str:
    """``tune``'s line: the model's one-way latency of each chosen middleware's profile."""
    parts = []
    for middleware in t.middlewares:
        if middleware not in MIDDLEWARES:
            continue
        r = for_tuning(t, settings, middleware)
        name = FAMILIES[middleware].label
        parts.append(f"{name} mean {r.mean_s * 1e3:.3g} ms, p95 {r.p95_s * 1e3:.3g} ms"
                     if math.isfinite(r.mean_s) else f"{name}: does not complete")
    return (f"Latency at PER {format_percent(settings.sizing_per)} (model/latency.py, "
            "replayed with this machine's sending and receiving rates; docs/RESULTS.md \"the "
            "latency model\" says how close): " + "; ".join(parts))


def row_contention(row: dict) -> tuple[float, float]:
    """(competitors, cores) of a row's ``cpu_load``: N/core -> N per core of the cores its
    competitors covered; a count -> that many on this machine's cores."""
    load = str(row.get("cpu_load") or "none")
    processes = float(row.get("cpu_load_processes") or 0)
    if load == "none" or processes <= 0:
        return 0.0, 1.0
    if load.endswith("/core"):
        per_core = float(load[:-5])
        return processes, processes / per_core if per_core else 1.0
    return processes, float(os.cpu_count() or 1)


def predictable(row: dict, links: dict[str, LinkInfo]) -> bool:
    """A row the model predicts (module docstring): the optimized profile of a DDS family
    over a link with a rate, one topic to one subscriber."""
    return row.get("middleware") in MIDDLEWARES and row.get("profile") == "optimized" \
        and links.get(row.get("link")) is not None \
        and (row.get("topics") or 1) == 1 and (row.get("subscribers") or 1) == 1 \
        and bool(row.get("rate_hz")) and bool(row.get("payload_bytes"))


def compare(rows: list[dict], links: dict[str, LinkInfo],
            calibration: Calibration = STORED,
            fitted: Collection[str] = ()) -> list[LatencyComparison]:
    """One comparison per predictable row, in the run's order; ``fitted``: the cell ids
    ``calibration`` was fitted on."""
    out = []
    for row in rows:
        if not predictable(row, links):
            continue
        middleware, link = row["middleware"], links[row["link"]]
        competitors, cores = row_contention(row)
        model = predicted_for(middleware, int(row["payload_bytes"]), float(row["rate_hz"]),
                              link, competitors, cores, row.get("type") or "Bytes",
                              calibration)
        out.append(LatencyComparison(
            cell_id=str(row.get("cell_id")), middleware=middleware,
            payload_bytes=int(row["payload_bytes"]), per=link.per,
            cpu_load=str(row.get("cpu_load") or "none"),
            completed=row.get("status") == "ok",
            measured_mean_ms=_num(row.get("latency_mean_ms")),
            measured_p95_ms=_num(row.get("latency_p95_ms")),
            model_mean_ms=model.mean_s * 1e3, model_p95_ms=model.p95_s * 1e3,
            model_rounds=model.rounds_mean, fitted=str(row.get("cell_id")) in fitted,
            trials=int(row.get("trials") or 1), trial_spread=_num(row.get("trial_spread"))))
    return out


def _num(value) -> float:
    return float(value) if value is not None else math.nan


COLUMNS = ("cell", "done", "mean", "model", "error", "p95", "model", "error", "verdict")


def rows(comparisons: list[LatencyComparison]) -> list[list[str]]:
    """One row per cell, as printed (COLUMNS): measured and modelled mean and p95 (ms),
    their errors, the verdict."""
    return [[c.cell_id, "yes" if c.completed else "no", f"{c.measured_mean_ms:.2f}",
             f"{c.model_mean_ms:.2f}", _pct(c.mean_error), f"{c.measured_p95_ms:.2f}",
             f"{c.model_p95_ms:.2f}", _pct(c.p95_error),
             "model: does not keep up" if c.cannot_keep_up else (
                 "" if not c.completed else ("ok" if c.within else "OUTSIDE 15 %")
                 + (" (fitted)" if c.fitted else "") + _trials(c))]
            for c in comparisons]


def render(comparisons: list[LatencyComparison]) -> list[str]:
    """One line per cell: measured and modelled mean and p95 (ms), their errors; then the
    count within the target."""
    lines = [f"{'cell':<44} {'done':<5} {'mean':>8} {'model':>8} {'error':>7}  "
             f"{'p95':>8} {'model':>8} {'error':>7}"]
    for cell, done, mean, model, error, p95, model95, error95, mark in rows(comparisons):
        lines.append(f"{cell:<44} {done:<5} {mean:>8} {model:>8} {error:>7}  "
                     f"{p95:>8} {model95:>8} {error95:>7}  {mark}")
    return lines + summary(comparisons)


def summary(comparisons: list[LatencyComparison]) -> list[str]:
    """How many completed cells are within the target, the largest error; the cells the
    machine was fitted on apart from those it predicts."""
    done = [c for c in comparisons if c.checked]
    worst = max((max(abs(c.mean_error), abs(c.p95_error)) for c in done), default=math.nan)
    predicted = [c for c in done if not c.fitted]
    fitted = [c for c in done if c.fitted]
    line = (f"{sum(c.within for c in done)}/{len(done)} completed cells within {TARGET:.0%} "
            f"on mean and p95 (largest error {worst:.1%})")
    if fitted:
        line += (f": {sum(c.within for c in predicted)}/{len(predicted)} predicted, "
                 f"{sum(c.within for c in fitted)}/{len(fitted)} of the loss-free cells the "
                 "machine was fitted on")
    line += f"; {sum(not c.completed for c in comparisons)} not completed"
    pooled = [c for c in done if c.trials > 1 and not math.isnan(c.trial_spread)]
    if pooled:
        low, high = min(c.trials for c in pooled), max(c.trials for c in pooled)
        line += (f"; measured over {low if low == high else f'{low}-{high}'} trials a "
                 "cell, which differ from their "
                 f"pooled mean or p95 by up to {max(c.trial_spread for c in pooled):.0%} "
                 f"({sum(c.trial_spread > TARGET for c in pooled)} cells by more than "
                 f"{TARGET:.0%})")
    behind = [c for c in comparisons if c.cannot_keep_up]
    if behind:
        line += (f"; {len(behind)} the model says do not keep up (not compared; "
                 f"{sum(c.completed for c in behind)} of them completed)")
    return [line]


def _trials(c: LatencyComparison) -> str:
    """How many trials were pooled and how far the farthest was from the pooled figures."""
    if c.trials <= 1:
        return ""
    spread = f", one off by {c.trial_spread:.0%}" if not math.isnan(c.trial_spread) else ""
    return f" [{c.trials} trials{spread}]"


def _pct(value: float) -> str:
    return f"{value:+.1%}" if not math.isnan(value) else "—"
