"""Issue 43's real-time target for the shared Wi-Fi medium: one relay core carries a
saturated 802.11ac 80 MHz link (>= 400 Mbit/s of 1500-byte frames) with no scheduling lag
above 1 ms. A pair link on the medium (the relay pinned to CPU 1, iperf3's two ends on
CPU 0), iperf3 UDP robot -> edge above the medium's capacity for SECONDS; printed: what
the medium delivered to the edge (its counters), what iperf3's server received, the
relay's CPU, and the medium's lag (max, p90, p99 of how late the relay handled a medium
event against its schedule). Every relay turn with an event more than 1 ms late is listed
with when it came (from iperf3's start), where the relay's time went just before it
(asleep in epoll_wait, reading its devices, its previous turn's work: emu/src/medium/lag.rs)
and whether the host took the relay's CPU from the VM then (steal time in /proc/stat,
sampled every 5 ms: the kernel counts it in 10 ms ticks, so a shorter theft may not show).

    .venv/bin/python scripts/medium_realtime.py [--medium standard=ac,streams=2,mcs=9,guard=400ns]
        [--offer 1000M] [--seconds 10]

Run it alone on the machine (docs/RESULTS.md, "A shared Wi-Fi medium").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import threading
import time

from linklab.emu.bench_wires import steal_ticks
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


class StealSampler(threading.Thread):
    """(monotonic ns, steal ticks of `cpu`) every 5 ms until stopped."""

    def __init__(self, cpu: str):
        super().__init__(daemon=True)
        self.cpu, self.samples, self.done = cpu, [], threading.Event()

    def run(self):
        while not self.done.is_set():
            self.samples.append((time.monotonic_ns(), steal_ticks(int(self.cpu))))
            time.sleep(0.005)

    def stolen_within(self, start_ns: int, end_ns: int) -> int:
        """Ticks stolen between the last sample before `start_ns` and the first after
        `end_ns` (0 outside the sampled span)."""
        before = [v for t, v in self.samples if t <= start_ns]
        after = [v for t, v in self.samples if t >= end_ns]
        return after[0] - before[-1] if before and after else 0


def print_late_turns(after: dict, t0_ns: int, steal: StealSampler) -> None:
    turns = after.get("lag_late_at", [])
    print(f"  events over {after['lag_late_ns'] / 1e6:g} ms late: {after['lag_late_events']}"
          f" in {after['lag_late_turns']} relay turns (the first {len(turns)} below)")
    for at, lag, slept, read, previous in turns:
        print(f"    at {(at - t0_ns) / 1e9:+8.3f} s: {lag / 1e6:6.2f} ms late; before it "
              f"asleep {slept / 1e6:.2f} ms, reading {read / 1e6:.2f} ms, previous turn "
              f"{previous / 1e6:.2f} ms; steal ticks on CPU {RELAY_CPU} around it: "
              f"{steal.stolen_within(at - lag, at)}")


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
        steal = StealSampler(RELAY_CPU)
        steal.start()
        steal0 = {cpu: steal_ticks(int(cpu)) for cpu in (RELAY_CPU, IPERF_CPU)}
        cpu0, t0, t0_ns = cpu_seconds(pid), time.monotonic(), time.monotonic_ns()
        client = bed.popen("robot", ["taskset", "-c", IPERF_CPU, "iperf3", "-c",
                                     edge.address, "-u", "-b", args.offer, "-l", "1472",
                                     "-t", str(args.seconds), "-J"],
                           stdout=subprocess.PIPE, text=True)
        report = json.loads(client.communicate(timeout=args.seconds + 30)[0])
        cpu1, t1 = cpu_seconds(pid), time.monotonic()
        stolen = {cpu: steal_ticks(int(cpu)) - steal0[cpu] for cpu in (RELAY_CPU, IPERF_CPU)}
        steal.done.set()
        steal.join()
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
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    print("  steal time during iperf3's run: " + ", ".join(
        f"CPU {cpu} {n * tick_ms:.0f} ms" for cpu, n in stolen.items()))
    print_late_turns(after, t0_ns, steal)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
