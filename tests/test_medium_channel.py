"""The medium's channel from distance (linklab.model.wifi_channel, link.medium's distance,
tx_power and rate_control keys): ns-3's chain of path loss, noise and error tables, the
MCS rate control settles on, and the refusals (pure: no root, no binary)."""

from __future__ import annotations

import math

import pytest

from conftest import one_line_usage_error as one_line
from linklab.link.spec import build_spec
from linklab.model import wifi_channel as ch
from linklab.model.wifi_phy import phy_rate_bps


def medium_of(**keys):
    return build_spec(None, None, {"medium": keys}).medium


def test_path_loss_and_noise_are_ns3s():
    # ns-3's LogDistancePropagationLossModel ReferenceLoss at 5.15 GHz, exponent 3
    assert ch.reference_loss_db(5.0) == pytest.approx(46.6777, abs=1e-3)
    assert ch.path_loss_db(10.0, 5.0) == pytest.approx(46.6777 + 30.0, abs=1e-3)
    assert ch.path_loss_db(0.5, 5.0) == ch.path_loss_db(1.0, 5.0)
    # kT over 20 MHz with a 7 dB noise figure: -174 + 73.01 + 7
    assert ch.noise_dbm(20) == pytest.approx(-93.99, abs=0.01)
    # two streams share the power: 3 dB less each
    at_10m = ch.received_dbm(10, 5.0)
    assert ch.snr_of(at_10m, 80, 1) - ch.snr_of(at_10m, 80, 2) == pytest.approx(3.01, abs=0.01)


def test_the_error_table_falls_with_snr_and_rises_with_mcs():
    for standard, count in (("n", 8), ("ac", 10), ("ax", 12)):
        for mcs in range(count):
            pers = [ch.per_at(standard, mcs, snr) for snr in range(-5, 51)]
            assert pers[0] > 0.99 and pers[-1] < 1e-6, (standard, mcs)
            falling = zip(pers, pers[1:], strict=False)
            assert all(a >= b - 1e-12 for a, b in falling), (standard, mcs)
        # at one SNR a higher MCS loses at least as much
        at_20 = [ch.per_at(standard, m, 20.0) for m in range(count)]
        assert all(a <= b + 1e-12 for a, b in zip(at_20, at_20[1:], strict=False)), standard


def test_rate_control_steps_down_as_the_robot_moves_away():
    chosen = []
    for metres in (2, 10, 20, 30, 45, 70, 100):
        medium = medium_of(standard="ac", mcs=9, distance=f"{metres}m")
        chosen.append(medium.mcs)
        # it is the best expected goodput of MCS 0..9 at that SNR
        snr = medium.channel.snr_db
        best = max(phy_rate_bps("ac", 80, 1, m, 800) * (1 - ch.per_at("ac", m, snr))
                   for m in range(10))
        assert medium.channel.goodput_bps == pytest.approx(best)
        assert medium.per == pytest.approx(ch.per_at("ac", medium.mcs, snr))
    assert chosen[0] == 9 and chosen[-1] < chosen[0]
    assert chosen == sorted(chosen, reverse=True)


def test_fixed_rate_keeps_the_mcs_and_loses_more_with_distance():
    near = medium_of(standard="ac", mcs=9, distance="5m", rate_control="fixed")
    far = medium_of(standard="ac", mcs=9, distance="40m", rate_control="fixed")
    assert near.mcs == far.mcs == 9
    assert near.per < 0.01 < far.per
    # the relay is told which MPDU size per is for, and scales it per frame
    words = dict(w.split("=", 1) for w in far.directive().directive().split()[1:])
    assert float(words["per"]) == pytest.approx(far.per, rel=1e-6)
    assert words["per_bytes"] == "1500" and near.per_bytes == 1500
    assert medium_of(standard="ac").per_bytes == 0


def test_mcs_caps_rate_control_and_multicast_uses_20mhz():
    capped = medium_of(standard="ac", mcs=5, distance="2m")
    assert capped.mcs == 5
    m = medium_of(standard="ax", width="160MHz", streams=2, mcs=11, distance="40m")
    snr20 = ch.snr_of(ch.received_dbm(40, 5.0), 20)
    assert m.multicast_per == pytest.approx(ch.per_at("ax", 0, snr20))
    assert "at 40m (SNR" in m.text() and m.describe()["rate_control"] == "best"


def test_a_higher_tx_power_reaches_further():
    low = medium_of(standard="n", band="2.4GHz", width="20MHz", distance="60m")
    high = medium_of(standard="n", band="2.4GHz", width="20MHz", distance="60m",
                     tx_power="23dBm")
    assert high.channel.snr_db - low.channel.snr_db == pytest.approx(23 - 16.0206)
    assert high.mcs >= low.mcs


def test_a_measured_rssi_gives_the_channel_a_distance_would():
    """paper 001 reports its links' received power: rssi takes it as it is."""
    at_distance = medium_of(standard="ax", width="160MHz", streams=2, mcs=11, distance="15m")
    received = ch.received_dbm(15, 5.0)
    at_rssi = medium_of(standard="ax", width="160MHz", streams=2, mcs=11,
                        rssi=f"{received:.4f}dBm")
    assert at_rssi.channel.snr_db == pytest.approx(at_distance.channel.snr_db, abs=1e-3)
    assert (at_rssi.mcs, at_rssi.per_bytes) == (at_distance.mcs, 1500)
    assert float(at_rssi.describe()["rssi"].removesuffix("dBm")) == pytest.approx(received,
                                                                              abs=1e-3)
    assert "at -" in at_rssi.text() and "tx_power" not in at_rssi.describe()
    # paper 001's far field at 5 GHz, -66 dBm over 160 MHz, two streams: 16 dB a stream
    far = medium_of(standard="ax", width="160MHz", streams=2, mcs=11, rssi="-66dBm")
    assert far.channel.snr_db == pytest.approx(-66 + 174 - 10 * math.log10(160e6) - 7 - 3.01,
                                               abs=0.01)
    assert 3 <= far.mcs <= 5


@pytest.mark.parametrize("keys, start", [
    ({"standard": "a", "distance": "10m"}, "--medium distance: 802.11a's channel"),
    ({"distance": "10m", "per": "1%"}, "--medium per: comes from distance"),
    ({"distance": "10m", "multicast_per": "1%"}, "--medium multicast_per: comes from"),
    ({"rate_control": "best"}, "--medium rate_control: applies to a channel from distance"),
    ({"tx_power": "20dBm"}, "--medium tx_power: applies to a channel from distance"),
    ({"distance": "10m", "rssi": "-60dBm"}, "--medium rssi: is what a distance gives"),
    ({"rssi": "-60dBm", "tx_power": "20dBm"}, "--medium tx_power: is in rssi already"),
    ({"rssi": "-5dBm"}, "--medium rssi: expected a received power from -110 to -10 dBm"),
    ({"rssi": "strong"}, "--medium rssi: expected a received power"),
    ({"standard": "a", "rssi": "-60dBm"}, "--medium rssi: 802.11a's channel"),
    ({"rssi": "-60dBm", "per": "1%"}, "--medium per: comes from rssi"),
    ({"distance": "10m", "rate_control": "minstrel"}, "--medium rate_control: expected one"),
    ({"distance": "-3m"}, "--medium distance:"),
    ({"distance": "20km"}, "--medium distance:"),
    ({"distance": "10m", "tx_power": "90dBm"}, "--medium tx_power:"),
    ({"motion": "60m over 3s"}, "--medium motion: moves the robot from its distance"),
    ({"rssi": "-60dBm", "motion": "60m over 3s"}, "--medium motion: moves the robot"),
    ({"per": "1%", "motion": "60m over 3s"}, "--medium motion: moves the robot"),
    ({"distance": "10m", "motion": "fast"}, "--medium motion: expected DISTANCE over"),
    ({"distance": "10m", "motion": "60m over 0s"}, "--medium motion:"),
    ({"distance": "10m", "motion": "-60m over 3s"}, "--medium motion:"),
])
def test_what_a_distance_cannot_take_is_one_line(keys, start):
    message = one_line(lambda: build_spec(None, None, {"medium": keys}))
    assert message.startswith(start), message


def test_the_table_is_ns3s_stored_with_its_command():
    import json
    from importlib import resources
    raw = json.loads(resources.files("linklab.model").joinpath("wifi-per-ns3.json").read_text())
    assert "TableBasedErrorRateModel" in raw["source"]
    assert raw["command"] == ".venv/bin/python scripts/wifi_per_table.py"
    assert {(r["standard"], r["bytes"]) for r in raw["rows"]} == {
        ("n", 1500), ("ac", 1500), ("ax", 1500)}
    assert all(math.isfinite(p) for r in raw["rows"] for p in r["per"])


def test_a_moving_robot_steps_its_channel_every_tenth_of_a_second():
    m = medium_of(standard="ac", mcs=9, distance="5m", motion="120m over 6s")
    times = [t for t, _ in m.steps]
    assert m.steps[0] == (0.0, m.channel) and m.mcs == m.channel.mcs == 9
    assert all(b > a for a, b in zip(times, times[1:], strict=False))
    assert all(abs(t * 10 - round(t * 10)) < 1e-9 for t in times) and times[-1] <= 6.0
    # each step is the channel at the robot's distance then, as a fixed distance gives it
    for t, channel in m.steps[::7]:
        there = medium_of(standard="ac", mcs=9, distance=f"{5 + 115 * t / 6!r}m")
        assert channel.snr_db == pytest.approx(there.channel.snr_db)
        assert (channel.mcs, channel.per) == (there.mcs, pytest.approx(there.per))
    # rate control steps down as it goes, and at 120 m even MCS 0 loses nearly every frame
    mcs = [c.mcs for _, c in m.steps]
    assert mcs == sorted(mcs, reverse=True) and mcs[-1] == 0
    assert m.steps[-1][1].per > 0.99
    assert "moving to 120m over 6s" in m.text()
    described = m.describe()
    assert (described["motion"], described["steps"]) == ("120m over 6s", len(m.steps) - 1)
    assert described["at_end"]["mcs"] == 0
    # the relay is told every step after the first (which the medium line is)
    lines = m.directive().lines()
    assert lines[0].startswith("medium ") and len(lines) == len(m.steps)
    for line, (t, c) in zip(lines[1:], m.steps[1:], strict=True):
        verb, *words = line.split()
        given = dict(word.split("=", 1) for word in words)
        assert verb == "medium_step" and int(given["at_ns"]) == round(t * 1e9)
        assert (int(given["mcs"]), float(given["per"]), float(given["multicast_per"])) == (
            c.mcs, c.per, c.multicast_per)


def test_a_robot_coming_closer_steps_up_and_fixed_rate_keeps_its_mcs():
    closer = medium_of(standard="ax", mcs=11, distance="60m", motion="3m over 2s")
    mcs = [c.mcs for _, c in closer.steps]
    assert mcs == sorted(mcs) and mcs[-1] == 11 > mcs[0]
    fixed = medium_of(standard="ac", mcs=4, distance="10m", motion="60m over 2s",
                      rate_control="fixed")
    assert {c.mcs for _, c in fixed.steps} == {4}
    pers = [c.per for _, c in fixed.steps]
    assert pers == sorted(pers) and pers[-1] > 0.5


def test_along_stays_within_its_step_budget_and_keeps_only_changes():
    def constant(metres):
        return ch.Channel(snr_db=30.0, mcs=7, per=0.0, multicast_per=0.0, goodput_bps=1.0)

    assert ch.along(5, 50, 60, constant) == [(0.0, constant(5))]
    seen = []

    def recording(metres):
        seen.append(metres)
        return ch.Channel(snr_db=-metres, mcs=0, per=min(1.0, metres / 1e6),
                          multicast_per=0.0, goodput_bps=1.0)

    steps = ch.along(1, 100_001, 36_000, recording)    # ten hours: 50 000 evaluations
    assert len(seen) == ch.MAX_STEPS + 1 and seen[0] == 1 and seen[-1] == 100_001
    assert steps[-1][0] == 36_000
    with pytest.raises(ValueError):
        ch.along(1, 2, 0, constant)
