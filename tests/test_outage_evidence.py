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


def _records(seq, send_s, recv_s):
    from linklab.probes.records import RECORD_DTYPE, RecordFile
    r = np.zeros(len(seq), dtype=RECORD_DTYPE)
    r["seq"] = seq
    r["t_send_ns"], r["t_recv_ns"] = np.multiply(send_s, 1e9), np.multiply(recv_s, 1e9)
    return RecordFile(role="sub", records=r)


def test_backlog_splits_the_samples_the_outage_held_from_the_others():
    # 0-2 on time (10 and 20 ms), 3-4 written in the outage and let out at 25 s, 5 on time
    send = [0.0, 1.0, 2.0, 10.0, 11.0, 26.0]
    recv = [0.01, 1.02, 2.01, 25.0, 25.5, 26.02]
    b = evidence.backlog(_records(range(6), send, recv))
    assert (b.held, b.first_seq, b.last_seq) == (2, 3, 4)
    assert b.arrive_s == (25.0, 25.5)
    assert abs(b.others_mean_ms - 15.0) < 1e-6 and abs(b.others_median_ms - 15.0) < 1e-6


def test_backlog_of_a_cell_nothing_held():
    b = evidence.backlog(_records([0, 1], [0.0, 1.0], [0.5, 1.9]))
    assert (b.held, b.first_seq, b.last_seq) == (0, -1, -1)
    assert abs(b.others_mean_ms - 700.0) < 1e-6


def test_backlog_of_a_cell_that_received_nothing():
    b = evidence.backlog(_records([], [], []))
    assert (b.held, b.first_seq, b.last_seq) == (0, -1, -1)
    assert evidence._span([b.others_mean_ms], "{:.1f}") == "-"
    assert evidence._span([1.0, float("nan"), 3.04], "{:.1f}") == "1.0-3.0"
    assert evidence._span([2.0, 2.01], "{:.1f}") == "2.0"
