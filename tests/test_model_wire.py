"""model.repair and model.wire_traffic against values worked by hand."""

import math

import pytest

from linklab.model.repair import (
    complete_after,
    expected_repairing_rounds,
    expected_rounds,
    rounds_quantile,
    serial_repair_interval,
)
from linklab.model.wire_traffic import (
    cyclone_profile,
    datagram_wire,
    fastdds_profile,
    in_flight_repeats,
    predict,
)

KIB = 1024


def test_complete_after_is_r1():
    # one fragment: complete after 0 repairs with p = 0.8, after 1 with 1 - 0.2^2
    assert complete_after(1, 0.2, 0) == pytest.approx(0.8)
    assert complete_after(1, 0.2, 1) == pytest.approx(0.96)
    assert complete_after(405, 0.2, 3) == pytest.approx((1 - 0.2**4) ** 405)
    assert complete_after(405, 0.0, 0) == 1.0


def test_expected_rounds_is_the_tail_sum_over_h():
    # one fragment at PER 20 %: sum_j 0.2^(j+1) = 0.25 repairing rounds
    assert expected_repairing_rounds(1, 0.2) == pytest.approx(0.25)
    assert expected_rounds(1, 0.2) == pytest.approx(0.25 / 0.64)
    assert expected_rounds(1, 0.0) == 0.0
    # 391 fragments (512 KiB in Cyclone's 1344 B fragments) need ~5.6 rounds at PER 20 %
    assert expected_rounds(391, 0.2) == pytest.approx(5.6, abs=0.1)
    assert expected_rounds(391, 0.01) == pytest.approx(1.05, abs=0.05)


def test_rounds_quantile():
    # (1 - 0.2^(j+1))^405 >= 0.999 first at j = 8 -> 8 / 0.64 = 12.5 -> 13 rounds
    assert rounds_quantile(405, 0.2, 0.999) == 13
    assert rounds_quantile(405, 0.0, 0.999) == 0
    with pytest.raises(ValueError):
        rounds_quantile(405, 0.2, 1.0)


def test_serial_repair_interval_is_r3():
    # 1 / (2 x 30 Hz x 5.6 rounds) ~ 3 ms; with nothing to repair one round per sample
    assert serial_repair_interval(30, 391, 0.2) == pytest.approx(
        1 / (2 * 30 * expected_rounds(391, 0.2)))
    assert 2.8e-3 < serial_repair_interval(30, 391, 0.2) < 3.2e-3
    assert serial_repair_interval(30, 391, 0.0) == pytest.approx(1 / 60)


def test_datagram_wire_counts_ip_udp_and_ethernet_headers():
    assert datagram_wire(1472) == (1, 1472 + 8 + 20 + 14)
    # 65500 B message: 65508 B UDP in 1480 B fragment payloads = 45 packets
    assert datagram_wire(65500) == (45, 65508 + 45 * 34)


def test_layouts_match_the_measured_packets():
    # Fast DDS 2.9.1, maxMessageSize 1472: 1296 B fragments in 1468 B IP packets
    fast = fastdds_profile(1472, 60, piggyback_bytes=None)
    assert fast.fragment_bytes == 1296
    # Cyclone 0.10: 1344 B fragments, one per 1472 B message; ten per 14720 B message
    assert cyclone_profile(1472, 1344, 60, 1472).fragments_per_datagram == 1
    assert cyclone_profile(14720, 1344, 10).fragments_per_datagram == 10


def test_lossless_wire_is_headers_only():
    fast = fastdds_profile(1472, 60, piggyback_bytes=None, paced_bits_per_s=270e6)
    w = predict(fast, 512 * KIB, 30, 0.0, 300e6)
    fragments = math.ceil((512 * KIB + 24) / 1296)
    assert w.fragments == fragments == 405
    assert w.data_bytes == pytest.approx(fragments * 1482, rel=0.01)
    assert w.repair_bytes == 0 and w.repeat_bytes == 0
    assert 1.14 < w.amplification < 1.15


def test_each_loss_is_repaired_until_it_arrives():
    fast = fastdds_profile(1472, 60, piggyback_bytes=None, paced_bits_per_s=270e6)
    w = predict(fast, 512 * KIB, 30, 0.2, 300e6, repair_rounds=5.6)
    # 20 % of 405 fragments lost, each resent 1/0.8 times on average
    assert w.repair_bytes == pytest.approx(405 * 0.2 / 0.8 * w.data_bytes / 405, rel=0.01)
    assert 1.42 < w.amplification < 1.45


def test_fragmented_datagrams_lose_all_their_packets_at_once():
    # Fast DDS default: a 65500 B message is 45 packets; at PER 1 % it arrives with
    # 0.99^45 = 64 %, and its repair is the same 45 packets
    default = fastdds_profile(65500, 1 / 3, piggyback_bytes=None)
    w = predict(default, 512 * KIB, 30, 0.01, 300e6)
    q = 0.99**45
    assert w.repair_bytes == pytest.approx(w.data_bytes * (1 - q) / q, rel=0.02)


def test_piggyback_heartbeats_inside_a_burst_repeat_what_is_still_queued():
    # (W - T d)^2 / (2 B): 537 kB burst, 187.5 kB drained in 5 ms at 300 Mbit/s
    default = fastdds_profile(65500, 1 / 3, piggyback_bytes=212_992)
    w = 537_000
    drained = 300e6 / 8 * 0.005
    assert in_flight_repeats(w, 300e6 / 8, default) == pytest.approx(
        (w - drained) ** 2 / (2 * 212_992))
    # a sample that leaves within the reader's response delay repeats nothing
    assert in_flight_repeats(100_000, 300e6 / 8, default) == 0.0
    # paced, or no piggyback: nothing is queued behind a heartbeat
    paced = fastdds_profile(65500, 1 / 3, piggyback_bytes=212_992, paced_bits_per_s=270e6)
    assert in_flight_repeats(w, 300e6 / 8, paced) == 0.0
    assert predict(default, 512 * KIB, 30, 0.0, 300e6).repeat_bytes > 0
    assert predict(default, 64 * KIB, 30, 0.0, 300e6).repeat_bytes == 0


def test_the_fanout_step_is_one_datagram_as_each_middleware_lays_it_out():
    """The time between two subscribers' copies is one full datagram of first copies:
    Fast DDS's fragment + 144 B, Cyclone's ten 1344 B fragments + 48 + 10 x 36 B (its
    default 14720 B message), not Fast DDS's overhead on Cyclone's datagram."""
    from linklab.model.fanout import interleaved_step
    from linklab.tune.predict import default_profile
    from linklab.tune.wirecheck import LinkInfo, fanout_step_s

    link = LinkInfo(rate_bits_per_s=300e6, per=0.0)
    cyclone = default_profile("cyclonedds")
    assert cyclone.fragments_per_datagram == 10 and cyclone.fragment_bytes == 1344
    rtps = 48 + 10 * 1344 + 10 * 36
    assert fanout_step_s("cyclonedds", "default", 256 * 1024, 30, link) == pytest.approx(
        interleaved_step(datagram_wire(rtps)[1], 300e6))
    fast = default_profile("fastdds")
    rtps = fast.fragment_bytes + 144
    assert fanout_step_s("fastdds", "default", 256 * 1024, 30, link) == pytest.approx(
        interleaved_step(datagram_wire(rtps)[1], 300e6))
