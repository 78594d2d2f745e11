"""The trials of a cell pooled: one row per cell whose one-way latency (mean and p95) is
taken over the samples of every trial together -- the trials of one run (``trials: N``)
and the same cell in other runs of the same scenario. A single trial's p95 near the edge
of a repair round moves by a whole round between two trials (docs/RESULTS.md, the latency
model: two runs of the same 100 cells agreed within 15 % on 81), so a model is checked
against the pooled samples, with the trials' own spread beside it.

Latency as docs/metrics.md defines it: each subscriber record's receive minus send time,
duplicates excluded (bench/metrics.py), over the subscriber's record file ``sub.bin``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from linklab.bench.metrics import latencies_ms, unique_received
from linklab.errors import UsageError
from linklab.probes.records import RecordFileError, read_records

SUBSCRIBER_RECORDS = "sub.bin"  # a one-topic, one-subscriber cell's record file
_TRIAL = re.compile(r"-t(\d+)$")


def cell_key(row: dict) -> str:
    """The cell a row is a trial of: its id without the trial suffix (bench/matrix.py
    appends ``-t<trial>`` when a scenario has more than one trial)."""
    cell_id = str(row.get("cell_id"))
    match = _TRIAL.search(cell_id)
    if match and row.get("trial") is not None and int(match.group(1)) == int(row["trial"]):
        return cell_id[:match.start()]
    return cell_id


def pool(runs: Sequence[tuple[Path, list[dict]]]) -> list[dict]:
    """One row per cell of the first run, in its order, over every run's trials of it: the
    first trial's row with ``latency_mean_ms`` and ``latency_p95_ms`` over all their
    samples, ``cell_id`` the cell's, ``trials`` how many, ``trial_spread`` the largest
    relative difference of one trial's mean or p95 from the pooled one. A cell with a
    trial that did not complete is not completed (status of that trial)."""
    groups: dict[str, list[tuple[Path, dict]]] = {}
    for root, rows in runs:
        for row in rows:
            groups.setdefault(cell_key(row), []).append((root, row))
    first_run = {cell_key(r) for r in runs[0][1]}
    out = []
    for key, members in groups.items():
        if key not in first_run:
            continue
        base = dict(members[0][1], cell_id=key, trials=len(members))
        if len(members) == 1:  # one trial: its row as the bench measured it
            out.append(dict(base, trial_spread=math.nan))
            continue
        failed = next((r for _, r in members if r.get("status") != "ok"), None)
        if failed is not None:
            out.append(dict(base, status=failed.get("status"), trial_spread=math.nan))
            continue
        samples = [_latencies(root / "records" / str(row["cell_id"]) / SUBSCRIBER_RECORDS)
                   for root, row in members]
        pooled = np.concatenate(samples)
        mean, p95 = float(pooled.mean()), float(np.percentile(pooled, 95))
        spread = max(max(abs(s.mean() - mean) / mean, abs(np.percentile(s, 95) - p95) / p95)
                     for s in samples if len(s))
        out.append(dict(base, latency_mean_ms=mean, latency_p95_ms=p95,
                        trial_spread=float(spread)))
    return out


def _latencies(path: Path) -> np.ndarray:
    try:
        return latencies_ms(unique_received(read_records(path).records))
    except OSError as e:
        raise UsageError(f"{path}: cannot read the subscriber's records to pool "
                         f"({e.strerror or e})", argument="--with") from None
    except RecordFileError as e:
        raise UsageError(str(e), argument="--with") from None
