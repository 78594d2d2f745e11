"""The machine constants of the latency model (tune/latencycheck.py MACHINE, BUSY_*), fitted
on a run's 0 % cells only: the grid over which the largest error of mean and p95 is least.

    python3 scripts/latency_fit.py RUN_DIR fastdds       # the writer's and reader's rates
    python3 scripts/latency_fit.py RUN_DIR cyclonedds    #   and the reader's hand-over
    python3 scripts/latency_fit.py BUSY_RUN_DIR --busy   # the reader's slice wait, both

Prints the five best settings with how many cells they put within 15 %.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

from linklab.rundir import RunStore
from linklab.tune import latencycheck as lc
from linklab.tune.wirecheck import link_infos

SEND = (100e6, 150e6, 200e6, 300e6)
RECEIVE = (60e6, 70e6, 80e6, 93e6, 101e6, 110e6, 130e6)
HAND_OVER = (0.0001, 0.0002, 0.0003)
SLICE_SHARE = (0.15, 0.2, 0.25, 0.3, 0.4)
SLICE = (0.003, 0.004, 0.005, 0.006, 0.008)


def score(rows: list[dict], links: dict) -> tuple[int, float]:
    errors = [max(abs(c.mean_error), abs(c.p95_error)) for c in lc.compare(rows, links)]
    return sum(e <= lc.TARGET for e in errors), max(errors)


def main() -> int:
    store = RunStore.open(Path(sys.argv[1]))
    links = link_infos(store.info)
    rows = [r for r in store.rows if r.get("profile") == "optimized"
            and links.get(r.get("link")) is not None and links[r["link"]].per == 0]
    results = []
    if sys.argv[2] == "--busy":
        for share, slice_s in itertools.product(SLICE_SHARE, SLICE):
            lc.BUSY_WAKE_SHARE, lc.BUSY_SLICE_S = share, slice_s
            within, worst = score(rows, links)
            results.append((within, -worst, f"share {share:g}, slice {slice_s * 1e3:g} ms"))
    else:
        middleware = sys.argv[2]
        rows = [r for r in rows if r.get("middleware") == middleware]
        control = lc.MACHINE[middleware].control_s
        for send, receive, hand in itertools.product(SEND, RECEIVE, HAND_OVER):
            lc.MACHINE[middleware] = lc.Machine(send, receive, hand, control)
            within, worst = score(rows, links)
            results.append((within, -worst, f"send {send / 1e6:g} MB/s, receive "
                                            f"{receive / 1e6:g} MB/s, hand-over {hand * 1e3:g} ms"))
    for within, worst, text in sorted(results, reverse=True)[:5]:
        print(f"{within}/{len(rows)} within 15 %, "
              f"largest error {-worst:.1%}: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
