"""The shared 802.11 medium as a link field: parsing, defaults, refusals, the relay's
directive, describe() and the presets (pure: no root, no binary)."""

from __future__ import annotations

import math

import pytest

from conftest import one_line_usage_error as one_line
from linklab.bench.fields import Located
from linklab.bench.links import check_field
from linklab.emu.config import RelayConfig
from linklab.emu.directives import Delay, Medium
from linklab.errors import UsageError
from linklab.link.blueprint import design
from linklab.link.impairments import MediumStage
from linklab.link.medium import DEFAULTS, KEYS
from linklab.link.presets import load_presets, resolve_preset
from linklab.link.spec import build_spec
from linklab.link.wires.tap_relay import TapRelayWire, medium_counters
from linklab.model.wifi_phy import phy_rate_bps

CONTRACT_KEYS = ("standard", "band_ghz", "width_mhz", "nss", "mcs", "gi_ns", "per",
                 "per_bytes", "multicast_per", "retry_limit", "cw_min", "cw_max", "aifsn",
                 "ampdu_frames", "ampdu_bytes", "ppdu_max_ns", "queue_packets", "queue_bytes",
                 "bg_stations", "bg_load_bps", "bg_frame_bytes", "log")


def medium_of(**keys):
    return build_spec(None, None, {"medium": keys}).medium


@pytest.fixture
def emu_wire_usable(monkeypatch):
    """design() picks the emu wire without the binary (unit tier: nothing under build/)."""
    monkeypatch.setattr(TapRelayWire, "unavailable", classmethod(lambda cls: None))


# --- parsing and defaults ---------------------------------------------------------------

def test_defaults_per_standard():
    ac = medium_of()
    assert (ac.standard, ac.band_ghz, ac.width_mhz, ac.streams, ac.mcs, ac.guard_ns) == \
        ("ac", 5.0, 80, 1, 7, 800)
    assert (ac.aggregation, ac.aggregation_bytes, ac.retry_limit, ac.queue_packets) == \
        (64, 1_048_575, 7, 1000)
    a = medium_of(standard="a")
    assert (a.width_mhz, a.mcs, a.aggregation, a.phy_rate_bps) == (20, 7, 1, 54e6)
    assert "DCF" in a.describe()["access"] and "AIFSN 2" in a.describe()["access"]
    n = medium_of(standard="n")
    assert (n.band_ghz, n.width_mhz, n.aggregation, n.aggregation_bytes) == (2.4, 20, 64, 65535)
    ax = medium_of(standard="ax")
    assert (ax.aggregation, ax.aggregation_bytes) == (256, 6_500_631)
    assert set(DEFAULTS) == {"a", "n", "ac", "ax"}
    # every key has a default but the standard's and the channel-from-distance keys
    # (distance, tx_power, rssi, rate_control, motion: linklab.model.wifi_channel's when
    # given)
    channel_keys = {"distance", "tx_power", "rssi", "rate_control", "motion"}
    assert all(set(d) == set(KEYS) - {"standard"} - channel_keys for d in DEFAULTS.values())


def test_values_take_linklab_units_and_both_forms():
    m = medium_of(standard="ac", band="5GHz", width="160MHz", streams=2, mcs="8",
                  guard="400ns", per="1%", multicast_per="0.1", retry_limit=3,
                  aggregation=32, aggregation_bytes="512KiB", queue=200, queue_bytes="1MiB",
                  stations=4, station_load="20Mbit/s", station_frame="1000B")
    assert (m.width_mhz, m.streams, m.mcs, m.guard_ns, m.per, m.multicast_per) == \
        (160, 2, 8, 400, 0.01, 0.1)
    assert (m.aggregation_bytes, m.queue_bytes, m.station_load_bps, m.station_frame_bytes) == \
        (524288, 1 << 20, 20e6, 1000)
    text = build_spec(None, None, {"medium": "standard=n,mcs=3,stations=2"}).medium
    assert (text.standard, text.mcs, text.stations, text.station_load_bps) == ("n", 3, 2, math.inf)
    assert medium_of(stations=1, station_load="saturated").station_load_bps == math.inf


def test_overrides_go_key_by_key_over_the_presets_medium():
    preset = resolve_preset("wifi-ac-medium")
    spec = build_spec("wifi-ac-medium", preset, {"medium": "stations=8"})
    assert (spec.medium.mcs, spec.medium.guard_ns, spec.medium.stations) == (9, 400, 8)
    # a key changed over the preset is checked with the preset's other keys
    message = one_line(lambda: build_spec("wifi-ac-medium", preset, {"medium": "standard=n"}))
    assert message.startswith("--medium width: 802.11n has 20MHz, 40MHz, not 80MHz")


def test_phy_rates_match_the_standards_tables():
    assert phy_rate_bps("ac", 80, 1, 9, 400) == pytest.approx(433.33e6, rel=1e-4)
    assert phy_rate_bps("n", 20, 1, 7, 400) == pytest.approx(72.22e6, rel=1e-4)
    assert phy_rate_bps("n", 40, 2, 7, 800) == pytest.approx(270e6)
    assert phy_rate_bps("ax", 160, 2, 11, 800) == pytest.approx(2401.96e6, rel=1e-5)
    assert phy_rate_bps("ax", 20, 1, 0, 3200) == pytest.approx(7.3125e6)
    assert [phy_rate_bps("a", 20, 1, m, 800) / 1e6 for m in range(8)] == \
        [6, 9, 12, 18, 24, 36, 48, 54]


# --- refusals: one line, naming the key ---------------------------------------------------

@pytest.mark.parametrize("keys, named, says", [
    ({"colour": "red"}, "--medium", "unknown key 'colour'; known: standard, band"),
    ({"standard": "b"}, "--medium standard", "expected a, n, ac or ax"),
    ({"band": "5"}, "--medium band", "expected 2.4GHz, 5GHz or 6GHz"),
    ({"band": "3GHz"}, "--medium band", "expected 2.4GHz, 5GHz or 6GHz"),
    ({"standard": "ac", "band": "2.4GHz"}, "--medium band", "takes standard n"),
    ({"standard": "a", "band": "2.4GHz"}, "--medium band", "takes standard n"),
    ({"standard": "ac", "band": "6GHz"}, "--medium band", "6GHz takes standard ax"),
    ({"width": "30MHz"}, "--medium width", "expected 20MHz, 40MHz, 80MHz or 160MHz"),
    ({"width": 80}, "--medium width", "expected 20MHz"),
    ({"standard": "a", "width": "40MHz"}, "--medium width", "802.11a has 20MHz, not 40MHz"),
    ({"standard": "n", "width": "80MHz"}, "--medium width", "802.11n has 20MHz, 40MHz"),
    ({"streams": 5}, "--medium streams", "1..4"),
    ({"streams": "two"}, "--medium streams", "a whole number"),
    ({"standard": "a", "streams": 2}, "--medium streams", "802.11a has 1 stream, not 2"),
    ({"standard": "a", "mcs": 8}, "--medium mcs", "802.11a has MCS 0..7 (6..54 Mbit/s"),
    ({"standard": "n", "mcs": 8}, "--medium mcs", "802.11n has MCS 0..7"),
    ({"standard": "ac", "mcs": 10}, "--medium mcs", "802.11ac has MCS 0..9"),
    ({"mcs": 12}, "--medium mcs", "0..11"),
    ({"width": "20MHz", "mcs": 9}, "--medium mcs", "not a valid combination"),
    ({"width": "80MHz", "mcs": 6, "streams": 3}, "--medium mcs", "not a valid combination"),
    ({"width": "160MHz", "mcs": 9, "streams": 3}, "--medium mcs", "not a valid combination"),
    ({"guard": "800"}, "--medium guard", "expected a guard interval"),
    ({"guard": "500ns"}, "--medium guard", "expected a guard interval"),
    ({"standard": "a", "guard": "400ns"}, "--medium guard", "802.11a has a guard interval "
                                                             "of 800ns, not 400ns"),
    ({"standard": "ax", "guard": "400ns"}, "--medium guard", "800ns, 1600ns, 3200ns"),
    ({"standard": "ac", "guard": "1600ns"}, "--medium guard", "800ns, 400ns, not 1600ns"),
    ({"per": "150%"}, "--medium per", "outside 0..100%"),
    ({"multicast_per": "2"}, "--medium multicast_per", "more than 1"),
    ({"retry_limit": -1}, "--medium retry_limit", "0..1000"),
    ({"retry_limit": 1001}, "--medium retry_limit", "0..1000"),
    ({"standard": "a", "aggregation": 2}, "--medium aggregation", "802.11a has no aggregation"),
    ({"aggregation": 65}, "--medium aggregation", "aggregates at most 64 MPDUs"),
    ({"standard": "ax", "aggregation": 257}, "--medium aggregation", "1..256"),
    ({"aggregation": 0}, "--medium aggregation", "1..256"),
    ({"aggregation_bytes": 65535}, "--medium aggregation_bytes", "no unit"),
    ({"standard": "a", "aggregation_bytes": "4000B"}, "--medium aggregation_bytes",
     "802.11a has no aggregation"),
    ({"standard": "n", "aggregation_bytes": "1MiB"}, "--medium aggregation_bytes",
     "8191..65535 B"),
    ({"aggregation_bytes": "4KiB"}, "--medium aggregation_bytes", "8191..1048575 B"),
    ({"queue": 0}, "--medium queue", "frames per station queue"),
    ({"queue_bytes": "-1B"}, "--medium queue_bytes", "zero or more"),
    ({"stations": 257}, "--medium stations", "0..256"),
    ({"station_load": "20Mbit/s"}, "--medium station_load", "give stations too"),
    ({"station_frame": "100B"}, "--medium station_frame", "give stations too"),
    ({"stations": 2, "station_load": "0Mbit/s"}, "--medium station_load", "or saturated"),
    ({"stations": 2, "station_load": "lots"}, "--medium station_load", "or saturated"),
    ({"stations": 2, "station_frame": "3000B"}, "--medium station_frame", "20..2304 B"),
])
def test_every_bad_value_or_combination_is_one_line_naming_the_key(keys, named, says):
    message = one_line(lambda: build_spec(None, None, {"medium": keys}))
    assert message.startswith(f"{named}: "), message
    assert says in message, message


def test_a_bad_medium_shape_is_one_line():
    assert build_spec(None, None, {"medium": {}}).medium.standard == "ac"   # every default
    for value in ("", "standard", "mcs=", ["standard=ac"], 7):
        assert one_line(lambda v=value: build_spec(None, None, {"medium": v})).startswith(
            "--medium: expected")


@pytest.mark.parametrize("field, value", [("rate", "50Mbit/s"), ("trace", "lte-short"),
                                          ("queue", "codel")])
def test_a_medium_link_refuses_what_the_medium_replaces(field, value):
    message = one_line(lambda: build_spec(None, None, {"medium": {"standard": "a"},
                                                       field: value}))
    assert message.startswith(f"--{field.replace('_', '-')}: a medium link cannot take "
                              f"{field}"), message
    # a preset's fixed loss under a medium override names the preset's field
    message = one_line(lambda: build_spec("wifi-mild", load_presets()["wifi-mild"],
                                          {"medium": "standard=ac"}))
    assert message.startswith("preset 'wifi-mild': rate: a medium link cannot take rate")


def test_a_medium_link_takes_ip_level_loss_as_paper_000_injected_it():
    """loss (nft, at the receiver) and burst_loss (relay, before the medium) are kept:
    paper 000 dropped packets with tc on its real Wi-Fi link."""
    spec = build_spec(None, None, {"medium": {"standard": "ac"}, "loss": "20%",
                                   "burst_loss": "gemodel:1%,30%"})
    assert spec.medium is not None
    for direction in (spec.up, spec.down):
        assert direction.loss == pytest.approx(0.20)
        assert direction.burst_loss is not None


def test_a_medium_link_refuses_the_radio_fields_jumbo_frames_and_one_direction():
    assert "not both" in one_line(lambda: build_spec(None, None, {"medium": {"mcs": 9},
                                                                  "distance": "25m"}))
    assert "2304" in one_line(lambda: build_spec(None, None, {"medium": {"mcs": 5},
                                                             "mtu": 9000}))
    message = one_line(lambda: build_spec(None, None, {"up": {"medium": {"mcs": 5}}}))
    assert message.startswith("--up.medium: the 802.11 medium is shared by both directions")


def test_delay_jitter_and_outage_stay_on_a_medium_link(emu_wire_usable):
    d = design(None, name="mediumkeep", medium={"standard": "a"}, delay="2ms", jitter="1ms",
               outage="5s+1s")
    up = d.stages["robot-edge"]["up"]
    assert [s.kind for s in up] == ["outage", "delay", "jitter", "medium"]
    assert d.wires["robot-edge"].name == "emu"


def test_a_medium_needs_a_pair_or_a_star_and_the_emu_wire(emu_wire_usable):
    for topology, why in (("chain", "its ap routes between two links, an AP bridges"),
                          ("cluster", "its nodes' underlay is a wired network")):
        message = one_line(lambda t=topology: design(
            None, name="mediumtopo", topology=t, medium="standard=ac"))
        assert message == (f"--topology: a medium link needs topology pair or star (the "
                           f"robots and one AP on one channel); not {topology}: {why}"), message
    message = one_line(lambda: design(None, name="mediumwalk", topology="star", hosts=2,
                                      medium="distance=5m,motion=50m over 10s"))
    assert message.startswith("medium.motion: medium motion moves a pair's one robot"), message
    for wire in ("veth", "ns3"):
        message = one_line(lambda w=wire: design(None, name="mediumwire", wire=w,
                                                 medium="standard=ac"))
        assert message.startswith(f"--wire: the 802.11 medium runs in the emulator's relay "
                                  f"(wire emu); the {wire} wire"), message


# --- the directive, the relay config, describe() ------------------------------------------

def test_the_directive_is_the_contract_line():
    line = medium_of().directive().directive()
    assert line == ("medium standard=ac band_ghz=5 width_mhz=80 nss=1 mcs=7 gi_ns=800 per=0 "
                    "per_bytes=0 multicast_per=0 retry_limit=7 cw_min=15 cw_max=1023 aifsn=3 "
                    "ampdu_frames=64 ampdu_bytes=1048575 ppdu_max_ns=5484000 "
                    "queue_packets=1000 queue_bytes=0 bg_stations=0 bg_load_bps=0 "
                    "bg_frame_bytes=1500 log=")
    words = medium_of(standard="n", per="1.5%", stations=3, station_load="2.5Mbit/s",
                      queue_bytes="64KiB").directive("/tmp/m.log").directive().split()
    assert [w.split("=")[0] for w in words[1:]] == list(CONTRACT_KEYS)
    values = dict(w.split("=", 1) for w in words[1:])
    assert (values["band_ghz"], values["per"], values["bg_stations"], values["bg_load_bps"],
            values["queue_bytes"], values["log"]) == ("2.4", "0.015", "3", "2500000",
                                                      "65536", "/tmp/m.log")
    assert dict(w.split("=") for w in medium_of(stations=1).directive().directive().split()[1:]
                )["bg_load_bps"] == "inf"
    a = dict(w.split("=") for w in medium_of(standard="a").directive().directive().split()[1:])
    assert (a["aifsn"], a["ampdu_frames"], a["ampdu_bytes"]) == ("2", "1", "4095")


def test_the_relay_config_has_one_medium_line_after_the_stages():
    medium = medium_of(standard="a").directive()
    assert isinstance(medium, Medium)
    text = RelayConfig("ta", "tb", ab=(Delay(0.002),), ba=(Delay(0.002),), medium=medium).text()
    lines = text.splitlines()
    assert sum(line.startswith("medium ") for line in lines) == 1
    assert lines[-1].startswith("medium standard=a ")
    assert lines[-3].startswith("stage ab delay") and lines[-2].startswith("stage ba delay")
    assert "medium" not in RelayConfig("ta", "tb").text()


def test_a_star_puts_every_robot_link_on_one_medium(emu_wire_usable):
    d = design(None, name="mediumstar", topology="star", hosts=3, medium="standard=ac",
               delay="2ms")
    for k in (1, 2, 3):
        up, down = (d.stages[f"robot{k}-ap"][x][-1] for x in ("up", "down"))
        assert isinstance(up, MediumStage) and isinstance(down, MediumStage)
        assert (up.station, down.station, up.robot) == ("a" if k == 1 else f"a{k}", "b", k - 1)
        assert "one medium for the star's robots" in up.params()["text"]
        assert d.wires[f"robot{k}-ap"].name == "emu"
    # the AP's wired side to the edge is not on the air
    assert not any(isinstance(s, MediumStage) for x in ("up", "down")
                   for s in d.stages["ap-edge"][x])
    assert d.wires["ap-edge"].name == "veth"


def test_a_stars_relay_config_numbers_links_2_to_n():
    from linklab.emu.config import RelayLink

    medium = medium_of(standard="a").directive()
    text = RelayConfig("r1", "p1", netns_a="ns1", ab=(Delay(0.002),), medium=medium,
                       more=(RelayLink("r2", "p2", netns_a="ns2", ba=(Delay(0.001),)),
                             RelayLink("r3", "p3", netns_a="ns3"))).text()
    lines = [line for line in text.splitlines() if line.startswith(("tap", "stage"))]
    assert lines == ["tap a r1 netns ns1", "tap b p1", "stage ab delay delay_ns=2000000 "
                     "jitter_ns=0 dist=uniform reorder=0", "tap a2 r2 netns ns2", "tap b2 p2",
                     "stage ba2 delay delay_ns=1000000 jitter_ns=0 dist=uniform reorder=0",
                     "tap a3 r3 netns ns3", "tap b3 p3"], lines
    assert one_line(lambda: RelayConfig("r1", "p1", more=(RelayLink("r2", "p2"),))).startswith(
        "a relay carries several links only on one 802.11 medium")


def test_describe_records_the_medium(emu_wire_usable):
    d = design("wifi-ac-medium", name="mediumdesc", medium="stations=2,station_load=5Mbit/s")
    described = d.spec.describe()["medium"]
    assert described["standard"] == "ac" and described["phy_rate"] == "433.3 Mbit/s"
    assert described["stations"] == 2 and described["station_load"] == "5 Mbit/s"
    assert described["given"]["mcs"] == 9 and described["given"]["stations"] == "2"
    assert "medium" not in build_spec(None, None, {"rate": "5Mbit/s"}).describe()
    stage = d.stages["robot-edge"]["down"][-1]
    assert isinstance(stage, MediumStage) and stage.params()["station"] == "b"
    assert "802.11ac 5GHz 80MHz 1x MCS 9 400ns" in stage.params()["text"]


def test_the_medium_counters_are_each_directions_station():
    from linklab.emu.relay import MediumStats

    figures = {"stations": {"a": {"delivered_frames": 90, "drops_retry": 3, "drops_queue": 7},
                            "b": {"delivered_frames": 5, "drops_retry": 0, "drops_queue": 0}},
               "lag_max_ns": 120_000, "lag_p99_ns": 30_000}
    out = medium_counters("robot-edge", MediumStats.from_raw(figures))
    up, down = out[("robot-edge", "up", "medium")], out[("robot-edge", "down", "medium")]
    assert (up["passed_packets"], up["dropped_packets"]) == (90, 10)
    assert (down["passed_packets"], down["dropped_packets"]) == (5, 0)
    assert up["medium"]["lag_p99_ns"] == 30_000
    # a star's robot2: up is its station a2, down what the AP handed robot2
    figures["stations"]["a2"] = {"delivered_frames": 40, "drops_retry": 1, "drops_queue": 0}
    figures["stations"]["b"].update(delivered_to=[5, 12, 7], dropped_to=[0, 2, 0])
    out = medium_counters("robot2-ap", MediumStats.from_raw(figures), robot=1)
    up, down = out[("robot2-ap", "up", "medium")], out[("robot2-ap", "down", "medium")]
    assert (up["passed_packets"], up["dropped_packets"]) == (40, 1)
    assert (down["passed_packets"], down["dropped_packets"]) == (12, 2)


# --- presets and scenarios ----------------------------------------------------------------

def test_the_medium_presets_cite_their_papers(emu_wire_usable):
    presets = load_presets()
    want = {"wifi-ac-medium": ("000", "ac", 80, 1, 9, 433.3e6),
            "wifi-n-medium": ("004", "n", 20, 1, 7, 72.2e6),
            "wifi-ax-medium": ("001", "ax", 160, 2, 11, 2402e6)}
    for name, (paper, standard, width, streams, mcs, rate) in want.items():
        assert presets[name]["source"].startswith(paper) and presets[name]["description"]
        m = design(name, name="mediumpreset").spec.medium
        assert (m.standard, m.width_mhz, m.streams, m.mcs) == (standard, width, streams, mcs)
        assert m.phy_rate_bps == pytest.approx(rate, rel=1e-3)
    assert "approximated" in presets["wifi-ax-medium"]["source"].lower()
    # the fixed-loss presets are still there, unchanged
    assert presets["wifi-severe"]["loss"] == "20%" and "medium" not in presets["wifi"]


def test_a_preset_file_medium_error_names_its_line_and_key(tmp_path):
    from linklab.link.presets import load_preset_file

    path = tmp_path / "mine.yaml"
    path.write_text("lab:\n  delay: 1ms\n  medium:\n    standard: ac\n    mcs: 11\n")
    assert one_line(lambda: load_preset_file(path)) == (
        f"{path}:5: preset lab: medium.mcs: 802.11ac has MCS 0..9, not 11")
    path.write_text("lab:\n  medium:\n    standard: ax\n    widht: 20MHz\n")
    assert one_line(lambda: load_preset_file(path)).startswith(
        f"{path}:4: preset lab: medium.widht: unknown key 'widht'; known: standard")
    path.write_text("lab:\n  medium:\n    guard: 800\n")
    assert one_line(lambda: load_preset_file(path)).startswith(
        f"{path}:3: preset lab: medium.guard: expected a guard interval")
    path.write_text("lab:\n  rate: 5Mbit/s\n  medium: {standard: n}\n")
    assert one_line(lambda: load_preset_file(path)).startswith(
        f"{path}:2: preset lab: rate: a medium link cannot take rate")
    path.write_text("lab:\n  medium: {standard: ax, band: 6GHz, width: 160MHz, mcs: 11}\n")
    assert load_preset_file(path)["lab"]["medium"]["band"] == "6GHz"


def test_a_scenarios_link_medium_is_checked_where_written():
    where = Located("s.yaml", 7, "link.medium")
    assert check_field("medium", {"stations": 4}, where) == {"stations": 4}
    # alone only the keys' forms: mcs 11 may be fine with the preset's standard
    assert check_field("medium", {"mcs": 11}, where) == {"mcs": 11}
    with pytest.raises(UsageError, match="medium.width: expected 20MHz"):
        check_field("medium", {"width": "25MHz"}, where)


def test_status_shows_the_mediums_counters_and_lag():
    from linklab.cli.link_status import _medium_lines

    station = {"offered_frames": 100, "delivered_frames": 90, "drops_retry": 4,
               "drops_queue": 6, "transmissions": 50, "collisions": 5,
               "mac_delay_mean_ns": 1_500_000, "mac_delay_p95_ns": 4_000_000}
    figures = {"stations": {"a": station, "b": dict(station, offered_frames=10),
                            "bg0": station, "bg1": station},
               "throughput_bps": 21.5e6, "collision_probability": 0.1,
               "mean_ampdu_frames": 12.0, "busy_fraction": 0.75,
               "lag_max_ns": 250_000, "lag_p99_ns": 40_000}
    status = {"counters": {"stages": [{"kind": "delay"}, {"kind": "medium", "medium": figures}]}}
    lines = _medium_lines(status)
    assert lines[0].startswith("medium: 21.5 Mbit/s delivered, 10.0% of transmissions collided")
    assert "lag (how late the relay handled its events) max 0.250 ms, p99 0.040 ms" in lines[0]
    assert lines[1].startswith("medium station a (robot): offered 100, delivered 90, dropped 4 "
                               "at the retry limit and 6 at a full queue")
    assert lines[2].startswith("medium station b (AP): offered 10")
    assert lines[3].startswith("medium 2 background stations: offered 200, delivered 180")
    assert "MAC delay mean 1.500 ms, p95 4.000 ms" in lines[3]
    assert _medium_lines({"counters": {"stages": [{"kind": "delay"}]}}) == []
    # a relay that counts its late turns (emu/src/medium/lag.rs) has them on the line
    figures.update(lag_late_ns=1_000_000, lag_late_turns=2, lag_late_events=7)
    assert lines[0].endswith("p99 0.040 ms")
    assert _medium_lines(status)[0].endswith(
        "p99 0.040 ms, 2 relay turns over 1.000 ms late")
    # a walking robot (medium motion): where its channel is in its steps
    figures["link"] = {"mcs": 3, "per": 0.041, "multicast_per": 0.0, "steps_applied": 87,
                       "steps": 196}
    assert _medium_lines(status)[1] == ("medium robot-AP channel now: MCS 3, PER 4.10% "
                                        "(step 87 of 196 of its motion)")
