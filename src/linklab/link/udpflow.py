"""A small UDP flow: a paced sender and a counting receiver, for checking a link.

Used by the link's evidence tests and benchmark (``linklab link exec`` / ``bed.popen``)::

    python -m linklab.link.udpflow recv --port 9000 [--records FILE] [--idle 1.0]
    python -m linklab.link.udpflow send --to 10.77.0.100 --port 9000 --pps 20000
                                        --count 20000 [--size 200] [--seconds S]
                                        [--gaps even|exponential] [--seed N]

Each datagram carries its sequence number and CLOCK_MONOTONIC send time (ns). The
receiver prints ``ready`` on stderr once bound, and at the end one JSON line on stdout:
packets, bytes (UDP payload), first/last arrival (ns), goodput (bit/s between the first
and last arrival). ``--records`` writes (seq u64, t_send i64, t_recv i64) per packet
(the sender's file has t_recv 0).

``--gaps exponential`` spaces datagrams by exponential gaps (a Poisson stream of the same
mean rate) instead of evenly. Two even streams at the rate of a drop-tail bottleneck lock
into phase with its departures and split it by their relative phase, not by their
offered loads (Floyd and Jacobson, "On traffic phase effects in packet-switched
gateways", 1992); Poisson arrivals see the queue's time average (PASTA), so each stream
loses the same fraction and keeps its offered share.
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import struct
import sys
import time

HEADER = struct.Struct("<Qq")
RECORD = struct.Struct("<Qqq")


def send(args: argparse.Namespace) -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 * 1024 * 1024)
    payload = bytearray(max(args.size, HEADER.size))
    target = (args.to, args.port)
    start = time.monotonic_ns()
    end = start + int(args.seconds * 1e9) if args.seconds else None
    interval_ns = 1e9 / args.pps
    rng = random.Random(args.seed)
    offset_ns = 0.0
    seq = 0
    errors = 0
    log = open(args.records, "wb") if args.records else None  # noqa: SIM115
    while (args.count is None or seq < args.count) and (end is None or
                                                         time.monotonic_ns() < end):
        due = start + int(offset_ns if args.gaps == "exponential" else seq * interval_ns)
        now = time.monotonic_ns()
        if due > now + 200_000:
            time.sleep((due - now) / 1e9)
        t_send = time.monotonic_ns()
        HEADER.pack_into(payload, 0, seq, t_send)
        try:
            sock.sendto(payload, target)
        except OSError:
            errors += 1  # e.g. ENOBUFS from a full local queue: that packet is not sent
            continue
        if log is not None:
            log.write(RECORD.pack(seq, t_send, 0))
        seq += 1
        offset_ns += rng.expovariate(1.0) * interval_ns
    if log is not None:
        log.close()
    print(json.dumps({"sent": seq, "errors": errors, "bytes": seq * len(payload),
                      "start_ns": start, "end_ns": time.monotonic_ns()}), flush=True)
    return 0


def recv(args: argparse.Namespace) -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:  # as root inside a host: beyond rmem_max, so the receiver is not the bottleneck
        sock.setsockopt(socket.SOL_SOCKET, 33, 32 * 1024 * 1024)  # SO_RCVBUFFORCE
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024 * 1024)
    sock.bind(("0.0.0.0", args.port))
    sock.settimeout(args.idle)
    print("ready", file=sys.stderr, flush=True)
    buffer = bytearray(65536)
    records = open(args.records, "wb") if args.records else None  # noqa: SIM115
    packets = total = 0
    first = last = first_size = 0
    deadline = time.monotonic() + args.max_seconds
    while time.monotonic() < deadline:
        try:
            size = sock.recv_into(buffer)
        except TimeoutError:
            if packets:
                break
            continue
        now = time.monotonic_ns()
        if not packets:
            first, first_size = now, size
        last = now
        packets += 1
        total += size
        if records is not None and size >= HEADER.size:
            seq, t_send = HEADER.unpack_from(buffer, 0)
            records.write(RECORD.pack(seq, t_send, now))
    if records is not None:
        records.close()
    span = (last - first) / 1e9
    goodput = (total - first_size) * 8 / span if span > 0 else 0.0
    print(json.dumps({"packets": packets, "bytes": total, "first_ns": first, "last_ns": last,
                      "goodput_bps": goodput}), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="udpflow")
    sub = parser.add_subparsers(dest="role", required=True)
    s = sub.add_parser("send")
    s.add_argument("--to", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--pps", type=float, required=True)
    s.add_argument("--count", type=int)
    s.add_argument("--seconds", type=float)
    s.add_argument("--size", type=int, default=200)
    s.add_argument("--records", help="write (seq, t_send, 0) per packet sent")
    s.add_argument("--gaps", choices=("even", "exponential"), default="even",
                   help="even spacing, or exponential gaps (Poisson) of the same mean")
    s.add_argument("--seed", type=int, default=1, help="seed of the exponential gaps")
    r = sub.add_parser("recv")
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--records")
    r.add_argument("--idle", type=float, default=1.0)
    r.add_argument("--max-seconds", type=float, default=120.0)
    args = parser.parse_args(argv)
    return send(args) if args.role == "send" else recv(args)


if __name__ == "__main__":
    raise SystemExit(main())
