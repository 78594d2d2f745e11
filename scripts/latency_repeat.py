"""Two runs of the same scenario, cell by cell: how many completed cells' mean and p95
one-way latency agree within 15 % -- the repeatability a latency model cannot beat when
it is checked against single trials (docs/RESULTS.md, the latency model).

    python3 scripts/latency_repeat.py RUN_A RUN_B
"""

from __future__ import annotations

import sys
from pathlib import Path

from linklab.rundir import RunStore

TARGET = 0.15


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    a, b = ({r["cell_id"]: r for r in RunStore.open(Path(p)).rows} for p in sys.argv[1:])
    both, apart = 0, []
    for cell, ra in a.items():
        rb = b.get(cell)
        if rb is None or ra.get("status") != "ok" or rb.get("status") != "ok":
            continue
        both += 1
        mean = rb["latency_mean_ms"] / ra["latency_mean_ms"] - 1
        p95 = rb["latency_p95_ms"] / ra["latency_p95_ms"] - 1
        if max(abs(mean), abs(p95)) > TARGET:
            apart.append(f"  {cell}: mean {ra['latency_mean_ms']:.2f} -> "
                         f"{rb['latency_mean_ms']:.2f} ms ({mean:+.1%}), p95 "
                         f"{ra['latency_p95_ms']:.2f} -> {rb['latency_p95_ms']:.2f} ms "
                         f"({p95:+.1%})")
    print(f"{both - len(apart)}/{both} cells completed in both agree within {TARGET:.0%} "
          "on mean and p95")
    print("\n".join(apart))
    return 0


if __name__ == "__main__":
    sys.exit(main())
