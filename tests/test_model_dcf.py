"""802.11a airtime (802.11-2016 clause 17) and Bianchi's DCF saturation model (issue 43):
the arithmetic by hand for one frame, and the model's known shape."""

from __future__ import annotations

import math

import pytest

from linklab.model import dcf
from linklab.model import wifi_airtime as A


def test_a_1500_byte_packet_at_54_mbit_s_by_hand():
    # PSDU 24 + 8 + 1500 + 4 = 1536 B -> ceil((16 + 12288 + 6) / 216) = 57 symbols
    assert A.txtime_us(1536, 54) == 16 + 4 + 4 * 57
    e = A.exchange(1500, 54)
    assert e.data_us == 248 and e.ack_us == 16 + 4 + 4 * 2  # 14 B at 24 Mbit/s
    assert e.success_us == 248 + 16 + 28 + 34 and e.collision_us == 248 + 34
    # alone: 7.5 slots of backoff + the exchange per 12000 bits = 30.5 Mbit/s
    assert A.single_station_mbps(1500, 54) == pytest.approx(12000 / (67.5 + 326))


def test_the_ack_goes_at_the_highest_basic_rate_not_above_the_data_rate():
    assert [A.ack_rate(r) for r in (6, 9, 12, 18, 24, 36, 48, 54)] == \
        [6, 6, 12, 12, 24, 24, 24, 24]


def test_bad_rates_and_sizes_are_refused():
    with pytest.raises(ValueError, match="not an 802.11a rate"):
        A.txtime_us(100, 11)
    with pytest.raises(ValueError, match="at least one"):
        dcf.saturation(0, 1500, 54)


def test_one_station_is_the_single_station_throughput():
    one = dcf.saturation(1, 1500, 54)
    assert one.collision_p == 0 and one.tau == pytest.approx(2 / 17)
    assert one.throughput_mbps == pytest.approx(A.single_station_mbps(1500, 54))


def test_the_fixed_point_holds_and_collisions_grow_with_stations():
    results = [dcf.saturation(n, 1500, 54) for n in (2, 5, 10, 20, 50)]
    for r in results:  # Eq. 7 and Eq. 9 both hold at the solution
        assert r.tau == pytest.approx(dcf.tau_of(r.collision_p, 16, 6))
        assert r.collision_p == pytest.approx(1 - (1 - r.tau) ** (r.stations - 1), abs=1e-9)
    ps = [r.collision_p for r in results]
    assert ps == sorted(ps) and 0 < ps[0] < ps[-1] < 1
    # basic access with long frames: two stations idle less than one (their backoffs
    # overlap) and gain a little; past that, collisions cost more than they save
    s = [r.throughput_mbps for r in results]
    assert s[0] > A.single_station_mbps(1500, 54)
    assert s == sorted(s, reverse=True) and 20 < s[-1] < s[0] < 32


def test_eq7_is_continuous_through_p_one_half():
    assert dcf.tau_of(0.5, 16, 6) == pytest.approx(dcf.tau_of(0.5 - 1e-6, 16, 6), rel=1e-5)
    assert dcf.backoff_stages() == 6 and math.isclose(dcf.tau_of(0.0, 16, 6), 2 / 17)


def test_a_collision_with_the_ack_timeout_costs_sifs_ack_and_a_slot_more():
    e = A.exchange(1500, 54)
    assert e.collision_ack_timeout_us == e.collision_us + A.SIFS_US + e.ack_us + A.SLOT_US
    one = dcf.saturation(1, 1500, 54, ack_timeout=True)   # no collision: the same
    assert one.throughput_mbps == dcf.saturation(1, 1500, 54).throughput_mbps
    many, longer = dcf.saturation(20, 500, 54), dcf.saturation(20, 500, 54, ack_timeout=True)
    assert longer.collision_p == many.collision_p
    assert longer.throughput_mbps < many.throughput_mbps
