"""Throughput searches in a run: a ``rate: max`` cell searches its highest sustained rate
(bench.search decides each trial), a ``rate: N %`` cell runs at that share of the maximum
found for its settings (one search per settings, kept in run.json ``searches``)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from linklab.bench import search as S
from linklab.bench.matrix import SETUP_S, Cell
from linklab.bench.measure import LinkKeeper, cell_row_base, measure
from linklab.bench.protocols import Environment
from linklab.errors import LinklabError
from linklab.probes.types import sample_bytes
from linklab.rundir import RunStore, complete_row

# A pause between two trials of a search: the link's queues drain.
TRIAL_PAUSE_S = 0.5


def search_budget_s(settings: Any, trials: int | None = None) -> float:
    """Wall time a search may take: its trials (all ``max_trials`` unless ``trials``),
    each with setup, discovery and a pause."""
    count = settings.max_trials if trials is None else min(trials, settings.max_trials)
    return count * (settings.trial_s + SETUP_S / 2 + TRIAL_PAUSE_S)


# CPU contention (bench/cpu.py) splits searches; left out of the key when not asked, so
# the keys of runs made before it still match
CPU_KEYS = ("cpu_load", "cpu_load_on", "cpu_quota", "cpu_quota_on")
SEARCH_IGNORES = ("cell_id", "rate_hz", "rate_asked", "count", "duration_s", "trial",
                  "warmup_s", "grace_s", "endpoints")


def search_key(cell: Cell) -> str:
    """Cells with equal keys share one maximum rate (every setting but rate and length)."""
    axes = {k: v for k, v in cell.axes().items() if k not in SEARCH_IGNORES
            and not (k in (*CPU_KEYS, "broker_host") and v in (None, "none"))}
    # (left out when not asked: the keys of runs made before cpu_load and broker_host)
    axes["endpoints"] = [(t.name, t.publisher, t.subscribers, t.type, t.payload_bytes, t.qos,
                          t.history, t.durability) for t in cell.topics]
    return json.dumps(axes, sort_keys=True, default=str)


def search_key_text(cell: Cell) -> str:
    return f"{cell.middleware} {cell.link} {cell.payload_bytes} B {cell.qos}"


def max_rate(store: RunStore, cell: Cell, env: Environment, keeper: LinkKeeper,
              settings: Any, out_dir: Path, report: Callable[[str], None]) -> float:
    key = search_key(cell)
    found = store.search_result(key)
    if found is not None:
        return float(found["max_rate_hz"])
    result = run_search(store, cell, env, keeper, settings, out_dir / "search", report,
                         model_columns(cell, env))
    # the share is of the rate achieved (a run recorded before issue 37 kept the rate asked)
    store.record_search(key, cell.cell_id, result.max_rate_hz, result.stop)
    return result.max_rate_hz


def search_cell(store: RunStore, cell: Cell, env: Environment, keeper: LinkKeeper,
                 settings: Any, out_dir: Path, report: Callable[[str], None],
                 streams_out: list[dict]) -> dict[str, Any]:
    if len(cell.topics) != 1:
        raise LinklabError("rate: max searches one topic; this cell has "
                           f"{len(cell.topics)}")
    model = model_columns(cell, env)
    result = run_search(store, cell, env, keeper, settings, out_dir, report, model)
    maximum = result.max_rate_hz  # achieved: judge sustains no trial without it
    store.record_search(search_key(cell), cell.cell_id, maximum, result.stop)
    row: dict[str, Any] = {}
    if result.best is not None:
        row.update(result.best.row)
        streams_out.extend(result.best.streams)
    elif result.trials:
        # Nothing sustained: the row keeps what the lowest trial measured (its socket
        # overflows, link drops, delivery), so the failure can be read, not only named.
        lowest = min(result.trials, key=lambda t: t.rate_hz)
        row.update(lowest.row)
        streams_out.extend(lowest.streams)
        row.update(status="failed", failure_reason=(
            f"search: {result.stop}; lowest trial ({lowest.rate_hz:.4g} Hz asked): "
            f"{lowest.reason}"))
    else:
        row.update(status="failed", failure_reason=f"search: {result.stop}")
    row["completion_rule"] = S.rule_text(reliable=S.reliable_qos(cell.topics[0].qos))
    # what the best trial achieved, never what it asked (issue 37): the publishers'
    # measured rate and the payload bit/s that arrived; the rate asked beside them
    row.update({
        "rate_hz": maximum,
        "search_max_rate_hz": maximum,
        "search_max_throughput_bit_s": result.max_throughput_bit_s,
        "search_asked_rate_hz": result.asked_rate_hz,
        "search_trials": len(result.trials),
        "search_stop": result.stop,
        "search_next_failure": result.next_failure,
    })
    row.update(model)
    return row


def run_search(store: RunStore, cell: Cell, env: Environment, keeper: LinkKeeper,
                settings: Any, out_dir: Path, report: Callable[[str], None],
                model: dict[str, Any]) -> S.SearchResult:
    """Search ``cell``'s maximum rate, starting below the model's capacity (``model``:
    the cell's _model_columns)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    topic = cell.topics[0]
    reliable = S.reliable_qos(topic.qos)
    capacity = model.get("model_capacity_hz")
    capacity = None if capacity is None or math.isnan(capacity) else capacity
    log: list[dict[str, Any]] = []

    def run_trial(rate: float) -> S.Trial:
        k = len(log) + 1
        report(f"search trial {k}: {rate:.4g} Hz")
        trial_cell = cell.with_rate(rate, S.trial_count(rate, settings.trial_s))
        trial_dir = out_dir / f"trial-{k:02d}"
        fields, streams = measure(store, trial_cell, env, keeper, trial_dir)
        row = complete_row({**cell_row_base(trial_cell), **fields})
        reason = S.judge(row, streams, rate, reliable)
        log.append({"trial": k, "rate_hz": rate, "sustained": reason is None,
                    "reason": reason, "received": row.get("received"),
                    "expected": row.get("expected"),
                    "publish_rate_hz": row.get("publish_rate_hz"),
                    "goodput_bit_s": row.get("goodput_bit_s"),
                    "latency_p50_ms": row.get("latency_p50_ms"),
                    "latency_growth_ms": row.get("latency_growth_ms")})
        write()
        time.sleep(TRIAL_PAUSE_S)
        return S.Trial(rate, reason is None, reason, row, streams)

    def write(**result: Any) -> None:
        (out_dir / "search.json").write_text(json.dumps(
            {"cell_id": cell.cell_id, "start_hz": start, "model": model, "trials": log,
             **result}, indent=1, default=str) + "\n")

    start = S.start_rate(topic.payload_bytes, capacity)
    result = S.search(run_trial, start, precision=settings.precision,
                      max_trials=settings.max_trials)
    # which trial is the maximum (the row's measurement) and what it achieved
    best = next((k for k, t in enumerate(result.trials, 1) if t is result.best), None)
    write(best_trial=best, stop=result.stop, max_rate_hz=result.max_rate_hz,
          max_throughput_bit_s=result.max_throughput_bit_s,
          asked_rate_hz=result.asked_rate_hz)
    return result


def model_columns(cell: Cell, env: Environment) -> dict[str, Any]:
    """The model's header overhead for a searched cell (DDS over UDP only): the
    serialized sample's bytes, not only the payload's, go on the wire."""
    from linklab.middleware import family_of

    topic = cell.topics[0]
    link_bits = env.link_rate_bits(cell)
    out: dict[str, Any] = {"link_rate_bit_s": link_bits}
    family = family_of(cell.middleware)
    if not family.dds or cell.profile == "large_data":
        out["model_note"] = f"{cell.middleware} runs over TCP: no RTPS/UDP header model"
        return out
    # the largest RTPS message its UDP transport sends (linklab.middleware.families)
    max_message = family.max_message_bytes
    if cell.profile in ("optimized", "optimized-paced"):
        max_message = 1472
    path = env.wire_path(cell)
    out.update(S.model_overhead(topic.payload_bytes, max_message, topic.qos, path, link_bits,
                                sample_bytes=sample_bytes(topic.type, topic.payload_bytes)))
    out["model_note"] = (f"{path.label()} per paper 001 §V-A, max message {max_message} B"
                         + ("" if path.bounded else
                            "; both ends on one node: the link's rate does not bound it"))
    return out
