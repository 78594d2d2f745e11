"""scripts/outage_evidence.py: the seq runs it prints for docs/RESULTS.md's outage bullets."""

from __future__ import annotations

import numpy as np

from conftest import load_script

evidence = load_script("outage_evidence")


def test_seq_runs_splits_at_every_gap_and_ignores_duplicates():
    seqs = np.array([3, 0, 1, 2, 2, 754, 755, 999, 756], dtype=np.uint64)
    assert evidence.seq_runs(seqs) == [(0, 3), (754, 756), (999, 999)]
    assert evidence.seq_runs(np.array([], dtype=np.uint64)) == []
    assert evidence.seq_runs(np.array([7], dtype=np.uint64)) == [(7, 7)]
