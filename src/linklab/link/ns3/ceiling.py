"""How much traffic the realtime ns-3 medium carries on this machine before it falls behind.

    python -m linklab.link.ns3.ceiling [--sizes 32B,1400B] [--duration 5s] [--robots N]
                                       [--json]

A benchmark (run it alone on the machine): for each UDP payload size, a pair of hosts
2 m apart on the ns-3 medium (wifi-80211a, no loss from distance) -- or with --robots N
a star of N robots around the edge (robot1 sends; every other station hears each frame,
and the simulation computes every reception: its work per frame grows with the
stations) -- and iperf3 offering
UDP packets at rising rates (doubling from 500 packets/s, then bisecting between the last
rate it kept up with and the first it did not, to 10 %). Each step runs on a fresh link;
it "kept up" when the simulation never stayed behind real time long enough to be taken
down (linklab.link.ns3: LAG_LIMIT_MS for LAG_HOLD_MS). Prints, per size, the highest
offered rate it kept up with (packets/s and Mbit/s of IP packets), what arrived, and the
lag figures of every step. The simulated channel itself carries ~29 Mbit/s of 1400-byte
packets at 54 Mbit/s (more is dropped by its queue, correctly: that is the medium); the
ceiling here is the simulation's, in frames per second reaching it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from linklab.errors import LinklabError, UsageError
from linklab.link.ns3 import read_stats
from linklab.link.topology import MAX_STAR_HOSTS
from linklab.units import parse_duration, parse_size

IP_UDP_HEADERS = 28
START_PPS = 500.0
MAX_PPS = 1_000_000.0
PRECISION = 0.10


@dataclass
class Step:
    size_bytes: int
    offered_pps: float
    kept_up: bool
    sent_packets: int | None
    received_packets: int | None
    lag_max_ms: float | None
    behind_ms: float | None
    reason: str | None

    @property
    def offered_mbit_s(self) -> float:
        return self.offered_pps * (self.size_bytes + IP_UDP_HEADERS) * 8 / 1e6


def one_step(size: int, pps: float, duration_s: float, name: str, robots: int = 1) -> Step:
    """A fresh pair (or star of ``robots``) on the medium, iperf3 from the (first) robot
    at ``pps`` packets/s of ``size`` bytes."""
    from linklab.link import testbed

    bits = pps * size * 8
    shape = {"topology": "pair"} if robots == 1 else {"topology": "star", "hosts": robots}
    sender = "robot" if robots == 1 else "robot1"
    with testbed("wifi-80211a", name=name, distance="2m", **shape) as bed:
        info = bed.journal.state["ns3"]
        server = bed.popen("edge", ["iperf3", "-s", "-1", "-p", "5201"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            run = bed.run(sender, ["iperf3", "-c", bed.hosts["edge"].address, "-p", "5201",
                                    "-u", "-l", str(size), "-b", f"{bits:.0f}",
                                    "-t", f"{duration_s:g}", "-J"],
                          timeout=duration_s + 30)
        finally:
            server.kill()
            server.wait()
        stats = read_stats(Path(info["stats"]))
        faults = bed.faults()
    sent = received = None
    try:
        end = json.loads(run.stdout)["end"]["sum"]
        sent, received = int(end["packets"]), int(end["packets"]) - int(end["lost_packets"])
    except (ValueError, KeyError, TypeError):
        pass
    reason = next(iter(faults.values()), None)
    return Step(size, pps, not faults, sent, received,
                stats.lag_max_ms if stats else None, stats.behind_ms if stats else None,
                reason)


def ceiling(size: int, duration_s: float, name: str, log=print,
            robots: int = 1) -> list[Step]:
    steps: list[Step] = []

    def run(pps: float) -> Step:
        step = one_step(size, pps, duration_s, name, robots)
        steps.append(step)
        log(f"  {size} B at {pps:,.0f} packets/s ({step.offered_mbit_s:.1f} Mbit/s): "
            f"{'kept up' if step.kept_up else 'FELL BEHIND'}, lag max "
            f"{step.lag_max_ms} ms, behind {step.behind_ms} ms, "
            f"received {step.received_packets}/{step.sent_packets}")
        return step

    good, bad = 0.0, None
    pps = START_PPS
    while pps <= MAX_PPS:
        if run(pps).kept_up:
            good, pps = pps, pps * 2
        else:
            bad = pps
            break
    while bad is not None and good > 0 and (bad - good) / good > PRECISION:
        middle = (good + bad) / 2
        if run(middle).kept_up:
            good = middle
        else:
            bad = middle
    return steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m linklab.link.ns3.ceiling",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="32B,1400B",
                        help="UDP payload sizes, comma-separated (default 32B,1400B)")
    parser.add_argument("--duration", default="5s", help="length of each step (default 5s)")
    parser.add_argument("--robots", type=int, default=1,
                        help="1: a pair (default); N: a star of N robots around the edge, "
                             f"2..{MAX_STAR_HOSTS}")
    parser.add_argument("--json", action="store_true", help="print the steps as JSON")
    parser.add_argument("--name", default="ns3ceiling", help="link run name")
    args = parser.parse_args(argv)
    try:
        sizes = [parse_size(s, "--sizes") for s in args.sizes.split(",")]
        duration = parse_duration(args.duration, "--duration")
        if not 1 <= args.robots <= MAX_STAR_HOSTS:
            raise UsageError(f"{args.robots} is outside 1..{MAX_STAR_HOSTS}",
                             argument="--robots")
        results: dict[str, Any] = {}
        for size in sizes:
            print(f"payload {size} B, {args.robots} robot(s) and the edge:",
                  file=sys.stderr if args.json else sys.stdout)
            steps = ceiling(size, duration, args.name,
                            log=lambda t: print(t, file=sys.stderr if args.json else sys.stdout),
                            robots=args.robots)
            kept = [s for s in steps if s.kept_up]
            best = max(kept, key=lambda s: s.offered_pps) if kept else None
            results[str(size)] = {
                "ceiling_pps": best.offered_pps if best else None,
                "ceiling_mbit_s": best.offered_mbit_s if best else None,
                "steps": [{**asdict(s), "offered_mbit_s": s.offered_mbit_s} for s in steps]}
            if not args.json:
                print(f"  ceiling: {best.offered_pps:,.0f} packets/s "
                      f"({best.offered_mbit_s:.1f} Mbit/s offered)" if best
                      else "  ceiling: below the first step")
    except LinklabError as error:
        print(f"linklab: error: {error}", file=sys.stderr)
        return error.exit_code
    if args.json:
        print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
