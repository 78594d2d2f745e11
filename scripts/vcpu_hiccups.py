"""How long this machine's CPUs stop running a thread that asked to run: the floor under
the medium relay's real-time lag (issue 43; docs/RESULTS.md, "A shared Wi-Fi medium").

On each CPU at once, for SECONDS, one process pinned to it does one of:
  spin   reads CLOCK_MONOTONIC in a loop at normal priority: a gap between two reads is a
         time the CPU ran something else (an interrupt, a kernel thread) or the host ran
         something else instead of this vCPU;
  sleep  sleeps to a deadline every 1 ms as the relay does (SCHED_FIFO priority 10, timer
         slack 1 ns) and measures how late it woke: the gap also holds the wake-up of a
         halted vCPU, which the host does.
Printed per CPU: gaps over 0.2 ms and over 1 ms, the largest, and the host's steal time
from that CPU meanwhile (/proc/stat). Nothing else may run on the machine beside it.

    .venv/bin/python scripts/vcpu_hiccups.py [--mode spin|sleep] [--seconds 30]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import time

PR_SET_TIMERSLACK = 29


def steal_ms(cpu: int) -> float:
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith(f"cpu{cpu} "):
                return int(line.split()[8]) * 1000 / os.sysconf("SC_CLK_TCK")
    raise RuntimeError(f"no cpu{cpu} in /proc/stat")


def spin(seconds: float) -> list[int]:
    gaps, now = [], time.monotonic_ns
    last = start = now()
    end = start + int(seconds * 1e9)
    while last < end:
        t = now()
        if t - last > 200_000:
            gaps.append(t - last)
        last = t
    return gaps


def sleep(seconds: float) -> list[int]:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    ctypes.CDLL(None).prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    gaps, now = [], time.monotonic_ns
    due = now()
    end = due + int(seconds * 1e9)
    while due < end:
        due += 1_000_000
        wait = due - now()
        if wait > 0:
            time.sleep(wait / 1e9)
        late = now() - due
        if late > 200_000:
            gaps.append(late)
    return gaps


def one_cpu(cpu: int, mode: str, seconds: float) -> None:
    """The child: pinned to `cpu`, prints its gaps and the steal as one JSON line."""
    os.sched_setaffinity(0, {cpu})
    stolen = steal_ms(cpu)
    gaps = (spin if mode == "spin" else sleep)(seconds)
    print(json.dumps({"cpu": cpu, "gaps_ns": gaps, "steal_ms": steal_ms(cpu) - stolen}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["spin", "sleep"], default="sleep")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--cpu", type=int, help=argparse.SUPPRESS)  # the child's
    args = parser.parse_args()
    if args.cpu is not None:
        one_cpu(args.cpu, args.mode, args.seconds)
        return 0
    children = [subprocess.Popen([sys.executable, __file__, "--mode", args.mode, "--seconds",
                                  str(args.seconds), "--cpu", str(cpu)], stdout=subprocess.PIPE,
                                 text=True) for cpu in sorted(os.sched_getaffinity(0))]
    print(f"{args.mode}, {args.seconds:g} s on every CPU at once")
    for child in children:
        out = json.loads(child.communicate()[0])
        gaps = sorted(out["gaps_ns"])
        over = sum(g > 1_000_000 for g in gaps)
        print(f"  CPU {out['cpu']}: {len(gaps)} gaps over 0.2 ms, {over} over 1 ms, largest "
              f"{(gaps[-1] if gaps else 0) / 1e6:.2f} ms"
              + (f" (over 1 ms: {', '.join(f'{g / 1e6:.1f}' for g in gaps if g > 1_000_000)})"
                 if 0 < over <= 12 else "")
              + f"; steal {out['steal_ms']:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
