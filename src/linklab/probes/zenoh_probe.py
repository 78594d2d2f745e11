"""linklab's Zenoh probe: the probe protocol (DESIGN.md "Probes") on eclipse-zenoh 1.10.2.

    python -m linklab.probes.zenoh_probe pub|sub --topic T --type Array1k --size 1024
        --rate 10 --count 100 --records FILE.bin [--mode peer|client]
        [--peer tcp/ADDR:PORT ...] [--listen tcp/ADDR:PORT ...] [--profile zenoh.json5]

Modes (the paper's columns, seed 004 Table 2):
- ``--mode peer`` ("Zenoh-TCP"): peer-to-peer over TCP with explicit endpoints and
  scouting off; the subscriber usually ``--listen``s, the publisher ``--peer``s to it.
- ``--mode client`` ("Zenoh-broker"): both ends connect (``--peer``) to a router that
  linklab started on the edge host (``linklab.brokers.zenoh_router``).

QoS: ``reliable`` -> Reliability.RELIABLE + CongestionControl.BLOCK (the publisher waits
rather than drop); ``best_effort`` -> Reliability.BEST_EFFORT + CongestionControl.DROP.
Zenoh pub/sub has no history cache, so ``--history`` and ``--domain`` are reported as not
applicable. This probe runs in CPython: its own overhead against the C++ probes is
measured and recorded in docs/RESULTS.md ("Zenoh probe overhead").
"""

from __future__ import annotations

import argparse
import json
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

# performance_test's message names; --size gives the payload bytes (nominal if omitted)
MESSAGE_TYPES = {
    "Bytes": 0, "Array1k": 1024, "Array4k": 4096, "Array16k": 16384, "Array32k": 32768,
    "Array60k": 61440, "Array64k": 65536, "Array256k": 262144, "Array1m": 1048576,
    "Array2m": 2097152, "Array4m": 4194304, "PointCloud512k": 524288,
    "PointCloud1m": 1048576, "PointCloud2m": 2097152, "PointCloud4m": 4194304,
}
DEFAULT_PORT = 7447


class ProbeUsageError(Exception):
    pass


@dataclass
class ProbeOptions:
    role: str
    topic: str = "linklab"
    type: str = "Bytes"
    size: int = 0
    rate_hz: float = 10.0
    count: int = 0
    duration_s: float = 0.0
    warmup_s: float = 0.0
    qos: str = "reliable"
    history: str = "keep_last:1"
    profile: str | None = None
    peers: list[str] = field(default_factory=list)
    listen: list[str] = field(default_factory=list)
    mode: str = "peer"
    domain: int = 0
    interface: str | None = None
    records: str = ""


def _non_negative(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative number, got {text!r}")
    return value


def parse_options(argv: list[str]) -> ProbeOptions:
    parser = argparse.ArgumentParser(prog="linklab-probe-zenoh", exit_on_error=False)
    parser.add_argument("role", choices=["pub", "sub"])
    parser.add_argument("--topic", default="linklab")
    parser.add_argument("--type", default="Bytes", choices=sorted(MESSAGE_TYPES))
    parser.add_argument("--size", type=int)
    parser.add_argument("--rate", type=_non_negative, default=10.0)
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--duration", type=_non_negative, default=0.0)
    parser.add_argument("--warmup", type=_non_negative, default=0.0)
    parser.add_argument("--qos", choices=["reliable", "best_effort"], default="reliable")
    parser.add_argument("--history", default="keep_last:1")
    parser.add_argument("--profile")
    parser.add_argument("--peer", action="append", default=[])
    parser.add_argument("--listen", action="append", default=[])
    parser.add_argument("--mode", choices=["peer", "client"], default="peer")
    parser.add_argument("--domain", type=int, default=0)
    parser.add_argument("--interface")
    parser.add_argument("--records", required=True)
    try:
        args = parser.parse_args(argv)
    except (argparse.ArgumentError, SystemExit) as error:
        raise ProbeUsageError(str(error)) from None
    size = args.size if args.size is not None else MESSAGE_TYPES[args.type]
    if size < PAYLOAD_HEADER.size:
        raise ProbeUsageError(f"--size: at least {PAYLOAD_HEADER.size} bytes, got {size}")
    if args.role == "pub" and args.rate <= 0:
        raise ProbeUsageError("--rate: must be > 0")
    if args.mode == "client" and not args.peer:
        raise ProbeUsageError("--peer: client mode needs the router's endpoint")
    return ProbeOptions(
        role=args.role, topic=args.topic, type=args.type, size=size, rate_hz=args.rate,
        count=args.count, duration_s=args.duration, warmup_s=args.warmup, qos=args.qos,
        history=args.history, profile=args.profile, peers=[_endpoint(p) for p in args.peer],
        listen=[_endpoint(p) for p in args.listen], mode=args.mode, domain=args.domain,
        interface=args.interface, records=args.records,
    )


def _endpoint(text: str) -> str:
    """'10.0.0.2' / '10.0.0.2:7447' / 'tcp/10.0.0.2:7447' -> a zenoh endpoint."""
    if "/" in text:
        return text
    return f"tcp/{text}" if ":" in text else f"tcp/{text}:{DEFAULT_PORT}"


def key_expression(topic: str) -> str:
    # ROS 2 topic names start with '/', zenoh key expressions must not.
    return topic.strip("/") or "linklab"


def build_config(options: ProbeOptions):
    import zenoh

    config = zenoh.Config.from_file(options.profile) if options.profile else zenoh.Config()
    config.insert_json5("mode", json.dumps(options.mode))
    config.insert_json5("connect/endpoints", json.dumps(options.peers))
    config.insert_json5("listen/endpoints", json.dumps(options.listen))
    # explicit endpoints only: no multicast scouting, no gossip
    config.insert_json5("scouting/multicast/enabled", "false")
    config.insert_json5("scouting/gossip/enabled", "false")
    return config


def write_records(path: str, publisher: bool, records: list[tuple[int, int, int, int]]) -> None:
    with open(path, "wb") as out:
        out.write(HEADER.pack(MAGIC, RECORD.size, 1 if publisher else 0))
        out.write(b"".join(RECORD.pack(*record) for record in records))


def config_readback(config) -> dict:
    """Mode and scouting as the zenoh Config holds them (after the profile and our settings)."""
    return {
        "mode": json.loads(config.get_json("mode")),
        "scouting_multicast": json.loads(config.get_json("scouting/multicast/enabled")),
        "connect": json.loads(config.get_json("connect/endpoints")),
        "listen": json.loads(config.get_json("listen/endpoints")),
    }


def _links(session) -> list[dict]:
    return [{"src": str(link.src), "dst": str(link.dst), "mtu": link.mtu,
             "streamed": link.is_streamed} for link in session.info.links()]


def _applied(session, options: ProbeOptions, readback: dict, publisher=None,
             links: list[dict] | None = None) -> dict:
    """What zenoh applied, read back from the config, the session's links and the publisher."""
    links = _links(session) or (links or [])
    applied = {
        **readback,
        "transport": sorted({link["dst"].split("/")[0] for link in links}),
        "links": links,
        "peers": len(list(session.info.peers_zid())),
        "routers": len(list(session.info.routers_zid())),
        "key_expr": key_expression(options.topic),
        "payload_bytes": options.size,
        "type": options.type,
        "history": "n/a (zenoh pub/sub has no history cache)",
        "probe_runtime": f"CPython {sys.version.split()[0]}",
    }
    if publisher is not None:
        applied["congestion_control"] = str(publisher.congestion_control).split(".")[-1]
        applied["reliability"] = str(publisher.reliability).split(".")[-1]
        applied["priority"] = str(publisher.priority).split(".")[-1]
    return applied


def run(options: ProbeOptions) -> tuple[dict, int]:
    import zenoh

    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    errors: list[str] = []
    publisher_role = options.role == "pub"
    config = build_config(options)
    readback = config_readback(config)
    try:
        session = zenoh.open(config)
    except Exception as error:  # zenoh raises ZError with the endpoint in the message
        write_records(options.records, publisher_role, [])
        return {"probe": "zenoh", "role": options.role, "applied": {}, "samples": 0,
                "errors": [f"zenoh.open: {error}"]}, 1
    key = key_expression(options.topic)
    records: list[tuple[int, int, int, int]] = []
    start = time.monotonic_ns()
    try:
        if publisher_role:
            applied = _publish(session, key, options, readback, records, stop, errors)
        else:
            applied = _subscribe(session, key, options, readback, records, stop, start)
    finally:
        session.close()
    try:
        write_records(options.records, publisher_role, records)
    except OSError as error:
        errors.append(f"cannot write records to {options.records!r}: {error}")
    summary = {"probe": "zenoh", "role": options.role, "applied": applied,
               "samples": len(records), "errors": errors}
    return summary, 0 if not errors else 1


def _subscribe(session, key, options, readback, records, stop, start) -> dict:
    done = threading.Event()
    monotonic_ns = time.monotonic_ns
    unpack = PAYLOAD_HEADER.unpack_from
    wanted = options.count

    def on_sample(sample) -> None:
        t_recv = monotonic_ns()
        payload = sample.payload.to_bytes()
        seq, t_send = unpack(payload)
        records.append((seq, t_send, t_recv, len(payload)))
        if wanted and len(records) >= wanted:
            done.set()

    subscriber = session.declare_subscriber(key, on_sample)
    print(f"linklab-probe-zenoh: subscribed to '{key}' ({options.mode})", file=sys.stderr,
          flush=True)
    end = start + int(options.duration_s * 1e9) if options.duration_s else None
    links: list[dict] = []  # the publisher may have left by the end: keep the last seen
    while not stop.is_set() and not done.is_set():
        if end is not None and time.monotonic_ns() >= end:
            break
        done.wait(0.05)
        if records and not links:
            links = _links(session)
    applied = _applied(session, options, readback, links=links)
    subscriber.undeclare()
    return applied


def _publish(session, key, options, readback, records, stop, errors) -> dict:
    import zenoh

    reliable = options.qos == "reliable"
    publisher = session.declare_publisher(
        key,
        congestion_control=(zenoh.CongestionControl.BLOCK if reliable
                            else zenoh.CongestionControl.DROP),
        reliability=zenoh.Reliability.RELIABLE if reliable else zenoh.Reliability.BEST_EFFORT,
    )
    # Wait (up to 10 s) until a subscriber matches, then the warm-up.
    deadline = time.monotonic() + 10.0
    while not stop.is_set() and time.monotonic() < deadline:
        if publisher.matching_status.matching:
            break
        time.sleep(0.02)
    else:
        if not stop.is_set():
            errors.append("no matching subscriber within 10 s (publishing anyway)")
    if options.warmup_s:
        stop.wait(options.warmup_s)
    planned = options.count or (int(options.rate_hz * options.duration_s)
                                if options.duration_s else None)
    payload = bytearray(options.size)  # allocated once; only the header changes
    pack = PAYLOAD_HEADER.pack_into
    period_ns = int(1e9 / options.rate_hz)
    first = time.monotonic_ns()
    seq = 0
    while not stop.is_set() and (planned is None or seq < planned):
        due = first + seq * period_ns
        now = time.monotonic_ns()
        if due > now and stop.wait((due - now) / 1e9):
            break
        t_send = time.monotonic_ns()
        pack(payload, 0, seq, t_send)
        publisher.put(payload)
        records.append((seq, t_send, 0, options.size))
        seq += 1
    applied = _applied(session, options, readback, publisher)
    publisher.undeclare()
    return applied


def main(argv: list[str] | None = None) -> int:
    try:
        options = parse_options(sys.argv[1:] if argv is None else argv)
    except ProbeUsageError as error:
        print(f"linklab-probe-zenoh: error: {error}", file=sys.stderr)
        return 2
    if options.profile and not Path(options.profile).is_file():
        print(f"linklab-probe-zenoh: error: --profile: cannot read {options.profile!r}",
              file=sys.stderr)
        return 2
    summary, status = run(options)
    print(json.dumps(summary), flush=True)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
