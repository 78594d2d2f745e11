"""One measurement of a cell on a link that is up: start every endpoint, wait, collect.

Subscribers start first (the one broker/router of the cell before them), then, once they
exist, the publishers. The cell ends when every probe has ended on its own (publishers
after lingering, subscribers at their end of stream), when one crashed (not counting an
endpoint whose discovery did not complete: the others' streams go on), or at the
deadline; then every probe is stopped, and records, counters, CPU and memory are turned
into the cell's row and one row per subscriber: read what the probes left (cell_files.py),
analyse it (cell_analysis.py: metrics, verdicts, notes), make the run directory's records
of it (cell_row.py, linklab.rundir.records).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linklab.bench import bridges as B
from linklab.bench import discovery_gate as G
from linklab.bench import endpoints as E
from linklab.bench.broker_host import broker_host
from linklab.bench.cell_analysis import Unmatched, analyse_cell
from linklab.bench.cell_files import read_cell
from linklab.bench.cell_row import cell_fields, stream_rows
from linklab.bench.cpu import CellLoad
from linklab.bench.matrix import Cell, deadline_s
from linklab.bench.probe_driver import ProbeArgs, ProbeProcess, probe_binary, start_probe
from linklab.brokers.bench_adapter import adapter_for, host_of
from linklab.middleware import middleware

POLL_S = 0.1
# When the probes of one side have ended on their own, how long the others get to end.
SETTLE_S = 1.5
# Discovery across a lossy link: longer than Cyclone DDS's 30 s SPDP interval, so a lost
# participant announcement is repeated once within it (bench/discovery_gate.py).
MATCH_TIMEOUT_S = 35.0
MATCH_ALLOWANCE_S = 3.0
# Without the gate (Zenoh; a bed with neither this machine's files nor its own gate_files)
# a publisher starts its warm-up after discovery (well under a second on these links) and
# a 1 s settle; an outage clock is armed that far ahead of the first measured sample
# (bed.start_traffic). Kubernetes cells run in linklab.k8s, ungated likewise.
UNGATED_START_S = 1.3


def run_cell(cell: Cell, bed: Any, profile: Any, profile_path: Path | None, out_dir: Path,
             probes: list, history_of, model_fanout) -> tuple[dict[str, Any], list[dict]]:
    """Run the cell's endpoints on ``bed``; (row fields, stream rows). ``probes`` collects
    every process started, so the caller can stop them if this raises."""
    binary = probe_binary(cell.middleware)
    adapter = adapter_for(cell.middleware)
    address = bed.address
    if adapter:
        adapter.prepare(E.tls_names(cell, address), out_dir)
    plan = E.plan(cell, address, adapter, history_of)
    outage_s = bed.outage_s
    tag = f"linklab_{os.getpid()}_{cell.index}"
    grace = deadline_s(cell, outage_s) - cell.publish_s
    for path in out_dir.glob("*.bin"):
        path.unlink()
    gate = G.applies(cell.middleware, bed)
    gated = gate is not None
    G.clear(out_dir)

    load = CellLoad(cell, bed, out_dir)  # cpu_load competitors (bench/cpu.py)
    probes.append(load)  # stopped with the probes if the cell fails
    load.start()  # before the broker and the first probe
    broker = None
    if adapter is not None and adapter.brokered:
        netns, at = host_of(bed, broker_host(cell))
        broker = adapter.start_broker(netns, at, out_dir)
        probes.append(broker)  # stopped with the probes if the cell fails
    bridges = _start_bridges(cell, plan, bed, tag, out_dir, probes)

    def args(ep: E.Endpoint) -> ProbeArgs:
        return probe_args(cell, ep, ProbeSetting(
            tag=tag, profile_path=profile_path, out_dir=out_dir,
            interface=adapter.interface(bed.interface(ep.host)) if adapter
            else bed.interface(ep.host), gated=gated, grace_s=grace, outage_s=outage_s))

    hosts = tuple(dict.fromkeys(ep.host for ep in plan))
    started: dict[str, ProbeProcess] = {}

    def start(role: str) -> None:
        for ep in (e for e in plan if e.role == role):
            started[ep.name] = start_probe(lambda a, o, e, h=ep.host: bed.spawn(h, a, o, e),
                                           args(ep), binary, out_dir, name=ep.name)
            probes.append(started[ep.name])

    start("sub")
    time.sleep(0.3)  # the subscribers' participants exist before the publishers look
    before = bed.snapshot(hosts)
    start("pub")
    for process in ([broker] if broker is not None else []) + bridges:
        process.mark_cpu()
    pubs = [started[ep.name] for ep in plan if ep.role == "pub"]
    subs = [started[ep.name] for ep in plan if ep.role == "sub"]
    unmatched: list[str] = []
    if gated:
        unmatched = G.open_when_ready(
            out_dir, [ep.name for ep in plan], MATCH_TIMEOUT_S,
            gave_up=lambda: any(p.poll() is not None for p in pubs + subs), files=gate)
    pub_started = time.monotonic()
    bed.start_traffic((G.GO_LATENCY_S if gated else UNGATED_START_S) + cell.warmup_s)

    deadline = pub_started + MATCH_ALLOWANCE_S + cell.warmup_s + deadline_s(cell, outage_s)
    _wait(pubs, subs, deadline,
          expected_to_fail=[started[name] for name in unmatched_endpoints(plan, unmatched)])
    ended_ns = time.monotonic_ns()  # CLOCK_MONOTONIC, the probes' clock
    for probe in pubs + subs:
        probe.stop()
    broker_cpu_s = broker.stop().cpu_seconds if broker is not None else math.nan
    bridge_cpu_s = sum(b.stop().cpu_seconds for b in bridges) if bridges else math.nan
    load.stop()  # after the last probe
    after = bed.snapshot(hosts)
    G.clear(out_dir)
    fields, streams = collect_cell(cell, plan, started, before, after, out_dir, ended_ns,
                                   broker_cpu_s, outage_s, bed, profile, model_fanout,
                                   unmatched, bridge_cpu_s=bridge_cpu_s)
    fields.update(load.fields())
    return fields, streams


def _start_bridges(cell: Cell, plan: list[E.Endpoint], bed: Any, tag: str, out_dir: Path,
                   probes: list) -> list:
    """A bridged middleware's bridges (bench.bridges), each in ``probes`` once started."""
    bridge = middleware(cell.middleware).bridge
    if bridge is None:
        return []
    qos = {ep.topic.name: ep.qos for ep in plan}
    specs = B.specs(cell, qos_of=lambda t: qos[t.name], topic_of=lambda t: f"{tag}_{t.name}",
                    netns_of=lambda host: host_of(bed, host)[0],
                    address_of=lambda host: host_of(bed, host)[1],
                    broker_address=host_of(bed, broker_host(cell))[1])
    return B.start(bridge, specs, out_dir, probes)


@dataclass(frozen=True)
class ProbeSetting:
    """What every probe of a cell is told alike."""

    tag: str  # the cell's topics' prefix (unique to this process and cell)
    profile_path: Path | None
    out_dir: Path
    interface: str | None  # the endpoint's host's link interface
    gated: bool  # the discovery gate holds the publishers until every reader matched
    grace_s: float
    outage_s: float


def probe_args(cell: Cell, ep: E.Endpoint, setting: ProbeSetting) -> ProbeArgs:
    """One endpoint's probe arguments."""
    topic = ep.topic
    common = dict(role=ep.role, topic=f"{setting.tag}_{topic.name}", type=topic.type,
                  size=topic.payload_bytes, rate_hz=topic.rate_hz, count=topic.messages,
                  duration_s=None, qos_flags=ep.qos, profile=setting.profile_path,
                  records=setting.out_dir / f"{ep.name}.bin", peers=ep.peers,
                  interface=setting.interface, match_timeout_s=MATCH_TIMEOUT_S,
                  extra=ep.extra)
    if setting.gated:
        common["ready_file"] = G.ready_path(setting.out_dir, ep.name)
        if ep.role == "pub":
            common["start_file"] = G.start_path(setting.out_dir)
    if ep.role == "sub":
        # never leave before the runner's deadline: a stream that stalls may still
        # recover within it. The idle clock runs from the reader's match, the deadline
        # from the go, which the gate may hold up to MATCH_TIMEOUT_S for a subscriber
        # that never matches
        held = MATCH_TIMEOUT_S if setting.gated else 0.0
        return ProbeArgs(warmup_s=0.0, idle_timeout_s=held + MATCH_ALLOWANCE_S
                         + cell.warmup_s + deadline_s(cell, setting.outage_s), **common)
    return ProbeArgs(warmup_s=cell.warmup_s, linger_s=setting.grace_s,
                     subscribers=len(topic.subscribers), **common)


def unmatched_endpoints(plan: list[E.Endpoint], unmatched: list[str]) -> list[str]:
    """The endpoints whose end the discovery gate foretold: the subscribers not matched at
    the go (each ends with "no publisher matched") and the publishers of topics none of
    whose subscribers matched (each ends with "no subscriber matched"). A publisher with
    some readers matched serves those (probes/common/publish.cpp), so one subscriber that
    never matches does not end the others' streams."""
    subs = {ep.name for ep in plan if ep.role == "sub" and ep.name in unmatched}
    lonely = [ep.name for ep in plan if ep.role == "pub"
              and all(s.name in subs for s in plan
                      if s.role == "sub" and s.topic.name == ep.topic.name)]
    return sorted(subs) + lonely


def _wait(pubs: list[ProbeProcess], subs: list[ProbeProcess], deadline: float,
          expected_to_fail: Sequence[ProbeProcess] = ()) -> None:
    """Until every probe ended, one side is done (then SETTLE_S for the other), a probe
    failed, or the deadline. The failure of a probe in ``expected_to_fail`` (discovery did
    not complete for it, named in its row) does not end the others."""
    one_side_done: float | None = None
    everyone = pubs + subs
    while True:
        now = time.monotonic()
        for probe in everyone:
            probe.sample_memory()  # VmHWM only grows; the last read before exit is the peak
        codes = [p.poll() for p in everyone]
        if all(c is not None for c in codes):
            return
        if any(c not in (None, 0) and p not in expected_to_fail
               for p, c in zip(everyone, codes, strict=True)):
            return  # a crash or an error: nothing more will arrive
        pubs_done = all(c is not None for c in codes[:len(pubs)])
        subs_done = all(c is not None for c in codes[len(pubs):])
        if pubs_done or subs_done:
            # the publishers are done lingering, or the subscribers have everything (or
            # the end-of-stream marker): give the others a moment, then stop them
            one_side_done = one_side_done or now
            if now - one_side_done > SETTLE_S:
                return
        if now >= deadline:
            return
        time.sleep(POLL_S)


def collect_cell(cell: Cell, plan: list[E.Endpoint], started: dict[str, ProbeProcess],
                 before: dict, after: dict, out_dir: Path, ended_ns: int, broker_cpu_s: float,
                 outage_s: float, bed: Any, profile: Any, model_fanout,
                 unmatched: tuple[str, ...] | list[str] = (),
                 bridge_cpu_s: float = math.nan) -> tuple[dict, list]:
    """(the row's fields, the stream rows) of a cell whose probes have ended: read what
    they left, analyse it, and make the run directory's records of it."""
    files = read_cell(plan, started, before, after, out_dir)
    analysis = analyse_cell(cell, files, ended_ns, outage_s, bed, model_fanout,
                            Unmatched(unmatched, G.unmatched_reason(MATCH_TIMEOUT_S)))
    streams = [row.to_dict() for row in stream_rows(cell, analysis)]
    return cell_fields(files, analysis, broker_cpu_s, outage_s, unmatched,
                       bridge_cpu_s).to_dict(), streams
