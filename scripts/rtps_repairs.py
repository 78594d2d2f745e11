"""The repair loop of one capture (scripts/rtps_capture.py on the reader's side): how long
the reader takes from a HEARTBEAT to its NACK_FRAG, how long the writer takes from a
NACK_FRAG to the first repair frame after it, and how many NACK_FRAGs name each sample
(the latency model's rounds, model/latency.py). A repair is a DATA_FRAG of a fragment the
capture already saw for that sample.

    python3 scripts/rtps_repairs.py RUN/records/CELL/edge.pcapng [--after 1.0]
"""

from __future__ import annotations

import argparse
import bisect
import statistics
import subprocess
from collections import Counter, defaultdict

FIELDS = ("frame.time_relative", "rtps.sm.id", "rtps.sm.seqNumber", "rtps.data_frag.number")
HEARTBEAT, NACK_FRAG, DATA_FRAG = 0x07, 0x12, 0x16


def frames(pcap: str):
    cmd = ["tshark", "-r", pcap, "-T", "fields", "-E", "separator=|", "-E", "occurrence=a"]
    for name in FIELDS:
        cmd += ["-e", name]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        t, ids, sns, frag = (line.split("|") + [""] * 4)[:4]
        if ids:
            yield (float(t), [int(i, 0) for i in ids.split(",")],
                   [int(s) for s in sns.split(",") if s], frag)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("pcap")
    parser.add_argument("--after", type=float, default=1.0, help="skip discovery (s)")
    args = parser.parse_args()
    heartbeats, nacks, repairs = [], [], []
    named: Counter[int] = Counter()
    seen: dict[int, set[str]] = defaultdict(set)
    for t, ids, sns, frag in frames(args.pcap):
        if DATA_FRAG in ids and sns:
            if frag in seen[sns[-1]]:
                repairs.append(t)
            seen[sns[-1]].add(frag)
        elif t < args.after:
            continue
        elif HEARTBEAT in ids:
            heartbeats.append(t)
        elif NACK_FRAG in ids:
            nacks.append(t)
            named.update(set(sns))
    answered = []
    for t in heartbeats:
        i = bisect.bisect_left(nacks, t)
        if i < len(nacks) and nacks[i] - t < 0.012:
            answered.append(nacks[i] - t)
    waits = sorted(repairs[i] - t for t in nacks
                   if (i := bisect.bisect_left(repairs, t)) < len(repairs))
    q = statistics.quantiles(waits, n=10)
    print(f"HEARTBEATs {len(heartbeats)}, answered by a NACK_FRAG within 12 ms: "
          f"{len(answered)}; delay mean {statistics.mean(answered) * 1e3:.2f} ms "
          f"({min(answered) * 1e3:.2f}-{max(answered) * 1e3:.2f})")
    print(f"NACK_FRAG -> first repair: p10 {q[0] * 1e3:.1f}, p50 {q[4] * 1e3:.1f}, "
          f"p90 {q[8] * 1e3:.1f} ms")
    samples = [named[s] for s in range(min(named) + 10, max(named) - 10)]
    print(f"NACK_FRAGs naming a sample: mean {statistics.mean(samples):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
