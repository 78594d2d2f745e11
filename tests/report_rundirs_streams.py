"""Hand-made run directories of the newer kinds, in the documented format (store.py):
several subscribers per cell (streams.parquet), throughput searches (search.json and
trial-NN/), cells linklab could not measure ("error" rows), seed 004 studies, and a run
as stored before the newer columns existed.

As in report_rundirs.py, record files are real (linklab.bench.metrics format), drawn
from a seeded generator, and every metric is computed from them by the bench's own
functions (metrics.compute, streams.aggregate, streams.fanout), so rows, streams and
records agree.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from linklab.bench import metrics as M
from linklab.bench import verdict as V
from linklab.bench.matrix import Cell, expand
from linklab.bench.measure import cell_row_base as _cell_row_base
from linklab.bench.search import model_overhead
from linklab.bench.spec import parse_scenario
from linklab.bench.streams import StreamInput, aggregate, fanout
from linklab.model.overhead import WirePath
from linklab.probes.types import sample_bytes
from linklab.rundir import CELLS_JSONL, CELLS_PARQUET, RunStore, write_parquet
from linklab.rundir import complete_row as _complete_row
from report_rundirs import VERSIONS, Behaviour, make_run

T0 = 1_000_000_000_000
RULE_ALL = "RELIABLE KEEP_ALL: every published sample must arrive"


def _create(root: Path, text: str) -> tuple[RunStore, list[Cell]]:
    scenario = parse_scenario(text, "scenarios/handmade.yaml")
    cells = expand(scenario)
    store = RunStore.create(root, scenario=dict(scenario.to_dict(), text=text),
                            options={"quick": False, "repeat": None},
                            planned=[c.cell_id for c in cells], estimated_s=60.0,
                            versions=dict(VERSIONS))
    return store, cells


def _pub(n: int, rate_hz: float, payload: int) -> np.ndarray:
    pub = np.zeros(n, dtype=M.RECORD_DTYPE)
    pub["seq"] = np.arange(n)
    pub["t_send_ns"] = T0 + np.arange(n, dtype=np.int64) * int(1e9 / rate_hz)
    pub["bytes"] = payload
    return pub


def _sub(pub: np.ndarray, latency_ms: float, jitter_ms: float, loss: float,
         rng: np.random.Generator) -> np.ndarray:
    keep = rng.random(len(pub)) >= loss
    latency = np.maximum(0.05, rng.normal(latency_ms, jitter_ms, len(pub))) * 1e6
    sub = np.zeros(int(keep.sum()), dtype=M.RECORD_DTYPE)
    sub["seq"] = pub["seq"][keep]
    sub["t_send_ns"] = pub["t_send_ns"][keep]
    sub["t_recv_ns"] = pub["t_send_ns"][keep] + latency[keep].astype(np.int64)
    sub["bytes"] = pub["bytes"][keep]
    return sub[np.argsort(sub["t_recv_ns"], kind="stable")]


# --- one publisher, several subscribers ----------------------------------------------------

FANOUT_SCENARIO = """\
name: handmade-fanout
title: "Hand-made fan-out: one publisher to four subscribers (paper 002 Table III)"
source: "002_d18906a16de1bd6a.txt Table III"
fixed: {middleware: fastdds, link: wifi-ideal, topology: star, subscribers: 4,
        payload: 1KiB, rate: 20Hz, count: 60, qos: reliable, warmup: 0.5s}
axes:
  profile: [default, large_data]
gates:
  reception_rate: ">= 19Hz"
"""
# arrival order of the copies (rank 1 first) and the step between two copies
FANOUT_ORDER = ("robot3", "robot1", "robot4", "robot2")
FANOUT_STEP_MS = 2.0
MODEL_STEP_MS = 0.05


def fanout_run(root: Path, *, lossy: str | None = "robot2", seed: int = 5) -> Path:
    """Two star cells, 1 publisher (edge) -> 4 subscribers, copies FANOUT_STEP_MS apart
    in FANOUT_ORDER. In the large_data cell, subscriber ``lossy`` loses 20 % of the
    samples, so that cell fails (RELIABLE KEEP_ALL) and misses the reception-rate gate
    only if its rate suffers; streams keep each subscriber's numbers."""
    store, cells = _create(root, FANOUT_SCENARIO)
    rng = np.random.default_rng(seed)
    for cell in cells:
        (topic,) = cell.topics
        out = store.cell_dir(cell.cell_id)
        pub = _pub(topic.messages, topic.rate_hz, topic.payload_bytes)
        M.write_records(out / f"pub-{topic.name}.bin", M.ROLE_PUBLISHER, pub)
        inputs = []
        for host in topic.subscribers:
            rank = FANOUT_ORDER.index(host)
            loss = 0.2 if cell.profile == "large_data" and host == lossy else 0.0
            sub = _sub(pub, 1.0 + rank * FANOUT_STEP_MS, 0.05, loss, rng)
            name = f"sub-{topic.name}-{host}"
            M.write_records(out / f"{name}.bin", M.ROLE_SUBSCRIBER, sub)
            inputs.append(StreamInput(topic.name, topic.publisher, host, name, pub, sub))
        wire = int(len(pub) * topic.payload_bytes * 4 * 1.1)
        measured, per_stream, expected = aggregate(
            {topic.name: pub}, inputs, wire_bytes=wire, warmup_bytes=0,
            bins_origin_ns=T0, n_bins=math.ceil(cell.publish_s) + 1)
        ranks, step = fanout({s.endpoint: m.latency_mean_ms
                              for s, m in zip(inputs, per_stream, strict=True)})
        streams, reasons = [], []
        for s, m in zip(inputs, per_stream, strict=True):
            outcome = V.Outcome(publisher_finished=True, publisher_exit=0, subscriber_exit=0,
                                expects_all=True)
            reason = V.failure_reason(m, outcome, topic.interval_s, topic.messages)
            if reason:
                reasons.append(f"topic {s.topic} subscriber {s.endpoint}: {reason}")
            row = m.to_dict()
            for key in ("wire_bytes", "wire_amplification", "model_amplification",
                        "rate_bins_hz"):
                row.pop(key)
            rank = ranks[s.endpoint]
            row.update(cell_id=cell.cell_id, topic=s.topic, publisher=s.publisher,
                       subscriber=s.subscriber, endpoint=s.endpoint,
                       status="ok" if reason is None else "failed", failure_reason=reason,
                       completion_rule=RULE_ALL, history_applied="keep_all",
                       pub_cpu_s=0.05, sub_cpu_s=0.02, pub_cpu_fraction=0.01,
                       sub_cpu_fraction=0.005, fanout_rank=rank,
                       model_fanout_offset_ms=MODEL_STEP_MS * (rank - 1))
            streams.append(row)
        interfaces = [{"host": h, "interface": "l0-ap", "rx_bytes": 20_000 + i,
                       "tx_bytes": 90_000 + i, "rx_packets": 60, "tx_packets": 120}
                      for i, h in enumerate(topic.subscribers)]
        interfaces.append({"host": "edge", "interface": "l0-ap", "rx_bytes": 84_000,
                           "tx_bytes": 380_000, "rx_packets": 250, "tx_packets": 500})
        row = _cell_row_base(cell)
        row.update(measured.to_dict())
        row.update(status="failed" if reasons else "ok",
                   failure_reason="; ".join(reasons) or None, completion_rule=RULE_ALL,
                   expected=expected, outage_s=0.0, history_applied="keep_all",
                   fanout_step_ms=step, model_fanout_step_ms=MODEL_STEP_MS,
                   interfaces=interfaces, pub_cpu_s=0.05, sub_cpu_s=0.08, wall_s=5.0)
        store.append(_complete_row(row), streams)
    return store.root


# --- throughput searches --------------------------------------------------------------------

SEARCH_SCENARIO = """\
name: handmade-search
title: "Hand-made throughput searches on a 20 Mbit/s link (paper 001 Fig. 5, 6)"
source: "001_20e21b052d053958.txt Fig. 5, Fig. 6"
fixed: {link: {name: r20, rate: 20Mbit/s}, qos: best_effort, warmup: 0.3s, duration: 2s}
axes:
  middleware: [fastdds, mqtt]
  payload: [4KiB, 16KiB]
  rate: [max, 75%]
search: {trial: 2s}
"""
LINK_BITS = 20e6
# the maximum each search finds: a share of the model's capacity (TCP: of the link)
SEARCH_SHARE = {"fastdds": 0.95, "mqtt": 0.8}


def _capacity(middleware: str, payload: int) -> tuple[float, dict]:
    if middleware == "mqtt":
        return LINK_BITS / (8 * payload * 1.05), {
            "link_rate_bit_s": LINK_BITS,
            "model_note": "mqtt runs over TCP: no RTPS/UDP header model"}
    model = model_overhead(payload, 65500, "best_effort", WirePath(1500), LINK_BITS,
                           sample_bytes=sample_bytes("Bytes", payload))
    return model["model_capacity_hz"], dict(
        model, link_rate_bit_s=LINK_BITS,
        model_note="RTPS+UDP+IPv4 at MTU 1500 per paper 001 §V-A, max message 65500 B")


def _measure(cell: Cell, out: Path, rate: float, rng: np.random.Generator) -> dict:
    n = max(20, math.ceil(rate * 2))
    pub = _pub(n, rate, cell.payload_bytes)
    sub = _sub(pub, 2.0, 0.3, 0.0, rng)
    out.mkdir(parents=True, exist_ok=True)
    M.write_records(out / "pub.bin", M.ROLE_PUBLISHER, pub)
    M.write_records(out / "sub.bin", M.ROLE_SUBSCRIBER, sub)
    m = M.compute(pub, sub, wire_bytes=int(n * cell.payload_bytes * 1.03),
                  bins_origin_ns=T0, n_bins=3)
    row = m.to_dict()
    row.update(status="ok", failure_reason=None, expected=n, completion_rule="samples may "
               "be replaced or dropped (KEEP_LAST or BEST_EFFORT): completed when the "
               "publisher finished and samples arrived; delivery shows what was lost",
               outage_s=0.0, pub_cpu_s=0.2, sub_cpu_s=0.1, rate_hz=rate)
    return row


# the publisher of a search's trial wrote this share of the rate it asked (``achieved``)
PUBLISHED_SHARE = 0.975


def search_run(root: Path, seed: int = 9, *, achieved: bool = False) -> Path:
    """Four searches and four cells at 75 % of their maximum. ``achieved``: as bench
    writes them since issue 37 (each trial's publisher writes PUBLISHED_SHARE of the rate
    asked; the maximum is the best trial's measured publish rate and goodput, the rate
    asked beside it); otherwise as before (the maximum is the rate asked, no
    search_asked_rate_hz column, no goodput nor best_trial in search.json)."""
    store, cells = _create(root, SEARCH_SCENARIO)
    rng = np.random.default_rng(seed)
    found: dict[tuple[str, int], float] = {}
    wrote_share = PUBLISHED_SHARE if achieved else 1.0
    for cell in sorted(cells, key=lambda c: not c.search):  # searches first, as bench does
        capacity, model = _capacity(cell.middleware, cell.payload_bytes)
        best = SEARCH_SHARE[cell.middleware] * capacity
        out = store.cell_dir(cell.cell_id)
        row = _cell_row_base(cell)
        if cell.search:
            rates = [0.9 * capacity, 1.8 * capacity, 1.27 * capacity, best, 0.97 * capacity]
            trials = []
            for k, rate in enumerate(rates, start=1):
                ok = rate <= best
                trials.append({"trial": k, "rate_hz": rate, "sustained": ok,
                               "reason": None if ok else "best effort: 97.1000% of the "
                               "samples arrived (needs 99.9%)",
                               "received": 100 if ok else 97, "expected": 100,
                               "publish_rate_hz": rate * wrote_share, "latency_p50_ms": 2.0})
                if ok and rate == best:  # the row is the best trial's, its count too
                    measured = _measure(cell, out / f"trial-{k:02d}", rate * wrote_share,
                                        rng)
                    row.update(measured, count=measured["expected"])
            doc = {"cell_id": cell.cell_id, "start_hz": rates[0], "model": model,
                   "trials": trials}
            row.update(model, search_trials=len(rates), search_stop="bracket within 3%",
                       search_next_failure=trials[-1]["reason"])
            if achieved:
                maximum = row["publish_rate_hz"]
                trials[3].update(publish_rate_hz=maximum, goodput_bit_s=row["goodput_bit_s"])
                for t in trials:
                    t.setdefault("goodput_bit_s", t["received"] / t["expected"]
                                 * t["publish_rate_hz"] * cell.payload_bytes * 8)
                row.update(rate_hz=maximum, search_max_rate_hz=maximum,
                           search_max_throughput_bit_s=row["goodput_bit_s"],
                           search_asked_rate_hz=best)
                doc.update(best_trial=4, stop="bracket within 3%", max_rate_hz=maximum,
                           max_throughput_bit_s=row["goodput_bit_s"], asked_rate_hz=best)
            else:
                maximum = best
                row.update(search_max_rate_hz=best,
                           search_max_throughput_bit_s=best * cell.payload_bytes * 8)
            (out / "search.json").write_text(json.dumps(doc, indent=1))
            found[(cell.middleware, cell.payload_bytes)] = maximum
        else:
            maximum = found[(cell.middleware, cell.payload_bytes)]
            row.update(_measure(cell, out, cell.rate_fraction * maximum, rng),
                       search_max_rate_hz=maximum)
        full = _complete_row(row)
        if not achieved:
            del full["search_asked_rate_hz"]  # a column bench did not write then
        store.append(full)
    return store.root


# --- error rows --------------------------------------------------------------------------------

def add_error_cell(run_dir: Path, cell: Cell, reason: str) -> None:
    """The row bench writes for a cell it could not measure (runner.run_one)."""
    store = RunStore.open(run_dir)
    out = store.cell_dir(cell.cell_id)
    (out / "error.txt").write_text("Traceback (most recent call last):\n  ...\n"
                                   f"{reason}\n")
    row = _cell_row_base(cell)
    row.update(status="error", failure_reason=reason, wall_s=0.4)
    store.append(_complete_row(row))


# --- seed 004 studies ---------------------------------------------------------------------------

PAPER_004_SCENARIO = """\
name: handmade-004
title: "Hand-made seed 004 study: two messages, three middlewares, Ethernet"
source: "004_fd54f9c35a070cc9.txt Tables 2-3, Fig. 6"
fixed: {rate: 10Hz, qos: reliable, history: keep_last:10, profile: default, count: 30,
        warmup: 1s, link: ethernet-1g}
axes:
  middleware: [fastdds, cyclonedds, mqtt]
  type: [Array1k, Array4k]
"""
SECURITY_SCENARIO = """\
name: handmade-004-security
title: "Hand-made seed 004 Table 4"
fixed: {type: Array1k, rate: 10Hz, qos: reliable, history: keep_last:10, count: 30,
        warmup: 1s, link: ethernet-1g}
axes:
  middleware: [fastdds, fastdds-secure, mqtt, mqtt-tls]
"""
# the cell linklab could not measure in the study, and the one that crashed
PAPER_004_ERROR = "cyclonedds-Array4k"
PAPER_004_CRASH = "mqtt-Array4k"


def paper_004_run(root: Path, *, with_error: bool = True) -> Path:
    def behave(cell: Cell) -> Behaviour:
        latency = {"fastdds": 0.9, "cyclonedds": 0.6, "mqtt": 1.4}[cell.middleware]
        if cell.cell_id == PAPER_004_CRASH:
            return Behaviour(latency_ms=latency, stop_after=12, crash="publisher",
                             cpu_s=(0.02, 0.01))
        return Behaviour(latency_ms=latency * (2 if "4k" in cell.type else 1),
                         jitter_ms=0.1, cpu_s=(0.02, 0.01))

    error = with_error and PAPER_004_ERROR
    root = make_run(root, PAPER_004_SCENARIO, behave, seed=4,
                    skip=lambda c: c.cell_id == error)
    if error:
        cell = next(c for c in expand(parse_scenario(PAPER_004_SCENARIO, "s.yaml"))
                    if c.cell_id == error)
        add_error_cell(root, cell, "could not run: cyclonedds probe not found (run "
                                   "scripts/setup.sh)")
    return root


def security_run(root: Path) -> Path:
    def behave(cell: Cell) -> Behaviour:
        secured = cell.middleware.endswith(("-secure", "-tls"))
        return Behaviour(latency_ms=1.2 if secured else 0.8, jitter_ms=0.1,
                         cpu_s=(0.03, 0.02))
    return make_run(root, SECURITY_SCENARIO, behave, seed=6)


# --- a run as stored before the newer columns ---------------------------------------------

NEW_COLUMNS = ("link_preset", "link_overrides", "topology", "hosts", "rate_asked",
               "durability", "topics", "subscribers", "endpoints", "expected",
               "completion_rule", "message_loss_rate", "latency_first_third_ms",
               "latency_growth_ms", "interfaces", "fanout_step_ms", "model_fanout_step_ms",
               "polled_samples", "cpu_fraction_max")


def strip_new_columns(run_dir: Path) -> Path:
    """Rewrite a run's cells.parquet / cells.jsonl without the columns added with several
    endpoints, searches and gates (and drop streams), as an older linklab wrote them."""
    rows = pq.read_table(run_dir / CELLS_PARQUET).to_pylist()
    rows = [{k: v for k, v in r.items() if k not in NEW_COLUMNS and not k.startswith(
        ("search_", "model_wire", "model_ip", "model_eff", "model_cap", "model_note",
         "link_rate"))} for r in rows]
    write_parquet(run_dir / CELLS_PARQUET, rows)
    (run_dir / CELLS_JSONL).write_text("".join(json.dumps(
        {k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}) + "\n"
        for r in rows))
    for name in ("streams.parquet", "streams.jsonl"):
        (run_dir / name).unlink(missing_ok=True)
    return run_dir
