"""Per-interval RTPS traffic of a capture (scripts/rtps_capture.py): what crossed the link
while a stream stalled, and what did not.

For each interval (default 0.5 s) from the first user-data fragment: frames and bytes in
each direction, and the RTPS submessages of user traffic by kind -- DATA_FRAG (with the
writer sequence numbers they carry: the lowest and highest, and how many distinct),
HEARTBEAT, ACKNACK, NACK_FRAG (the sample each asks
fragments of), GAP (discovery's, rare once matched, are counted with them). Reading the pcap takes
tshark's RTPS dissector (its UDP heuristic is on by default).

    python3 scripts/rtps_timeline.py RUN/records/CELL/edge.pcapng [--every 0.5]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field

# RTPS submessage ids (OMG DDSI-RTPS 2.x, 9.4.5.1.1)
KINDS = {0x06: "ACKNACK", 0x07: "HEARTBEAT", 0x08: "GAP", 0x12: "NACK_FRAG",
         0x15: "DATA", 0x16: "DATA_FRAG", 0x13: "HB_FRAG"}
FIELDS = ("frame.time_relative", "ip.src", "rtps.sm.id", "rtps.sm.seqNumber")


@dataclass
class Interval:
    frames: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    kinds: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    sns: set[int] = field(default_factory=set)


def rows(pcap: str):
    argv = ["tshark", "-r", pcap, "-T", "fields",
            "-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=,"]
    for name in FIELDS:
        argv += ["-e", name]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split("|")
        if len(parts) != len(FIELDS):
            continue
        yield parts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pcap")
    parser.add_argument("--every", type=float, default=0.5)
    args = parser.parse_args()
    intervals: dict[int, Interval] = defaultdict(Interval)
    start = None
    for t, src, ids, sns in rows(args.pcap):
        kinds = [KINDS.get(int(i, 0), None) for i in ids.split(",") if i]
        if "DATA_FRAG" in kinds and start is None:
            start = float(t)
        if start is None:
            continue
        k = int((float(t) - start) // args.every)
        iv = intervals[k]
        iv.frames[src] += 1
        for kind in kinds:
            if kind:
                iv.kinds[kind] += 1
        if "DATA_FRAG" in kinds:
            for sn in sns.split(","):
                if sn:
                    iv.sns.add(int(sn))
    if start is None:
        print("no DATA_FRAG in the capture", file=sys.stderr)
        return 1
    srcs = sorted({s for iv in intervals.values() for s in iv.frames})
    head = (["t (s)"] + [f"frames {s}" for s in srcs] + ["DATA_FRAG", "SNs", "HEARTBEAT",
                                                         "ACKNACK", "NACK_FRAG", "GAP"])
    print("\t".join(head))
    for k in range(min(intervals), max(intervals) + 1):
        iv = intervals.get(k, Interval())
        span = f"{min(iv.sns)}-{max(iv.sns)} ({len(iv.sns)})" if iv.sns else "-"
        print("\t".join([f"{k * args.every:.1f}"] + [str(iv.frames.get(s, 0)) for s in srcs]
                        + [str(iv.kinds.get("DATA_FRAG", 0)), span]
                        + [str(iv.kinds.get(x, 0)) for x in ("HEARTBEAT", "ACKNACK",
                                                             "NACK_FRAG", "GAP")]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
