"""Benchmark: how faithfully the relay replays a real LTE trace, beside Mahimahi (issue 44).

    python -m linklab.emu.fidelity [--trace NAME ...] [--seconds 14] [--no-mahimahi]

For each trace pair (``traces/mahimahi/NAME.up`` and ``.down``, real LTE traces from
Mahimahi's repository: traces/mahimahi/README.md), protocol (TCP: one iperf3 flow; UDP:
iperf3 offering 1.5 times the trace's busiest second of that direction, in 1500-byte IP
packets) and direction (up: the client sends through the up trace; down: ``-R``, through
the down trace), the same workload crosses (a) linklab's relay (linklab.emu.tap_wire, the
up trace a -> b, the down trace b -> a) and then (b) Mahimahi's ``mm-link`` with the same
two files (built on first need; run in a namespace of its own with nobody's real uid:
linklab.emu.mahimahi). Each cell starts its emulator afresh, so every cell meets the
same stretch of the trace. Both emulators run the same way: pinned to CPU 1 at SCHED_FIFO
priority 10 (the relay's default; at normal priority mm-link, on a busy machine, was kept
off its CPU for hundreds of milliseconds and delivered in bursts), both iperf3 ends on
CPU 0, a drop-tail queue of QUEUE_PACKETS packets each way (mm-link's default queue is
unbounded: a UDP flood's backlog would hold iperf3's closing exchange for many seconds).
The whole run (two traces, 16 emulator runs) takes about 5.5 minutes.

What is measured (each defined once, here):

- **Trace zero**: the instant each emulator's trace time 0 is. linklab: the relay's epoch
  (``RelayConfig.epoch_ns``, the setting a link's ``trace_start: <UTC time>`` becomes),
  1 s after the relay is started; the iperf3 client is started at it. Mahimahi: its
  log's ``init timestamp`` + ``base timestamp`` (the realtime millisecond the direction's
  queue was made, when its trace starts); its command starts as soon as its shell runs.
  Either way the column ``start`` of the JSON lines says how long after the zero the
  client started. Trace second s is [zero + s, zero + s + 1 s).
- **Window**: trace seconds 1 to 1 + ``--seconds`` (second 0 holds the workload's start).
- **Delivered**: the bytes of IP packets (headers included, no link header: the 14-byte
  Ethernet header of each frame on linklab's TAP is taken off; Mahimahi's TUN counts IP
  packets) the receiving end's interface took in, read from /proc/<pid>/net/dev of a
  process in its namespace every 10 ms; per trace second, the counter at each edge
  linear between the samples either side. It counts every packet in that direction (the
  flow's data, TCP's acknowledgements of the other direction do not cross here).
- **Capacity**: the trace's delivery opportunities in that second (the trace repeating
  with the period of its last line) times 1504 bytes (Mahimahi's PACKET_SIZE).
- **Throughput** (Mbit/s): delivered bytes in the window / its seconds; the same for
  capacity. **linklab / Mahimahi** is the ratio of the two throughputs: the target is
  within 2 %.
- **r**: Pearson's correlation of the window's delivered bytes per second with its
  capacity per second: the target is >= 0.99 for each emulator.

Prints the table (Markdown) and, with ``--json``, one JSON line per cell before it. After
each cell any other process running at real-time priority is named on stderr: at the
emulators' priority on their CPU it keeps them from running (measure alone).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from linklab import stop_signals
from linklab.emu.fidelity_cells import (
    Workload,
    realtime_others,
    run_linklab,
    run_mahimahi,
)
from linklab.emu.fidelity_metrics import Row, Side, per_second, table
from linklab.emu.mahimahi import REPO, mm_link_binary
from linklab.emu.models import read_trace, trace_capacity_per_second
from linklab.errors import LinklabError, UsageError

TRACE_DIR = REPO / "traces" / "mahimahi"
TRACES = ("TMobile-LTE-short", "Verizon-LTE-short")
CELLS = (("tcp", "up"), ("tcp", "down"), ("udp", "up"), ("udp", "down"))
WINDOW_FIRST_S = 1
UDP_OVER_PEAK = 1.5
QUEUE_PACKETS = 500
SLACK_S = 2.0   # iperf3 runs this much past the window's end


def trace_pair(name: str) -> tuple[Path, Path]:
    pair = (TRACE_DIR / f"{name}.up", TRACE_DIR / f"{name}.down")
    if not all(p.is_file() for p in pair):
        known = sorted({p.stem for p in TRACE_DIR.glob("*.up")})
        raise UsageError(f"no trace pair {name!r} in {TRACE_DIR} (there: {', '.join(known)})",
                         argument="--trace")
    return pair


def workload(protocol: str, direction: str, times_ms: np.ndarray, seconds: int) -> Workload:
    """The cell's iperf3 flow: it outlasts the window by SLACK_S; UDP offers UDP_OVER_PEAK
    times the busiest second of the trace up to then."""
    run_s = WINDOW_FIRST_S + seconds + SLACK_S
    peak = max(trace_capacity_per_second(times_ms, 0, int(run_s) + 1))
    rate = round(UDP_OVER_PEAK * peak * 8) if protocol == "udp" else 0
    return Workload(protocol, direction, run_s, rate, QUEUE_PACKETS)


def run_trace(name: str, seconds: int, mm_link: Path | None, workdir: Path,
              emit_json: bool) -> list[Row]:
    pair = trace_pair(name)
    times = {"up": read_trace(pair[0]), "down": read_trace(pair[1])}
    rows = []
    for protocol, direction in CELLS:
        work = workload(protocol, direction, times[direction], seconds)
        capacity = tuple(trace_capacity_per_second(times[direction], WINDOW_FIRST_S, seconds))
        sides: dict[str, Side] = {}
        measured = {"linklab": run_linklab(pair, work, workdir)}
        others = realtime_others()
        if mm_link is not None:
            measured["mahimahi"] = run_mahimahi(mm_link, pair, work)
            others |= realtime_others()
        for emulator, m in measured.items():
            sides[emulator] = Side(tuple(per_second(m.samples, m.zero_ns, WINDOW_FIRST_S,
                                                    seconds)), m.start_offset_s)
        row = Row(name, direction, protocol, capacity, sides["linklab"], sides.get("mahimahi"))
        rows.append(row)
        if others:
            print(f"{name} {direction} {protocol}: other real-time processes at the cell's "
                  f"end: {', '.join(sorted(others))} (they can keep an emulator off its CPU)",
                  file=sys.stderr, flush=True)
        if emit_json:
            print(json.dumps({
                "trace": name, "direction": direction, "protocol": protocol,
                "udp_offered_bit_s": work.udp_bit_s or None, "capacity_bytes": capacity,
                **{e: {"start_s": round(s.start_offset_s, 3),
                       "bytes": [round(b) for b in s.per_second]} for e, s in sides.items()},
            }), flush=True)
    return rows


def main() -> None:
    stop_signals.install()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", action="append", default=None,
                        help=f"a trace pair in traces/mahimahi (default: {', '.join(TRACES)})")
    parser.add_argument("--seconds", type=int, default=14, help="the window, in seconds")
    parser.add_argument("--no-mahimahi", action="store_true",
                        help="the relay alone (no mm-link build or run)")
    parser.add_argument("--json", action="store_true", help="a JSON line per cell too")
    args = parser.parse_args()
    try:
        if args.seconds < 2:
            raise UsageError("at least 2 (a correlation needs two seconds)",
                             argument="--seconds")
        names = args.trace or list(TRACES)
        for name in names:
            trace_pair(name)
        mm_link = None if args.no_mahimahi else mm_link_binary()
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            for name in names:
                rows += run_trace(name, args.seconds, mm_link, Path(tmp), args.json)
    except LinklabError as e:
        raise SystemExit(f"linklab.emu.fidelity: error: {e}") from None
    except KeyboardInterrupt as stop:   # Ctrl-C, SIGTERM, SIGHUP: everything is undone
        status = stop_signals.exit_status(stop) or 130
        print(stop_signals.message(status), file=sys.stderr)
        raise SystemExit(status) from None
    load = os.getloadavg()[0]
    print(f"window: trace seconds {WINDOW_FIRST_S}-{WINDOW_FIRST_S + args.seconds}; "
          f"load average {load:.2f} at the end")
    print("\n".join(table(rows)))


if __name__ == "__main__":
    main()
