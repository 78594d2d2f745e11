"""linklab's Zenoh probe: the probe protocol (``linklab.probes`` docstring) on
eclipse-zenoh 1.10.2, in Python.

    linklab-probe-zenoh pub|sub --topic T --type TYPE [--size BYTES] --rate HZ ...
        [--qos reliable|best_effort] [--durability volatile] [--system-default]
        --records FILE.bin [--mode peer|client] [--peer ENDPOINT ...] [--listen ENDPOINT ...]

Same command line, records, pacing (absolute CLOCK_MONOTONIC deadlines, late ticks
skipped), warm-up samples (seq bit 63), end-of-stream sample (seq 2**64-1), subscriber
end conditions and JSON summary as the C++ probes (probes/common/probe.cpp). Extra flags:

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
import struct
import sys
import threading
import time

from linklab.probes import ros_types
from linklab.probes.qos import unsupported_policies
from linklab.probes.types import dds_type_name
from linklab.probes.zenoh_options import ProbeOptions, ProbeUsageError, parse_options

__all__ = ["ProbeOptions", "ProbeUsageError", "main", "parse_options", "run"]

RECORD = struct.Struct("<QqqI")
HEADER = struct.Struct("<8sII")
MAGIC = b"LLREC1\0\0"
PAYLOAD_HEADER = struct.Struct("<Qq")  # seq, t_send_ns at the start of every sample
WARMUP_FLAG = 1 << 63
END_OF_STREAM = (1 << 64) - 1
PROG = "linklab-probe-zenoh"
FLUSH_EVERY_NS = 250_000_000  # records unwritten at most this long (RecordWriter)


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


class RecordWriter:
    def __init__(self, path: str, publisher: bool):
        self.file = open(path, "wb")  # noqa: SIM115 - closed in close()
        self.file.write(HEADER.pack(MAGIC, RECORD.size, 1 if publisher else 0))
        self.file.flush()
        self.pending: list[bytes] = []
        self.flushed_at = time.monotonic_ns()

    def add(self, seq: int, t_send: int, t_recv: int, nbytes: int) -> None:
        self.pending.append(RECORD.pack(seq, t_send, t_recv, nbytes))
        # as the native probes: at most a quarter second of records is unwritten, so a
        # probe the runner has to SIGKILL keeps the rest (timed by the record's own local
        # time: the receive time in a subscriber, the send time in a publisher)
        if len(self.pending) >= 4096 or (t_recv or t_send) - self.flushed_at >= FLUSH_EVERY_NS:
            self.flush()

    def flush(self) -> None:
        self.file.write(b"".join(self.pending))
        self.file.flush()
        self.pending.clear()
        self.flushed_at = time.monotonic_ns()

    def close(self) -> None:
        self.flush()
        self.file.close()


class Pacer:
    """Absolute deadlines start + k/rate; a tick late by more than a period skips the
    missed deadlines (like an rcl timer), as probes/common/probe.cpp does."""

    def __init__(self, rate_hz: float, stop: threading.Event):
        self.start = time.monotonic_ns()
        self.period = round(1e9 / rate_hz)
        self.k = 0
        self.skipped = 0
        self.stop = stop

    def wait_next(self) -> bool:
        deadline = self.start + self.k * self.period
        now = time.monotonic_ns()
        if now - deadline > self.period:
            missed = (now - deadline) // self.period
            self.skipped += missed
            self.k += missed
            deadline = self.start + self.k * self.period
        while (now := time.monotonic_ns()) < deadline:
            if self.stop.wait(min(deadline - now, 50_000_000) / 1e9):
                return False
        self.k += 1
        return not self.stop.is_set()


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


class _Framed:
    """Bytes and performance_test's types: seq u64 + t_send_ns i64 + payload."""

    def __init__(self, size: int):
        self.buffer = bytearray(PAYLOAD_HEADER.size + size)  # allocated once
        self.buffer[:] = (bytes(range(256)) * (len(self.buffer) // 256)
                          + bytes(len(self.buffer) % 256))

    def stamp(self, seq: int, t_send_ns: int) -> None:
        PAYLOAD_HEADER.pack_into(self.buffer, 0, seq, t_send_ns)


def payload_for(type_name: str, size: int):
    """What the publisher sends: a buffer built once and a stamp(seq, t_send_ns)."""
    if type_name in ros_types.ROS_TYPES:
        return ros_types.CdrSample(type_name, size)
    return _Framed(size)


def decoder_for(type_name: str):
    """payload -> (seq, t_send_ns, payload bytes), or None when it is not a sample."""
    if type_name in ros_types.ROS_TYPES:
        return lambda payload: ros_types.read(type_name, payload)

    def framed(payload: bytes):
        if len(payload) < PAYLOAD_HEADER.size:
            return None
        seq, t_send = PAYLOAD_HEADER.unpack_from(payload)
        return seq, t_send, len(payload) - PAYLOAD_HEADER.size
    return framed


def run_pub(session, o: ProbeOptions, summary: dict, errors: list[str], stop) -> str:
    sample = payload_for(o.type, o.size)  # built before matching: not in the timed part
    publisher = session.declare_publisher(o.key, **_publisher_qos(o))
    token = session.liveliness().declare_token(
        f"linklab/presence/{o.key}/pub/{session.info.zid()}")
    reliability = {"RELIABLE": "reliable", "BEST_EFFORT": "best_effort"}[
        _name(publisher.reliability)]  # read back from the declared publisher
    reliable = reliability == "reliable"
    summary["applied"].update({
        "congestion_control": _name(publisher.congestion_control),
        "reliability": _name(publisher.reliability),
        "priority": _name(publisher.priority),
        "ros_qos": ros_qos("pub", reliability),
    })
    records = RecordWriter(o.records, True) if o.records else None
    try:
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
        _read_session(session, summary)  # while the subscriber is surely connected
        if stop.wait(1.0):  # settle, as the C++ probes do
            return "signal"
        payload, stamp, put = sample.buffer, sample.stamp, publisher.put
        pacer = Pacer(o.rate_hz, stop)
        warm = sent = failures = 0
        warm_end = time.monotonic_ns() + int(o.warmup_s * 1e9)
        while o.warmup_s > 0 and time.monotonic_ns() < warm_end and pacer.wait_next():
            stamp(WARMUP_FLAG | warm, time.monotonic_ns())
            put(payload)
            warm += 1
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
        if stop.is_set():
            reason = "signal"
        else:
            for _ in range(1 if reliable else 3):
                stamp(END_OF_STREAM, time.monotonic_ns())
                put(payload)
                time.sleep(0.02)
            # zenoh has no per-sample acknowledgement; give the transport a moment to
            # drain (bounded by --linger) before the session closes
            time.sleep(min(o.linger_s, 0.5))
        summary.update({"warmup_samples": warm, "write_failures": failures,
                        "skipped_deadlines": pacer.skipped,
                        "publish_span_s": (t_last - t_first) / 1e9 if sent > 1 else 0.0,
                        "acknowledged": None, "samples": sent})
        return reason
    finally:
        if records:
            records.close()
        token.undeclare()
        publisher.undeclare()


def run_sub(session, o: ProbeOptions, summary: dict, errors: list[str], stop) -> str:
    records = RecordWriter(o.records, False)
    queue: list[tuple[int, int, int] | None] = []
    lock = threading.Condition()
    publishers: set[str] = set()
    decode = decoder_for(o.type)

    def on_sample(sample) -> None:
        got = decode(sample.payload.to_bytes())  # None: not a linklab sample of the type
        with lock:
            queue.append(got)
            lock.notify()

    def on_token(sample) -> None:
        import zenoh

        with lock:
            if sample.kind == zenoh.SampleKind.PUT:
                publishers.add(str(sample.key_expr))
            else:
                publishers.discard(str(sample.key_expr))

    subscriber = session.declare_subscriber(o.key, on_sample)
    tokens = session.liveliness().declare_subscriber(f"linklab/presence/{o.key}/pub/*",
                                                     on_token, history=True)
    print(f"{PROG}: subscribed to '{o.key}' ({o.mode})", file=sys.stderr, flush=True)
    seen: set[int] = set()
    samples = unique = warm = dups = max_matched = malformed = 0
    t0 = time.monotonic_ns()
    t_match = t_last = t_first = 0
    links: list[dict] = []
    reason = ""
    try:
        while True:
            if stop.is_set():
                reason = "signal"
                break
            with lock:
                if not queue:
                    lock.wait(0.05)
                got, queue[:] = list(queue), []
                matched = len(publishers)
            t_recv = time.monotonic_ns()  # taken right after the hand-over, as in C++
            if matched and not t_match:
                t_match = t_recv
            max_matched = max(max_matched, matched)
            end = False
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
            if got and not links:
                links = _read_session(session, summary)
            now = time.monotonic_ns()
            if end:
                reason = "end_of_stream"
                break
            if o.count and unique >= o.count:
                reason = "count"
                break
            if not t_match and not samples:
                if now - t0 > o.match_timeout_s * 1e9:
                    errors.append(f"no publisher matched within {o.match_timeout_s:g} s")
                    reason = "no_match"
                    break
                continue
            since = max(t_last, t_match or t0)
            if o.idle_timeout_s > 0 and now - since > o.idle_timeout_s * 1e9:
                reason = "idle"
                break
            if o.duration_s and now - (t_match or t0) > o.duration_s * 1e9:
                reason = "duration"
                break
    finally:
        records.close()
        tokens.undeclare()
        subscriber.undeclare()
    summary.update({"samples": samples, "unique_samples": unique, "duplicates": dups,
                    "warmup_samples": warm, "max_matched": max_matched,
                    "malformed_samples": malformed,
                    "receive_span_s": (t_last - t_first) / 1e9 if samples > 1 else 0.0})
    if malformed:
        errors.append(f"{malformed} sample(s) on {o.key} carried no linklab seq/send time "
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
