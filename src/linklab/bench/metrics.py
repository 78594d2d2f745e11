"""Metrics of one cell: pure functions over probe record arrays.

Record files follow DESIGN.md "Probes": a 16-byte header (magic ``LLREC1\\0\\0``, u32
record size = 28, u32 role 0 = subscriber / 1 = publisher), then packed little-endian
records ``<QqqI``: seq, t_send_ns, t_recv_ns (0 in publisher files), bytes. All times
are CLOCK_MONOTONIC of one kernel, so t_recv - t_send is the one-way latency.

Definitions (seed 000 = ../shared/seeds/000_10b8b18b6f5db8a8.txt, §V-B):
- reception rate (Hz) = messages received / (t_last - t_first), times of reception;
- average latency = mean of t_recv - t_send; jitter = standard deviation of latency;
- a cell whose mean latency exceeds 100 publish intervals is shown as "—" (Table II
  caption); one that did not complete is "—" too. Here such cells are marked
  ``failed`` with a reason and keep every number that was measured.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
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

# Table II caption: latency above 100 transmission intervals is "—".
LATENCY_LIMIT_INTERVALS = 100


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


def reception_rate_hz(sub: np.ndarray) -> float:
    """Received / (t_last - t_first) over reception times (seed 000 §V-B). NaN if < 2."""
    if len(sub) < 2:
        return math.nan
    span_s = (int(sub["t_recv_ns"].max()) - int(sub["t_recv_ns"].min())) / 1e9
    return len(sub) / span_s if span_s > 0 else math.nan


def latencies_ms(sub: np.ndarray) -> np.ndarray:
    return (sub["t_recv_ns"].astype(np.int64) - sub["t_send_ns"].astype(np.int64)) / 1e6


def message_loss_rate(sub: np.ndarray) -> float:
    """Messages missing between the first and the last received, over that span.

    Paper 002 (002_d18906a16de1bd6a.txt §IV, "rate of message loss"): each message carries
    a counter; the subscriber compares each counter with the last one received and counts
    the gap as lost. Messages before the first or after the last received are not seen
    by that rule and are not counted (delivery_ratio, against the publisher's records,
    counts them). NaN with nothing received.
    """
    if len(sub) == 0:
        return math.nan
    seqs = np.unique(sub["seq"].astype(np.uint64))
    span = int(seqs[-1]) - int(seqs[0]) + 1
    return (span - len(seqs)) / span


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


def goodput_bit_s(sub: np.ndarray) -> float:
    """Payload bits received / reception span (same span as the reception rate)."""
    if len(sub) < 2:
        return math.nan
    span_s = (int(sub["t_recv_ns"].max()) - int(sub["t_recv_ns"].min())) / 1e9
    return float(sub["bytes"].astype(np.int64).sum()) * 8 / span_s if span_s > 0 else math.nan


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


@dataclass
class CellMetrics:
    """What one cell measured. NaN where nothing was measured."""

    published: int = 0
    published_exact: bool = True  # False: a lower bound (the publisher left no summary)
    received: int = 0
    duplicates: int = 0
    delivery_ratio: float = math.nan
    reception_rate_hz: float = math.nan
    latency_mean_ms: float = math.nan
    latency_p50_ms: float = math.nan
    latency_p95_ms: float = math.nan
    latency_p99_ms: float = math.nan
    latency_max_ms: float = math.nan
    jitter_ms: float = math.nan
    goodput_bit_s: float = math.nan
    message_loss_rate: float = math.nan  # paper 002: counter gaps at the subscriber
    latency_first_third_ms: float = math.nan  # median of the first third, by send time
    latency_growth_ms: float = math.nan  # last third's median minus the first third's
    publish_rate_hz: float = math.nan
    bytes_published: int = 0
    wire_bytes: int | None = None
    wire_amplification: float = math.nan  # wire bytes / bytes published (incl. warm-up)
    model_amplification: float = math.nan  # the model's R_DDS / R_pub for this cell
    rate_bins_hz: list[int] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def compute(pub: np.ndarray, sub: np.ndarray, *, wire_bytes: int | None = None,
            warmup_bytes: int = 0, model_amplification: float = math.nan,
            bins_origin_ns: int | None = None, n_bins: int | None = None) -> CellMetrics:
    """All metrics of a cell from its publisher and subscriber records.

    ``warmup_bytes``: payload of the warm-up samples the publisher sent before the
    measured ones; they crossed the link too, so wire amplification counts them as
    published.
    """
    received = unique_received(sub)
    m = CellMetrics()
    m.published = int(len(pub))
    m.received = int(len(received))
    m.duplicates = int(len(sub) - len(received))
    m.bytes_published = int(pub["bytes"].astype(np.int64).sum()) if len(pub) else 0
    if m.published:
        m.delivery_ratio = m.received / m.published
    if m.published >= 2:
        span_s = (int(pub["t_send_ns"].max()) - int(pub["t_send_ns"].min())) / 1e9
        if span_s > 0:
            m.publish_rate_hz = m.published / span_s
    m.reception_rate_hz = reception_rate_hz(received)
    m.goodput_bit_s = goodput_bit_s(received)
    m.message_loss_rate = message_loss_rate(received)
    if len(received):
        lat = latencies_ms(received)
        m.latency_mean_ms = float(lat.mean())
        m.latency_p50_ms, m.latency_p95_ms, m.latency_p99_ms = (
            float(v) for v in np.percentile(lat, [50, 95, 99]))
        m.latency_max_ms = float(lat.max())
        m.jitter_ms = float(lat.std())  # population standard deviation (seed 000 §V-B)
        first, last = latency_thirds_ms(received)
        m.latency_first_third_ms, m.latency_growth_ms = first, last - first
    m.wire_bytes = wire_bytes
    if wire_bytes is not None and m.bytes_published:
        m.wire_amplification = wire_bytes / (m.bytes_published + warmup_bytes)
    m.model_amplification = model_amplification
    if bins_origin_ns is not None:
        m.rate_bins_hz = rate_bins_hz(received, bins_origin_ns, n_bins)
    return m


# --- failure marking ------------------------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    """How the processes of a cell ended."""

    publisher_finished: bool  # published all its messages (writes that did not fail)
    publisher_exit: int | None  # None: killed by the runner (still running at the deadline)
    subscriber_exit: int | None
    expects_all: bool  # RELIABLE + KEEP_ALL: every published sample must arrive
    publisher_signalled: bool = False  # the runner stopped it (not a crash)
    subscriber_signalled: bool = False
    # the probe printed its summary with a normal end and no errors before it died (e.g.
    # Fast DDS 2.9 aborting in a TCP transport destructor at exit): the measurement is
    # complete, the crash is noted but does not fail the cell
    publisher_completed: bool = False
    subscriber_completed: bool = False
    # False: the publisher left no summary, its count is a lower bound (streams.py)
    published_exact: bool = True
    # False: the publisher printed no summary (killed or crashed); with published_exact
    # its records and what arrived hold every seq it was told to write
    publisher_summary: bool = True
    # matched readers that unmatched while the publisher wrote its samples (its summary's
    # readers_unmatched_while_publishing; 0 when the middleware does not say)
    readers_unmatched: int = 0
    # the subscriber ended on the publisher's end-of-stream marker (not at the deadline)
    stream_ended: bool = False


def exit_note(outcome: Outcome) -> str | None:
    """A probe that died after completing its run: worth saying, not a failure."""
    notes = []
    for role, code, completed in (
            ("publisher", outcome.publisher_exit, outcome.publisher_completed),
            ("subscriber", outcome.subscriber_exit, outcome.subscriber_completed)):
        if completed and code is not None and code != 0:
            how = f"signal {-code}" if code < 0 else f"exit status {code}"
            notes.append(f"{role} ended with {how} after completing its run")
    if not outcome.published_exact or not outcome.publisher_summary:
        code = outcome.publisher_exit
        how = ("killed by the runner" if outcome.publisher_signalled
               else f"ended with signal {-code}" if code is not None and code < 0
               else f"ended with exit status {code}")
        count = ("published is a lower bound (its records to their last flush and every "
                 "sample received)" if not outcome.published_exact else
                 "its records and every sample received hold every sample it was told to "
                 "write (published is exact)")
        notes.append(f"publisher {how} without its summary: {count}")
    return "; ".join(notes) or None


def failure_reason(metrics: CellMetrics, outcome: Outcome, interval_s: float,
                   expected: int) -> str | None:
    """Why a cell failed, or None. Order: crash, not completed, latency above the limit."""
    for role, code, signalled, completed in (
            ("publisher", outcome.publisher_exit, outcome.publisher_signalled,
             outcome.publisher_completed),
            ("subscriber", outcome.subscriber_exit, outcome.subscriber_signalled,
             outcome.subscriber_completed)):
        if code is not None and code != 0 and not signalled and not completed:
            how = f"signal {-code}" if code < 0 else f"exit status {code}"
            return f"crashed: {role} ended with {how}"
    if not outcome.publisher_finished:
        if not outcome.published_exact:
            return (f"not completed: publisher wrote at least {metrics.published}/"
                    f"{expected} (stopped without its summary: its records to their last "
                    "flush and every sample received)")
        return (f"not completed: publisher wrote {metrics.published}/{expected} "
                "(writes blocked or failed, or stopped at the deadline)")
    if metrics.received == 0:
        return "not completed: nothing received"
    if outcome.expects_all and metrics.received < metrics.published:
        when = "by the end of the stream" if outcome.stream_ended else "before the deadline"
        lost = ("" if not outcome.readers_unmatched else
                f"; the writer lost a matched reader {outcome.readers_unmatched} time(s) "
                "while publishing (a writer drops an unmatched reader with what it had "
                "not acknowledged)")
        return f"not completed: received {metrics.received}/{metrics.published} {when}{lost}"
    limit_ms = LATENCY_LIMIT_INTERVALS * interval_s * 1000
    if metrics.latency_mean_ms > limit_ms:
        return (f"latency: mean {metrics.latency_mean_ms:.0f} ms > {limit_ms:.0f} ms "
                f"({LATENCY_LIMIT_INTERVALS} publish intervals)")
    return None
