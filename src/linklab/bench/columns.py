"""Every column a cell row has, with the value it takes when nothing was measured.

Every row has every column, so cells.parquet has one schema however cells end (ok,
failed, error, a search). The meaning of each column is in docs/run-directory.md.
"""

from __future__ import annotations

import math
from typing import Any

from linklab.bench import metrics as M
from linklab.bench.cellrun import COUNTER_COLUMNS
from linklab.bench.cpu import ROW_DEFAULTS as CPU_COLUMNS

ROW_DEFAULTS: dict[str, Any] = dict(
    M.CellMetrics().to_dict(),
    status="failed", failure_reason=None, known_failure=None, outage_s=math.nan,
    history_applied=None,
    completion_rule=None, expected=None,
    warmup_samples=0, write_failures=None, polled_samples=None, exit_note=None,
    outage_at_s=math.nan,
    **dict.fromkeys(COUNTER_COLUMNS),
    profile_file=None, pub_cpu_s=math.nan, sub_cpu_s=math.nan, cpu_fraction_max=math.nan,
    broker_cpu_s=math.nan, pub_rss_peak_bytes=None, sub_rss_peak_bytes=None,
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
                 "cpu_fraction_max", "fanout_step_ms", "model_fanout_step_ms")


def complete_row(row: dict[str, Any]) -> dict[str, Any]:
    full = dict(ROW_DEFAULTS)
    full.update(row)
    for key in FLOAT_COLUMNS:
        if full.get(key) is None:
            full[key] = math.nan
    if full.get("wire_bytes") is not None:
        full["wire_bytes"] = int(full["wire_bytes"])
    return full
