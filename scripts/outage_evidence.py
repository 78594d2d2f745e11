"""The evidence behind docs/RESULTS.md's outage bullets (calibrated Table II), per profile:
the runs of seqs each subscriber received, the writer's readers lost and matched while
publishing (its summary), each cell's latest sample, and, per payload, the backlog: the
samples more than 1 s late (those the outage held), when they arrived, and the latency of
the others.

    python3 scripts/outage_evidence.py RUN_DIR [LINK]

RUN_DIR needs its records (sub.bin, pub.json): the live run, not the kept copy in studies/
(scripts/keep_run.py keeps summaries of failed cells only, and no .bin).
"""

from __future__ import annotations

import collections
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from linklab.emu.models import loss_runs
from linklab.probes import read_records
from linklab.probes.records import RecordFile


def seq_runs(seqs: np.ndarray) -> list[tuple[int, int]]:
    """Contiguous runs of the seqs received (duplicates once): [(first, last), ...]."""
    if not len(seqs):
        return []
    got = np.zeros(int(seqs.max()) + 1, dtype=bool)
    got[seqs.astype(np.int64)] = True
    return loss_runs(got)  # runs of True, whatever they mark


HELD_NS = 1_000_000_000  # a sample more than 1 s late was held by the outage (20 s)


@dataclass(frozen=True)
class Backlog:
    held: int  # samples more than 1 s late
    first_seq: int  # their seq range (-1 when none)
    last_seq: int
    arrive_s: tuple[float, float]  # when they arrived, from the first sample's send (s)
    others_mean_ms: float  # latency of the samples that were not held
    others_median_ms: float


def backlog(received: RecordFile) -> Backlog:
    """Split one subscriber's records into the samples the outage held and the others."""
    if not len(received):
        return Backlog(0, -1, -1, (math.nan, math.nan), math.nan, math.nan)
    records, latency = received.records, received.latency_ns
    held = latency > HELD_NS
    others = latency[~held] / 1e6
    t0 = records["t_send_ns"].min()
    arrive = records["t_recv_ns"][held]
    seqs = records["seq"][held]
    return Backlog(
        held=int(held.sum()),
        first_seq=int(seqs.min()) if len(seqs) else -1,
        last_seq=int(seqs.max()) if len(seqs) else -1,
        arrive_s=((float(arrive.min() - t0) / 1e9, float(arrive.max() - t0) / 1e9)
                  if len(arrive) else (math.nan, math.nan)),
        others_mean_ms=float(others.mean()) if len(others) else math.nan,
        others_median_ms=float(np.median(others)) if len(others) else math.nan)


def _span(values: list[float], fmt: str) -> str:
    """'lo-hi' of the values that are numbers ('-' when none)."""
    numbers = [v for v in values if not math.isnan(v)]
    if not numbers:
        return "-"
    lo, hi = fmt.format(min(numbers)), fmt.format(max(numbers))
    return lo if lo == hi else f"{lo}-{hi}"


def print_backlogs(cells: list[dict], backlogs: dict[str, Backlog]) -> None:
    """One line per payload over the profile's cells: what arrived, what the outage held."""
    for payload in sorted({r["payload_bytes"] for r in cells}):
        these = [r for r in cells if r["payload_bytes"] == payload]
        got = [backlogs[r["cell_id"]] for r in these]
        held = [b for b in got if b.held]
        line = (f"  {payload // 1024} KiB, {len(these)} cells: received "
                f"{_span([r['received'] for r in these], '{}')}, "
                f"held (> 1 s late) {_span([b.held for b in got], '{}')}")
        if held:
            line += (f", seqs {_span([b.first_seq for b in held], '{}')} to "
                     f"{_span([b.last_seq for b in held], '{}')}, arriving "
                     f"{_span([b.arrive_s[0] for b in held], '{:.2f}')} to "
                     f"{_span([b.arrive_s[1] for b in held], '{:.2f}')} s")
        line += (f"; the others' latency mean {_span([b.others_mean_ms for b in got], '{:.1f}')}"
                 f" ms, median {_span([b.others_median_ms for b in got], '{:.1f}')} ms")
        print(line)


def main(run: Path, link: str) -> None:
    rows = [json.loads(line) for line in (run / "cells.jsonl").open()]
    for profile in dict.fromkeys(r["profile"] for r in rows if r["link"] == link):
        cells = [r for r in rows if r["link"] == link and r["profile"] == profile]
        readers, runs = collections.Counter(), collections.Counter()
        backlogs = {}
        for r in cells:
            cell = run / "records" / r["cell_id"]
            summary = json.loads((cell / "pub.json").read_text()).get("summary") or {}
            readers[(summary.get("readers_unmatched_while_publishing"),
                     summary.get("readers_matched_while_publishing"))] += 1
            received = read_records(cell / "sub.bin")  # read once: seq runs and backlog
            runs[" ".join(f"{a}-{b}" for a, b in seq_runs(received.records["seq"]))] += 1
            backlogs[r["cell_id"]] = backlog(received)
        late = [r["latency_max_ms"] / 1e3 for r in cells if r["status"] == "ok"]
        print(f"{link} {profile}: {len(cells)} cells")
        print("  (readers unmatched, matched) while publishing:", dict(readers))
        print("  seq runs received:", dict(runs.most_common(6)), f"({len(runs)} kinds)")
        if late:
            print(f"  ok cells' latest sample: {min(late):.1f}-{max(late):.1f} s")
        print_backlogs(cells, backlogs)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: outage_evidence.py RUN_DIR [LINK] (LINK default wifi-ac-outage)")
    run = Path(sys.argv[1])
    if not (run / "cells.jsonl").is_file():
        sys.exit(f"outage_evidence.py: RUN_DIR {run}: no cells.jsonl (a bench run directory)")
    main(run, sys.argv[2] if len(sys.argv) == 3 else "wifi-ac-outage")
