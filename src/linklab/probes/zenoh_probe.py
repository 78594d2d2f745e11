"""linklab's Zenoh probe: the probe protocol (``linklab.probes`` docstring) on
eclipse-zenoh 1.10.2, in Python.

    linklab-probe-zenoh pub|sub --topic T --type TYPE [--size BYTES] --rate HZ ...
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

Key expression: ``rt/<topic>`` (the DDS topic name). Payload: seq u64 + t_send_ns i64 +
the type's payload bytes. QoS: ``reliable`` (default, as ROS 2) -> Reliability.RELIABLE
+ CongestionControl.BLOCK; ``best_effort`` -> BEST_EFFORT + DROP. Zenoh pub/sub has no
history cache or domain: ``--history``/``--domain`` are reported as not applicable.

Matching: the publisher counts matching subscribers through zenoh's matching status; the
subscriber counts publishers through liveliness tokens the publishers declare
(``linklab/presence/rt/<topic>/pub/<zid>``).

This probe runs on CPython: its own overhead against the C++ probes is measured in
docs/RESULTS.md ("Zenoh probe overhead").
"""

from __future__ import annotations

import json
import re
import signal
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

RECORD = struct.Struct("<QqqI")
HEADER = struct.Struct("<8sII")
MAGIC = b"LLREC1\0\0"
PAYLOAD_HEADER = struct.Struct("<Qq")  # seq, t_send_ns at the start of every sample
WARMUP_FLAG = 1 << 63
END_OF_STREAM = (1 << 64) - 1
DEFAULT_PORT = 7447
PROG = "linklab-probe-zenoh"

FIXED_TYPE_BYTES = {
    "Array1k": 1024, "Array4k": 4096, "Array16k": 16384, "Array32k": 32768,
    "Array60k": 61440, "Array64k": 65536, "Array256k": 262144, "Array1m": 1048576,
    "Array2m": 2097152, "Array4m": 4194304,
    "PointCloud512k": 524288, "PointCloud1m": 1048576, "PointCloud2m": 2097152,
    "PointCloud4m": 4194304,
}


def dds_type_name(type_name: str) -> str:
    if type_name == "Bytes":
        return "linklab_msgs::msg::dds_::Bytes_"
    return f"performance_test_msgs::msg::dds_::{type_name}_"


class ProbeUsageError(Exception):
    pass


@dataclass
class ProbeOptions:
    role: str
    topic: str = ""
    type: str = ""
    size: int = 0
    rate_hz: float = 0.0
    count: int = 0
    duration_s: float = 0.0
    warmup_s: float = 0.0
    reliable: bool = True
    history: str | None = None
    profile: str | None = None
    peers: list[str] = field(default_factory=list)
    listen: list[str] = field(default_factory=list)
    mode: str = "peer"
    domain: int = 0
    interface: str | None = None
    records: str = ""
    match_timeout_s: float = 30.0
    idle_timeout_s: float = 30.0
    linger_s: float = 5.0
    subscribers: int = 1

    @property
    def key(self) -> str:
        return f"rt/{self.topic}"


def _seconds(flag: str, text: str) -> float:
    match = re.fullmatch(r"([0-9.]+(?:[eE][-+]?\d+)?)(ms|s|min)?", text)
    if not match:
        raise ProbeUsageError(f"{flag}: expected a non-negative duration in seconds "
                              f"(e.g. 20, 20s, 500ms), got '{text}'")
    value = float(match.group(1))
    return value * {"ms": 1e-3, "s": 1.0, "min": 60.0, None: 1.0}[match.group(2)]


def _size(text: str) -> int:
    match = re.fullmatch(r"([0-9.]+)(B|KB|MB|KiB|MiB)?", text)
    if not match:
        raise ProbeUsageError(f"--size: expected a payload size in bytes (e.g. 262144 or "
                              f"256KiB), got '{text}'")
    factor = {"B": 1, "KB": 1e3, "MB": 1e6, "KiB": 1024, "MiB": 1048576, None: 1}
    value = float(match.group(1)) * factor[match.group(2)]
    if value != int(value):
        raise ProbeUsageError(f"--size: expected a whole number of bytes, got '{text}'")
    return int(value)


def _count(flag: str, text: str) -> int:
    if not text.isdigit():
        raise ProbeUsageError(f"{flag}: expected a non-negative integer, got '{text}'")
    return int(text)


def _endpoint(text: str) -> str:
    """'10.0.0.2' / '10.0.0.2:7447' / 'tcp/10.0.0.2:7447' -> a zenoh endpoint."""
    if "/" in text:
        return text
    return f"tcp/{text}" if ":" in text else f"tcp/{text}:{DEFAULT_PORT}"


VALUE_FLAGS = {"--topic", "--type", "--size", "--rate", "--count", "--duration", "--warmup",
               "--qos", "--history", "--profile", "--profile-name", "--peer", "--domain",
               "--interface", "--records", "--match-timeout", "--idle-timeout", "--linger",
               "--subscribers", "--mode", "--listen"}


def parse_options(argv: list[str]) -> ProbeOptions:
    if not argv:
        raise ProbeUsageError("missing role: expected 'pub' or 'sub' (see --help)")
    if argv[0] not in ("pub", "sub"):
        raise ProbeUsageError(f"role: expected 'pub' or 'sub', got '{argv[0]}'")
    o = ProbeOptions(role=argv[0])
    size: int | None = None
    rate_given = False
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg in ("-v", "--verbose"):
            i += 1
            continue
        value = None
        if arg.startswith("--") and "=" in arg:
            arg, value = arg.split("=", 1)
        if arg not in VALUE_FLAGS:
            raise ProbeUsageError(f"unknown argument '{arg}' (see --help)")
        if value is None:
            if i + 1 >= len(argv):
                raise ProbeUsageError(f"{arg}: missing value")
            i += 1
            value = argv[i]
        i += 1
        if arg == "--topic":
            if not value or re.search(r"[ /\t]", value):
                raise ProbeUsageError("--topic: expected a ROS 2 topic name without slashes "
                                      f"(e.g. chatter), got '{value}'")
            o.topic = value
        elif arg == "--type":
            if value != "Bytes" and value not in FIXED_TYPE_BYTES:
                raise ProbeUsageError(f"--type: unknown type '{value}'; expected one of Bytes, "
                                      + ", ".join(FIXED_TYPE_BYTES))
            o.type = value
        elif arg == "--size":
            size = _size(value)
        elif arg == "--rate":
            match = re.fullmatch(r"([0-9.]+)(Hz)?", value)
            if not match or float(match.group(1)) <= 0:
                raise ProbeUsageError("--rate: expected a publish rate in Hz above 0 (e.g. 30 "
                                      f"or 30Hz), got '{value}'")
            o.rate_hz, rate_given = float(match.group(1)), True
        elif arg == "--count":
            o.count = _count(arg, value)
        elif arg == "--duration":
            o.duration_s = _seconds(arg, value)
        elif arg == "--warmup":
            o.warmup_s = _seconds(arg, value)
        elif arg == "--qos":
            if value not in ("reliable", "best_effort"):
                raise ProbeUsageError(f"--qos: expected 'reliable' or 'best_effort', got '{value}'")
            o.reliable = value == "reliable"
        elif arg == "--history":
            if not re.fullmatch(r"keep_all|keep_last:[1-9]\d*", value):
                raise ProbeUsageError("--history: expected keep_all or keep_last:N (e.g. "
                                      f"keep_last:10), got '{value}'")
            o.history = value
        elif arg == "--profile":
            if not Path(value).is_file():
                raise ProbeUsageError(f"--profile: cannot read '{value}'")
            o.profile = value
        elif arg == "--peer":
            o.peers += [_endpoint(p) for p in value.split(",") if p]
        elif arg == "--listen":
            o.listen += [_endpoint(p) for p in value.split(",") if p]
        elif arg == "--mode":
            if value not in ("peer", "client"):
                raise ProbeUsageError(f"--mode: expected 'peer' or 'client', got '{value}'")
            o.mode = value
        elif arg == "--domain":
            o.domain = _count(arg, value)
        elif arg == "--interface":
            o.interface = value
        elif arg == "--records":
            o.records = value
        elif arg == "--match-timeout":
            o.match_timeout_s = _seconds(arg, value)
        elif arg == "--idle-timeout":
            o.idle_timeout_s = _seconds(arg, value)
        elif arg == "--linger":
            o.linger_s = _seconds(arg, value)
        elif arg == "--subscribers":
            o.subscribers = _count(arg, value)
        # --profile-name: accepted for the common command line, no meaning for zenoh
    if not o.topic:
        raise ProbeUsageError("--topic is required (e.g. --topic chatter)")
    if not o.type:
        raise ProbeUsageError("--type is required (e.g. --type Bytes or --type Array64k)")
    if o.type == "Bytes":
        if o.role == "pub" and size is None:
            raise ProbeUsageError("--size is required with --type Bytes (e.g. --size 262144)")
        o.size = size or 0
    else:
        fixed = FIXED_TYPE_BYTES[o.type]
        if size is not None and size != fixed:
            raise ProbeUsageError(f"--size: {o.type} carries exactly {fixed} bytes; omit --size "
                                  "or use --type Bytes")
        o.size = fixed
    if o.role == "pub":
        if not rate_given:
            raise ProbeUsageError("--rate is required for pub (e.g. --rate 30)")
        if not o.count and not o.duration_s:
            raise ProbeUsageError("pub needs --count N or --duration S")
    if not o.records:
        raise ProbeUsageError("--records FILE.bin is required")
    if o.mode == "client" and not o.peers:
        raise ProbeUsageError("--peer: client mode needs the router's endpoint")
    return o


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

    def add(self, seq: int, t_send: int, t_recv: int, nbytes: int) -> None:
        self.pending.append(RECORD.pack(seq, t_send, t_recv, nbytes))
        if len(self.pending) >= 4096:
            self.flush()

    def flush(self) -> None:
        self.file.write(b"".join(self.pending))
        self.file.flush()
        self.pending.clear()

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


def run_pub(session, o: ProbeOptions, summary: dict, errors: list[str], stop) -> str:
    import zenoh

    publisher = session.declare_publisher(
        o.key,
        congestion_control=(zenoh.CongestionControl.BLOCK if o.reliable
                            else zenoh.CongestionControl.DROP),
        reliability=zenoh.Reliability.RELIABLE if o.reliable else zenoh.Reliability.BEST_EFFORT,
    )
    token = session.liveliness().declare_token(
        f"linklab/presence/{o.key}/pub/{session.info.zid()}")
    summary["applied"].update({
        "congestion_control": str(publisher.congestion_control).split(".")[-1],
        "reliability": str(publisher.reliability).split(".")[-1],
        "priority": str(publisher.priority).split(".")[-1],
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
        payload = bytearray(PAYLOAD_HEADER.size + o.size)  # allocated once
        payload[:] = bytes(range(256)) * (len(payload) // 256) + bytes(len(payload) % 256)
        pack, put = PAYLOAD_HEADER.pack_into, publisher.put
        pacer = Pacer(o.rate_hz, stop)
        warm = sent = failures = 0
        warm_end = time.monotonic_ns() + int(o.warmup_s * 1e9)
        while o.warmup_s > 0 and time.monotonic_ns() < warm_end and pacer.wait_next():
            pack(payload, 0, WARMUP_FLAG | warm, time.monotonic_ns())
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
            pack(payload, 0, seq, t)
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
            for _ in range(1 if o.reliable else 3):
                pack(payload, 0, END_OF_STREAM, time.monotonic_ns())
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
    queue: list[tuple[int, int, int]] = []
    lock = threading.Condition()
    publishers: set[str] = set()
    unpack = PAYLOAD_HEADER.unpack_from

    def on_sample(sample) -> None:
        payload = sample.payload.to_bytes()
        seq, t_send = unpack(payload)
        with lock:
            queue.append((seq, t_send, len(payload) - PAYLOAD_HEADER.size))
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
    samples = unique = warm = dups = max_matched = 0
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
            for seq, t_send, nbytes in got:
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
                    "receive_span_s": (t_last - t_first) / 1e9 if samples > 1 else 0.0})
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
