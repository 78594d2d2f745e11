"""Metrics of one stream (a subscriber against its topic's publisher): pure functions over
probe record arrays. docs/metrics.md is the one written definition of each; this module is
the one place that computes them.

Record files follow the probe protocol (docs/reference/probe-protocol.md): a 16-byte header
(magic ``LLREC1\\0\\0``, u32 record size = 28, u32 role 0 = subscriber / 1 = publisher),
then packed little-endian records ``<QqqI``: seq, t_send_ns, t_recv_ns (0 in publisher
files), bytes. All times are CLOCK_MONOTONIC of one kernel (or put on one clock first:
linklab.field), so t_recv - t_send is the one-way latency.

Definitions (run format 2; format 1 is in docs/metrics.md "Runs made before"):
- published P: the samples the publisher wrote (its records; warm-up excluded); received
  R: distinct sequence numbers the subscriber got (duplicates excluded);
- delivered = R / P; message loss = 1 - delivered. Paper 002 (002_d18906a16de1bd6a.txt
  §IV-A) defines the rate of message loss as received over what the subscriber "was
  supposed to receive"; its subscriber counted what it was supposed to by the gaps in
  the counters it saw. The publisher's own records say it exactly, so nothing before the
  first or after the last sample received escapes. The counter-gap figure is kept under
  its own name, ``gap_loss_rate``, counted over the seqs the publisher really wrote;
- reception rate = R / W, W = the larger of the reception span (last - first arrival) and
  the publishing span (last - first write). Paper 000 (000_10b8b18b6f5db8a8.txt §V-B)
  divides by "the time span between the first and the last message"; for a stream that
  completes both spans agree (within the change in latency between the first and the last
  sample), which is every cell the paper gives a rate for (its Table II prints "—" for
  the others). With W never shorter than the publishing span, a burst cannot raise the
  rate above the rate the samples were written at: 46 samples arriving in the last 0.3 s
  of a 10 s stream are 4.6 Hz, not 153 Hz. 0 Hz when nothing arrived;
- goodput = payload bits received / W (the same window);
- stall = the longest interval in which nothing arrived while at least one sample had been
  written and had not (yet) arrived; a sample that never arrives is outstanding until the
  end of the observation (the subscriber's end, when known; else the last write or
  arrival). ``stall_link_up_s`` is the same with the time inside declared outages (the
  link down on purpose) left out: the part a middleware answers for;
- publish rate = (P - 1) / the publishing span: the rate the writes kept;
- latency = t_recv - t_send of each received sample (first copy): mean, p50/p95/p99
  (linear interpolation), max; jitter = their population standard deviation (paper 000
  §V-B).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# The record format has one definition: linklab.probes.records (re-exported here).
from linklab.probes.records import (  # noqa: F401
    HEADER,
    MAGIC,
    RECORD_DTYPE,
    ROLE_PUBLISHER,
    ROLE_SUBSCRIBER,
    RecordFileError,
)
from linklab.probes.records import read_records as _read_record_file
from linklab.rundir.records import CellMetrics

# The definitions above are run format 2's (METRICS_VERSION); a row computed with them
# says so (linklab.rundir.format1 reads the rows of format 1 in these terms). What they
# fill is the run directory's record of a measurement (linklab.rundir.records).


def empty_records() -> np.ndarray:
    return np.zeros(0, dtype=RECORD_DTYPE)


def read_records(path: str | Path) -> tuple[int, np.ndarray]:
    """(role, records) of a record file. A file cut mid-record keeps the whole records."""
    record_file = _read_record_file(path)
    role = ROLE_PUBLISHER if record_file.role == "pub" else ROLE_SUBSCRIBER
    return role, record_file.records.copy()


def write_records(path: str | Path, role: int, records: np.ndarray) -> None:
    """Write a record file (used for hand-made test files and for re-encoding)."""
    with open(path, "wb") as out:
        out.write(HEADER.pack(MAGIC, RECORD_DTYPE.itemsize, role))
        out.write(np.asarray(records, dtype=RECORD_DTYPE).tobytes())


def make_records(rows: list[tuple[int, int, int, int]]) -> np.ndarray:
    return np.array(rows, dtype=RECORD_DTYPE)


# --- metrics ------------------------------------------------------------------------

def unique_received(sub: np.ndarray) -> np.ndarray:
    """Subscriber records with duplicates of a sequence number removed (first kept)."""
    if len(sub) == 0:
        return sub
    _, first = np.unique(sub["seq"], return_index=True)
    return sub[np.sort(first)]


def _span_s(times_ns: np.ndarray) -> float:
    if len(times_ns) < 2:
        return 0.0
    return (int(times_ns.max()) - int(times_ns.min())) / 1e9


def window_s(received: np.ndarray, pub: np.ndarray) -> float:
    """W: the larger of the reception span and the publishing span (s); NaN when both are
    empty (fewer than two arrivals and fewer than two writes)."""
    span = max(_span_s(received["t_recv_ns"]), _span_s(pub["t_send_ns"]))
    return span if span > 0 else math.nan


def reception_rate_hz(received: np.ndarray, pub: np.ndarray) -> float:
    """R / W (distinct samples received; module docstring). NaN when W is not defined."""
    window = window_s(received, pub)
    return len(received) / window if not math.isnan(window) else math.nan


def goodput_bit_s(received: np.ndarray, pub: np.ndarray) -> float:
    """Payload bits received / W (the reception rate's window)."""
    window = window_s(received, pub)
    if math.isnan(window):
        return math.nan
    return float(received["bytes"].astype(np.int64).sum()) * 8 / window


def latencies_ms(sub: np.ndarray) -> np.ndarray:
    return (sub["t_recv_ns"].astype(np.int64) - sub["t_send_ns"].astype(np.int64)) / 1e6


def gap_counts(received: np.ndarray, pub: np.ndarray) -> tuple[int, int]:
    """(missing, expected) by paper 002's counter gaps: the seqs between the first and the
    last received that the publisher wrote (all of them when its records are empty), and
    how many of those did not arrive. A seq the publisher never wrote (a failed write) is
    no gap."""
    if len(received) == 0:
        return 0, 0
    got = np.unique(received["seq"].astype(np.uint64))
    first, last = int(got[0]), int(got[-1])
    if len(pub):
        written = np.unique(pub["seq"].astype(np.uint64))
        inside = written[(written >= first) & (written <= last)]
        expected = int(len(np.union1d(inside, got)))
    else:
        expected = last - first + 1
    return expected - len(got), expected


def gap_loss_rate(received: np.ndarray, pub: np.ndarray) -> float:
    """Paper 002's counter-gap figure (gap_counts); NaN with nothing received."""
    missing, expected = gap_counts(received, pub)
    return missing / expected if expected else math.nan


@dataclass(frozen=True)
class Stall:
    """The longest interval with nothing arriving while samples were outstanding."""

    longest_s: float = math.nan   # NaN: nothing was written
    started_ns: int | None = None  # when it began (the probes' clock)
    link_up_s: float = math.nan   # the longest such interval, declared outages left out
    link_up_started_ns: int | None = None  # when that one began


def merge_windows(windows: Sequence[tuple[int, int | None]]) -> list[tuple[int, float]]:
    """Dark windows (start, end or None = until the end) sorted and merged."""
    spans = sorted((int(a), math.inf if b is None else float(b)) for a, b in windows)
    out: list[tuple[int, float]] = []
    for a, b in spans:
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _outside(begin: np.ndarray, end: np.ndarray, dark: list[tuple[int, float]]
             ) -> np.ndarray:
    """For each interval [begin, end]: its time outside the (merged) dark windows."""
    covered = np.zeros(len(begin))
    for a, b in dark:
        covered += np.clip(np.minimum(end, b) - np.maximum(begin, a), 0.0, None)
    return np.clip(end - begin - covered, 0.0, None)


def longest_stall(pub: np.ndarray, received: np.ndarray, end_ns: int | None = None,
                  dark: Sequence[tuple[int, int | None]] = ()) -> Stall:
    """The stall of a stream (module docstring). ``received``: distinct samples
    (unique_received); ``end_ns``: the end of the observation (the subscriber's end),
    never earlier than the last write or arrival; ``dark``: declared outages (start,
    end or None), in the probes' clock."""
    # every sample written: the publisher's records, and any write they missed that a
    # subscriber received (first occurrence wins: the publisher's own)
    seq_all = np.concatenate([pub["seq"], received["seq"]]).astype(np.int64)
    send_all = np.concatenate([pub["t_send_ns"], received["t_send_ns"]]).astype(np.float64)
    if not len(seq_all):
        return Stall()
    seqs, first = np.unique(seq_all, return_index=True)
    s = send_all[first]
    got = np.argsort(received["seq"], kind="stable")
    got_seq = received["seq"][got].astype(np.int64)
    got_recv = received["t_recv_ns"][got].astype(np.float64)
    at = np.searchsorted(got_seq, seqs)
    hit = (at < len(got_seq)) & (got_seq[np.minimum(at, max(len(got_seq) - 1, 0))] == seqs) \
        if len(got_seq) else np.zeros(len(seqs), dtype=bool)
    r = np.full(len(seqs), math.inf)
    r[hit] = got_recv[at[hit]]
    arrivals = np.sort(r[np.isfinite(r)])
    finish = max(float(s.max()), float(arrivals[-1]) if len(arrivals) else -math.inf,
                 float(end_ns) if end_ns is not None else -math.inf)
    starts = np.concatenate([[s.min()], arrivals])
    ends = np.concatenate([arrivals, [finish]])
    # m(y): the earliest write among the samples not arrived before y (suffix minimum of
    # the writes, taken in arrival order); outstanding in the gap when it precedes y
    order = np.argsort(r, kind="stable")
    r_sorted, s_by_r = r[order], s[order]
    suffix_min = np.minimum.accumulate(s_by_r[::-1])[::-1]
    index = np.searchsorted(r_sorted, ends, side="left")
    earliest = np.where(index < len(s), suffix_min[np.minimum(index, len(s) - 1)], math.inf)
    begin = np.maximum(starts, earliest)
    stalls = np.where(earliest < ends, ends - begin, 0.0)
    k = int(np.argmax(stalls))
    up = np.where(stalls > 0, _outside(begin, ends, merge_windows(dark)), 0.0)
    k_up = int(np.argmax(up))
    return Stall(float(stalls[k]) / 1e9, int(begin[k]) if stalls[k] > 0 else None,
                 float(up[k_up]) / 1e9, int(begin[k_up]) if up[k_up] > 0 else None)


def latency_thirds_ms(sub: np.ndarray) -> tuple[float, float]:
    """(median latency of the first third, of the last third) of the samples by send time.

    Their difference says whether latency grew through a run (a queue filling) while
    ignoring single spikes (search.py uses it). NaN with fewer than 3 samples.
    """
    if len(sub) < 3:
        return math.nan, math.nan
    ordered = sub[np.argsort(sub["t_send_ns"], kind="stable")]
    lat = latencies_ms(ordered)
    third = len(lat) // 3
    return float(np.median(lat[:third])), float(np.median(lat[-third:]))


def rate_bins_hz(sub: np.ndarray, origin_ns: int, n_bins: int | None = None,
                 bin_s: float = 1.0) -> list[int]:
    """Samples received in each ``bin_s`` window after ``origin_ns`` (per second = Hz).

    Seed 000 Fig. 7 plots exactly this: reception rate in 1-second bins across an outage.
    Samples before the origin are left out.
    """
    t = (sub["t_recv_ns"].astype(np.int64) - int(origin_ns)) / 1e9
    t = t[t >= 0]
    if n_bins is None:
        n_bins = int(math.floor(t.max() / bin_s)) + 1 if len(t) else 0
    counts = np.zeros(n_bins, dtype=np.int64)
    index = np.floor(t / bin_s).astype(np.int64)
    index = index[index < n_bins]
    np.add.at(counts, index, 1)
    return [round(c / bin_s, 6) if bin_s != 1.0 else int(c) for c in counts]


def publish_rate_hz(pub: np.ndarray) -> float:
    """The rate the publisher kept: intervals between its writes / the publishing span
    ((P - 1) / span: exactly the asked rate for writes on time; NaN with fewer than two).
    Format 1 divided P by the span, n / (n - 1) high: 5 % for a 20-sample search trial."""
    span = _span_s(pub["t_send_ns"])
    return (len(pub) - 1) / span if span > 0 else math.nan


def latency_summary(m: CellMetrics, received: np.ndarray) -> None:
    """Latency mean, percentiles, max and jitter of ``received`` into ``m``."""
    if not len(received):
        return
    lat = latencies_ms(received)
    m.latency_mean_ms = float(lat.mean())
    m.latency_p50_ms, m.latency_p95_ms, m.latency_p99_ms = (
        float(v) for v in np.percentile(lat, [50, 95, 99]))
    m.latency_max_ms = float(lat.max())
    m.jitter_ms = float(lat.std())  # population standard deviation (seed 000 §V-B)


def compute(pub: np.ndarray, sub: np.ndarray, *, wire_bytes: int | None = None,
            warmup_bytes: int = 0, model_amplification: float = math.nan,
            bins_origin_ns: int | None = None, n_bins: int | None = None,
            end_ns: int | None = None,
            dark: Sequence[tuple[int, int | None]] = ()) -> CellMetrics:
    """All metrics of a stream from its publisher and subscriber records.

    ``warmup_bytes``: payload of the warm-up samples the publisher sent before the
    measured ones; they crossed the link too, so wire amplification counts them as
    published. ``end_ns`` and ``dark``: longest_stall's.
    """
    received = unique_received(sub)
    m = CellMetrics()
    m.published = int(len(pub))
    m.received = int(len(received))
    m.duplicates = int(len(sub) - len(received))
    m.bytes_published = int(pub["bytes"].astype(np.int64).sum()) if len(pub) else 0
    if m.published:
        m.delivery_ratio = m.received / m.published
        m.message_loss_rate = max(0.0, 1.0 - m.delivery_ratio)
    m.publish_rate_hz = publish_rate_hz(pub)
    m.reception_rate_hz = reception_rate_hz(received, pub)
    m.goodput_bit_s = goodput_bit_s(received, pub)
    m.gap_loss_rate = gap_loss_rate(received, pub)
    stall = longest_stall(pub, received, end_ns, dark)
    m.stall_max_s, m.stall_link_up_s = stall.longest_s, stall.link_up_s
    origin = int(pub["t_send_ns"].min()) if len(pub) else None
    if stall.started_ns is not None and origin is not None:
        m.stall_at_s = (stall.started_ns - origin) / 1e9
    if stall.link_up_started_ns is not None and origin is not None:
        m.stall_link_up_at_s = (stall.link_up_started_ns - origin) / 1e9
    latency_summary(m, received)
    if len(received):
        first, last = latency_thirds_ms(received)
        m.latency_first_third_ms, m.latency_growth_ms = first, last - first
    m.wire_bytes = wire_bytes
    if wire_bytes is not None and m.bytes_published:
        m.wire_amplification = wire_bytes / (m.bytes_published + warmup_bytes)
    m.model_amplification = model_amplification
    if bins_origin_ns is not None:
        m.rate_bins_hz = rate_bins_hz(received, bins_origin_ns, n_bins)
    return m
