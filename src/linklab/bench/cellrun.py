"""One measurement of a cell on a link that is up: start every endpoint, wait, collect.

Subscribers start first (the one broker/router of the cell before them), then, once they
exist, the publishers. The cell ends when every probe has ended on its own (publishers
after lingering, subscribers at their end of stream), when one crashed (not counting an
endpoint whose discovery did not complete: the others' streams go on), or at the
deadline; then every probe is stopped, and records, counters, CPU and memory are turned
into the cell's row and one row per subscriber (streams.py).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from linklab.bench import discovery_gate as G
from linklab.bench import endpoints as E
from linklab.bench import metrics as M
from linklab.bench import verdict as V
from linklab.bench.cpu import CellLoad
from linklab.bench.matrix import Cell, deadline_s
from linklab.bench.middlewares import base_middleware
from linklab.bench.probe_driver import ProbeArgs, ProbeProcess, probe_binary, start_probe
from linklab.bench.simlag import simulator_lag_ms, simulator_lag_note
from linklab.bench.streams import (
    StreamInput,
    aggregate,
    completed_from_received,
    fanout,
    holds_every_seq,
)
from linklab.brokers.bench_adapter import adapter_for, edge_of
from linklab.probes.upstream import recognise

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
        netns, edge_address = edge_of(bed)
        broker = adapter.start_broker(netns, edge_address, out_dir)
        probes.append(broker)  # stopped with the probes if the cell fails

    def args(ep: E.Endpoint) -> ProbeArgs:
        topic = ep.topic
        common = dict(role=ep.role, topic=f"{tag}_{topic.name}", type=topic.type,
                      size=topic.payload_bytes, rate_hz=topic.rate_hz, count=topic.messages,
                      duration_s=None, qos_flags=ep.qos, profile=profile_path,
                      records=out_dir / f"{ep.name}.bin", peers=ep.peers,
                      interface=bed.interface(ep.host), match_timeout_s=MATCH_TIMEOUT_S,
                      extra=ep.extra)
        if gated:
            common["ready_file"] = G.ready_path(out_dir, ep.name)
            if ep.role == "pub":
                common["start_file"] = G.start_path(out_dir)
        if ep.role == "sub":
            # never leave before the runner's deadline: a stream that stalls may still
            # recover within it. The idle clock runs from the reader's match, the deadline
            # from the go, which the gate may hold up to MATCH_TIMEOUT_S for a subscriber
            # that never matches
            held = MATCH_TIMEOUT_S if gated else 0.0
            return ProbeArgs(warmup_s=0.0, idle_timeout_s=held + MATCH_ALLOWANCE_S
                             + cell.warmup_s + deadline_s(cell, outage_s), **common)
        return ProbeArgs(warmup_s=cell.warmup_s, linger_s=grace,
                         subscribers=len(topic.subscribers), **common)

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
    if broker is not None:
        broker.mark_cpu()
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
    load.stop()  # after the last probe
    after = bed.snapshot(hosts)
    G.clear(out_dir)
    fields, streams = collect_cell(cell, plan, started, before, after, out_dir, ended_ns,
                               broker_cpu_s, outage_s, bed, profile, model_fanout, unmatched)
    fields.update(load.fields())
    return fields, streams


def unmatched_endpoints(plan: list[E.Endpoint], unmatched: list[str]) -> list[str]:
    """The endpoints whose end the discovery gate foretold: the subscribers not matched at
    the go (each ends with "no publisher matched") and the publishers of topics none of
    whose subscribers matched (each ends with "no subscriber matched"). A publisher with
    some readers matched serves those (probes/common/probe.cpp), so one subscriber that
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


def _completed(report: dict[str, Any]) -> bool:
    summary = report.get("summary") or {}
    return (summary.get("end_reason") in ("count", "end_of_stream", "duration")
            and not summary.get("errors"))


def _log(out_dir: Path, name: str) -> str:
    """A probe's stderr (its middleware's own messages), empty if it left none."""
    try:
        return (out_dir / f"{name}.log").read_text(errors="replace")
    except OSError:
        return ""


def _read_or_empty(path: Path) -> np.ndarray:
    if not path.exists():
        return M.empty_records()
    try:
        return M.read_records(path)[1]
    except M.RecordFileError:
        return M.empty_records()


def _cpu_fraction(report: dict[str, Any]) -> float:
    cpu, wall = report.get("cpu_s"), report.get("wall_s")
    if cpu is None or not wall:
        return math.nan
    return float(cpu) / float(wall)


def collect_cell(cell: Cell, plan: list[E.Endpoint], started: dict[str, ProbeProcess],
             before: dict, after: dict, out_dir: Path, ended_ns: int, broker_cpu_s: float,
             outage_s: float, bed: Any, profile: Any, model_fanout,
             unmatched: tuple[str, ...] | list[str] = ()) -> tuple[dict, list]:
    reports = {name: p.report() for name, p in started.items()}
    for name, report in reports.items():
        (out_dir / f"{name}.json").write_text(json.dumps(report, indent=2) + "\n")
    (out_dir / "counters.json").write_text(json.dumps(
        {"before": before, "after": after}, indent=1) + "\n")
    (out_dir / "endpoints.json").write_text(json.dumps(
        [{"role": ep.role, "topic": ep.topic.name, "host": ep.host, "name": ep.name,
          "peers": ep.peers, "qos": ep.qos} for ep in plan], indent=1) + "\n")
    pub_of = {ep.topic.name: ep for ep in plan if ep.role == "pub"}
    sub_hosts = tuple(dict.fromkeys(ep.host for ep in plan if ep.role == "sub"))
    pub_hosts = tuple(dict.fromkeys(ep.host for ep in plan if ep.role == "pub"))
    deltas = counter_deltas(before, after, pub_hosts, sub_hosts)
    wire = deltas.pop("wire_bytes")
    # an ns-3 medium runs in real time and may lag it: latencies through it include that
    lag_ms = simulator_lag_ms(before, after)

    pub_records = {t: _read_or_empty(out_dir / f"{ep.name}.bin") for t, ep in pub_of.items()}
    sub_records = {ep.name: _read_or_empty(out_dir / f"{ep.name}.bin")
                   for ep in plan if ep.role == "sub"}
    # a publisher with no summary (killed at the deadline, or crashed) flushed its records
    # only up to a quarter second before it died: count what is known to be published
    inexact = {t for t, ep in pub_of.items() if not reports[ep.name].get("summary")}
    for t in inexact:
        pub_records[t] = completed_from_received(
            pub_records[t], [sub_records[ep.name] for ep in plan
                             if ep.role == "sub" and ep.topic.name == t])
    inexact = {t for t in inexact
               if not holds_every_seq(pub_records[t], pub_of[t].topic.messages)}
    inputs = [StreamInput(ep.topic.name, ep.topic.publisher, ep.host, ep.name,
                          pub_records[ep.topic.name], sub_records[ep.name],
                          published_exact=ep.topic.name not in inexact,
                          end_ns=_observed_until(reports[ep.name], ended_ns, bed))
              for ep in plan if ep.role == "sub"]
    starts = [int(r["t_send_ns"].min()) for r in pub_records.values() if len(r)]
    origin = min(starts) if starts else None
    # the warm-up samples are counted by the publisher alone (its summary): without it
    # the wire bytes have no known divisor, so the cell gets no wire amplification
    unknown_warmup = [ep.name for ep in pub_of.values()
                      if cell.warmup_s > 0 and not reports[ep.name].get("summary")]
    warmup_bytes = None if unknown_warmup else sum(
        int((reports[ep.name].get("summary") or {}).get("warmup_samples") or 0)
        * ep.topic.payload_bytes for ep in pub_of.values())
    n_bins = max(1, math.ceil((ended_ns - origin) / 1e9)) if origin is not None else None
    measured, per_stream, expected = aggregate(
        pub_records, inputs, wire_bytes=wire, warmup_bytes=warmup_bytes,
        bins_origin_ns=origin, n_bins=n_bins, dark=bed.dark_windows_ns())

    streams: list[dict[str, Any]] = []
    known_failures: set[str] = set()
    partly_served: set[str] = set()
    reasons: list[str] = []
    notes: list[str] = []
    lag_note = simulator_lag_note(lag_ms)
    if lag_note:
        notes.append(lag_note)
    if unknown_warmup and wire is not None:
        notes.append(f"no wire / payload: {', '.join(unknown_warmup)} left no summary, so "
                     "its warm-up samples are unknown")
    expects = []
    by_topic_latency: dict[str, dict[str, float]] = {}
    for stream, metrics in zip(inputs, per_stream, strict=True):
        ep_pub = pub_of[stream.topic]
        pub, sub = started[ep_pub.name], started[stream.endpoint]
        pub_report, sub_report = reports[ep_pub.name], reports[stream.endpoint]
        rule = V.rule_for(base_middleware(cell.middleware), ep_pub.qos,
                          ep_pub.topic.interval_s)
        expects.append(rule.text())
        outcome = V.Outcome(
            publisher_finished=metrics.published >= ep_pub.topic.messages,
            publisher_exit=pub.exit_code, subscriber_exit=sub.exit_code,
            expects_all=rule.expects_all, stall_limit_s=rule.stall_limit_s,
            publisher_signalled=pub.signalled_by_runner,
            subscriber_signalled=sub.signalled_by_runner,
            publisher_completed=_completed(pub_report),
            subscriber_completed=_completed(sub_report),
            published_exact=stream.published_exact,
            publisher_summary=bool(pub_report.get("summary")),
            readers_unmatched=int((pub_report.get("summary") or {}).get(
                "readers_unmatched_while_publishing") or 0),
            stream_ended=(sub_report.get("summary") or {}).get("end_reason") == "end_of_stream")
        reason = V.failure_reason(metrics, outcome, ep_pub.topic.interval_s,
                                  ep_pub.topic.messages)
        if stream.endpoint in unmatched:
            reason = G.unmatched_reason(MATCH_TIMEOUT_S) + (f"; {reason}" if reason else "")
        known = None
        if reason is not None:
            known = recognise([_log(out_dir, ep_pub.name), _log(out_dir, stream.endpoint)])
            if known is not None:
                reason = f"known upstream failure: {known.describe()}; {reason}"
                known_failures.add(known.name)
        if reason is not None and reason.startswith("crashed:"):
            errors = [e for r in (pub_report, sub_report)
                      for e in ((r.get("summary") or {}).get("errors") or [])]
            if errors:
                reason += f" ({'; '.join(map(str, errors))[:300]})"
        note = V.exit_note(outcome)
        served = (pub_report.get("summary") or {}).get("matched_readers")
        if (served is not None and 0 < served < len(ep_pub.topic.subscribers)
                and ep_pub.name not in partly_served):
            partly_served.add(ep_pub.name)
            notes.append(f"topic {stream.topic}: the publisher began with {served} of "
                         f"{len(ep_pub.topic.subscribers)} readers matched (the runner's go)")
        sub_summary = sub_report.get("summary") or {}
        pub_summary = pub_report.get("summary") or {}
        polled = sub_summary.get("polled_samples")
        if polled:
            note = "; ".join(filter(None, [note, f"{polled} samples taken by the poll "
                                                 "fallback (late receive timestamps)"]))
        where = f"topic {stream.topic} subscriber {stream.endpoint}" if len(inputs) > 1 else ""
        if reason is not None:
            reasons.append(f"{where}: {reason}" if where else reason)
        if note:
            notes.append(f"{where}: {note}" if where else note)
        row = metrics.to_dict()
        for key in ("wire_bytes", "wire_amplification", "model_amplification", "rate_bins_hz"):
            row.pop(key)
        row.update({
            "cell_id": cell.cell_id, "topic": stream.topic, "publisher": stream.publisher,
            "subscriber": stream.subscriber, "endpoint": stream.endpoint,
            "status": "ok" if reason is None else "failed", "failure_reason": reason,
            "known_failure": known.name if known else None,
            "completion_rule": rule.text(),
            "history_applied": V.history_flag(ep_pub.qos),
            "pub_cpu_s": pub_report["cpu_s"], "sub_cpu_s": sub_report["cpu_s"],
            "pub_cpu_fraction": _cpu_fraction(pub_report),
            "sub_cpu_fraction": _cpu_fraction(sub_report),
            "pub_rss_peak_bytes": pub_report["rss_peak_bytes"],
            "sub_rss_peak_bytes": sub_report["rss_peak_bytes"],
            "write_failures": pub_summary.get("write_failures"),
            "polled_samples": polled,
            "applied_qos": _ros_qos(sub_summary), "pub_applied_qos": _ros_qos(pub_summary),
        })
        streams.append(row)
        by_topic_latency.setdefault(stream.topic, {})[stream.endpoint] = metrics.latency_mean_ms
    fanout_step = model_step = math.nan
    for topic_name, latencies in by_topic_latency.items():
        ranks, step = fanout(latencies)
        model = model_fanout(cell, pub_of[topic_name].topic, len(latencies))
        for row in streams:
            if row["topic"] == topic_name:
                row["fanout_rank"] = ranks.get(row["endpoint"])
                rank = ranks.get(row["endpoint"])
                row["model_fanout_offset_ms"] = (model * (rank - 1)
                                                 if rank and not math.isnan(model) else math.nan)
        if len(latencies) > 1 and math.isnan(fanout_step):
            fanout_step, model_step = step, model

    outage_on = bed.outage_on_ns() if outage_s > 0 else None
    row = measured.to_dict()
    row.pop("model_amplification")
    pubs = [reports[ep.name] for ep in plan if ep.role == "pub"]
    subs = [reports[ep.name] for ep in plan if ep.role == "sub"]
    row.update({
        "status": "ok" if not reasons else "failed",
        "failure_reason": "; ".join(reasons)[:2000] or None,
        "known_failure": "; ".join(sorted(known_failures)) or None,
        "exit_note": "; ".join(notes) or None,
        "completion_rule": expects[0] if len(set(expects)) == 1
        else "per subscriber (see streams)",
        "expected": expected,
        "outage_s": outage_s,
        # subscribers whose reader matched no publisher before the go (their rows say so)
        "unmatched_subscribers": sum(1 for ep in plan
                                     if ep.role == "sub" and ep.name in unmatched),
        # when the outage really began, seconds after the first measured sample
        "outage_at_s": (outage_on - origin) / 1e9 if outage_on and origin else math.nan,
        "warmup_samples": sum(int((r.get("summary") or {}).get("warmup_samples") or 0)
                              for r in pubs),
        "write_failures": _sum(((r.get("summary") or {}).get("write_failures")) for r in pubs),
        "polled_samples": _sum(((r.get("summary") or {}).get("polled_samples")) for r in subs),
        **deltas,
        "pub_cpu_s": _sum(r["cpu_s"] for r in pubs), "sub_cpu_s": _sum(r["cpu_s"] for r in subs),
        "cpu_fraction_max": max((_cpu_fraction(r) for r in pubs + subs), default=math.nan),
        "broker_cpu_s": broker_cpu_s,
        "pub_rss_peak_bytes": _max(r["rss_peak_bytes"] for r in pubs),
        "sub_rss_peak_bytes": _max(r["rss_peak_bytes"] for r in subs),
        "fanout_step_ms": fanout_step, "model_fanout_step_ms": model_step,
        "interfaces": interface_deltas(before, after),
        "simulator_lag_max_ms": math.nan if lag_ms is None else lag_ms,
    })
    return row, streams


def _ros_qos(summary: dict[str, Any]) -> str | None:
    """A probe's ``applied.ros_qos`` (read back from its middleware) as JSON text."""
    value = (summary.get("applied") or {}).get("ros_qos")
    return None if value is None else json.dumps(value)


def _observed_until(report: dict[str, Any], ended_ns: int, bed: Any) -> int | None:
    """The end of a subscriber's observation on the probes' clock: when it ended (noticed
    by the runner's poll), or the cell's end; None when its clock is not this machine's
    (the stall then runs to the stream's last write or arrival)."""
    if not bed.shares_local_clock:
        return None
    ended = report.get("ended_ns")
    return min(int(ended), ended_ns) if ended is not None else ended_ns


def _sum(values) -> Any:
    kept = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(kept) if kept else None


def _max(values) -> Any:
    kept = [v for v in values if v is not None]
    return max(kept) if kept else None


COUNTER_COLUMNS = ("link_dropped_packets", "link_passed_packets", "rate_dropped_packets",
                   "sub_udp_rcvbuf_errors", "pub_udp_rcvbuf_errors", "pub_udp_sndbuf_errors")


def _interfaces_of(snap: dict, host: str) -> dict[str, Any]:
    return (snap.get("link") or {}).get("interfaces", {}).get(host, {})


def counter_deltas(before: dict[str, Any], after: dict[str, Any],
                   pub_hosts: tuple[str, ...] = ("robot",),
                   sub_hosts: tuple[str, ...] = ("edge",)) -> dict[str, Any]:
    """What happened on the link during the cell, from two snapshots (Bed.snapshot).

    wire_bytes: rx + tx bytes of the link interfaces of the publishers' hosts;
    link_dropped/passed_packets: the loss and outage stages (all links, both directions);
    rate_dropped_packets: the rate limiters' drops (queue overflow);
    *_udp_*_errors: /proc/net/snmp Udp counters, summed over the subscribers' /
    publishers' hosts.
    """
    def stage_sum(snap, kinds, key):
        return sum(int(st.get(key) or 0) for st in (snap.get("link") or {}).get("stages", [])
                   if st.get("kind") in kinds)

    def if_bytes(snap, host):
        return sum(int(v.get("rx_bytes") or 0) + int(v.get("tx_bytes") or 0)
                   for v in _interfaces_of(snap, host).values())

    out: dict[str, Any] = {}
    present = [h for h in pub_hosts if _interfaces_of(after, h)]
    out["wire_bytes"] = (sum(if_bytes(after, h) - if_bytes(before, h) for h in present)
                         if present else None)
    out["link_dropped_packets"] = (stage_sum(after, ("loss", "outage"), "dropped_packets")
                                   - stage_sum(before, ("loss", "outage"), "dropped_packets"))
    out["link_passed_packets"] = (stage_sum(after, ("loss",), "passed_packets")
                                  - stage_sum(before, ("loss",), "passed_packets"))
    out["rate_dropped_packets"] = (stage_sum(after, ("rate",), "dropped_packets")
                                   - stage_sum(before, ("rate",), "dropped_packets"))
    for role, hosts, key in (("sub", sub_hosts, "RcvbufErrors"), ("pub", pub_hosts, "RcvbufErrors"),
                             ("pub", pub_hosts, "SndbufErrors")):
        column = f"{role}_udp_{key.replace('bufErrors', 'buf_errors').lower()}"
        total: int | None = 0
        for host in hosts:
            b = (before.get("udp") or {}).get(host, {}).get(key)
            a = (after.get("udp") or {}).get(host, {}).get(key)
            if a is None or b is None:
                total = None
                break
            total += a - b
        out[column] = total
    return out


def interface_deltas(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """Bytes and packets each interface of each host carried during the cell."""
    out = []
    hosts = (after.get("link") or {}).get("interfaces", {})
    for host, interfaces in hosts.items():
        for ifname, a in interfaces.items():
            b = _interfaces_of(before, host).get(ifname, {})
            out.append({"host": host, "interface": ifname, **{
                key: int(a.get(key) or 0) - int(b.get(key) or 0)
                for key in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets")}})
    return out
