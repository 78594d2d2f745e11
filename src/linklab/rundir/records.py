"""A cell's measurement as typed records: what one stream (or cell) measured, a row of
streams.parquet, and the fields a measured cell adds to its row of cells.parquet.

Each record's ``to_dict`` is the row as written: its keys are the columns, in the order
they stand in the files (docs/run-directory.md names them; docs/metrics.md defines each
metric), so the files do not change with the code that builds them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from linklab.rundir.schema import METRICS_VERSION


@dataclass
class CellMetrics:
    """What one stream (or, aggregated, one cell) measured. NaN where nothing was."""

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
    message_loss_rate: float = math.nan  # 1 - delivered
    gap_loss_rate: float = math.nan  # paper 002's counter gaps at the subscriber
    stall_max_s: float = math.nan  # the longest stall
    stall_at_s: float = math.nan  # when it began, s after the stream's first write
    stall_link_up_s: float = math.nan  # the longest stall with declared outages left out
    stall_link_up_at_s: float = math.nan  # when that one began
    latency_first_third_ms: float = math.nan  # median of the first third, by send time
    latency_growth_ms: float = math.nan  # last third's median minus the first third's
    publish_rate_hz: float = math.nan
    bytes_published: int = 0
    wire_bytes: int | None = None
    wire_amplification: float = math.nan  # wire bytes / bytes published (incl. warm-up)
    model_amplification: float = math.nan  # the model's R_DDS / R_pub for this cell
    rate_bins_hz: list[int] = field(default_factory=list)
    metrics_version: int = METRICS_VERSION  # the definitions these were computed with

    def to_dict(self) -> dict:
        return asdict(self)


# A cell's metrics a stream row does not have (they are the cell's, not a subscriber's).
CELL_ONLY_METRICS = ("wire_bytes", "wire_amplification", "model_amplification",
                     "rate_bins_hz")


def _own(record: Any, skip: tuple[str, ...]) -> dict[str, Any]:
    return {f.name: getattr(record, f.name) for f in fields(record) if f.name not in skip}


@dataclass
class StreamRow:
    """One row of streams.parquet: one subscriber of a cell against its topic's
    publisher."""

    metrics: CellMetrics
    cell_id: str
    topic: str
    publisher: str
    subscriber: str
    endpoint: str
    status: str
    failure_reason: str | None
    known_failure: str | None
    completion_rule: str
    history_applied: str | None
    pub_cpu_s: float | None
    sub_cpu_s: float | None
    pub_cpu_fraction: float
    sub_cpu_fraction: float
    pub_rss_peak_bytes: int | None
    sub_rss_peak_bytes: int | None
    write_failures: int | None
    polled_samples: int | None
    applied_qos: str | None  # JSON text: the subscriber's applied.ros_qos
    pub_applied_qos: str | None
    fanout_rank: int | None = None  # 1 = the first of the topic's subscribers served
    model_fanout_offset_ms: float = math.nan

    def to_dict(self) -> dict[str, Any]:
        row = {k: v for k, v in self.metrics.to_dict().items() if k not in CELL_ONLY_METRICS}
        return {**row, **_own(self, ("metrics",))}


@dataclass
class CellFields:
    """What measuring a cell adds to its row of cells.parquet (the settings, the search
    and the CPU contention's columns come from elsewhere: linklab.bench)."""

    metrics: CellMetrics  # aggregated over the cell's subscribers
    status: str
    failure_reason: str | None
    known_failure: str | None
    exit_note: str | None
    completion_rule: str
    expected: int | None
    outage_s: float
    unmatched_subscribers: int  # subscribers whose reader matched no publisher by the go
    outage_at_s: float  # when the outage really began, s after the first measured sample
    warmup_samples: int
    write_failures: int | None
    polled_samples: int | None
    counters: dict[str, int | None]  # the link's and hosts' counters (COUNTER_COLUMNS)
    pub_cpu_s: float | None
    sub_cpu_s: float | None
    cpu_fraction_max: float
    broker_cpu_s: float
    bridge_cpu_s: float  # a bridged middleware's bridges, summed (NaN: no bridge)
    pub_rss_peak_bytes: int | None
    sub_rss_peak_bytes: int | None
    fanout_step_ms: float
    model_fanout_step_ms: float
    interfaces: list[dict[str, Any]]
    simulator_lag_max_ms: float

    def to_dict(self) -> dict[str, Any]:
        row = self.metrics.to_dict()
        row.pop("model_amplification")
        own = _own(self, ("metrics", "counters"))
        at = list(own).index("pub_cpu_s")  # the counters stand before the probes' columns
        items = list(own.items())
        return {**row, **dict(items[:at]), **self.counters, **dict(items[at:])}
