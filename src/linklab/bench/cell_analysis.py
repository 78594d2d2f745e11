"""Analysing what a cell's probes left (the second step of collecting a cell: read ->
analyse -> row): the metrics of each subscriber's stream and of the cell
(bench.streams, docs/metrics.md), each stream's verdict (bench.verdict), the notes a
row carries, and the fan-out of a topic to several subscribers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from linklab.bench import verdict as V
from linklab.bench.cell_files import CellFiles, ProbeReport
from linklab.bench.link_counters import counter_deltas
from linklab.bench.matrix import Cell
from linklab.bench.security_applied import unapplied_security
from linklab.bench.simlag import simulator_lag_ms, simulator_lag_note
from linklab.bench.streams import (
    StreamInput,
    aggregate,
    completed_from_received,
    fanout,
    holds_every_seq,
)
from linklab.middleware import family_of
from linklab.probes.upstream import recognise
from linklab.rundir import CellMetrics


@dataclass
class StreamJudgement:
    """One subscriber's stream: what it measured and the verdict on it."""

    stream: StreamInput
    metrics: CellMetrics
    rule: V.Rule  # the completion rule that decided it
    history_applied: Any
    pub: ProbeReport
    sub: ProbeReport
    reason: str | None  # None: ok
    known: str | None  # the known upstream failure recognised in the logs, if any
    fanout_rank: int | None = None
    model_fanout_offset_ms: float = math.nan


@dataclass
class CellAnalysis:
    """Everything a cell's row is made of, once its files are read."""

    measured: CellMetrics  # aggregated over the subscribers
    expected: int | None
    streams: list[StreamJudgement]
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    counters: dict[str, int | None] = field(default_factory=dict)
    lag_ms: float | None = None
    outage_at_s: float = math.nan
    fanout_step_ms: float = math.nan
    model_fanout_step_ms: float = math.nan

    @property
    def known_failures(self) -> list[str]:
        return sorted({s.known for s in self.streams if s.known})


@dataclass(frozen=True)
class Unmatched:
    """The subscribers the discovery gate found unmatched at the go, and why."""

    endpoints: tuple[str, ...] | list[str] = ()
    reason: str = ""


def analyse_cell(cell: Cell, files: CellFiles, ended_ns: int, outage_s: float, bed: Any,
                 model_fanout, unmatched: Unmatched) -> CellAnalysis:
    """The cell's metrics, verdicts and notes from its files."""
    pub_hosts = tuple(dict.fromkeys(ep.host for ep in files.endpoints("pub")))
    sub_hosts = tuple(dict.fromkeys(ep.host for ep in files.endpoints("sub")))
    counters = counter_deltas(files.before, files.after, pub_hosts, sub_hosts)
    wire = counters.pop("wire_bytes")
    # an ns-3 medium runs in real time and may lag it: latencies through it include that
    lag_ms = simulator_lag_ms(files.before, files.after)
    inputs = _stream_inputs(files, ended_ns, bed)
    starts = [int(r["t_send_ns"].min()) for r in inputs.publishers.values() if len(r)]
    origin = min(starts) if starts else None
    # the warm-up samples are counted by the publisher alone (its summary): without it
    # the wire bytes have no known divisor, so the cell gets no wire amplification
    unknown_warmup = [ep.name for ep in files.publishers.values()
                      if cell.warmup_s > 0 and not files.reports[ep.name].summarised]
    warmup_bytes = None if unknown_warmup else sum(
        files.reports[ep.name].warmup_samples * ep.topic.payload_bytes
        for ep in files.publishers.values())
    n_bins = max(1, math.ceil((ended_ns - origin) / 1e9)) if origin is not None else None
    measured, per_stream, expected = aggregate(
        inputs.publishers, inputs.streams, wire_bytes=wire, warmup_bytes=warmup_bytes,
        bins_origin_ns=origin, n_bins=n_bins, dark=bed.dark_windows_ns())
    analysis = CellAnalysis(measured, expected, [], counters=counters, lag_ms=lag_ms)
    lag_note = simulator_lag_note(lag_ms)
    if lag_note:
        analysis.notes.append(lag_note)
    if unknown_warmup and wire is not None:
        analysis.notes.append(f"no wire / payload: {', '.join(unknown_warmup)} left no "
                              "summary, so its warm-up samples are unknown")
    _judge_streams(cell, files, inputs.streams, per_stream, unmatched, analysis)
    unsecured = unapplied_security(cell.middleware, files.reports)
    if unsecured:
        analysis.reasons.append(unsecured)
    analysis.fanout_step_ms, analysis.model_fanout_step_ms = _fanout(
        cell, files, analysis.streams, model_fanout)
    outage_on = bed.outage_on_ns() if outage_s > 0 else None
    # when the outage really began, seconds after the first measured sample
    if outage_on and origin:
        analysis.outage_at_s = (outage_on - origin) / 1e9
    return analysis


@dataclass
class _Inputs:
    publishers: dict[str, Any]  # topic -> its publisher's records (completed if inexact)
    streams: list[StreamInput]


def _stream_inputs(files: CellFiles, ended_ns: int, bed: Any) -> _Inputs:
    """Each subscriber's stream against its topic's publisher's records."""
    pub_of = files.publishers
    pub_records = dict(files.pub_records)
    # a publisher with no summary (killed at the deadline, or crashed) flushed its records
    # only up to a quarter second before it died: count what is known to be published
    inexact = {t for t, ep in pub_of.items() if not files.reports[ep.name].summarised}
    for t in inexact:
        pub_records[t] = completed_from_received(
            pub_records[t], [files.sub_records[ep.name] for ep in files.endpoints("sub")
                             if ep.topic.name == t])
    inexact = {t for t in inexact
               if not holds_every_seq(pub_records[t], pub_of[t].topic.messages)}
    streams = [StreamInput(ep.topic.name, ep.topic.publisher, ep.host, ep.name,
                           pub_records[ep.topic.name], files.sub_records[ep.name],
                           published_exact=ep.topic.name not in inexact,
                           end_ns=_observed_until(files.reports[ep.name], ended_ns, bed))
               for ep in files.endpoints("sub")]
    return _Inputs(pub_records, streams)


def _observed_until(report: ProbeReport, ended_ns: int, bed: Any) -> int | None:
    """The end of a subscriber's observation on the probes' clock: when it ended (noticed
    by the runner's poll), or the cell's end; None when its clock is not this machine's
    (the stall then runs to the stream's last write or arrival)."""
    if not bed.shares_local_clock:
        return None
    ended = report.ended_ns
    return min(int(ended), ended_ns) if ended is not None else ended_ns


def _judge_streams(cell: Cell, files: CellFiles, streams: list[StreamInput],
                   per_stream: list[CellMetrics], unmatched: Unmatched,
                   analysis: CellAnalysis) -> None:
    """Each stream's verdict into ``analysis``; its reason and notes, named by topic and
    subscriber when the cell has several streams."""
    partly_served: set[str] = set()
    for stream, metrics in zip(streams, per_stream, strict=True):
        judged, note = _judge(cell, files, stream, metrics, unmatched)
        analysis.streams.append(judged)
        publisher = files.publishers[stream.topic]
        served, readers = judged.pub.matched_readers, len(publisher.topic.subscribers)
        if (served is not None and 0 < served < readers
                and publisher.name not in partly_served):
            partly_served.add(publisher.name)
            analysis.notes.append(f"topic {stream.topic}: the publisher began with {served} "
                                  f"of {readers} readers matched (the runner's go)")
        where = f"topic {stream.topic} subscriber {stream.endpoint}" if len(streams) > 1 \
            else ""
        if judged.reason is not None:
            analysis.reasons.append(f"{where}: {judged.reason}" if where else judged.reason)
        if note:
            analysis.notes.append(f"{where}: {note}" if where else note)


def _judge(cell: Cell, files: CellFiles, stream: StreamInput, metrics: CellMetrics,
           unmatched: Unmatched) -> tuple[StreamJudgement, str | None]:
    """(the stream's verdict, its exit note)."""
    ep_pub = files.publishers[stream.topic]
    pub, sub = files.reports[ep_pub.name], files.reports[stream.endpoint]
    rule = V.rule_for(family_of(cell.middleware).name, ep_pub.qos, ep_pub.topic.interval_s)
    outcome = V.Outcome(
        publisher_finished=metrics.published >= ep_pub.topic.messages,
        publisher_exit=pub.exit_code, subscriber_exit=sub.exit_code,
        expects_all=rule.expects_all, stall_limit_s=rule.stall_limit_s,
        publisher_signalled=pub.signalled_by_runner,
        subscriber_signalled=sub.signalled_by_runner,
        publisher_completed=pub.completed, subscriber_completed=sub.completed,
        published_exact=stream.published_exact, publisher_summary=pub.summarised,
        readers_unmatched=pub.readers_unmatched,
        stream_ended=sub.end_reason == "end_of_stream")
    reason = V.failure_reason(metrics, outcome, ep_pub.topic.interval_s,
                              ep_pub.topic.messages)
    if stream.endpoint in unmatched.endpoints:
        reason = unmatched.reason + (f"; {reason}" if reason else "")
    known = None
    if reason is not None:
        known = recognise([files.log(ep_pub.name), files.log(stream.endpoint)])
        if known is not None:
            reason = f"known upstream failure: {known.describe()}; {reason}"
    if reason is not None and reason.startswith("crashed:"):
        errors = [*pub.errors, *sub.errors]
        if errors:
            reason += f" ({'; '.join(map(str, errors))[:300]})"
    note = V.exit_note(outcome)
    if sub.polled_samples:
        note = "; ".join(filter(None, [note, f"{sub.polled_samples} samples taken by the "
                                             "poll fallback (late receive timestamps)"]))
    return StreamJudgement(stream, metrics, rule, V.history_flag(ep_pub.qos), pub, sub,
                           reason, known.name if known else None), note


def _fanout(cell: Cell, files: CellFiles, judged: list[StreamJudgement],
            model_fanout) -> tuple[float, float]:
    """Each stream's fan-out rank and the model's offset for it; (the fitted step, the
    model's) of the first topic with several subscribers (paper 002 Table III)."""
    by_topic: dict[str, dict[str, float]] = {}
    for j in judged:
        by_topic.setdefault(j.stream.topic, {})[j.stream.endpoint] = j.metrics.latency_mean_ms
    fanout_step = model_step = math.nan
    for topic_name, latencies in by_topic.items():
        ranks, step = fanout(latencies)
        model = model_fanout(cell, files.publishers[topic_name].topic, len(latencies))
        for j in judged:
            if j.stream.topic == topic_name:
                rank = ranks.get(j.stream.endpoint)
                j.fanout_rank = rank
                j.model_fanout_offset_ms = (model * (rank - 1)
                                            if rank and not math.isnan(model) else math.nan)
        if len(latencies) > 1 and math.isnan(fanout_step):
            fanout_step, model_step = step, model
    return fanout_step, model_step
