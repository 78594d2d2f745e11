"""How late this machine wakes a thread whose timer is due: the floor under the medium
relay's real-time lag (issue 43; docs/RESULTS.md, "A shared Wi-Fi medium").

On each CPU at once, for SECONDS, one process pinned to it sleeps to a deadline every
1 ms as the relay does (SCHED_FIFO priority 10, timer slack 1 ns) and measures how late
it woke: that holds an interrupt or kernel thread ahead of it, and on a virtual machine
the host's wake-up of a halted vCPU. Printed per CPU: wake-ups over 0.2 ms and over 1 ms
late, the latest, and the host's steal time from that CPU meanwhile (/proc/stat).
Nothing else may run on the machine beside it.

    .venv/bin/python scripts/vcpu_hiccups.py [--seconds 30]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import time

from linklab.emu.bench_wires import steal_ticks

PR_SET_TIMERSLACK = 29
PERIOD_NS = 1_000_000
NOTED_NS = 200_000


def late_wakeups(seconds: float) -> list[int]:
    """How late each wake-up past NOTED_NS came (ns), sleeping to a deadline every 1 ms."""
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    ctypes.CDLL(None).prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    late, now = [], time.monotonic_ns
    due = now()
    end = due + int(seconds * 1e9)
    while due < end:
        due += PERIOD_NS
        wait = due - now()
        if wait > 0:
            time.sleep(wait / 1e9)
        if (by := now() - due) > NOTED_NS:
            late.append(by)
    return late


def one_cpu(cpu: int, seconds: float) -> None:
    """The child: pinned to `cpu`, prints its late wake-ups and the steal as one line."""
    os.sched_setaffinity(0, {cpu})
    stolen = steal_ticks(cpu)
    late = late_wakeups(seconds)
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    stolen_ms = (steal_ticks(cpu) - stolen) * tick_ms
    print(json.dumps({"cpu": cpu, "late_ns": late, "steal_ms": stolen_ms}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--cpu", type=int, help=argparse.SUPPRESS)  # the child's
    args = parser.parse_args()
    if args.cpu is not None:
        one_cpu(args.cpu, args.seconds)
        return 0
    children = [subprocess.Popen([sys.executable, __file__, "--seconds", str(args.seconds),
                                  "--cpu", str(cpu)], stdout=subprocess.PIPE, text=True)
                for cpu in sorted(os.sched_getaffinity(0))]
    print(f"a wake-up every 1 ms for {args.seconds:g} s on every CPU at once")
    for child in children:
        out = json.loads(child.communicate()[0])
        late = sorted(out["late_ns"])
        over = [g for g in late if g > 1_000_000]
        print(f"  CPU {out['cpu']}: {len(late)} wake-ups over 0.2 ms late, {len(over)} over 1 ms, "
              f"latest {(late[-1] if late else 0) / 1e6:.2f} ms"
              + (f" (over 1 ms: {', '.join(f'{g / 1e6:.1f}' for g in over)})"
                 if 0 < len(over) <= 12 else "")
              + f"; steal {out['steal_ms']:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
