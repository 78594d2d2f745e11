"""Each metric of docs/metrics.md proved on hand-made record files, and the verdict each QoS
rule gives; the cases a burst, a stall, a tail loss or duplicates could fool (issue 37).

Expected values are worked out by hand in the comments. The last tests read a real run made
with run format 1 (tests/data/format1-run: 16 cells measured at commit ee6aa2c, before
these definitions) and check that what format1.py derives from its stored columns is what
today's metrics compute from its record files.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from linklab.bench import gates as GT
from linklab.bench import metrics as M
from linklab.bench import verdict as V
from linklab.rundir import RunStore

MS = 1_000_000
S = 1_000_000_000
HZ30 = S // 30  # ns between two writes at 30 Hz (33.333 ms, truncated)
REPO = Path(__file__).resolve().parents[1]
FORMAT1_RUN = REPO / "tests" / "data" / "format1-run"


def publisher(n: int, interval_ns: int = HZ30, size: int = 1000, skip=()) -> object:
    """Records of a publisher writing seq 0..n-1 (minus ``skip``: failed writes)."""
    return M.make_records([(s, s * interval_ns, 0, size) for s in range(n) if s not in skip])


def arrivals(pub, seqs, at) -> object:
    """Subscriber records of ``seqs``, each arriving at ``at(seq, t_send)`` (ns)."""
    by_seq = {int(r["seq"]): int(r["t_send_ns"]) for r in pub}
    return M.make_records([(s, by_seq[s], at(s, by_seq[s]), int(pub["bytes"][0]))
                           for s in seqs])


def on_time(latency_ms: float = 20.0):
    return lambda seq, sent: sent + int(latency_ms * MS)


# --- reception rate: a burst cannot inflate it ----------------------------------------

def test_a_burst_at_the_end_is_not_a_high_rate():
    """46 of 300 samples, all arriving in the last 0.3 s (the tuned Fast DDS cell of issue
    37 reported 148.6 Hz and passed reception_rate >= 29Hz)."""
    pub = publisher(300)
    last = int(pub["t_send_ns"].max())
    sub = arrivals(pub, range(254, 300), lambda s, t: last + (s - 254) * 6 * MS + 20 * MS)
    m = M.compute(pub, sub)
    old = 46 / ((int(sub["t_recv_ns"].max()) - int(sub["t_recv_ns"].min())) / 1e9)
    assert old > 148  # what format 1 printed: received over the reception span alone
    # the window is the publishing span, 299 intervals = 9.9667 s
    assert m.reception_rate_hz == pytest.approx(46 / (299 * HZ30 / 1e9))
    assert m.reception_rate_hz < 5
    assert m.message_loss_rate == pytest.approx(254 / 300)
    # nothing arrived from the first write until the burst: 9.97 s, from the start
    assert m.stall_max_s == pytest.approx((last + 20 * MS) / 1e9, abs=1e-6)
    assert m.stall_at_s == 0.0
    gate = GT.parse_cli_gate("reception_rate>=29Hz")
    row = dict(m.to_dict(), cell_id="c", status="ok")
    (miss,) = GT.evaluate([gate], [row], [])
    assert "4.62 Hz" in miss.measured


def test_a_complete_stream_keeps_the_papers_rate():
    """Paper 000 §V-B: received / (last - first message); for a stream that completes the
    reception span is the window, so the rate is the paper's, to the float."""
    pub = publisher(1000)
    sub = arrivals(pub, range(1000), lambda s, t: t + (20 + (s % 7)) * MS)
    m = M.compute(pub, sub)
    span = (int(sub["t_recv_ns"].max()) - int(sub["t_recv_ns"].min())) / 1e9
    assert m.reception_rate_hz == 1000 / span
    assert m.reception_rate_hz == pytest.approx(30.03, abs=0.01)  # 1000 / 33.3 s
    assert m.goodput_bit_s == pytest.approx(1000 * 1000 * 8 / span)
    # stall of a healthy stream: at most one interval (plus the latency's wobble)
    assert m.stall_max_s < 0.05 and m.message_loss_rate == 0.0


def test_a_rate_never_exceeds_the_rate_the_samples_were_written_at():
    pub = publisher(100)
    # every sample arrives, but the first 90 are held and then come in one burst
    held = int(pub["t_send_ns"][89])
    sub = arrivals(pub, range(100), lambda s, t: max(t, held) + 20 * MS + s * 10_000)
    m = M.compute(pub, sub)
    span = (int(pub["t_send_ns"].max()) - int(pub["t_send_ns"].min())) / 1e9
    assert m.reception_rate_hz <= len(pub) / span  # P over the publishing span, at most
    assert m.reception_rate_hz == pytest.approx(100 / (99 * HZ30 / 1e9))  # the burst: W = P span


# --- message loss: 1 - delivered; paper 002's gaps under their own name ----------------

def test_loss_counts_what_was_published_not_only_the_gaps_between_arrivals():
    """Issue 37: 48 of 60 delivered, 1 of 200, and 148/148 after 55 failed writes."""
    pub = publisher(60)
    tail = M.compute(pub, arrivals(pub, range(48), on_time()))  # the last 12 lost
    assert tail.message_loss_rate == pytest.approx(12 / 60)
    assert tail.gap_loss_rate == 0.0  # no gap between the first and the last received

    pub = publisher(200)
    one = M.compute(pub, arrivals(pub, [7], on_time()))
    assert one.message_loss_rate == pytest.approx(199 / 200)
    assert one.gap_loss_rate == 0.0

    failed = set(list(range(10, 175, 3))[:55])
    pub = publisher(203, skip=failed)  # 203 seqs, 55 writes failed: 148 written
    assert len(pub) == 148
    every = M.compute(pub, arrivals(pub, [int(s) for s in pub["seq"]], on_time()))
    assert every.delivery_ratio == 1.0 and every.message_loss_rate == 0.0
    # a seq whose write failed is no gap either (format 1 counted it: 55 / 203 = 27 %)
    assert every.gap_loss_rate == 0.0


def test_paper_002_gaps_count_the_middle_losses():
    pub = publisher(10)
    m = M.compute(pub, arrivals(pub, [0, 1, 3, 4, 8, 9], on_time()))
    assert m.gap_loss_rate == pytest.approx(4 / 10)  # 2, 5, 6, 7 between 0 and 9
    assert m.message_loss_rate == pytest.approx(4 / 10)


def test_duplicates_are_counted_once_and_their_first_copy_is_the_one_measured():
    pub = publisher(4, interval_ns=100 * MS)
    sub = M.make_records([(0, 0, 10 * MS, 1000), (1, 100 * MS, 120 * MS, 1000),
                          (1, 100 * MS, 900 * MS, 1000), (2, 200 * MS, 230 * MS, 1000),
                          (3, 300 * MS, 340 * MS, 1000), (3, 300 * MS, 345 * MS, 1000)])
    m = M.compute(pub, sub)
    assert (m.received, m.duplicates, m.delivery_ratio) == (4, 2, 1.0)
    assert m.latency_max_ms == pytest.approx(40.0)  # not the 800 ms of a late duplicate
    assert m.reception_rate_hz == pytest.approx(4 / 0.330)  # reception span 10..340 ms


# --- stall -------------------------------------------------------------------------------

def test_a_stall_in_the_middle_is_measured_and_a_declared_outage_is_left_out():
    pub = publisher(300)
    # nothing from seq 90 (3.0 s) to seq 179; from seq 180 on the stream flows again
    sub = arrivals(pub, [s for s in range(300) if not 90 <= s < 180], on_time())
    m = M.compute(pub, sub)
    # from the write of seq 90 (3.0 s) to the arrival of seq 180 (6.0 s + 20 ms)
    assert m.stall_max_s == pytest.approx((180 * HZ30 + 20 * MS - 90 * HZ30) / 1e9)
    assert m.stall_at_s == pytest.approx(90 * HZ30 / 1e9)
    assert m.stall_link_up_s == m.stall_max_s
    dark = [(90 * HZ30, 180 * HZ30)]  # the link was down on purpose for those 3 s
    m = M.compute(pub, sub, dark=dark)
    assert m.stall_max_s == pytest.approx(3.02, abs=1e-3)
    assert m.stall_link_up_s == pytest.approx(0.034, abs=2e-3)  # back, then one arrival


def test_a_tail_stall_runs_to_the_end_of_the_observation():
    """The link goes dark for good 2 s before the last write: the stall runs to the
    subscriber's end (5 s after the last write), not only to the last write."""
    pub = publisher(300)
    cut = 240
    sub = arrivals(pub, range(cut), on_time())
    last_write = int(pub["t_send_ns"].max())
    m = M.compute(pub, sub, end_ns=last_write + 5 * S)
    assert m.stall_max_s == pytest.approx((last_write + 5 * S - cut * HZ30) / 1e9)
    assert M.compute(pub, sub).stall_max_s == pytest.approx(
        (last_write - cut * HZ30) / 1e9)  # without a known end: to the last write


def test_a_best_effort_stream_with_its_last_sample_lost_has_no_long_stall():
    pub = publisher(100)
    sub = arrivals(pub, range(99), on_time())
    end = int(pub["t_send_ns"].max()) + 40 * MS  # the end-of-stream marker came
    m = M.compute(pub, sub, end_ns=end)
    assert m.stall_max_s < 0.05


def test_nothing_written_has_no_stall_and_nothing_received_stalls_throughout():
    assert math.isnan(M.compute(M.empty_records(), M.empty_records()).stall_max_s)
    pub = publisher(30)
    m = M.compute(pub, M.empty_records(), end_ns=int(pub["t_send_ns"].max()) + S)
    assert m.stall_max_s == pytest.approx(29 * HZ30 / 1e9 + 1.0)


# --- verdicts by QoS -----------------------------------------------------------------------

def finished(rule: V.Rule, **kw) -> V.Outcome:
    return V.Outcome(publisher_finished=True, publisher_exit=0, subscriber_exit=0,
                     expects_all=rule.expects_all, stall_limit_s=rule.stall_limit_s, **kw)


def test_rules_follow_the_qos():
    interval = 1 / 30
    keep_last = V.rule_for("fastdds", ["--qos", "reliable", "--history", "keep_last:10"],
                           interval)
    assert keep_last.kind == V.KEEP_LAST and keep_last.stall_limit_s == pytest.approx(10 / 3)
    assert "RELIABLE KEEP_LAST 10" in keep_last.text() and "3.33 s" in keep_last.text()
    keep_all = V.rule_for("cyclonedds", ["--qos", "reliable", "--history", "keep_all"],
                          interval)
    assert keep_all.expects_all and keep_all.stall_limit_s is None
    best = V.rule_for("fastdds", ["--qos", "best_effort", "--history", "keep_last:5"],
                      interval)
    assert best.kind == V.BEST_EFFORT and best.stall_limit_s is None
    assert V.rule_for("mqtt", ["--qos", "reliable"], interval).expects_all
    assert V.rule_for("zenoh", ["--qos", "best_effort"], interval).kind == V.BEST_EFFORT
    assert V.rule_for("fastdds", ["--system-default"], interval).kind == V.UNKNOWN
    # a fast stream is not failed by a pause the scheduler can cause: at least 1 s
    assert V.stall_limit_s(1 / 1000) == 1.0


def test_a_stalled_keep_last_stream_fails_with_its_stall_named():
    pub = publisher(300)
    sub = arrivals(pub, [s for s in range(300) if not 60 <= s < 200], on_time())
    m = M.compute(pub, sub)
    rule = V.rule_for("fastdds", ["--qos", "reliable", "--history", "keep_last:10"], 1 / 30)
    reason = V.failure_reason(m, finished(rule), 1 / 30, 300)
    assert reason.startswith("stalled: nothing arrived for 4.7 s from 2.0 s after the first "
                             "sample with samples outstanding (limit 3.33 s); received "
                             "160/300"), reason
    # the same stream as a declared outage of the link: the stall was the link's
    dark = [(60 * HZ30, 200 * HZ30)]
    m_dark = M.compute(pub, sub, dark=dark)
    assert V.failure_reason(m_dark, finished(rule), 1 / 30, 300) is None
    # the same arrivals under KEEP_ALL fail on delivery, under BEST_EFFORT they are ok
    keep_all = V.rule_for("fastdds", ["--qos", "reliable", "--history", "keep_all"], 1 / 30)
    assert V.failure_reason(m, finished(keep_all), 1 / 30, 300).startswith(
        "not completed: received 160/300")
    best = V.rule_for("fastdds", ["--qos", "best_effort", "--history", "keep_all"], 1 / 30)
    assert V.failure_reason(m, finished(best), 1 / 30, 300) is None


def test_a_keep_last_stream_with_short_gaps_is_ok():
    pub = publisher(300)
    sub = arrivals(pub, [s for s in range(300) if s % 10], on_time())  # 10 % lost, spread
    rule = V.rule_for("cyclonedds", ["--qos", "reliable", "--history", "keep_last:5"],
                      1 / 30)
    assert V.failure_reason(M.compute(pub, sub), finished(rule), 1 / 30, 300) is None


# --- a run made with format 1 ----------------------------------------------------------------

def _one_stream_rows():
    store = RunStore.open(FORMAT1_RUN)
    assert store.info["format_version"] == 1
    return store


def test_a_format_1_run_reads_in_todays_terms_exactly():
    """Each cell's rate and loss, derived from its stored format-1 columns, equal what
    today's metrics compute from its record files."""
    store = _one_stream_rows()
    assert len(store.rows) == 16
    checked = 0
    for row in store.rows:
        assert row["metrics_version"] == 1 and math.isnan(row["stall_max_s"])
        cell = FORMAT1_RUN / "records" / row["cell_id"]
        _, pub = M.read_records(cell / "pub.bin")
        _, sub = M.read_records(cell / "sub.bin")
        m = M.compute(pub, sub)
        if row["received"] == 0:
            assert m.reception_rate_hz == 0.0 and row["reception_rate_hz"] == 0.0
        else:
            assert row["reception_rate_hz"] == pytest.approx(m.reception_rate_hz, rel=1e-9)
            assert row["goodput_bit_s"] == pytest.approx(m.goodput_bit_s, rel=1e-9)
        assert row["message_loss_rate"] == pytest.approx(m.message_loss_rate)
        assert row["publish_rate_hz"] == pytest.approx(m.publish_rate_hz, rel=1e-9)
        checked += 1
    assert checked == 16
    burst = next(r for r in store.rows
                 if r["cell_id"] == "wifi-severe_outage_0s_2s-cyclonedds-h-keep_all-best_effort")
    raw = json.loads((FORMAT1_RUN / "cells.jsonl").read_text().splitlines()[13])
    assert raw["cell_id"] == burst["cell_id"] and raw["reception_rate_hz"] > 20
    assert burst["reception_rate_hz"] < 1  # 2 of 90 samples, not 20 Hz


@pytest.mark.slow
def test_linklab_report_reads_a_format_1_run_and_says_so(tmp_path):
    result = subprocess.run([sys.executable, "-m", "linklab.cli", "report", str(FORMAT1_RUN),
                             "--json"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["run"]["format_version"] == 1 and len(doc["cells"]) == 16
    text = subprocess.run([sys.executable, "-m", "linklab.cli", "report", str(FORMAT1_RUN)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert text.returncode == 0, text.stderr
    assert "every cell measured with run format 1" in " ".join(text.stdout.split())
