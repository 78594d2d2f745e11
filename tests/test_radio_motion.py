"""A moving node (link.motion) and more than four subscribers on the radio medium: the
fields, where the robots stand and go, and the refusals (pure, no root)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from linklab.bench.fields import Located
from linklab.bench.links import check_field
from linklab.errors import UsageError
from linklab.link.presets import load_presets
from linklab.link.radio import Motion, station_positions
from linklab.link.radio_plan import moves_of, radio_design
from linklab.link.spec import build_spec
from linklab.link.topology import plan_topology
from test_radio_spec import one_line


def spec_of(preset: str, **overrides):
    return build_spec(preset, load_presets()[preset], overrides)


def test_motion_parses_distance_over_duration_and_refuses_the_rest():
    radio = build_spec(None, None, {"distance": "23m", "motion": "27.5m over 20s"}).radio
    assert radio.motion == Motion(27.5, 20.0)
    assert radio.describe()["motion"] == "27.5m over 20s"
    for bad, says in [("27m", "over"), ("27 over 20s", "no unit"), ("27m over 0s", "zero"),
                      ("27m over soon", "duration"), (27, "over"), ("0m over 5s", "above 0"),
                      ("27m in 20s", "over")]:
        assert says in one_line(lambda b=bad: build_spec(None, None, {"motion": b})), bad
    assert "--motion" in one_line(lambda: build_spec(None, None, {"motion": "x"}))


def test_the_fast_mode_refuses_motion():
    assert "ns-3 medium" in one_line(lambda: spec_of("wifi-80211a-curve",
                                                     motion="27m over 20s"))


@pytest.mark.parametrize("robots", [8, 16])
def test_many_robots_sit_evenly_on_the_circle_and_move_out_along_their_rays(robots):
    """002 Fig. 3 spread to N: robot k at 360*(k-1)/N degrees, all at distance d; with
    motion each ends on its own ray at the motion's distance."""
    spec = spec_of("wifi-80211a", distance="25m", motion="30m over 12s")
    plan, stages = radio_design(plan_topology("star", "motionunit", robots), spec)
    names = [f"robot{k}" for k in range(1, robots + 1)]
    where = station_positions(spec.radio, names)
    for k, name in enumerate(names):
        angle = 2 * math.pi * k / robots
        assert where[name] == pytest.approx((25 * math.cos(angle), 25 * math.sin(angle)),
                                            abs=1e-5)
    moves = {name: (x, y, s) for name, x, y, s in moves_of(plan, spec.radio)}
    assert set(moves) == set(names)
    for name in names:
        x, y, seconds = moves[name]
        assert math.hypot(x, y) == pytest.approx(30.0) and seconds == 12.0
        assert math.atan2(y, x) == pytest.approx(math.atan2(where[name][1], where[name][0]),
                                                 abs=1e-6)
        air = stages[f"{name}-edge"]["up"][0]
        assert air.distance_m == pytest.approx(25.0, abs=1e-5)
        assert (air.moves_to_m, air.moves_over_s) == (30.0, 12.0)
        assert "25m->30m over 12s" in air.params()["text"]
    assert len(plan.links) == robots


def test_robots_placed_by_positions_stay_and_motion_needs_a_robot_to_move():
    spec = spec_of("wifi-80211a", distance="25m", motion="30m over 12s",
                   positions={"robot2": ["0m", "10m"]})
    plan, stages = radio_design(plan_topology("star", "motionunit", 2), spec)
    assert [m[0] for m in moves_of(plan, spec.radio)] == ["robot1"]
    assert stages["robot2-edge"]["up"][0].moves_to_m is None
    placed = spec_of("wifi-80211a", motion="30m over 12s",
                     positions={"robot1": ["0m", "10m"], "robot2": ["10m", "0m"]})
    assert "none would move" in one_line(
        lambda: radio_design(plan_topology("star", "motionunit", 2), placed))
    without = build_spec(None, None, {"radio": "ns3", "motion": "30m over 12s",
                                      "positions": {"edge": ["0m", "0m"]}})
    assert "give distance" in one_line(
        lambda: radio_design(plan_topology("pair", "motionunit", 1), without))


def test_no_motion_moves_nothing():
    spec = spec_of("wifi-80211a", distance="25m")
    plan, stages = radio_design(plan_topology("star", "motionunit", 16), spec)
    assert moves_of(plan, spec.radio) == []
    assert "over" not in stages["robot16-edge"]["up"][0].params()["text"]


def test_bench_link_motion_validates_with_file_and_line():
    where = Located(Path("s.yaml"), 9, "fixed.link.motion")
    assert check_field("motion", "27m over 20s", where) == "27m over 20s"
    with pytest.raises(UsageError, match=r"^s\.yaml:9: .*DISTANCE over DURATION"):
        check_field("motion", "27m", where)


def _record_file(path: Path, role: int, seqs) -> None:
    from linklab.probes.records import HEADER, MAGIC, RECORD_DTYPE

    records = np.zeros(len(seqs), dtype=RECORD_DTYPE)
    records["seq"] = seqs
    path.write_bytes(HEADER.pack(MAGIC, RECORD_DTYPE.itemsize, role) + records.tobytes())


def test_the_report_shows_a_moving_cells_loss_per_stretch(tmp_path):
    from linklab.report.motion import loss_per_window, motion_section

    assert loss_per_window(np.arange(10), np.array([0, 1, 2, 3, 5, 7]), 5) == [
        0.0, 0.0, 0.5, 0.5, 1.0]
    cell = tmp_path / "c1"
    cell.mkdir()
    _record_file(cell / "pub-t.bin", 1, range(100))
    _record_file(cell / "sub-t-robot1.bin", 0, [s for s in range(100) if s < 50 or s % 4 == 0])
    rows = [{"cell_id": "c1", "link_overrides": '{"distance": "24m", "motion": "27m over 9s"}'},
            {"cell_id": "c2", "link_overrides": '{"distance": "24m"}'}]
    section = motion_section(rows, lambda cell_id: tmp_path / cell_id)
    (row,) = section.rows
    assert [c.text for c in row] == ["c1", "sub-t-robot1", "24m", "27m over 9s",
                                     "0%", "0%", "40%", "75%", "75%"]
    assert motion_section(rows[1:], lambda cell_id: tmp_path / cell_id) is None
    # a robot walking on the relay's 802.11 medium (link.medium's motion key)
    walking = [{"cell_id": "c1", "link_overrides":
                '{"medium": {"distance": "5m", "motion": "90m over 30s"}}'},
               {"cell_id": "c2", "link_overrides": '{"medium": {"distance": "5m"}}'}]
    (row,) = motion_section(walking, lambda cell_id: tmp_path / cell_id).rows
    assert [c.text for c in row][:5] == ["c1", "sub-t-robot1", "5m", "90m over 30s", "0%"]


@pytest.mark.parametrize("robots", ["0", "33"])
def test_the_ceiling_benchmark_refuses_a_star_it_cannot_make_in_one_line(robots, capsys):
    from linklab.link.ns3.ceiling import main

    assert main(["--robots", robots]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("linklab: error: --robots:") and "1..32" in line
