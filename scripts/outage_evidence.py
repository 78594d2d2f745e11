"""The evidence behind docs/RESULTS.md's outage bullets (calibrated Table II), per profile:
the runs of seqs each subscriber received, the writer's readers lost and matched while
publishing (its summary), and each cell's latest sample.

    python3 scripts/outage_evidence.py RUN_DIR [LINK]

RUN_DIR needs its records (sub.bin, pub.json): the live run, not the kept copy in studies/
(scripts/keep_run.py keeps summaries of failed cells only, and no .bin).
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

import numpy as np

from linklab.probes import read_records


def seq_runs(seqs: np.ndarray) -> list[tuple[int, int]]:
    """Contiguous runs of the sorted unique seqs: [(first, last), ...]."""
    s = np.unique(seqs)
    if not len(s):
        return []
    cuts = np.flatnonzero(np.diff(s) > 1)
    starts = np.concatenate(([0], cuts + 1))
    ends = np.concatenate((cuts, [len(s) - 1]))
    return [(int(s[a]), int(s[b])) for a, b in zip(starts, ends, strict=True)]


def main(run: Path, link: str) -> None:
    rows = [json.loads(line) for line in (run / "cells.jsonl").open()]
    for profile in dict.fromkeys(r["profile"] for r in rows if r["link"] == link):
        cells = [r for r in rows if r["link"] == link and r["profile"] == profile]
        readers, runs = collections.Counter(), collections.Counter()
        for r in cells:
            cell = run / "records" / r["cell_id"]
            summary = json.loads((cell / "pub.json").read_text()).get("summary") or {}
            readers[(summary.get("readers_unmatched_while_publishing"),
                     summary.get("readers_matched_while_publishing"))] += 1
            got = read_records(cell / "sub.bin").records["seq"]
            runs[" ".join(f"{a}-{b}" for a, b in seq_runs(got))] += 1
        late = [r["latency_max_ms"] / 1e3 for r in cells if r["status"] == "ok"]
        print(f"{link} {profile}: {len(cells)} cells")
        print("  (readers unmatched, matched) while publishing:", dict(readers))
        print("  seq runs received:", dict(runs.most_common(6)), f"({len(runs)} kinds)")
        if late:
            print(f"  ok cells' latest sample: {min(late):.1f}-{max(late):.1f} s")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: outage_evidence.py RUN_DIR [LINK] (LINK default wifi-ac-outage)")
    run = Path(sys.argv[1])
    if not (run / "cells.jsonl").is_file():
        sys.exit(f"outage_evidence.py: RUN_DIR {run}: no cells.jsonl (a bench run directory)")
    main(run, sys.argv[2] if len(sys.argv) == 3 else "wifi-ac-outage")
