"""linklab's Zenoh probe: the probe protocol (``linklab.probes`` docstring) on
eclipse-zenoh 1.10.2, in Python.

    linklab-probe-zenoh pub|sub --topic T --type TYPE [--size BYTES] --rate HZ ...
        [--qos reliable|best_effort] [--durability volatile] [--system-default]
        --records FILE.bin [--mode peer|client] [--peer ENDPOINT ...] [--listen ENDPOINT ...]

Same command line, records, pacing (absolute CLOCK_MONOTONIC deadlines, late ticks
skipped), warm-up samples (seq bit 63), end-of-stream sample (seq 2**64-1), subscriber
end conditions and JSON summary as the C++ probes (probes/common/). Extra flags:

- ``--mode peer`` (the paper's "Zenoh-TCP", seed 004 Table 2): peer-to-peer over TCP,
  explicit endpoints, multicast scouting and gossip off; usually the subscriber
  ``--listen``s and the publisher ``--peer``s to it.
- ``--mode client`` ("Zenoh-broker"): both ends ``--peer`` to a router started by
  linklab on the edge host (``linklab.brokers.zenoh_router``).
- ``--peer`` takes ``ADDR``, ``ADDR:PORT`` or a zenoh endpoint (``tcp/ADDR:PORT``,
  ``tls/ADDR:PORT``); ``--profile`` a zenoh JSON5 configuration (e.g. the keystore's
  ``zenoh_tls.json5``) applied before linklab's settings.

Key expression: ``rt/<topic>`` (the DDS topic name). Payload: for Bytes and
performance_test's types, seq u64 + t_send_ns i64 + the type's payload bytes; for ROS 2's
Image, PointCloud2, String and UInt8MultiArray the CDR-serialized sample (encapsulation +
XCDR1, byte for byte what Fast DDS and the MQTT probe send; seq and send time where the
DDS probes put them: ``linklab.probes.ros_types``), the payload rmw_zenoh also carries.
Payloads are built once; only seq and send time change per sample. A received payload
that does not decode as the type is counted (``malformed_samples``, an error). QoS
(publisher): ``reliable`` (default, as ROS 2) -> Reliability.RELIABLE +
CongestionControl.BLOCK; ``best_effort`` -> BEST_EFFORT + DROP;
with ``--system-default`` and no ``--qos``, zenoh's own defaults. A zenoh 1.x subscriber
has no reliability setting: its samples travel with the publisher's. Zenoh pub/sub has no
history cache: ``--history`` and ``--durability transient_local`` are refused (usage
error), ``--durability volatile`` is what it does. ``applied.ros_qos``: the publisher's
reliability read back from the declared publisher; the subscriber's null; history and
depth null; durability volatile; ``unsupported`` says why (``linklab.probes.qos``).
Zenoh has no domain: ``--domain`` is reported as not applicable.

Matching: the publisher counts matching subscribers through zenoh's matching status; the
subscriber counts publishers through liveliness tokens the publishers declare
(``linklab/presence/rt/<topic>/pub/<zid>``).

This probe runs on CPython: its own overhead against the C++ probes is measured in
docs/RESULTS.md ("Zenoh probe overhead").
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time

from linklab.probes.qos import unsupported_policies
from linklab.probes.types import dds_type_name
from linklab.probes.zenoh_options import ProbeOptions, ProbeUsageError, parse_options
from linklab.probes.zenoh_stream import (
    END_OF_STREAM,
    WARMUP_FLAG,
    Pacer,
    RecordWriter,
    decoder_for,
    payload_for,
)

__all__ = ["ProbeOptions", "ProbeUsageError", "main", "parse_options", "run"]

PROG = "linklab-probe-zenoh"


def build_config(o: ProbeOptions):
    import zenoh

    config = zenoh.Config.from_file(o.profile) if o.profile else zenoh.Config()
    config.insert_json5("mode", json.dumps(o.mode))
    config.insert_json5("connect/endpoints", json.dumps(o.peers))
    config.insert_json5("listen/endpoints", json.dumps(o.listen))
    # explicit endpoints only: no multicast scouting, no gossip
    config.insert_json5("scouting/multicast/enabled", "false")
    config.insert_json5("scouting/gossip/enabled", "false")
    # zenoh 1.x puts payloads >= 3 KiB into shared memory when both ends are on one
    # machine -- as host namespaces are -- and sends only a reference: the samples would
    # never cross the emulated link (the DDS probes turn data sharing off for the same
    # reason)
    config.insert_json5("transport/shared_memory/enabled", "false")
    return config


def config_readback(config) -> dict:
    """Mode, scouting and endpoints as the zenoh Config holds them."""
    return {
        "mode": json.loads(config.get_json("mode")),
        "scouting_multicast": json.loads(config.get_json("scouting/multicast/enabled")),
        "connect": json.loads(config.get_json("connect/endpoints")),
        "listen": json.loads(config.get_json("listen/endpoints")),
        "shared_memory": json.loads(config.get_json("transport/shared_memory/enabled")),
    }


def _links(session) -> list[dict]:
    return [{"src": str(link.src), "dst": str(link.dst), "mtu": link.mtu,
             "streamed": link.is_streamed} for link in session.info.links()]


def _read_session(session, summary: dict) -> list[dict]:
    """Links, transports, peers and routers of the session as zenoh reports them now."""
    links = _links(session)
    summary["applied"].update({
        "links": links,
        "transport": sorted({link["dst"].split("/")[0] for link in links}),
        "peers": len(list(session.info.peers_zid())),
        "routers": len(list(session.info.routers_zid())),
    })
    return links


def _publisher_qos(o: ProbeOptions) -> dict:
    """declare_publisher's QoS arguments: --qos, else ROS 2's reliable, else (with
    --system-default) none, so zenoh's own defaults apply."""
    import zenoh

    reliable = o.reliable if o.reliable is not None else (None if o.system_default else True)
    if reliable is None:
        return {}
    return {"congestion_control": (zenoh.CongestionControl.BLOCK if reliable
                                   else zenoh.CongestionControl.DROP),
            "reliability": (zenoh.Reliability.RELIABLE if reliable
                            else zenoh.Reliability.BEST_EFFORT)}


def ros_qos(role: str, reliability: str | None) -> dict:
    """applied.ros_qos: zenoh pub/sub has no history; what it does is volatile."""
    return {"reliability": reliability, "history": None, "depth": None,
            "durability": "volatile", "unsupported": unsupported_policies("zenoh", role)}


def _name(value) -> str:
    return str(value).split(".")[-1]


def _declare_publisher(session, o: ProbeOptions, summary: dict):
    """(publisher, its presence token, whether it is reliable): the QoS read back from the
    declared publisher into applied."""
    publisher = session.declare_publisher(o.key, **_publisher_qos(o))
    token = session.liveliness().declare_token(
        f"linklab/presence/{o.key}/pub/{session.info.zid()}")
    reliability = {"RELIABLE": "reliable", "BEST_EFFORT": "best_effort"}[
        _name(publisher.reliability)]  # read back from the declared publisher
    summary["applied"].update({
        "congestion_control": _name(publisher.congestion_control),
        "reliability": _name(publisher.reliability),
        "priority": _name(publisher.priority),
        "ros_qos": ros_qos("pub", reliability),
    })
    return publisher, token, reliability == "reliable"


def _wait_for_subscriber(publisher, o: ProbeOptions, summary: dict, errors: list[str],
                         stop) -> str:
    """Waits until a subscriber matches: "" then, else the end reason (signal, no_match)."""
    t0 = time.monotonic_ns()
    # zenoh's matching status says whether any subscriber matches (not how many)
    while not publisher.matching_status.matching:
        if stop.is_set():
            return "signal"
        if time.monotonic_ns() - t0 > o.match_timeout_s * 1e9:
            errors.append(f"no subscriber matched within {o.match_timeout_s:g} s "
                          f"(matched 0 of {o.subscribers})")
            return "no_match"
        time.sleep(0.01)
    summary["match_wait_s"] = (time.monotonic_ns() - t0) / 1e9
    return ""


def _warm_up(o: ProbeOptions, sample, put, pacer: Pacer) -> int:
    """The warm-up samples (seq bit 63) for --warmup; returns how many were sent."""
    payload, stamp = sample.buffer, sample.stamp
    warm = 0
    warm_end = time.monotonic_ns() + int(o.warmup_s * 1e9)
    while o.warmup_s > 0 and time.monotonic_ns() < warm_end and pacer.wait_next():
        stamp(WARMUP_FLAG | warm, time.monotonic_ns())
        put(payload)
        warm += 1
    return warm


def _publish(o: ProbeOptions, sample, put, pacer: Pacer, records: RecordWriter | None
             ) -> tuple[str, int, int, float]:
    """The measured stream: --count samples or --duration, paced; returns (end reason,
    samples sent, failed puts, publish span in s)."""
    payload, stamp = sample.buffer, sample.stamp
    sent = failures = 0
    t_start = time.monotonic_ns()
    t_first = t_last = 0
    reason = "count" if o.count else "duration"
    seq = 0
    while not o.count or seq < o.count:
        if not pacer.wait_next():
            break
        t = time.monotonic_ns()
        if o.duration_s and t - t_start >= o.duration_s * 1e9:
            reason = "duration"
            break
        stamp(seq, t)
        try:
            put(payload)
        except Exception:  # noqa: BLE001 - counted like a failed DDS write
            failures += 1
        else:
            if records:
                records.add(seq, t, 0, o.size)
            sent += 1
            t_first = t_first or t
            t_last = t
        seq += 1
    return reason, sent, failures, (t_last - t_first) / 1e9 if sent > 1 else 0.0


def _end_stream(o: ProbeOptions, sample, put, reliable: bool) -> None:
    """The end-of-stream sample (three times when best effort), then a moment to drain."""
    for _ in range(1 if reliable else 3):
        sample.stamp(END_OF_STREAM, time.monotonic_ns())
        put(sample.buffer)
        time.sleep(0.02)
    # zenoh has no per-sample acknowledgement; give the transport a moment to
    # drain (bounded by --linger) before the session closes
    time.sleep(min(o.linger_s, 0.5))


def run_pub(session, o: ProbeOptions, summary: dict, errors: list[str], stop) -> str:
    sample = payload_for(o.type, o.size)  # built before matching: not in the timed part
    publisher, token, reliable = _declare_publisher(session, o, summary)
    records = RecordWriter(o.records, True) if o.records else None
    try:
        unmatched = _wait_for_subscriber(publisher, o, summary, errors, stop)
        if unmatched:
            return unmatched
        _read_session(session, summary)  # while the subscriber is surely connected
        if stop.wait(1.0):  # settle, as the C++ probes do
            return "signal"
        pacer = Pacer(o.rate_hz, stop)
        warm = _warm_up(o, sample, publisher.put, pacer)
        reason, sent, failures, span_s = _publish(o, sample, publisher.put, pacer, records)
        if stop.is_set():
            reason = "signal"
        else:
            _end_stream(o, sample, publisher.put, reliable)
        summary.update({"warmup_samples": warm, "write_failures": failures,
                        "skipped_deadlines": pacer.skipped, "publish_span_s": span_s,
                        "acknowledged": None, "samples": sent})
        return reason
    finally:
        if records:
            records.close()
        token.undeclare()
        publisher.undeclare()


class _Inbox:
    """The subscriber's callbacks hand samples (decoded) and publishers' presence tokens
    over here; the receive loop drains them."""

    def __init__(self, decode):
        self.decode = decode
        self.queue: list[tuple[int, int, int] | None] = []
        self.lock = threading.Condition()
        self.publishers: set[str] = set()

    def on_sample(self, sample) -> None:
        got = self.decode(sample.payload.to_bytes())  # None: not a linklab sample of the type
        with self.lock:
            self.queue.append(got)
            self.lock.notify()

    def on_token(self, sample) -> None:
        import zenoh

        with self.lock:
            if sample.kind == zenoh.SampleKind.PUT:
                self.publishers.add(str(sample.key_expr))
            else:
                self.publishers.discard(str(sample.key_expr))

    def drain(self) -> tuple[list[tuple[int, int, int] | None], int]:
        """The samples handed over since the last call (waiting up to 50 ms for one), and
        the publishers present now."""
        with self.lock:
            if not self.queue:
                self.lock.wait(0.05)
            got, self.queue[:] = list(self.queue), []
            return got, len(self.publishers)


class _Reception:
    """What the subscriber has received: counters, first and last receive time."""

    def __init__(self):
        self.seen: set[int] = set()
        self.samples = self.unique = self.warm = self.dups = self.malformed = 0
        self.t_first = self.t_last = 0

    def take(self, got: list, t_recv: int, records: RecordWriter) -> bool:
        """Counts (and records) one batch received at t_recv; True when it held the end
        of the stream. (The counters are locals inside the loop: this runs per sample.)"""
        end = False
        seen = self.seen
        samples, unique, warm, dups, malformed = (self.samples, self.unique, self.warm,
                                                  self.dups, self.malformed)
        t_first, t_last = self.t_first, self.t_last
        for item in got:
            if item is None:
                malformed += 1
                continue
            seq, t_send, nbytes = item
            if seq == END_OF_STREAM:
                end = True
                continue
            if seq & WARMUP_FLAG:
                warm += 1
                t_last = t_recv
                continue
            records.add(seq, t_send, t_recv, nbytes)
            samples += 1
            t_first = t_first or t_recv
            t_last = t_recv
            if seq in seen:
                dups += 1
            else:
                seen.add(seq)
                unique += 1
        self.samples, self.unique, self.warm, self.dups, self.malformed = (samples, unique,
                                                                           warm, dups, malformed)
        self.t_first, self.t_last = t_first, t_last
        return end


def _sub_end_reason(o: ProbeOptions, r: _Reception, t0: int, t_match: int, now: int,
                    errors: list[str]) -> str:
    """Why the subscriber stops now (count, no_match, idle, duration), or "" to go on."""
    if o.count and r.unique >= o.count:
        return "count"
    if not t_match and not r.samples:
        if now - t0 > o.match_timeout_s * 1e9:
            errors.append(f"no publisher matched within {o.match_timeout_s:g} s")
            return "no_match"
        return ""
    since = max(r.t_last, t_match or t0)
    if o.idle_timeout_s > 0 and now - since > o.idle_timeout_s * 1e9:
        return "idle"
    if o.duration_s and now - (t_match or t0) > o.duration_s * 1e9:
        return "duration"
    return ""


def run_sub(session, o: ProbeOptions, summary: dict, errors: list[str], stop) -> str:
    records = RecordWriter(o.records, False)
    inbox = _Inbox(decoder_for(o.type))
    subscriber = session.declare_subscriber(o.key, inbox.on_sample)
    tokens = session.liveliness().declare_subscriber(f"linklab/presence/{o.key}/pub/*",
                                                     inbox.on_token, history=True)
    print(f"{PROG}: subscribed to '{o.key}' ({o.mode})", file=sys.stderr, flush=True)
    r = _Reception()
    max_matched = 0
    t0 = time.monotonic_ns()
    t_match = 0
    links: list[dict] = []
    reason = ""
    try:
        while not reason:
            if stop.is_set():
                reason = "signal"
                break
            got, matched = inbox.drain()
            t_recv = time.monotonic_ns()  # taken right after the hand-over, as in C++
            if matched and not t_match:
                t_match = t_recv
            max_matched = max(max_matched, matched)
            end = r.take(got, t_recv, records)
            if got and not links:
                links = _read_session(session, summary)
            reason = "end_of_stream" if end else \
                _sub_end_reason(o, r, t0, t_match, time.monotonic_ns(), errors)
    finally:
        records.close()
        tokens.undeclare()
        subscriber.undeclare()
    summary.update({"samples": r.samples, "unique_samples": r.unique, "duplicates": r.dups,
                    "warmup_samples": r.warm, "max_matched": max_matched,
                    "malformed_samples": r.malformed,
                    "receive_span_s": (r.t_last - r.t_first) / 1e9 if r.samples > 1 else 0.0})
    if r.malformed:
        errors.append(f"{r.malformed} sample(s) on {o.key} carried no linklab seq/send time "
                      "(another publisher on the key?); they are not in the records")
    if not links:
        _read_session(session, summary)
    return reason


def run(o: ProbeOptions) -> tuple[dict, int]:
    import zenoh

    stop = threading.Event()
    received_signal: list[int] = []

    def on_signal(number, _frame) -> None:
        received_signal.append(number)
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    begin = time.monotonic_ns()
    summary: dict = {"probe": "zenoh", "role": o.role, "version": f"eclipse-zenoh "
                     f"{getattr(zenoh, '__version__', '1.10.2')} (Python probe)",
                     "topic": o.key, "type": dds_type_name(o.type), "size": o.size}
    if o.role == "pub":
        summary["rate_hz"] = o.rate_hz
    summary["applied"] = {}
    summary["samples"] = 0
    errors: list[str] = []
    config = build_config(o)
    try:
        session = zenoh.open(config)
    except Exception as error:  # zenoh raises ZError naming the endpoint
        errors.append(f"zenoh.open: {error}")
        reason = "error"
    else:
        # CPython start-up, imports and session set-up: a fixed cost the C++ probes do not
        # have; CPU tables subtract it to compare middlewares, not interpreters
        summary["startup_cpu_s"] = time.process_time()
        summary["applied"] = {
            **config_readback(config),
            "history": "n/a (zenoh pub/sub has no history cache)",
            "domain": "n/a (zenoh)",
            "probe_runtime": f"CPython {sys.version.split()[0]}",
        }
        if o.role == "sub":  # no reliability setting on a zenoh subscriber
            summary["applied"]["ros_qos"] = ros_qos("sub", None)
        try:
            runner = run_pub if o.role == "pub" else run_sub
            reason = runner(session, o, summary, errors, stop)
        except OSError as error:
            errors.append(f"{error}")
            reason = "error"
        finally:
            session.close()
    summary["errors"] = errors
    summary["end_reason"] = reason
    if received_signal:
        summary["signal"] = received_signal[0]
    summary["records"] = o.records or None
    summary["wall_s"] = (time.monotonic_ns() - begin) / 1e9
    failed = bool(errors) and reason != "signal"
    return summary, 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    try:
        options = parse_options(args)
    except ProbeUsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    summary, status = run(options)
    sys.stderr.flush()
    print(json.dumps(summary), flush=True)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
