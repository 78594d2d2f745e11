"""Metrics against hand-made record files; expected values worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from linklab.bench import metrics as M
from linklab.bench import verdict as V

MS = 1_000_000  # ns


@pytest.fixture
def cell_files(tmp_path):
    # Publisher: 5 samples of 1000 B every 100 ms.
    pub = M.make_records([(s, s * 100 * MS, 0, 1000) for s in range(5)])
    # Subscriber: seq 2 lost, seq 3 arrives twice; latencies 10, 20, 30, 40 ms.
    sub = M.make_records([
        (0, 0 * MS, 10 * MS, 1000),
        (1, 100 * MS, 120 * MS, 1000),
        (3, 300 * MS, 330 * MS, 1000),
        (3, 300 * MS, 500 * MS, 1000),  # duplicate (a retransmission delivered twice)
        (4, 400 * MS, 440 * MS, 1000),
    ])
    M.write_records(tmp_path / "pub.bin", M.ROLE_PUBLISHER, pub)
    M.write_records(tmp_path / "sub.bin", M.ROLE_SUBSCRIBER, sub)
    return tmp_path / "pub.bin", tmp_path / "sub.bin"


def test_metrics_of_a_hand_made_cell(cell_files):
    role_p, pub = M.read_records(cell_files[0])
    role_s, sub = M.read_records(cell_files[1])
    assert (role_p, role_s) == (M.ROLE_PUBLISHER, M.ROLE_SUBSCRIBER)
    m = M.compute(pub, sub, wire_bytes=6000, model_amplification=1.1, bins_origin_ns=0)
    assert (m.published, m.received, m.duplicates) == (5, 4, 1)
    assert m.delivery_ratio == pytest.approx(0.8)
    # 4 received over 10 ms .. 440 ms: 4 / 0.430 s (seed 000 §V-B definition)
    assert m.reception_rate_hz == pytest.approx(4 / 0.430)
    assert m.latency_mean_ms == pytest.approx(25.0)
    # population std of 10, 20, 30, 40 = sqrt((225 + 25 + 25 + 225) / 4)
    assert m.jitter_ms == pytest.approx(math.sqrt(125))
    assert m.latency_p50_ms == pytest.approx(25.0)
    assert m.latency_max_ms == pytest.approx(40.0)
    assert m.latency_p99_ms == pytest.approx(39.7)  # 30 + 0.97 * (40 - 30), linear
    assert m.goodput_bit_s == pytest.approx(4000 * 8 / 0.430)
    assert m.publish_rate_hz == pytest.approx(4 / 0.4)  # 4 intervals of 100 ms
    assert m.bytes_published == 5000
    assert m.wire_amplification == pytest.approx(1.2)
    # warm-up samples crossed the link too: 6000 wire bytes / (5000 + 1000) published
    assert M.compute(pub, sub, wire_bytes=6000, warmup_bytes=1000).wire_amplification == 1.0
    assert m.model_amplification == 1.1
    assert m.rate_bins_hz == [4]


def test_one_second_bins_count_receptions_after_the_origin():
    sub = M.make_records([(i, 0, t, 1) for i, t in enumerate(
        [int(-0.2e9), int(0.5e9), int(1.2e9), int(1.9e9), int(3.1e9)])])
    assert M.rate_bins_hz(sub, origin_ns=0) == [1, 2, 0, 1]
    assert M.rate_bins_hz(sub, origin_ns=0, n_bins=6) == [1, 2, 0, 1, 0, 0]
    assert M.rate_bins_hz(sub, origin_ns=0, n_bins=2) == [1, 2]


def test_nothing_received_is_0_hz_over_the_publishing_span_and_no_latency():
    """Nothing arrived in the 2 ms the publisher wrote for: 0 Hz was measured (docs/
    metrics.md); a latency was not, so it stays NaN."""
    pub = M.make_records([(s, s * MS, 0, 10) for s in range(3)])
    m = M.compute(pub, M.empty_records())
    assert m.received == 0 and m.delivery_ratio == 0.0 and m.message_loss_rate == 1.0
    assert m.reception_rate_hz == 0.0 and math.isnan(m.latency_mean_ms)


def test_a_file_cut_mid_record_keeps_whole_records(cell_files, tmp_path):
    data = cell_files[1].read_bytes()
    cut = tmp_path / "cut.bin"
    cut.write_bytes(data[:16 + 28 * 2 + 5])
    _, sub = M.read_records(cut)
    assert list(sub["seq"]) == [0, 1]


def test_a_file_that_is_not_a_record_file_is_refused(tmp_path):
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"NOTLLREC" + bytes(8))
    with pytest.raises(M.RecordFileError, match="not a linklab record file"):
        M.read_records(bad)
    short = tmp_path / "short.bin"
    short.write_bytes(b"LL")
    with pytest.raises(M.RecordFileError, match="shorter than its header of 16 bytes"):
        M.read_records(short)


# --- failure marking ------------------------------------------------------------------

def finished(**kw):
    base = dict(publisher_finished=True, publisher_exit=0, subscriber_exit=0,
                expects_all=True)
    base.update(kw)
    return V.Outcome(**base)


def metrics_with(published, received, latency_ms):
    m = M.CellMetrics(published=published, received=received)
    m.latency_mean_ms = latency_ms
    m.reception_rate_hz = 29.9
    return m


INTERVAL = 1 / 30


def test_a_complete_cell_is_ok():
    assert V.failure_reason(metrics_with(1000, 1000, 12.0), finished(), INTERVAL, 1000) is None


def test_a_crashed_probe_fails_the_cell():
    reason = V.failure_reason(metrics_with(1000, 1000, 12.0),
                              finished(publisher_exit=-11), INTERVAL, 1000)
    assert reason == "crashed: publisher ended with signal 11"
    reason = V.failure_reason(metrics_with(1000, 1000, 12.0),
                              finished(subscriber_exit=3), INTERVAL, 1000)
    assert reason == "crashed: subscriber ended with exit status 3"


def test_a_probe_that_dies_after_completing_its_run_is_noted_not_failed():
    outcome = finished(subscriber_exit=-6, subscriber_completed=True)
    assert V.failure_reason(metrics_with(1000, 1000, 12.0), outcome, INTERVAL, 1000) is None
    assert V.exit_note(outcome) == "subscriber ended with signal 6 after completing its run"


def test_a_probe_the_runner_stopped_is_not_a_crash():
    outcome = finished(subscriber_exit=-2, subscriber_signalled=True)
    assert V.failure_reason(metrics_with(1000, 1000, 12.0), outcome, INTERVAL, 1000) is None


def test_a_publisher_still_running_at_the_deadline_did_not_complete():
    outcome = finished(publisher_finished=False, publisher_exit=None,
                       publisher_signalled=True)
    reason = V.failure_reason(metrics_with(420, 15, 900.0), outcome, INTERVAL, 1000)
    assert reason.startswith("not completed: publisher wrote 420/1000")


def test_reliable_keep_all_must_deliver_every_sample():
    reason = V.failure_reason(metrics_with(300, 15, 40.0), finished(), INTERVAL, 300)
    assert reason == "not completed: received 15/300 before the deadline"
    # the subscriber ended on the publisher's end-of-stream marker, long before the deadline
    reason = V.failure_reason(metrics_with(300, 15, 40.0), finished(stream_ended=True),
                              INTERVAL, 300)
    assert reason == "not completed: received 15/300 by the end of the stream"
    # KEEP_LAST may drop samples by design (history overwritten during an outage)
    assert V.failure_reason(metrics_with(300, 250, 40.0), finished(expects_all=False),
                            INTERVAL, 300) is None


def test_mean_latency_above_100_intervals_fails_but_keeps_the_numbers():
    m = metrics_with(1000, 1000, 3400.0)
    reason = V.failure_reason(m, finished(), INTERVAL, 1000)
    assert reason == "latency: mean 3400 ms > 3333 ms (100 publish intervals)"
    assert m.reception_rate_hz == 29.9 and m.latency_mean_ms == 3400.0
    assert V.failure_reason(metrics_with(1000, 1000, 3300.0), finished(), INTERVAL,
                            1000) is None


def test_record_layout_is_the_probe_protocol():
    assert M.RECORD_DTYPE.itemsize == 28
    raw = M.HEADER.pack(M.MAGIC, 28, 0) + np.array(
        [(7, 1, 2, 3)], dtype=M.RECORD_DTYPE).tobytes()
    assert raw[:8] == b"LLREC1\0\0" and len(raw) == 16 + 28
    assert raw[16:24] == (7).to_bytes(8, "little")


# --- link and UDP counters of a cell --------------------------------------------------

def test_counter_deltas_from_two_snapshots():
    from linklab.bench.link_counters import counter_deltas
    from linklab.bench.namespace_environment import parse_udp_counters

    snmp = ("Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\n"
            "Udp: 100 0 7 50 {rcv} 0\n")

    def snap(rx, tx, dropped, passed, tbf, rcv):
        return {"link": {"interfaces": {"robot": {"veth0": {"rx_bytes": rx, "tx_bytes": tx}}},
                         "stages": [{"kind": "loss", "dropped_packets": dropped,
                                     "passed_packets": passed},
                                    {"kind": "rate", "dropped_packets": tbf}]},
                "udp": {"edge": parse_udp_counters(snmp.format(rcv=rcv)),
                        "robot": parse_udp_counters(snmp.format(rcv=0))}}

    deltas = counter_deltas(snap(1000, 5000, 3, 40, 0, 2), snap(1500, 95000, 23, 120, 4, 9),
                            pub_hosts=("robot",), sub_hosts=("edge",))
    assert deltas["wire_bytes"] == 500 + 90000
    assert deltas["link_dropped_packets"] == 20 and deltas["link_passed_packets"] == 80
    assert deltas["rate_dropped_packets"] == 4
    assert deltas["sub_udp_rcvbuf_errors"] == 7 and deltas["pub_udp_sndbuf_errors"] == 0


def test_a_reader_lost_while_publishing_is_named_in_the_reason():
    """Seed 000's outage with the default 20 s lease: the writer unmatched its reader and
    matched it again; what it wrote in between never arrived (the probe's summary field
    readers_unmatched_while_publishing)."""
    outcome = finished(stream_ended=True, readers_unmatched=1)
    reason = V.failure_reason(metrics_with(1000, 396, 7.0), outcome, INTERVAL, 1000)
    assert reason.startswith("not completed: received 396/1000 by the end of the stream; "
                             "the writer lost a matched reader 1 time(s) while publishing")
    # every sample arrived: a lost and regained match is no failure
    assert V.failure_reason(metrics_with(1000, 1000, 7.0), outcome, INTERVAL, 1000) is None
