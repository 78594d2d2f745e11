"""Benchmark: the relay against a bare veth pair, in one run, neither limited by its sender.

    python -m linklab.emu.bench_wires [--seconds 4] [--rounds 2] [--frames 64,1500]

Each cell makes two namespaces, joins them by a veth pair or by the relay (a 1 ms delay
and a 0.01 % loss stage each way, SCHED_FIFO, pinned to CPU 1), and floods UDP from a
with ``linklab-emu-flood`` (sendmmsg, 64 datagrams per call; CPU 0, SCHED_FIFO 5) to a
UDP socket in b that is never read. A frame counts as delivered when b's UDP layer took
it (b's ``Udp InDatagrams + InErrors``: once the socket's buffer is full, UDP drops
there), so a wire is measured through b's IP and UDP stack and no receiving application
competes for the two cores. (A port without a socket would not do: b's stack then
routes an ICMP reply for every frame before rate-limiting it, 29 % of the relay's CPU
in the profile.) Where b's receive stack runs is the cell's placement, set with RPS on
b's receive queue:

- ``veth, rx on sender core``: as a veth does by default (the sender's CPU 0);
- ``veth, rx on CPU 1``: the same two cores as the relay: send on 0, receive on 1;
- ``relay, rx in relay``: the relay's TAP write runs b's stack on the relay's CPU 1;
- ``relay, rx on CPU 0``: the relay's CPU 1 only forwards; b's stack runs on CPU 0.

Configurations alternate within a round, so load from other work hits all of them.
Prints a Markdown table (medians over the rounds) and one JSON line with every cell.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from linklab.emu.bench import ADDR_B, ETH_IP_UDP, RELAY_CPU, cpu_seconds, join, run_out
from linklab.emu.relay import relay_binary
from linklab.emu.tap_wire import scratch_namespaces
from linklab.errors import LinklabError

SENDER_CPU = 0
SENDER_PRIORITY = 5  # SCHED_FIFO; the relay runs at 10 (RelayConfig.realtime_priority)
SINK_PORT = 9
# a UDP socket with the smallest receive buffer, never read
SINK = ("import socket, sys, time; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
        f"s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1); s.bind(('0.0.0.0', {SINK_PORT})); "
        "print('ready', flush=True); sys.stdin.read()")


@dataclass(frozen=True)
class Placement:
    label: str
    wire: str  # "veth" or "relay"
    rx_cpu: int | None  # b's receive stack steered to this CPU (RPS); None: where it falls


PLACEMENTS = (
    Placement("veth, rx on sender core", "veth", None),
    Placement("veth, rx on CPU 1", "veth", RELAY_CPU),
    Placement("relay, rx in relay", "relay", None),
    Placement("relay, rx on CPU 0", "relay", SENDER_CPU),
)


def _udp_taken(netns: str) -> int:
    """Datagrams b's UDP layer took for a socket (queued, or dropped at a full buffer)."""
    lines = [ln.split() for ln in run_out("ip", "netns", "exec", netns, "cat",
                                          "/proc/net/snmp").splitlines() if ln.startswith("Udp:")]
    return sum(int(lines[1][lines[0].index(key)]) for key in ("InDatagrams", "InErrors"))


@contextlib.contextmanager
def _sink(netns: str) -> Iterator[None]:
    proc = subprocess.Popen(["ip", "netns", "exec", netns, sys.executable, "-c", SINK],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            raise LinklabError("bench_wires: the UDP sink in b did not start")
        yield
    finally:
        proc.kill()
        proc.wait()


def _cpu_ticks() -> dict[int, list[int]]:
    """Per CPU, /proc/stat's first eight counters in USER_HZ ticks: user, nice, system,
    idle, iowait, irq, softirq, steal."""
    with open("/proc/stat") as f:
        return {int(name[3:]): [int(v) for v in fields[:8]]
                for name, *fields in (line.split() for line in f)
                if name.startswith("cpu") and name != "cpu"}


def _cpu_busy() -> dict[int, tuple[int, int]]:
    """(busy, total) jiffies per CPU."""
    return {cpu: (sum(v) - v[3] - v[4], sum(v)) for cpu, v in _cpu_ticks().items()}


def steal_ticks(cpu: int) -> int:
    """The time the host ran something else while `cpu` (a vCPU) had work, so far, in
    USER_HZ ticks (scripts/medium_realtime.py, scripts/vcpu_hiccups.py)."""
    return _cpu_ticks()[cpu][7]


def _steer_receive(netns: str, ifname: str, cpu: int) -> None:
    """RPS: b's receive stack for frames arriving on ifname runs on `cpu`."""
    run_out("ip", "netns", "exec", netns, "sh", "-c",
            f"echo {1 << cpu:x} > /sys/class/net/{ifname}/queues/rx-0/rps_cpus")


def _flood(ns_a: str, payload: int, seconds: float) -> tuple[int, float]:
    flood = relay_binary().with_name("linklab-emu-flood")
    # SCHED_FIFO below the relay's priority: other work on the machine cannot starve the
    # sender, and the sender cannot starve the relay
    out = run_out("ip", "netns", "exec", ns_a, "taskset", "-c", str(SENDER_CPU), "chrt", "-f",
                  str(SENDER_PRIORITY), str(flood), ADDR_B, str(SINK_PORT), str(payload),
                  str(seconds)).split()
    return int(out[1]), float(out[5])


def run_cell(place: Placement, frame: int, seconds: float, tag: str) -> dict:
    ns_a, ns_b = f"linklab-emuwire{tag}-a", f"linklab-emuwire{tag}-b"
    ifa, ifb = f"lew{tag}a", f"lew{tag}b"
    with tempfile.TemporaryDirectory() as tmp, \
            scratch_namespaces((ns_a, ns_b), lo_up=True) as wires:
        wire = join(place.wire, (ns_a, ns_b, ifa, ifb), Path(tmp), wires)
        relay = wire.relay if wire else None
        if place.rx_cpu is not None:
            _steer_receive(ns_b, ifb, place.rx_cpu)
        # resolve b's address first, so no frame waits for ARP
        subprocess.run(["ip", "netns", "exec", ns_a, "ping", "-c", "1", "-W", "2", ADDR_B],
                       capture_output=True, check=False)
        with _sink(ns_b):
            before, busy_before = _udp_taken(ns_b), _cpu_busy()
            cpu_before = cpu_seconds(relay.pid) if relay else 0.0
            sent, took = _flood(ns_a, frame - ETH_IP_UDP, seconds)
            time.sleep(0.05)  # the relay's 1 ms delay stage hands on what it still holds
            delivered = _udp_taken(ns_b) - before
        relay_cpu = cpu_seconds(relay.pid) - cpu_before if relay else None
        busy = {cpu: 100 * (b - busy_before[cpu][0]) / max(1, t - busy_before[cpu][1])
                for cpu, (b, t) in _cpu_busy().items() if cpu in busy_before}
    return {
        "placement": place.label, "frame_bytes": frame, "seconds": round(took, 2),
        "offered_frames_per_s": round(sent / took),
        "delivered_frames_per_s": round(delivered / took),
        "cpu_busy_percent": {cpu: round(v) for cpu, v in sorted(busy.items())},
        "relay_cpu_percent": round(100 * relay_cpu / took) if relay_cpu is not None else None,
        "frames_per_relay_cpu_second": round(delivered / relay_cpu) if relay_cpu else None,
    }


def _median(cells: list[dict], key: str) -> float | None:
    values = [c[key] for c in cells if c[key] is not None]
    return statistics.median(values) if values else None


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}".replace(",", " ")


def table(cells: list[dict], frames: list[int]) -> str:
    rows = ["| frame | wire, where b's receive stack runs | offered /s | delivered /s "
            "| relay CPU | frames per relay CPU-second | ÷ best veth |",
            "|---|---|---|---|---|---|---|"]
    for frame in frames:
        mine = [c for c in cells if c["frame_bytes"] == frame]
        best_veth = max((_median([c for c in mine if c["placement"] == p.label],
                                 "delivered_frames_per_s") or 0)
                        for p in PLACEMENTS if p.wire == "veth")
        for place in PLACEMENTS:
            group = [c for c in mine if c["placement"] == place.label]
            if not group:
                continue
            got = _median(group, "delivered_frames_per_s")
            cpu = _median(group, "relay_cpu_percent")
            per = _median(group, "frames_per_relay_cpu_second")
            got = got or 0
            rows.append(
                f"| {frame} B | {place.label} | {_num(_median(group, 'offered_frames_per_s'))} "
                f"| {_num(got)} | {'–' if cpu is None else f'{cpu:.0f} %'} | {_num(per)} "
                f"| {got / best_veth:.2f} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="flood per cell")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--frames", default="64,1500", help="Ethernet frame sizes, comma-separated")
    args = parser.parse_args()
    try:
        frames = [int(f) for f in args.frames.split(",")]
    except ValueError:
        parser.error("--frames: comma-separated integers, e.g. 64,1500")
    if any(f < ETH_IP_UDP or f > 1514 for f in frames) or args.seconds <= 0 or args.rounds < 1:
        parser.error(f"--frames from {ETH_IP_UDP} to 1514 B, --seconds > 0, --rounds >= 1")
    cells = []
    pid = os.getpid() % 10000
    for r in range(args.rounds):
        order = PLACEMENTS if r % 2 == 0 else PLACEMENTS[::-1]
        for frame in frames:
            for i, place in enumerate(order):
                cells.append(run_cell(place, frame, args.seconds, f"{pid}{r}{i}{frame % 100}"))
    print(table(cells, frames))
    print(json.dumps({"cells": cells}))


if __name__ == "__main__":
    main()
