"""Metrics of a cell with several endpoints: per subscriber ("stream"), and the aggregate.

A stream is one subscriber of one topic, measured against its topic's publisher records
with the definitions of metrics.py. The cell's row carries the aggregate:

- ``published``: samples written, summed over the publishers; ``expected``: deliveries
  expected (each topic's published x its subscribers); ``received``: summed over the
  streams; ``delivery_ratio`` = received / expected;
- ``reception_rate_hz``: the mean over the streams (each is received / its window,
  metrics.py); ``goodput_bit_s``: the sum over the streams;
- ``message_loss_rate`` = 1 - delivery_ratio; ``gap_loss_rate``: paper 002's counter gaps,
  pooled over the streams; ``stall_max_s`` / ``stall_link_up_s``: the longest over the
  streams (with when it began);
- latency mean/p50/p95/p99/max and jitter: over every received sample of every stream
  (pooled);
- ``publish_rate_hz``: the mean over the publishers; ``bytes_published``: their sum;
  ``wire_amplification``: wire bytes / (bytes published + warm-up bytes);
- ``published_exact``: false when a publisher stopped without its summary (the runner
  killed it at the deadline, or it crashed): its records then end at their last flush,
  so they are completed with every sample a subscriber received
  (``completed_from_received``) and its count is a lower bound -- unless they hold every
  seq it was told to write (``holds_every_seq``): a probe writes no more.

With one topic and one subscriber every aggregate equals that stream's value, as in runs
made before cells had several endpoints.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from linklab.bench import metrics as M


@dataclass(frozen=True)
class StreamInput:
    topic: str
    publisher: str
    subscriber: str
    endpoint: str
    pub: np.ndarray        # the topic's publisher records
    sub: np.ndarray        # this subscriber's records
    published_exact: bool = True  # False: ``pub`` is a lower bound (completed_from_received)
    end_ns: int | None = None  # the end of the subscriber's observation (its end), if known


def stream_metrics(stream: StreamInput,
                   dark: Sequence[tuple[int, int | None]] = ()) -> M.CellMetrics:
    m = M.compute(stream.pub, stream.sub, end_ns=stream.end_ns, dark=dark)
    m.published_exact = stream.published_exact
    return m


def completed_from_received(pub: np.ndarray, subs: list[np.ndarray]) -> np.ndarray:
    """A publisher's records with every sample its subscribers received added.

    For a publisher that stopped without its summary: its record file ends at its last
    flush (up to a quarter second before it died), but every sample a subscriber received
    was written, and the subscriber's record carries its seq, send time and size. The
    result (sorted by seq, one record per seq) counts each sample known to be published:
    a lower bound of what was.
    """
    merged = np.concatenate([np.asarray(r, dtype=M.RECORD_DTYPE) for r in [pub, *subs]])
    if not len(merged):
        return merged
    # the first record of each seq, in seq order (pub's own records come first)
    _, first = np.unique(merged["seq"], return_index=True)
    out = merged[first].copy()
    out["t_recv_ns"] = 0
    return out


def holds_every_seq(pub: np.ndarray, messages: int) -> bool:
    """Whether a publisher's (completed) records hold every seq it was told to write.

    A probe publishes seq 0..N-1 for ``--count N`` and never more (probes/__init__.py), so
    records holding all N are its exact count even when it left no summary (killed while
    it lingered for acknowledgements after its last sample).
    """
    if messages <= 0 or not len(pub):
        return False
    seqs = np.unique(np.asarray(pub, dtype=M.RECORD_DTYPE)["seq"])
    return int(np.count_nonzero(seqs < messages)) >= messages


def aggregate(publishers: dict[str, np.ndarray], streams: list[StreamInput], *,
              wire_bytes: int | None, warmup_bytes: int | None, bins_origin_ns: int | None,
              n_bins: int | None, dark: Sequence[tuple[int, int | None]] = ()
              ) -> tuple[M.CellMetrics, list[M.CellMetrics], int]:
    """(the cell's metrics, each stream's, deliveries expected). ``warmup_bytes`` None:
    the warm-up is not known, so neither is the wire bytes' divisor (no amplification).
    ``dark``: the declared outages (metrics.longest_stall)."""
    per_stream = [stream_metrics(s, dark) for s in streams]
    subscribers_of: dict[str, int] = {}
    for s in streams:
        subscribers_of[s.topic] = subscribers_of.get(s.topic, 0) + 1
    m = M.CellMetrics()
    m.published = sum(int(len(p)) for p in publishers.values())
    m.published_exact = all(s.published_exact for s in streams)
    expected = sum(int(len(publishers[t])) * k for t, k in subscribers_of.items())
    m.received = sum(x.received for x in per_stream)
    m.duplicates = sum(x.duplicates for x in per_stream)
    m.bytes_published = sum(int(p["bytes"].astype(np.int64).sum()) if len(p) else 0
                            for p in publishers.values())
    if expected:
        m.delivery_ratio = m.received / expected
        m.message_loss_rate = max(0.0, 1.0 - m.delivery_ratio)
    m.publish_rate_hz = _mean(M.publish_rate_hz(p) for p in publishers.values())
    m.reception_rate_hz = _mean(x.reception_rate_hz for x in per_stream)
    goodputs = [x.goodput_bit_s for x in per_stream if not math.isnan(x.goodput_bit_s)]
    m.goodput_bit_s = float(sum(goodputs)) if goodputs else math.nan
    received = [M.unique_received(s.sub) for s in streams]
    pooled = np.concatenate(received) if received else M.empty_records()
    gaps = [M.gap_counts(r, s.pub) for r, s in zip(received, streams, strict=True)]
    spans = sum(e for _, e in gaps)
    m.gap_loss_rate = sum(g for g, _ in gaps) / spans if spans else math.nan
    _longest_stalls(m, per_stream)
    M.latency_summary(m, pooled)
    grown = [x for x in per_stream if not math.isnan(x.latency_growth_ms)]
    if grown:
        worst = max(grown, key=lambda x: x.latency_growth_ms)
        m.latency_first_third_ms = worst.latency_first_third_ms
        m.latency_growth_ms = worst.latency_growth_ms
    m.wire_bytes = wire_bytes
    if wire_bytes is not None and warmup_bytes is not None and m.bytes_published:
        m.wire_amplification = wire_bytes / (m.bytes_published + warmup_bytes)
    if bins_origin_ns is not None:
        m.rate_bins_hz = M.rate_bins_hz(pooled, bins_origin_ns, n_bins)
    return m, per_stream, expected


def _longest_stalls(m: M.CellMetrics, per_stream: list[M.CellMetrics]) -> None:
    """The cell's stalls: the longest of its streams' (and when it began)."""
    stalled = [x for x in per_stream if not math.isnan(x.stall_max_s)]
    if stalled:
        worst = max(stalled, key=lambda x: x.stall_max_s)
        m.stall_max_s, m.stall_at_s = worst.stall_max_s, worst.stall_at_s
        worst = max(stalled, key=lambda x: x.stall_link_up_s)
        m.stall_link_up_s, m.stall_link_up_at_s = worst.stall_link_up_s, \
            worst.stall_link_up_at_s


def _mean(values) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return float(sum(kept) / len(kept)) if kept else math.nan


def fanout(latency_by_subscriber: dict[str, float]) -> tuple[dict[str, int], float]:
    """(rank 1..k of each subscriber by mean latency, the fitted step in ms).

    Paper 002 Table III: one sample to k subscribers by unicast arrives at each one copy
    time after the previous; the ranks are the order the copies arrived in, and the step
    is the least-squares t_i = first + (i - 1) * step of the ranked mean latencies
    (linklab.model.fanout.fit_fanout_step). NaN step with fewer than two subscribers.
    """
    from linklab.model.fanout import fit_fanout_step

    ordered = sorted((v, k) for k, v in latency_by_subscriber.items() if not math.isnan(v))
    ranks = {name: i + 1 for i, (_, name) in enumerate(ordered)}
    if len(ordered) < 2:
        return ranks, math.nan
    _, step = fit_fanout_step([v for v, _ in ordered])
    return ranks, step
