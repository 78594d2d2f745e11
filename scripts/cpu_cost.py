"""The CPU a writer and a reader spend per sample, from a run of scenarios/cpu-cost-tuned.yaml.

Each setting ran at two counts; the probes' CPU seconds (rusage) at the larger minus those
at the smaller, over the samples between them, is the CPU per sample without the fixed
cost of a probe's life (participant, discovery, linger). Against the wire bytes per sample
(wire / published x payload) a line per middleware and role: CPU = a + b x wire kB, the
coefficients linklab.model.cpu holds.

    python3 scripts/cpu_cost.py RUN_DIR
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

from linklab.rundir import RunStore


def main() -> int:
    run = RunStore.open(Path(sys.argv[1]))
    groups: dict[tuple[str, int], dict[int, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for row in run.rows:
        if row.get("status") == "ok":
            groups[(row["middleware"], int(row["payload_bytes"]))][int(row["count"])].append(row)
    points: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    print("middleware payload  role  CPU ms/sample  wire kB/sample")
    for (middleware, payload), by_count in sorted(groups.items()):
        low, high = min(by_count), max(by_count)
        if low == high:
            continue
        wire_kb = statistics.mean(r["wire_amplification"] for rs in by_count.values()
                                  for r in rs) * payload / 1000
        for role in ("pub", "sub"):
            cpu = {c: statistics.mean(r[f"{role}_cpu_s"] for r in rs)
                   for c, rs in by_count.items()}
            per_sample_ms = (cpu[high] - cpu[low]) / (high - low) * 1000
            points[(middleware, role)].append((wire_kb, per_sample_ms))
            print(f"{middleware:10} {payload:7d}  {role}  {per_sample_ms:13.3f}  {wire_kb:14.1f}")
    print("\nCPU ms per sample = a + b x wire kB per sample")
    for (middleware, role), pts in sorted(points.items()):
        (x0, y0), (x1, y1) = min(pts), max(pts)
        b = (y1 - y0) / (x1 - x0)
        print(f"{middleware:10} {role}: a = {y0 - b * x0:.3f} ms, b = {b * 1000:.2f} us/kB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
