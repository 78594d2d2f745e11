"""Per-interval RTPS traffic of a capture (scripts/rtps_capture.py): what crossed the link
while a stream stalled, and what did not.

For each interval (default 0.5 s) from the first user-data fragment: frames and bytes in
each direction, and the RTPS submessages of user traffic by kind -- DATA_FRAG (with the
writer sequence numbers they carry: the lowest and highest, and how many distinct),
HEARTBEAT, ACKNACK, NACK_FRAG (the sample each asks
fragments of), GAP (discovery's, rare once matched, are counted with them). Reading the pcap takes
tshark's RTPS dissector (its UDP heuristic is on by default).

    python3 scripts/rtps_timeline.py RUN/records/CELL/edge.pcapng [--every 0.5]
    python3 scripts/rtps_timeline.py RUN/records/*/edge.pcapng --bursts

``--bursts``: the writer's paced bursts (Fast DDS throughputController: a period's bytes
back to back, then a pause): frames separated by less than 1.5 ms are one burst; for the
bursts that carried a full period (at least ``--full`` frames), how late each started
after the period before it (interval minus ``--period``), from 2.5 s to 11.5 s after the
first DATA_FRAG.
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


def bursts(pcap: str, writer: str, period_ms: float, full: int) -> str:
    """One line: the writer's paced bursts in ``pcap`` (see the module docstring)."""
    times = sorted(float(t) for t, src, ids, _ in rows(pcap)
                   if src == writer and "0x16" in ids.split(","))
    if not times:
        return f"{pcap}: no DATA_FRAG from {writer}"
    t0 = times[0]
    times = [t for t in times if t0 + 2.5 < t < t0 + 11.5]
    starts = [0] + [i + 1 for i in range(len(times) - 1) if times[i + 1] - times[i] > 0.0015]
    sizes = [b - a for a, b in zip(starts, starts[1:] + [len(times)], strict=True)]
    late = sorted((times[b] - times[a]) * 1000 - period_ms
                  for a, b, n in zip(starts, starts[1:], sizes, strict=False) if n >= full)
    if not late:
        return f"{pcap}: no full bursts"
    mean = sum(late) / len(late)
    return (f"{pcap}: {len(times) / 9:.0f} DATA_FRAG/s, {len(late)} full bursts of "
            f"{len(late) / len(sizes):.0%}; start late by mean {mean:.2f} ms, median "
            f"{late[len(late) // 2]:.2f}, p90 {late[int(len(late) * 0.9)]:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pcap", nargs="+")
    parser.add_argument("--every", type=float, default=0.5)
    parser.add_argument("--bursts", action="store_true")
    parser.add_argument("--writer", default="10.77.0.1", help="the writer's address")
    parser.add_argument("--period", type=float, default=5.0, help="pacing period (ms)")
    parser.add_argument("--full", type=int, default=110, help="frames of a full period")
    args = parser.parse_args()
    if args.bursts:
        for pcap in args.pcap:
            print(bursts(pcap, args.writer, args.period, args.full))
        return 0
    if len(args.pcap) != 1:
        parser.error("one capture at a time without --bursts")
    args.pcap = args.pcap[0]
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
