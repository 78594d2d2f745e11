"""Issue 43's real-time target for the shared Wi-Fi medium: one relay core carries a
saturated 802.11ac 80 MHz link (>= 400 Mbit/s of 1500-byte frames) with no scheduling lag
above 1 ms. A pair link on the medium (the relay pinned to CPU 1, iperf3's two ends on
CPU 0), iperf3 UDP robot -> edge above the medium's capacity for SECONDS; printed: what
the medium delivered to the edge (its counters), what iperf3's server received, the
relay's CPU, and the medium's lag (max, p90, p99 of how late the relay handled a medium
event against its schedule).

    .venv/bin/python scripts/medium_realtime.py [--medium standard=ac,streams=2,mcs=9,guard=400ns]
        [--offer 1000M] [--seconds 10]

Run it alone on the machine (docs/RESULTS.md, "A shared Wi-Fi medium").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time

from linklab.link import testbed

RELAY_CPU = "1"
IPERF_CPU = "0"


def relay_pid(bed) -> int:
    """The pid of this bed's relay (its run journal, linklab.link.wires.tap_relay)."""
    (relay,) = bed.journal.state["emu"].values()
    return int(relay["pid"])


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def medium_figures(bed) -> dict:
    stage = next(s for s in bed.counters()["stages"] if s["kind"] == "medium")
    return stage["medium"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--medium", default="standard=ac,streams=2,mcs=9,guard=400ns")
    parser.add_argument("--offer", default="1000M", help="iperf3 -b (UDP bit rate offered)")
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    with testbed("wifi-ac-medium", name=f"mrt{os.getpid()}", medium=args.medium,
                 relay_cpu=RELAY_CPU) as bed:
        edge = bed.hosts["edge"]
        server = bed.popen("edge", ["taskset", "-c", IPERF_CPU, "iperf3", "-s", "-1",
                                    "-J"], stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        pid = relay_pid(bed)
        before = medium_figures(bed)
        cpu0, t0 = cpu_seconds(pid), time.monotonic()
        client = bed.popen("robot", ["taskset", "-c", IPERF_CPU, "iperf3", "-c",
                                     edge.address, "-u", "-b", args.offer, "-l", "1472",
                                     "-t", str(args.seconds), "-J"],
                           stdout=subprocess.PIPE, text=True)
        report = json.loads(client.communicate(timeout=args.seconds + 30)[0])
        cpu1, t1 = cpu_seconds(pid), time.monotonic()
        after = medium_figures(bed)
        server.communicate(timeout=30)
    a0, a1 = before["stations"]["a"], after["stations"]["a"]
    span = t1 - t0
    delivered = a1["delivered_frames"] - a0["delivered_frames"]
    summary = report["end"]["sum"]  # the client's, with the server's loss count
    got = (summary["packets"] - summary["lost_packets"]) * 1472 * 8 / summary["seconds"]
    print(f"medium {args.medium}, offered {args.offer}bit/s of 1472-byte UDP for "
          f"{args.seconds:g} s")
    print(f"  medium delivered {delivered / span:,.0f} frames/s "
          f"({8 * 1500 * delivered / span / 1e6:.0f} Mbit/s of 1500-byte frames), queue "
          f"drops {a1['drops_queue'] - a0['drops_queue']:,}, retry drops "
          f"{a1['drops_retry'] - a0['drops_retry']:,}, mean A-MPDU "
          f"{after['mean_ampdu_frames']:.1f}")
    print(f"  iperf3's server received {got / 1e6:.0f} Mbit/s of UDP payload, lost "
          f"{summary['lost_percent']:.1f} %")
    print(f"  relay CPU {100 * (cpu1 - cpu0) / span:.0f} % of CPU {RELAY_CPU}; lag max "
          f"{after['lag_max_ns'] / 1e3:.0f} us, p90 {after['lag_p90_ns'] / 1e3:.1f} us, "
          f"p99 {after['lag_p99_ns'] / 1e3:.1f} us (over the relay's life)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
