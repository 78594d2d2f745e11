"""The radio medium's link fields, placement, plans and fast-mode curve (pure, no root)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import one_line_usage_error as one_line
from linklab.bench.fields import Located
from linklab.bench.links import check_field
from linklab.errors import EnvironmentProblem, UsageError
from linklab.link.blueprint import design
from linklab.link.presets import load_presets
from linklab.link.radio import RadioSpec, station_positions
from linklab.link.radio_curve import measured_curve, parse_curve
from linklab.link.spec import build_spec


def test_distance_fields_parse_with_units_and_refuse_the_rest():
    spec = build_spec(None, None, {"distance": "25.5m", "tx_power": "15dBm"})
    assert spec.radio == RadioSpec("ns3", 25.5, (), 15.0)
    assert build_spec(None, None, {"distance": "2550cm"}).radio.distance_m == pytest.approx(25.5)
    assert build_spec(None, None, {"radio": "curve", "distance": "24m"}).radio.mode == "curve"
    assert "no unit" in one_line(lambda: build_spec(None, None, {"distance": 25}))
    assert "no unit" in one_line(lambda: build_spec(None, None, {"distance": "25"}))
    assert "above 0 m" in one_line(lambda: build_spec(None, None, {"distance": "0m"}))
    assert "negative" in one_line(lambda: build_spec(None, None, {"distance": "-3m"}))
    assert "dBm" in one_line(lambda: build_spec(None, None, {"distance": "3m",
                                                             "tx_power": "16"}))
    assert "ns3" in one_line(lambda: build_spec(None, None, {"radio": "yans"}))
    # one direction cannot have its own medium
    message = one_line(lambda: build_spec(None, None, {"up": {"distance": "25m"}}))
    assert "whole radio medium" in message


def test_a_radio_link_refuses_stages_it_would_not_apply():
    for field, value in (("loss", "1%"), ("rate", "10Mbit/s"), ("delay", "2ms"),
                         ("outage", "1s+1s")):
        message = one_line(lambda f=field, v=value: build_spec(None, None,
                                                               {"distance": "25m", f: v}))
        assert f"--{field}" in message and "cannot be applied" in message
    assert "2304" in one_line(lambda: build_spec(None, None, {"distance": "25m",
                                                             "mtu": 9000}))
    # a preset's loss under a distance override names the preset's field
    message = one_line(lambda: build_spec("wifi-mild", load_presets()["wifi-mild"],
                                          {"distance": "25m"}))
    assert "preset 'wifi-mild': " in message


def test_positions_place_hosts_and_fig3_spreads_the_rest():
    radio = build_spec(None, None, {"distance": "25m"}).radio
    where = station_positions(radio, ["robot1", "robot2", "robot3", "robot4"])
    assert where["edge"] == (0.0, 0.0)
    expected = [(25, 0), (0, 25), (-25, 0), (0, -25)]     # 002 Fig. 3
    for k, (x, y) in enumerate(expected, start=1):
        assert where[f"robot{k}"] == pytest.approx((x, y), abs=1e-6)
        assert math.hypot(*where[f"robot{k}"]) == pytest.approx(25.0)
    radio = build_spec(None, None, {"distance": "25m",
                                    "positions": {"robot2": ["0m", "30m"]}}).radio
    where = station_positions(radio, ["robot1", "robot2"])
    assert where["robot2"] == (0.0, 30.0) and where["robot1"] == pytest.approx((25.0, 0.0))
    assert "robot" in one_line(lambda: build_spec(None, None, {"positions": {"ap": ["1m", "1m"]}}))
    assert "[x, y]" in one_line(lambda: build_spec(None, None,
                                                   {"positions": {"robot1": "1m"}}))
    # only positions, no distance: every robot must be placed
    radio = build_spec(None, None, {"positions": {"robot1": ["3m", "4m"]}}).radio
    assert "distance" in one_line(lambda: station_positions(radio, ["robot1", "robot2"]))


@pytest.mark.native
def test_ns3_design_one_medium_for_a_star_around_the_edge():
    bed = design(topology="star", hosts=4, name="radiounit", distance="25m")
    hosts = {h.name: h for h in bed.plan.hosts}
    assert set(hosts) == {"robot1", "robot2", "robot3", "robot4", "edge", "ap"}
    assert hosts["ap"].addresses == () and hosts["ap"].bridge is None
    assert hosts["edge"].address == "10.77.0.100" and hosts["robot3"].address == "10.77.0.3"
    assert [link.name for link in bed.plan.links] == [f"robot{k}-edge" for k in range(1, 5)]
    assert {w.name for w in bed.wires.values()} == {"ns3"}
    edge_ports = {link.b.ifname for link in bed.plan.links}
    assert len(edge_ports) == 1  # the edge's one radio
    air = bed.stages["robot2-edge"]["up"][0]
    assert (air.kind, air.sender, air.receiver, air.distance_m) == ("air", "robot2", "edge", 25)
    pair = design(topology="pair", name="radiounit", distance="2m").plan
    assert [link.name for link in pair.links] == ["robot-edge"]
    assert [h.name for h in pair.hosts] == ["robot", "edge", "ap"]
    assert "pair or star" in one_line(lambda: design(topology="chain", name="radiounit",
                                                     distance="25m"))
    assert "robot9" in one_line(lambda: design(topology="star", hosts=2, name="radiounit",
                                               distance="25m",
                                               positions={"robot9": ["1m", "1m"]}))


def test_fast_mode_puts_the_measured_curve_on_the_loss_stages_and_names_it():
    curve = measured_curve()
    bed = design(topology="star", hosts=2, name="radiounit", radio="curve", distance="26m",
                 positions={"robot2": ["0m", "20m"]})
    assert {w.name for w in bed.wires.values()} == {"veth"}
    far = bed.stages["robot1-ap"]["up"][0]
    assert far.kind == "loss" and far.loss == pytest.approx(curve.loss_at(26.0))
    assert far.params()["model"] == "ns3-80211a-60B" and "curve at 26 m" in far.params()["text"]
    assert bed.stages["robot2-ap"] == {"up": [], "down": []}   # 20 m: no loss on the curve
    assert bed.stages["ap-edge"] == {"up": [], "down": []}


def test_the_curve_interpolates_and_holds_its_ends():
    curve = parse_curve({"points": [{"distance_m": 25, "loss": 0}, {"distance_m": 26,
                                                                     "loss": 0.5}],
                         "size_bytes": 60, "packets": 10, "settings": {"tx_power_dbm": 16},
                         "command": "x"}, "test")
    assert curve.loss_at(10) == 0 and curve.loss_at(25.5) == pytest.approx(0.25)
    assert curve.loss_at(99) == 0.5 and curve.onset_m() == 26
    # 3 dB more power reaches 10 ** (3 / 30) times as far (log-distance, exponent 3)
    assert curve.loss_at_power(25.5 * 10 ** 0.1, 19) == pytest.approx(0.25)
    assert curve.loss_at_power(25.5, 16) == curve.loss_at(25.5)


def test_a_curve_that_does_not_say_its_transmit_power_is_refused():
    with pytest.raises(EnvironmentProblem, match="not a loss curve"):
        parse_curve({"points": [{"distance_m": 25, "loss": 0}, {"distance_m": 26,
                                                                 "loss": 0.5}],
                     "size_bytes": 60, "packets": 10, "settings": {}, "command": "x"}, "t")


def test_fast_mode_applies_a_transmit_power_by_moving_along_the_curve():
    """tx_power is applied in the fast mode too (never dropped): 14 dBm at 24 m receives
    what 16.0206 dBm does at 24 * 10 ** (2.0206 / 30) = 27.9 m, where the curve loses."""
    curve = measured_curve()
    assert curve.loss_at(24.0) == 0
    bed = design(name="radiounit", radio="curve", distance="24m", tx_power="14dBm")
    (stage,) = bed.stages["robot-edge"]["up"]
    assert stage.loss == pytest.approx(curve.loss_at(24 * 10 ** (2.0206 / 30)))
    assert stage.loss > 0.99
    assert stage.params()["tx_power_dbm"] == 14 and "14 dBm" in stage.params()["text"]
    # at the curve's own power the stage does not name one
    at_default = design(name="radiounit", radio="curve", distance="26m")
    assert "dBm" not in at_default.stages["robot-edge"]["up"][0].params()["text"]


def test_the_shipped_curve_matches_the_papers_onset():
    """Fig. 4: loss of 60-byte packets begins at 25 m; the committed measurement agrees."""
    curve = measured_curve()
    assert curve.size_bytes == 60 and curve.packets >= 1000
    assert all(curve.loss_at(d) == 0 for d in (10, 20, 24, 24.5))
    assert 24.8 <= curve.onset_m() <= 25.5
    assert curve.loss_at(27.5) > 0.99 and curve.loss_at(30) == 1.0
    losses = [loss for _, loss in curve.points]
    assert losses == sorted(losses)   # no dip: more distance never loses less


def test_wifi_far_is_derived_from_the_medium():
    presets = load_presets()
    assert presets["wifi-far"]["radio"] == "ns3" and "burst_loss" not in presets["wifi-far"]
    spec = build_spec("wifi-far", presets["wifi-far"], {})
    assert spec.radio.distance_m == 26.0
    assert 0.05 < measured_curve().loss_at(26.0) < 0.5   # "the edge of its range"


def test_bench_link_fields_validate_distance_with_file_and_line():
    where = Located(Path("s.yaml"), 7, "axes.link.distance[1]")
    assert check_field("distance", "25.5m", where) == "25.5m"
    with pytest.raises(UsageError, match=r"^s\.yaml:7: .*no unit"):
        check_field("distance", 25, where)
    with pytest.raises(UsageError, match=r"^s\.yaml:7: .*dBm"):
        check_field("tx_power", "3W", where)


@pytest.mark.parametrize(("flags", "named"), [
    (["--distance", "26"], "--distance"), (["--tx-power", "99dBm"], "--tx-power"),
    (["--radio", "wifi"], "--radio"), (["wifi-80211a", "--radio", "curve", "--loss", "2%"],
                                       "loss")])
def test_link_up_radio_flags_refuse_bad_values_in_one_line(flags, named):
    result = subprocess.run([sys.executable, "-m", "linklab.cli", "link", "up", *flags,
                             "--name", "radioflags"], capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("linklab: error:") and named in line, line


@pytest.mark.parametrize("distance", ["27.4m", "30m", "50m", "120m"])
def test_fast_mode_beyond_the_curves_range_is_applied_as_a_dead_link(distance):
    """Where the curve gives 100 % (27.4 m and on) the fast mode is applied, not refused:
    every packet dropped by a rule nft accepts (``numgen ... < 1000000`` is outside
    ``mod 1000000``'s range 0-999999 and was refused by nft at ``link up``), counted, and
    labelled "out of range". design() is what link up, the bench's pre-run checks and
    --dry-run all run."""
    bed = design(name="radiounit", radio="curve", distance=distance)
    for direction in ("up", "down"):
        (stage,) = bed.stages["robot-edge"][direction]
        assert stage.loss == 1.0 and stage.drops_all
        assert stage.rule("drop_x") == 'counter name "drop_x" drop'   # no numgen draw
        params = stage.params()
        assert params["out_of_range"] is True
        assert params["text"] == (f"100 % (out of range: ns3-80211a-60B curve at "
                                  f"{distance[:-1]} m)")


def test_fast_mode_just_inside_the_range_rounds_honestly():
    """27.3999 m: the curve gives 99.99995 %, which the stage's 0.0001 % steps round to
    100 %: applied as every packet dropped, and the label says what the curve gave.
    27.3998 m: 99.9999 %, the last step that still draws -- labelled 99.9999 %, not
    "100 %"."""
    (edge,) = design(name="radiounit", radio="curve", distance="27.3999m"
                     ).stages["robot-edge"]["up"]
    assert edge.loss == pytest.approx(0.9999995) and edge.drops_all
    assert "numgen" not in edge.rule("d")
    assert edge.params()["text"] == ("100 % (out of range: ns3-80211a-60B curve at 27.3999 m "
                                     "gives 99.99995 %, the nearest 0.0001 % step)")
    (inside,) = design(name="radiounit", radio="curve", distance="27.3998m"
                       ).stages["robot-edge"]["up"]
    assert inside.threshold == 999_999 and not inside.drops_all
    assert inside.rule("d") == 'numgen random mod 1000000 < 999999 counter name "d" drop'
    assert inside.params()["text"] == "99.9999 % (ns3-80211a-60B curve at 27.3998 m)"
    assert inside.params()["out_of_range"] is False


@pytest.mark.native
def test_ns3_mode_beyond_the_range_is_the_medium_as_usual():
    """The ns-3 mode has no curve to run out of: at 30 m the medium is simulated and loses
    every frame itself (tests/test_ns3_medium.py brings one up there)."""
    bed = design(name="radiounit", distance="30m")
    (air,) = bed.stages["robot-edge"]["up"]
    assert (air.kind, air.distance_m) == ("air", 30.0)
    assert {w.name for w in bed.wires.values()} == {"ns3"}
