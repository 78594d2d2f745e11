"""Benchmark: frames/s and Gbit/s through the relay vs a plain veth pair.

    python -m linklab.emu.bench [--frame 64|1500] [--seconds 5] [--wire relay|veth]

Two namespaces ``linklab-emubench<pid>-a|b`` are joined by a relay (with a delay
and a loss stage in each direction) or by a veth pair; iperf3 sends UDP at full
speed from a to b; the result is the frame rate b's interface delivered (its rx
counter, before any socket drop) and what iperf3's server received. The relay is
pinned to CPU 1, both iperf3 ends to CPU 0, so the relay has one core to itself.
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from linklab import procfs
from linklab.emu.config import RelayConfig
from linklab.emu.directives import Delay, Loss
from linklab.emu.tap_wire import RelayWire, TapEnd, scratch_namespaces

ETH_IP_UDP = 14 + 20 + 8
ADDR_A, ADDR_B = "10.214.0.1", "10.214.0.2"
RELAY_CPU = 1


def run_out(*args: str) -> str:
    return subprocess.run(list(args), check=True, capture_output=True, text=True).stdout


def _iperf(ns_a: str, ns_b: str, addr_b: str, payload: int, seconds: float) -> dict:
    server = subprocess.Popen(["ip", "netns", "exec", ns_b, "taskset", "-c", "0", "iperf3", "-s",
                               "-1", "-B", addr_b], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        out = run_out("ip", "netns", "exec", ns_a, "taskset", "-c", "0", "iperf3", "-c", addr_b,
                      "-u", "-b", "0", "-l", str(payload), "-t", str(seconds), "-J")
        return json.loads(out)
    finally:
        server.wait(timeout=30)


def cpu_seconds(pid: int) -> float:
    """utime + stime of the relay (includes the kernel work its writes trigger); the
    relay ending mid-measurement is an error, not a zero."""
    seconds = procfs.cpu_seconds(pid)
    if seconds is None:
        raise RuntimeError(f"the relay (pid {pid}) ended during the measurement")
    return seconds


def _rx_packets(netns: str, ifname: str) -> int:
    """Frames the receiving interface took in (before any socket could drop them)."""
    info = json.loads(run_out("ip", "-n", netns, "-s", "-j", "link", "show", "dev", ifname))
    return int(info[0]["stats64"]["rx"]["packets"])


def join(kind: str, names: tuple[str, str, str, str], workdir: Path,
         wires: list[RelayWire]) -> RelayWire | None:
    """Join namespaces a and b (names: ns_a, ns_b, ifa, ifb; 10.214.0.1|2/24) by the relay
    (a 1 ms delay and a 0.01 % loss stage each way, pinned to CPU 1; added to `wires`)
    or, with kind "veth", by a veth pair with offloads off."""
    ns_a, ns_b, ifa, ifb = names
    if kind == "relay":
        stages = (Delay(0.001), Loss(0.0001))
        wire = RelayWire(TapEnd(ns_a, ifa, f"{ADDR_A}/24"), TapEnd(ns_b, ifb, f"{ADDR_B}/24"),
                         RelayConfig(ifa, ifb, ab=stages, ba=stages, seed=1), workdir)
        wires.append(wire)
        wire.up(cpu=RELAY_CPU)
        return wire
    run_out("ip", "link", "add", ifa, "netns", ns_a, "type", "veth", "peer", "name", ifb,
            "netns", ns_b)
    for ns, dev, addr in ((ns_a, ifa, ADDR_A), (ns_b, ifb, ADDR_B)):
        run_out("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
        run_out("ip", "-n", ns, "link", "set", dev, "up")
        run_out("ip", "netns", "exec", ns, "ethtool", "-K", dev, "gso", "off", "tso", "off",
                "gro", "off")
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frame", type=int, default=64, help="Ethernet frame size (bytes)")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--wire", choices=("relay", "veth"), default="relay")
    args = parser.parse_args()
    payload = args.frame - ETH_IP_UDP
    pid = os.getpid()
    ns_a, ns_b = f"linklab-emubench{pid}-a", f"linklab-emubench{pid}-b"
    ifa, ifb = f"leb{pid % 100000}a", f"leb{pid % 100000}b"
    wire = None
    with tempfile.TemporaryDirectory() as tmp, \
            scratch_namespaces((ns_a, ns_b), lo_up=True) as wires:
        wire = join(args.wire, (ns_a, ns_b, ifa, ifb), Path(tmp), wires)
        before = _rx_packets(ns_b, ifb)
        cpu_before = cpu_seconds(wire.relay.pid) if wire else 0.0
        result = _iperf(ns_a, ns_b, ADDR_B, payload, args.seconds)
        delivered = _rx_packets(ns_b, ifb) - before
        relay_cpu = (cpu_seconds(wire.relay.pid) - cpu_before) if wire else None
        end = result["end"]["sum"]
        seconds = end["seconds"]
        frames_per_s = delivered / seconds
        app_per_s = (end["packets"] - end["lost_packets"]) / seconds
        stats = wire.relay.fresh_stats() if wire else None
        print(json.dumps({
            "wire": args.wire, "frame_bytes": args.frame, "seconds": round(seconds, 2),
            "offered_frames_per_s": round(end["packets"] / seconds),
            "delivered_frames_per_s": round(frames_per_s),
            "delivered_gbit_per_s": round(frames_per_s * args.frame * 8 / 1e9, 3),
            "app_received_frames_per_s": round(app_per_s),
            "relay_loss_stage_drops": stats.ab.stages[1].dropped_packets if stats else None,
            "relay_cpu_percent": round(100 * relay_cpu / seconds) if wire else None,
            "frames_per_relay_cpu_second": round(delivered / relay_cpu)
            if wire and relay_cpu else None,
        }))


if __name__ == "__main__":
    main()
