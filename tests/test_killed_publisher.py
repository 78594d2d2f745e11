"""A publisher the runner had to SIGKILL (a writer blocked in a send at the deadline).

Seen in the calibrated Table II study (docs/RESULTS.md): the probe died before it flushed
a record or printed its summary, and its row said "published 0" while the subscriber had
349 samples. Now:

- the probes flush their records at least every quarter second (a real Fast DDS and a real
  Zenoh pair, SIGKILLed mid-stream, keep records to within a second of the kill);
- a publisher with no summary has its records completed with every sample a subscriber
  received (each carries its seq, send time and size), its count is marked a lower bound
  (``published_exact`` false), its failure reason and note say so;
- reports print such a count as "≥N" (and a row made before the column existed whose
  count is below what arrived as "≥received");
- with no summary its warm-up samples are unknown, so the cell has wire bytes but no wire
  amplification (never the wire bytes over the measured payload alone);
- cells.parquet keeps a column that only the rows of a resumed run's newer sessions have.
"""

from __future__ import annotations

import json
import math
import os
import signal
import time

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import require_root
from linklab.bench import metrics as M
from linklab.bench import verdict as V
from linklab.bench.streams import (
    StreamInput,
    aggregate,
    completed_from_received,
    holds_every_seq,
)
from linklab.report.outcome import delivered, delivered_sum, delivered_text
from linklab.rundir import write_parquet

PAYLOAD = 512 * 1024


def records(seqs, t0=1_000_000_000, received=False):
    return M.make_records([(s, t0 + s * 33_000_000, t0 + s * 33_000_000 + 5_000_000
                            if received else 0, PAYLOAD) for s in seqs])


def test_a_killed_publishers_records_are_completed_from_what_arrived():
    flushed = records(range(0, 300))                      # its last flush: seq 0..299
    sub_a = records([*range(0, 340, 2), 5, 5], received=True)   # duplicates too
    sub_b = records([301, 349], received=True)
    done = completed_from_received(flushed, [sub_a, sub_b, M.empty_records()])
    assert done["seq"].tolist() == sorted({*range(300), *range(300, 340, 2), 301, 349})
    assert (done["t_recv_ns"] == 0).all() and (done["bytes"] == PAYLOAD).all()
    # a received sample's send time is the publisher's (it is in the sample)
    assert int(done["t_send_ns"][done["seq"] == 349][0]) == 1_000_000_000 + 349 * 33_000_000
    # nothing flushed at all (the study's case): what arrived is what is known
    only = completed_from_received(M.empty_records(), [sub_b])
    assert only["seq"].tolist() == [301, 349]
    assert len(completed_from_received(M.empty_records(), [])) == 0


def test_a_publisher_killed_after_writing_every_seq_keeps_an_exact_count():
    # seen in the calibrated study: a publisher killed while it lingered for
    # acknowledgements after its last sample read "1000/>=1000"; a probe writes seq
    # 0..N-1 and no more, so records (completed) holding all N are its exact count
    flushed = records(range(0, 990))
    sub = records(range(0, 1000), received=True)
    assert holds_every_seq(completed_from_received(flushed, [sub]), 1000)
    assert not holds_every_seq(completed_from_received(flushed, []), 1000)
    assert not holds_every_seq(records([*range(999), 1500]), 1000)   # 999 of 0..999
    assert not holds_every_seq(records(range(10)), 0)                # nothing asked
    assert not holds_every_seq(M.empty_records(), 1000)


def test_a_row_killed_while_lingering_after_its_whole_count_prints_exact():
    # a row made before the runner applied holds_every_seq
    row = {"status": "ok", "published": 1000, "published_exact": False, "received": 1000,
           "expected": 1000, "count": 1000, "topics": 1}
    assert delivered_text(row) == "1000/1000"
    assert delivered_text({**row, "published": 990, "expected": 990,
                           "received": 990}) == "990/≥990"
    # several topics: the row's count is the first topic's, so it stays a lower bound
    assert delivered_text({**row, "topics": 2, "published": 2000, "expected": 2000,
                           "received": 2000}) == "2000/≥2000"


def test_the_aggregate_marks_a_lower_bound_and_keeps_an_exact_count_exact():
    pub = records(range(100))
    sub = records(range(90), received=True)
    exact = StreamInput("t", "robot", "edge", "sub", pub, sub)
    m, per_stream, expected = aggregate({"t": pub}, [exact], wire_bytes=None,
                                        warmup_bytes=0, bins_origin_ns=None, n_bins=None)
    assert m.published == 100 and m.published_exact and per_stream[0].published_exact
    bound = StreamInput("t", "robot", "edge", "sub", pub, sub, published_exact=False)
    m, per_stream, expected = aggregate({"t": pub}, [bound], wire_bytes=None,
                                        warmup_bytes=0, bins_origin_ns=None, n_bins=None)
    assert m.published == 100 and expected == 100
    assert not m.published_exact and not per_stream[0].published_exact
    assert m.to_dict()["published_exact"] is False


def test_a_publisher_without_its_summary_leaves_the_wire_amplification_unknown():
    # its warm-up samples are counted in its summary only: dividing the wire bytes by the
    # measured payload alone overstated the amplification (1.39 for 1.15: 61 warm-up
    # samples of 300 in the model-wire grid, docs/RESULTS.md)
    pub = records(range(100))
    sub = records(range(100), received=True)
    stream = StreamInput("t", "robot", "edge", "sub", pub, sub)
    known, _, _ = aggregate({"t": pub}, [stream], wire_bytes=5000, warmup_bytes=0,
                            bins_origin_ns=None, n_bins=None)
    unknown, _, _ = aggregate({"t": pub}, [stream], wire_bytes=5000, warmup_bytes=None,
                              bins_origin_ns=None, n_bins=None)
    assert known.wire_amplification == 5000 / known.bytes_published
    assert unknown.wire_bytes == 5000 and math.isnan(unknown.wire_amplification)


def test_the_reason_and_the_note_say_the_count_is_a_lower_bound():
    outcome = V.Outcome(publisher_finished=False, publisher_exit=-9, subscriber_exit=0,
                        expects_all=True, publisher_signalled=True, published_exact=False)
    m = M.CellMetrics(published=349, received=349)
    reason = V.failure_reason(m, outcome, 1 / 30, 1000)
    assert reason.startswith("not completed: publisher wrote at least 349/1000 (stopped "
                             "without its summary")
    assert V.exit_note(outcome).startswith("publisher killed by the runner without its "
                                           "summary: published is a lower bound")
    crashed = V.Outcome(publisher_finished=True, publisher_exit=-11, subscriber_exit=0,
                        expects_all=False, published_exact=False)
    assert "publisher ended with signal 11 without its summary" in V.exit_note(crashed)
    # an exact count reads as before
    exact = V.Outcome(publisher_finished=False, publisher_exit=None, subscriber_exit=0,
                      expects_all=True, publisher_signalled=True)
    assert V.failure_reason(m, exact, 1 / 30, 1000).startswith(
        "not completed: publisher wrote 349/1000 (writes")
    assert V.exit_note(exact) is None
    # killed while it lingered after its last sample: exact, and the note still says so
    lingered = V.Outcome(publisher_finished=True, publisher_exit=None, subscriber_exit=0,
                         expects_all=True, publisher_signalled=True, publisher_summary=False)
    assert V.exit_note(lingered).startswith(
        "publisher killed by the runner without its summary: its records and every sample "
        "received hold every sample it was told to write (published is exact)")
    assert V.failure_reason(M.CellMetrics(published=1000, received=1000), lingered,
                            1 / 30, 1000) is None


def test_reports_print_a_lower_bound_as_such():
    ok = {"status": "ok", "received": 1000, "expected": 1000, "published": 1000,
          "published_exact": True}
    bound = {"status": "failed", "received": 349, "expected": 360, "published": 360,
             "published_exact": False}
    # the study's row, made before published_exact existed: published 0, 349 arrived
    legacy = {"status": "failed", "received": 349, "expected": 0, "published": 0}
    assert delivered_text(ok) == "1000/1000"
    assert delivered_text(bound) == "349/≥360"
    assert delivered(legacy) == (349, 349) and delivered_text(legacy) == "349/≥349"
    assert delivered_sum([ok, ok, legacy]) == "2349/≥2349"
    assert delivered_sum([ok, ok]) == "2000/2000"
    # a legacy row that received less than it published is exact
    assert delivered_text({"status": "failed", "received": 5, "expected": 9}) == "5/9"


def test_parquet_keeps_a_column_only_newer_rows_have(tmp_path):
    rows = [{"cell_id": "old", "published": 10},
            {"cell_id": "new", "published": 0, "published_exact": False}]
    write_parquet(tmp_path / "cells.parquet", rows)
    back = pq.read_table(tmp_path / "cells.parquet").to_pylist()
    assert back == [{"cell_id": "old", "published": 10, "published_exact": None},
                    {"cell_id": "new", "published": 0, "published_exact": False}]


# --- the probes: records survive a SIGKILL ---------------------------------------------

def _wait_for_records(path, n, running, timeout_s=30.0):
    """Until the records file holds ``n`` records (header 16 B, 28 B each)."""
    deadline = time.monotonic() + timeout_s
    while not path.exists() or path.stat().st_size < 16 + 28 * n:
        assert all(p.poll() is None for p in running), "a probe ended early"
        assert time.monotonic() < deadline, f"{path.name}: fewer than {n} records"
        time.sleep(0.05)


def _kill_mid_stream(pair, tmp_path, pub_argv, sub_argv, start, wait_sub):
    sub = start(pair.edge, sub_argv)
    pub = None
    try:
        wait_sub(sub)
        pub = start(pair.robot, pub_argv)
        # the subscriber's records grow once samples flow (nothing before a flush)
        _wait_for_records(tmp_path / "sub.bin", 50, (pub, sub))
        time.sleep(1.0)
        killed_ns = time.monotonic_ns()
        for process in (pub, sub):
            process.send_signal(signal.SIGKILL)
        for process in (pub, sub):
            process.wait(timeout=10)
    finally:
        for process in (pub, sub):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
    return killed_ns


def _check_records(tmp_path, killed_ns):
    for name in ("pub.bin", "sub.bin"):
        _, got = M.read_records(tmp_path / name)
        assert len(got) >= 50, f"{name}: {len(got)} records"
        # flushed at least every 0.25 s (the probe's FLUSH_EVERY_NS): the last record on
        # disk is well within a second of the kill, not the run's start
        last = int(got["t_send_ns" if name == "pub.bin" else "t_recv_ns"].max())
        assert 0 <= killed_ns - last < 1_000_000_000, (name, (killed_ns - last) / 1e9)
        if name == "pub.bin":  # whole records, in the order written
            assert np.all(np.diff(got["seq"].astype(np.int64)) == 1)


@pytest.mark.integration
def test_a_native_probe_killed_mid_stream_keeps_its_records(tmp_path):
    require_root()
    from linklab.bench.probe_driver import ProbeArgs, probe_binary
    from middleware_pair import namespace_pair, start

    binary = probe_binary("fastdds")
    common = dict(topic=f"killed{os.getpid()}", type="Bytes", size=1024, rate_hz=100,
                  count=6000, duration_s=None, warmup_s=0, qos_flags=("--qos", "reliable"),
                  profile=None)
    with namespace_pair("kf") as pair:
        sub_argv = ProbeArgs(role="sub", records=tmp_path / "sub.bin",
                             peers=(pair.robot_addr,), idle_timeout_s=60,
                             **common).argv(binary)
        pub_argv = ProbeArgs(role="pub", records=tmp_path / "pub.bin",
                             peers=(pair.edge_addr,), **common).argv(binary)
        killed_ns = _kill_mid_stream(pair, tmp_path, pub_argv, sub_argv, start,
                                     lambda sub: time.sleep(0.3))
    _check_records(tmp_path, killed_ns)


@pytest.mark.integration
def test_the_zenoh_probe_killed_mid_stream_keeps_its_records(tmp_path):
    require_root()
    from middleware_pair import ZENOH_PROBE, namespace_pair, start, wait_for_line

    with namespace_pair("kz") as pair:
        endpoint = f"tcp/{pair.edge_addr}:7447"
        common = ["--topic", f"killed{os.getpid()}", "--type", "Array1k", "--mode", "peer"]
        sub_argv = [*ZENOH_PROBE, "sub", *common, "--listen", endpoint, "--count", 6000,
                    "--duration", 120, "--records", tmp_path / "sub.bin"]
        pub_argv = [*ZENOH_PROBE, "pub", *common, "--peer", endpoint, "--count", 6000,
                    "--rate", 100, "--records", tmp_path / "pub.bin"]
        killed_ns = _kill_mid_stream(pair, tmp_path, pub_argv, sub_argv, start,
                                     lambda sub: wait_for_line(sub, "subscribed"))
    _check_records(tmp_path, killed_ns)


@pytest.mark.integration
@pytest.mark.parametrize("middleware", ["fastdds", "cyclonedds"])
def test_a_publisher_stopped_while_it_waits_for_a_vanished_reader_prints_its_summary(
        tmp_path, middleware):
    """Seen in the model-wire grid and the ten-trial check (docs/RESULTS.md): a reader
    that left without its goodbye reaching the writer (lost on a lossy link) is matched
    until its lease ends, so the writer's wait for acknowledgements after the last sample
    ran the whole linger; the runner's SIGINT was not seen inside that one blocking wait,
    and its SIGKILL 5 s later lost the summary (and with it the warm-up count). The
    probe now waits in slices and answers SIGINT with its summary."""
    require_root()
    from linklab.bench.probe_driver import ProbeArgs, probe_binary
    from middleware_pair import namespace_pair, start

    binary = probe_binary(middleware)
    common = dict(topic=f"vanished{os.getpid()}", type="Bytes", size=1024, rate_hz=100,
                  count=200, duration_s=None, qos_flags=("--qos", "reliable"), profile=None)
    with namespace_pair("kv") as pair:
        sub = start(pair.edge, ProbeArgs(role="sub", records=tmp_path / "sub.bin",
                                         peers=(pair.robot_addr,), idle_timeout_s=60,
                                         warmup_s=0, **common).argv(binary))
        pub = None
        try:
            time.sleep(0.3)
            pub = start(pair.robot, ProbeArgs(role="pub", records=tmp_path / "pub.bin",
                                              peers=(pair.edge_addr,), warmup_s=0.5,
                                              linger_s=60, **common).argv(binary))
            # matched and past the warm-up: counted samples reach the subscriber
            _wait_for_records(tmp_path / "sub.bin", 20, (pub, sub))
            sub.send_signal(signal.SIGKILL)  # no goodbye: the writer still counts it
            sub.wait(timeout=10)
            # the publisher has written its whole count (records flushed every 0.25 s)
            # and lingers for the acknowledgements the dead reader never sends
            _wait_for_records(tmp_path / "pub.bin", 200, (pub,))
            time.sleep(0.5)
            assert pub.poll() is None, "the publisher ended before it lingered"
            stopped = time.monotonic()
            pub.send_signal(signal.SIGINT)
            out, _ = pub.communicate(timeout=30)
            took = time.monotonic() - stopped
        finally:
            for process in (pub, sub):
                if process is not None and process.poll() is None:
                    process.kill()
                    process.wait()
    lines = [line for line in out.splitlines() if line.startswith("{")]
    assert lines, f"no summary ({took:.1f} s after SIGINT, exit {pub.returncode})"
    summary = json.loads(lines[-1])
    # the runner's SIGINT grace is 5 s (probe_driver.ProbeProcess.stop)
    assert took < 4.0, f"{took:.1f} s after SIGINT"
    assert summary["samples"] == 200 and summary["warmup_samples"] > 0, summary
    assert summary["acknowledged"] is False
