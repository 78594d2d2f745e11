"""A cell's analysis as the run directory's records (the last step of collecting a cell:
read -> analyse -> row): one ``StreamRow`` per subscriber and the ``CellFields`` its row
of cells.parquet gets (linklab.rundir.records; docs/run-directory.md)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from linklab.bench.cell_analysis import CellAnalysis
from linklab.bench.cell_files import CellFiles
from linklab.bench.link_counters import interface_deltas
from linklab.bench.matrix import Cell
from linklab.rundir import CellFields, StreamRow

PER_SUBSCRIBER = "per subscriber (see streams)"  # a cell whose topics have other rules


def stream_rows(cell: Cell, analysis: CellAnalysis) -> list[StreamRow]:
    """One row per subscriber of the cell, against its topic's publisher."""
    return [StreamRow(
        metrics=j.metrics, cell_id=cell.cell_id, topic=j.stream.topic,
        publisher=j.stream.publisher, subscriber=j.stream.subscriber,
        endpoint=j.stream.endpoint, status="ok" if j.reason is None else "failed",
        failure_reason=j.reason, known_failure=j.known, completion_rule=j.rule.text(),
        history_applied=j.history_applied, pub_cpu_s=j.pub.cpu_s, sub_cpu_s=j.sub.cpu_s,
        pub_cpu_fraction=j.pub.cpu_fraction, sub_cpu_fraction=j.sub.cpu_fraction,
        pub_rss_peak_bytes=j.pub.rss_peak_bytes, sub_rss_peak_bytes=j.sub.rss_peak_bytes,
        write_failures=j.pub.write_failures, polled_samples=j.sub.polled_samples,
        applied_qos=j.sub.ros_qos_text(), pub_applied_qos=j.pub.ros_qos_text(),
        fanout_rank=j.fanout_rank, model_fanout_offset_ms=j.model_fanout_offset_ms)
        for j in analysis.streams]


def cell_fields(files: CellFiles, analysis: CellAnalysis, broker_cpu_s: float,
                outage_s: float, unmatched: Iterable[str],
                bridge_cpu_s: float = math.nan) -> CellFields:
    """What the measurement adds to the cell's row (``unmatched``: the subscribers whose
    reader matched no publisher before the go; their stream rows say so)."""
    pubs = [files.reports[ep.name] for ep in files.endpoints("pub")]
    subs = [files.reports[ep.name] for ep in files.endpoints("sub")]
    unmatched = set(unmatched)
    rules = [j.rule.text() for j in analysis.streams]
    return CellFields(
        metrics=analysis.measured,
        status="ok" if not analysis.reasons else "failed",
        failure_reason="; ".join(analysis.reasons)[:2000] or None,
        known_failure="; ".join(analysis.known_failures) or None,
        exit_note="; ".join(analysis.notes) or None,
        completion_rule=rules[0] if len(set(rules)) == 1 else PER_SUBSCRIBER,
        expected=analysis.expected, outage_s=outage_s,
        unmatched_subscribers=sum(1 for ep in files.endpoints("sub") if ep.name in unmatched),
        outage_at_s=analysis.outage_at_s,
        warmup_samples=sum(r.warmup_samples for r in pubs),
        write_failures=_sum(r.write_failures for r in pubs),
        polled_samples=_sum(r.polled_samples for r in subs),
        counters=analysis.counters,
        pub_cpu_s=_sum(r.cpu_s for r in pubs), sub_cpu_s=_sum(r.cpu_s for r in subs),
        cpu_fraction_max=max((r.cpu_fraction for r in pubs + subs), default=math.nan),
        broker_cpu_s=broker_cpu_s, bridge_cpu_s=bridge_cpu_s,
        pub_rss_peak_bytes=_max(r.rss_peak_bytes for r in pubs),
        sub_rss_peak_bytes=_max(r.rss_peak_bytes for r in subs),
        fanout_step_ms=analysis.fanout_step_ms,
        model_fanout_step_ms=analysis.model_fanout_step_ms,
        interfaces=interface_deltas(files.before, files.after),
        simulator_lag_max_ms=math.nan if analysis.lag_ms is None else analysis.lag_ms)


def _sum(values: Iterable[Any]) -> Any:
    kept = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(kept) if kept else None


def _max(values: Iterable[Any]) -> Any:
    kept = [v for v in values if v is not None]
    return max(kept) if kept else None

