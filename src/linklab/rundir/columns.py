"""Every column a cell row has, with the value it takes when nothing was measured, and
which columns hold numbers or text (what a row read back is checked against).

Every row has every column, so cells.parquet has one schema however cells end (ok,
failed, error, a search). The meaning of each column is in docs/run-directory.md.
"""

from __future__ import annotations

import math
from typing import Any

from linklab.rundir.records import CellMetrics

# The link's and the hosts' counters during a cell (bench.link_counters.counter_deltas).
COUNTER_COLUMNS = ("link_dropped_packets", "link_passed_packets", "rate_dropped_packets",
                   "sub_udp_rcvbuf_errors", "pub_udp_rcvbuf_errors", "pub_udp_sndbuf_errors")

# The CPU contention as applied (linklab.bench.cpu), as it is when nothing was.
CPU_COLUMNS: dict[str, Any] = {
    "cpu_load_processes": None,      # competitors that ran (0: cpu_load none)
    "cpu_load_placement": None,      # where: "robot:2,edge:2"
    "cpu_load_cpu_s": math.nan,      # their user + system seconds, summed (rusage)
    "cpu_load_wall_s": math.nan,     # how long they ran (first start to last stop)
    "cpu_load_runqueue_s": math.nan,  # their time waiting for a CPU, summed (schedstat):
                                      # CPU-bound, so cpu + runqueue ~ processes x wall
    "cpu_quota_hosts": None,         # hosts whose probes ran in a quota group
    "cpu_quota_us": None,            # the group's cfs_quota_us / cpu.max quota, read back
    "cpu_period_us": None,           # and its period
    "cpu_quota_periods": None,       # periods the groups ran in (cpu.stat, summed)
    "cpu_quota_throttled_periods": None,  # of those, periods they were throttled in
    "cpu_quota_throttled_s": math.nan,    # time they were throttled, summed
}

ROW_DEFAULTS: dict[str, Any] = dict(
    CellMetrics().to_dict(),
    status="failed", failure_reason=None, known_failure=None, outage_s=math.nan,
    history_applied=None,
    completion_rule=None, expected=None,
    warmup_samples=0, write_failures=None, polled_samples=None, exit_note=None,
    outage_at_s=math.nan,
    **dict.fromkeys(COUNTER_COLUMNS),
    profile_file=None, pub_cpu_s=math.nan, sub_cpu_s=math.nan, cpu_fraction_max=math.nan,
    broker_cpu_s=math.nan, bridge_cpu_s=math.nan, pub_rss_peak_bytes=None, sub_rss_peak_bytes=None,
    fanout_step_ms=math.nan, model_fanout_step_ms=math.nan, interfaces=None,
    simulator_lag_max_ms=math.nan, tuner_verdict=None,
    search_max_rate_hz=math.nan, search_max_throughput_bit_s=math.nan,
    search_asked_rate_hz=math.nan, search_trials=None,
    search_stop=None, search_next_failure=None, link_rate_bit_s=None,
    model_wire_bytes_per_sample=math.nan, model_ip_packets_per_sample=math.nan,
    model_efficiency=math.nan, model_capacity_hz=math.nan, model_capacity_bit_s=math.nan,
    model_note=None, model_amplification_note=None, started_utc=None, wall_s=math.nan,
    latency_basis=None, clock_uncertainty_ms=math.nan, path_rtt_ms=math.nan,
    **CPU_COLUMNS,
)
FLOAT_COLUMNS = ("pub_cpu_s", "sub_cpu_s", "duration_s", "grace_s", "broker_cpu_s",
                 "bridge_cpu_s",
                 "cpu_fraction_max", "fanout_step_ms", "model_fanout_step_ms")

# Columns that hold numbers (NaN = not measured): by name, and by suffix.
NUMBER_COLUMNS = frozenset({"count", "trial", "published", "received", "duplicates",
                            "warmup_samples", "write_failures", "payload_bytes"})
NUMBER_SUFFIXES = ("_s", "_ms", "_hz", "_ratio", "_amplification", "_bytes", "_packets",
                   "_errors")
TEXT_COLUMNS = frozenset({"middleware", "profile", "link", "qos", "history",
                          "history_applied", "type", "status", "failure_reason",
                          "exit_note", "profile_file", "started_utc",
                          "latency_basis"})


def complete_row(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with every column: the ones it lacks at their empty value, first, in the
    order of ROW_DEFAULTS (the order of cells.parquet's columns)."""
    full = dict(ROW_DEFAULTS)
    full.update(row)
    for key in FLOAT_COLUMNS:
        if full.get(key) is None:
            full[key] = math.nan
    if full.get("wire_bytes") is not None:
        full["wire_bytes"] = int(full["wire_bytes"])
    return full
