"""The closed-loop robot model (seed 004 §4.3): kinematics against a hand-computed lap,
drift zero with a perfect command trace and nonzero when commands are lost, and one
short run through a real broker across a namespace pair."""

from __future__ import annotations

import json
import math

import pytest

from conftest import require_root
from linklab.cli import main
from linklab.drive.kinematics import (
    Pose,
    Received,
    SquarePlan,
    Twist,
    advance,
    command,
    drift,
    perfect_trace,
    simulate,
)

PLAN = SquarePlan()  # 1 m square, 4 laps, 96 s, 10 Hz


def close(pose: Pose, x: float, y: float, theta: float, tol: float = 1e-9) -> bool:
    return (abs(pose.x - x) < tol and abs(pose.y - y) < tol
            and abs(math.remainder(pose.theta - theta, 2 * math.pi)) < tol)


def test_plan_matches_the_paper():
    assert PLAN.duration_s == 96 and PLAN.command_count == 961  # 960 commands + stop
    # each side: 4 s at 0.25 m/s (1 m), then 2 s at pi/4 rad/s (90 degrees)
    assert command(PLAN, 0) == Twist(linear_x=0.25)
    assert command(PLAN, 39) == Twist(linear_x=0.25)
    assert command(PLAN, 40) == Twist(angular_z=math.pi / 4)
    assert command(PLAN, 960) == Twist()


def test_unicycle_arc_by_hand():
    # v = 0.5 m/s, w = 0.5 rad/s: a circle of radius v/w = 1 m centred on (0, 1)
    arc = Twist(linear_x=0.5, angular_z=0.5)
    assert close(advance(Pose(), arc, math.pi), 1, 1, math.pi / 2)  # quarter: pi/2 rad
    assert close(advance(Pose(), arc, 2 * math.pi), 0, 2, math.pi)  # half a circle
    # straight along the heading
    assert close(advance(Pose(0, 0, math.pi / 2), Twist(linear_x=2.0), 0.5), 0, 1, math.pi / 2)


def test_one_lap_visits_the_hand_computed_corners():
    trajectory = simulate(PLAN, perfect_trace(PLAN))
    at = {round(t, 2): pose for t, pose in zip(trajectory.times_s, trajectory.poses, strict=True)}
    corners = {4: (1, 0, 0), 6: (1, 0, math.pi / 2), 10: (1, 1, math.pi / 2),
               12: (1, 1, math.pi), 16: (0, 1, math.pi), 18: (0, 1, 1.5 * math.pi),
               22: (0, 0, 1.5 * math.pi), 24: (0, 0, 0)}
    for t, (x, y, theta) in corners.items():
        assert close(at[t], x, y, theta), (t, at[t])
    # halfway along the first side, and halfway through the first turn
    assert close(at[2.0], 0.5, 0, 0)
    assert close(at[5.0], 1, 0, math.pi / 4)


def test_perfect_trace_has_no_drift_even_with_constant_latency():
    for latency in (0.0, 0.0123, 0.35):
        result = drift(PLAN, simulate(PLAN, perfect_trace(PLAN, latency)))
        assert result.mean_m < 1e-9 and result.max_m < 1e-9 and abs(result.heading_deg) < 1e-6
        assert result.final_position_error_m < 1e-9


def test_dropped_commands_cause_drift():
    # the last lap loses the first command of one turn: the robot holds "straight" 0.1 s
    # longer and turns 0.1 s less (pi/4 * 0.1 rad = 4.5 degrees short)
    lost = 3 * 240 + 40
    trace = [r for r in perfect_trace(PLAN, 0.01) if r.seq != lost]
    result = drift(PLAN, simulate(PLAN, trace))
    assert result.heading_deg == pytest.approx(-4.5, abs=1e-6)
    assert result.max_m > 0.1 and result.end_of_lap_m > 0.05
    # losing a command that repeats the held one changes nothing
    same = [r for r in perfect_trace(PLAN, 0.01) if r.seq != 3 * 240 + 20]
    assert drift(PLAN, simulate(PLAN, same)).max_m < 1e-9


def test_same_trace_same_trajectory_and_late_arrival_holds_the_previous_command():
    trace = perfect_trace(PLAN, 0.02)
    trace[800] = Received(800, trace[800].t_recv_s + 0.25)  # one late sample
    first, second = simulate(PLAN, trace), simulate(PLAN, list(reversed(trace)))
    assert first == second
    assert drift(PLAN, first).max_m > 0


def test_bad_arguments_are_usage_errors(capsys):
    assert main(["drive", "--lap-period", "5s"]) == 2
    assert "--lap-period" in capsys.readouterr().err
    assert main(["drive", "--middleware", "dds"]) == 2
    assert "--middleware" in capsys.readouterr().err
    assert main(["drive", "--link", "moon"]) == 2
    assert "--link: unknown preset 'moon'" in capsys.readouterr().err


def timing_explained_drift(plan: SquarePlan, trace: list[Received]) -> float:
    """The most drift the arrival times of ``trace`` can explain, to first order.

    Every command arrived once and in order, so the robot's path differs from the plan's
    only where a command took over early or late. For each command that changes what the
    robot does (a switch between straight and turn), delay that switch alone by its
    measured error and measure the drift that causes on an otherwise perfect run; the sum
    over the switches of the compared laps bounds the drift (first order, each term taken
    at its worst sign). A lost or repeated command is not a timing error: it is caught by
    the completeness check, and it alone moves the robot > 10 cm (test above).
    """
    t0 = trace[0].t_recv_s
    nominal = perfect_trace(plan)
    per_lap = round(plan.lap_period_s * plan.rate_hz)
    compared = set(range(per_lap)) | set(range((plan.laps - 1) * per_lap, plan.laps * per_lap))
    total = 0.0
    for r in trace:
        if r.seq == 0 or r.seq not in compared or command(plan, r.seq) == command(plan,
                                                                                  r.seq - 1):
            continue
        error_s = abs((r.t_recv_s - t0) - r.seq / plan.rate_hz)
        if error_s == 0:
            continue
        late = [Received(q.seq, q.t_recv_s + (error_s if q.seq == r.seq else 0.0))
                for q in nominal]
        total += drift(plan, simulate(plan, late)).max_m
    return total


@pytest.mark.integration
def test_short_drive_through_mqtt_broker(tmp_path, capsys):
    require_root()
    out = tmp_path / "drive"
    assert main(["drive", "-m", "mqtt", "--laps", "2", "--lap-period", "6s", "--out", str(out),
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["results"][0]
    assert result["received"] == result["sent"] == 121 and result["errors"] == []
    from linklab.drive.command_transport import read_records

    records = read_records(out / "records" / "mqtt-robot.bin")
    trace = [Received(seq, t_recv / 1e9) for seq, _, t_recv, _ in records]
    assert [r.seq for r in trace] == list(range(121))  # each once, in the order sent
    # an ideal link: what moved the laps apart is when commands arrived (the probes'
    # scheduling on a shared machine), nothing else
    plan = SquarePlan(laps=2, lap_period_s=6.0)
    bound = timing_explained_drift(plan, trace)
    assert result["drift"]["max_m"] <= bound + 1e-6, (result["drift"], bound)
    assert (out / "trajectories.png").stat().st_size > 0
    assert (out / "trajectory-mqtt.csv").read_text().startswith("t_s,x_m,y_m,theta_rad")


def test_the_timing_bound_explains_jitter_and_not_a_lost_command():
    plan = SquarePlan(laps=2, lap_period_s=6.0)
    jittered = [Received(r.seq, r.t_recv_s + (0.004 if r.seq % 7 == 3 else 0.0))
                for r in perfect_trace(plan)]
    actual = drift(plan, simulate(plan, jittered)).max_m
    assert 0 < actual <= timing_explained_drift(plan, jittered)
    lost = [r for r in perfect_trace(plan) if r.seq != plan.command_count // 2 + 15]
    assert drift(plan, simulate(plan, lost)).max_m > timing_explained_drift(plan, lost)
