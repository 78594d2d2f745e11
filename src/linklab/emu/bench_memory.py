"""Benchmark: the relay's memory under a flood it cannot carry (issue 44).

    python -m linklab.emu.bench_memory [--seconds 60] [--limit 64MiB] [--frame 1442]
                                       [--queue droptail|headdrop|codel]

Two namespaces ``linklab-emumem<pid>-a|b`` are joined by a relay whose a->b direction is
a trace of one 1504-byte opportunity per millisecond (12 Mbit/s) with a queue of
``--limit`` bytes in front (the default is the relay's own default, 64 MiB); iperf3 sends
UDP at ten times that for ``--seconds``. Every second the relay's resident memory
(VmRSS) is sampled. Prints one JSON line: the peak growth over the relay's memory before
the flood, the queue's largest depth (frames and bytes, the relay's counters), and the
growth per queued frame beside the frame's size. The relay is pinned to CPU 1, iperf3 to
CPU 0.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

from linklab.emu.config import RelayConfig
from linklab.emu.directives import QUEUE_DEFAULT_LIMIT_BYTES, QUEUE_DISCIPLINES, Trace
from linklab.emu.tap_wire import RelayWire, TapEnd, scratch_namespaces
from linklab.units import parse_size

ETH_IP_UDP = 14 + 20 + 8
TRACE_BIT_S = 1504 * 8 * 1000


def _rss_bytes(pid: int) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", text).group(1)) * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--limit", default=None, help="queue limit (a size; default: 64MiB)")
    parser.add_argument("--frame", type=int, default=1442, help="Ethernet frame size (bytes)")
    parser.add_argument("--queue", choices=QUEUE_DISCIPLINES, default="droptail")
    args = parser.parse_args()
    limit = parse_size(args.limit, "--limit") if args.limit else None
    pid = os.getpid()
    ns_a, ns_b = f"linklab-emumem{pid}-a", f"linklab-emumem{pid}-b"
    ifa, ifb = f"lem{pid % 100000}a", f"lem{pid % 100000}b"
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "12mbit.trace"
        trace.write_text("".join(f"{ms}\n" for ms in range(1, 1001)))
        with scratch_namespaces((ns_a, ns_b)) as wires:
            stage = Trace(trace, limit_bytes=limit, queue=args.queue)
            wire = RelayWire(TapEnd(ns_a, ifa, "10.215.0.1/24"), TapEnd(ns_b, ifb, "10.215.0.2/24"),
                             RelayConfig(ifa, ifb, ab=(stage,), seed=1, stats_interval_s=0.5),
                             Path(tmp) / "relay")
            wires.append(wire)
            wire.up(cpu=1)
            relay = wire.relay.pid
            baseline = _rss_bytes(relay)
            server = subprocess.Popen(["ip", "netns", "exec", ns_b, "taskset", "-c", "0",
                                       "iperf3", "-s", "-1", "-B", "10.215.0.2"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.3)
            client = subprocess.Popen(
                ["ip", "netns", "exec", ns_a, "taskset", "-c", "0", "iperf3", "-c", "10.215.0.2",
                 "-u", "-b", str(10 * TRACE_BIT_S), "-l", str(args.frame - ETH_IP_UDP),
                 "-t", str(args.seconds)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            peak = baseline
            while client.poll() is None:
                peak = max(peak, _rss_bytes(relay))
                time.sleep(1.0)
            server.kill()
            server.wait()
            stats = wire.relay.fresh_stats()
            queue = stats.ab.stages[0]
            grown = peak - baseline
            per_frame = grown / queue.queue_max_packets if queue.queue_max_packets else None
            print(json.dumps({
                "seconds": args.seconds, "queue": args.queue, "frame_bytes": args.frame,
                "limit_bytes": limit or QUEUE_DEFAULT_LIMIT_BYTES,
                "offered_bit_s": 10 * TRACE_BIT_S, "rss_before_bytes": baseline,
                "rss_peak_growth_bytes": grown,
                "queue_max_packets": queue.queue_max_packets,
                "queue_max_bytes": queue.queue_max_bytes,
                "dropped_packets": queue.dropped_packets,
                "growth_per_queued_frame_bytes": round(per_frame) if per_frame else None,
            }))


if __name__ == "__main__":
    main()
