"""Hand-made run directories for the report tests, in the documented format.

Each cell gets real record files (publisher and subscriber, linklab.bench.metrics format)
drawn from a seeded generator; the row's metrics are computed from those records with
linklab.bench.metrics.compute and failure_reason, exactly as the bench runner does, so
cells.parquet and records/ agree. Behaviour per cell (latency, loss, outage, crash) is
given by a function of the cell.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from linklab.bench import metrics as M
from linklab.bench import verdict as V
from linklab.bench.matrix import Cell, expand
from linklab.bench.measure import cell_row_base as _cell_row_base
from linklab.bench.spec import parse_scenario
from linklab.rundir import RunStore
from linklab.rundir import complete_row as _complete_row

VERSIONS = {"linklab": "0.1.0", "git_commit": "0123456789abcdef", "git_dirty": False,
            "kernel": "6.18.0-test", "python": "3.11.2", "libfastrtps-dev": "2.9.1+ds-1",
            "cyclonedds-dev": "0.10.2-1"}

PROFILE_XML = """<?xml version="1.0" encoding="UTF-8" ?>
<dds xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
  <profiles>
    <transport_descriptors>
      <transport_descriptor>
        <transport_id>udp_1472</transport_id>
        <type>UDPv4</type>
        <maxMessageSize>1472</maxMessageSize>
      </transport_descriptor>
    </transport_descriptors>
    <!-- profile {name} & <escaped> -->
  </profiles>
</dds>
"""


LINK_LOSS = {"wifi-severe": 0.2, "wifi-mild": 0.01}


@dataclass
class Behaviour:
    latency_ms: float = 5.0
    jitter_ms: float = 1.0
    loss: float = 0.0  # fraction of samples never received
    outage: tuple[float, float] | None = None  # (start s, length s) after the first sample
    stop_after: int | None = None  # the publisher stopped after this many (crash)
    crash: str | None = None  # "publisher" | "subscriber": exit with signal 11
    no_records: bool = False
    cpu_s: tuple[float, float] = (0.4, 0.3)
    wire_amplification: float | None = 1.05
    model_amplification: float = 1.04


def synth_records(cell: Cell, b: Behaviour, rng: np.random.Generator):
    n = cell.messages if b.stop_after is None else min(b.stop_after, cell.messages)
    t0 = 1_000_000_000_000
    interval = int(1e9 / cell.rate_hz)
    t_send = t0 + np.arange(n, dtype=np.int64) * interval
    pub = np.zeros(n, dtype=M.RECORD_DTYPE)
    pub["seq"] = np.arange(n)
    pub["t_send_ns"] = t_send
    pub["bytes"] = cell.payload_bytes
    keep = rng.random(n) >= b.loss
    latency_ns = np.maximum(0.05, rng.normal(b.latency_ms, b.jitter_ms, n)) * 1e6
    t_recv = t_send + latency_ns.astype(np.int64)
    if b.outage is not None:
        start, length = (t0 + int(s * 1e9) for s in (b.outage[0], sum(b.outage)))
        during = (t_send >= start) & (t_send < length)
        # held back by the writer, delivered after the link returns (KEEP_LAST: some lost)
        t_recv[during] = length + np.arange(during.sum(), dtype=np.int64) * 2_000_000
        depth = 150
        lost = np.flatnonzero(during)[:-depth] if during.sum() > depth else []
        keep[lost] = False
    sub = np.zeros(int(keep.sum()), dtype=M.RECORD_DTYPE)
    sub["seq"] = pub["seq"][keep]
    sub["t_send_ns"] = t_send[keep]
    sub["t_recv_ns"] = t_recv[keep]
    sub["bytes"] = cell.payload_bytes
    return pub, sub[np.argsort(sub["t_recv_ns"], kind="stable")]


def make_run(root: Path, scenario_text: str, behaviour: Callable[[Cell], Behaviour], *,
             seed: int = 1, skip: Callable[[Cell], bool] | None = None,
             links: dict | None = None) -> Path:
    """Write a run directory; cells for which ``skip`` is true are planned but not run."""
    scenario = parse_scenario(scenario_text, "scenarios/handmade.yaml")
    cells = expand(scenario)
    store = RunStore.create(root, scenario=dict(scenario.to_dict(), text=scenario_text),
                            options={"quick": False, "repeat": None},
                            planned=[c.cell_id for c in cells], estimated_s=60.0,
                            versions=dict(VERSIONS))
    rng = np.random.default_rng(seed)
    for cell in cells:
        if skip is not None and skip(cell):
            continue
        b = behaviour(cell)
        loss = LINK_LOSS.get(cell.link, 0.0)
        store.record_link(cell.link, (links or {}).get(cell.link, {
            "preset": cell.link, "spec": {
                "preset": cell.link, "mtu": 1500,
                "up": {"loss": f"{loss * 100:g} %", "rate": "300 Mbit/s"},
                "down": {"loss": f"{loss * 100:g} %", "rate": "300 Mbit/s"},
                "source": "hand-made test link"},
            "hosts": {"robot": {"netns": "linklab-test-robot", "address": "10.77.0.1"},
                      "edge": {"netns": "linklab-test-edge", "address": "10.77.0.100"}},
            "outage": None}))
        file_name = f"{cell.profile}.xml"
        store.add_profile(file_name, PROFILE_XML.format(name=cell.profile),
                          {"profile": cell.profile}, cell.cell_id)
        out = store.cell_dir(cell.cell_id)
        pub, sub = synth_records(cell, b, rng)
        if not b.no_records:
            M.write_records(out / "pub.bin", M.ROLE_PUBLISHER, pub)
            M.write_records(out / "sub.bin", M.ROLE_SUBSCRIBER, sub)
        else:
            pub, sub = M.empty_records(), M.empty_records()
        outage_s = b.outage[1] if b.outage else 0.0
        origin = int(pub["t_send_ns"].min()) if len(pub) else None
        wire = (int(b.wire_amplification * cell.payload_bytes * len(pub))
                if b.wire_amplification is not None and len(pub) else None)
        m = M.compute(pub, sub, wire_bytes=wire, bins_origin_ns=origin,
                      n_bins=int(math.ceil(cell.publish_s + outage_s + 1)) if origin else None,
                      model_amplification=b.model_amplification)
        pub_exit = -11 if b.crash == "publisher" else 0
        sub_exit = -11 if b.crash == "subscriber" else 0
        outcome = V.Outcome(publisher_finished=b.stop_after is None and not b.crash,
                            publisher_exit=pub_exit, subscriber_exit=sub_exit,
                            expects_all=cell.qos == "reliable" and cell.history in (
                                "keep_all", "profile") and cell.profile != "optimized")
        reason = V.failure_reason(m, outcome, cell.interval_s, cell.messages)
        for role, code, cpu in (("pub", pub_exit, b.cpu_s[0]), ("sub", sub_exit, b.cpu_s[1])):
            (out / f"{role}.json").write_text(json.dumps({
                "role": role, "exit_code": code, "signalled_by_runner": False, "cpu_s": cpu,
                "rss_peak_bytes": 30_000_000, "wall_s": cell.publish_s + 2,
                "summary": {"probe": "fastdds", "role": role, "samples": int(
                    len(pub) if role == "pub" else len(sub)), "errors": []}}))
            (out / f"{role}.log").write_text(f"{role} probe log line 1\n"
                                             f"{role}: something <happened> & ended\n")
        packets = len(pub) * math.ceil(cell.payload_bytes / 1472)
        dropped = int(packets * loss)
        stages = [{"link": "robot-edge", "direction": d, "kind": "loss", "runs_in": "kernel",
                   "params": {"loss": loss, "text": f"{loss * 100:g} %"}} for d in ("up", "down")]
        (out / "counters.json").write_text(json.dumps({
            "before": {"link": {"stages": [dict(st, passed_packets=1000, dropped_packets=10)
                                           for st in stages]}},
            "after": {"link": {"stages": [dict(st, passed_packets=1000 + packets - dropped,
                                               dropped_packets=10 + dropped)
                                          for st in stages]}}}))
        row = _cell_row_base(cell)
        row.update(m.to_dict())
        row.update(status="ok" if reason is None else "failed", failure_reason=reason,
                   outage_s=outage_s, outage_at_s=b.outage[0] if b.outage else math.nan,
                   pub_cpu_s=b.cpu_s[0], sub_cpu_s=b.cpu_s[1],
                   pub_rss_peak_bytes=30_000_000, sub_rss_peak_bytes=28_000_000,
                   history_applied=cell.history, profile_file=file_name, wall_s=10.0)
        store.append(_complete_row(row))
    return store.root


# --- the runs the tests use --------------------------------------------------------------

TABLE_SCENARIO = """\
name: handmade-table
title: "Hand-made Table II run: two links x two profiles x two payloads"
source: "000_10b8b18b6f5db8a8.txt Table II (a), (c)"
fixed: {middleware: fastdds, rate: 30Hz, qos: reliable, history: profile, type: Bytes,
        count: 90, warmup: 1s}
axes:
  link: [wifi-ideal, wifi-severe]
  profile: [default, optimized]
  payload: [64KiB, 256KiB]
trials: TRIALS
"""


def table_behaviour(scale: float = 1.0, shift_ms: float = 0.0) -> Callable[[Cell], Behaviour]:
    def behave(cell: Cell) -> Behaviour:
        big = cell.payload_bytes > 100_000
        if cell.link == "wifi-severe" and cell.profile == "default":
            if big:  # the publisher crashed after 20 samples
                return Behaviour(latency_ms=900, jitter_ms=300, stop_after=20,
                                 crash="publisher", wire_amplification=None)
            return Behaviour(latency_ms=400, jitter_ms=150, loss=0.6)  # not completed
        latency = (4.0 if cell.link == "wifi-ideal" else 20.0) * (2 if big else 1)
        return Behaviour(latency_ms=latency * scale + shift_ms, jitter_ms=latency / 4,
                         cpu_s=(0.3 + big * 0.5, 0.2 + big * 0.3),
                         wire_amplification=1.02 + 0.2 * (cell.link == "wifi-severe"),
                         model_amplification=1.03 + 0.25 * (cell.link == "wifi-severe"))
    return behave


def table_run(root: Path, trials: int = 1, seed: int = 1, scale: float = 1.0,
              shift_ms: float = 0.0, skip=None) -> Path:
    return make_run(root, TABLE_SCENARIO.replace("TRIALS", str(trials)),
                    table_behaviour(scale, shift_ms), seed=seed, skip=skip)


OUTAGE_SCENARIO = """\
name: handmade-outage
title: "Hand-made outage run: KEEP_LAST depth vs recovery after a 4 s outage"
source: "000_10b8b18b6f5db8a8.txt Fig. 7"
fixed: {middleware: fastdds, link: wifi-outage, profile: optimized, rate: 30Hz,
        qos: reliable, type: Bytes, duration: 12s, warmup: 1s, outage_start: 3s,
        payload: 231KB}
axes:
  history: [10, 400]
"""


def outage_run(root: Path) -> Path:
    def behave(cell: Cell) -> Behaviour:
        return Behaviour(latency_ms=15, jitter_ms=3, outage=(3.0, 4.0))
    # an older, flat link description (parameters and stages at the top level)
    return make_run(root, OUTAGE_SCENARIO, behave, seed=7, links={"wifi-outage": {
        "preset": "wifi-outage", "mtu": 1500, "source": "seed 000 §V-A",
        "up": {"loss": "0%", "rate": "433Mbit/s", "outage": "3s+4s"},
        "down": {"loss": "0%", "rate": "433Mbit/s", "outage": "3s+4s"},
        "stages": [{"kind": "outage", "runs_in": "nftables ingress", "at": "3 s"}]}})
