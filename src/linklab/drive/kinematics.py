"""Unicycle robot model driven by a received-command trace. Pure functions, no I/O.

The plan (seed 004 §3.1.1): "The TurtleBot 4 will run four square circles in 96
seconds", commanded from a host at 10 Hz (the paper's /cmd_vel, geometry_msgs/Twist).
Here a lap is four sides; each side is a straight segment followed by an in-place turn
of 90 degrees, so a lap takes 96 s / 4 = 24 s and a side 6 s.

The robot integrates the last command it received, holding it when none arrives
(what a TurtleBot base does between /cmd_vel messages), with the exact unicycle
solution for a constant (v, w) over an interval:
    w == 0: x += v dt cos(th), y += v dt sin(th)
    w != 0: x += v/w (sin(th + w dt) - sin(th)), y -= v/w (cos(th + w dt) - cos(th)),
            th += w dt
so the trajectory is determined by the trace alone (no step-size error, no randomness).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

TWIST_CDR_BYTES = 4 + 6 * 8  # CDR encapsulation + geometry_msgs/Twist (2 x Vector3 float64)


@dataclass(frozen=True)
class Twist:
    """geometry_msgs/Twist; a ground robot uses linear.x and angular.z."""

    linear_x: float = 0.0
    linear_y: float = 0.0
    linear_z: float = 0.0
    angular_x: float = 0.0
    angular_y: float = 0.0
    angular_z: float = 0.0


STOP = Twist()


@dataclass(frozen=True)
class SquarePlan:
    side_m: float = 1.0
    laps: int = 4
    lap_period_s: float = 24.0  # 96 s / 4 laps (seed 004 §3.1.1)
    rate_hz: float = 10.0
    straight_fraction: float = 2.0 / 3.0  # of each side's time: 4 s straight, 2 s turning

    def __post_init__(self) -> None:
        if self.laps < 2:
            raise ValueError("drift compares the first and last lap: at least 2 laps")
        if self.side_m <= 0 or self.lap_period_s <= 0 or self.rate_hz <= 0:
            raise ValueError("side, lap period and rate must be positive")
        if not 0 < self.straight_fraction < 1:
            raise ValueError("straight_fraction must be between 0 and 1")
        straight = self.ticks_per_side * self.straight_fraction
        side = self.ticks_per_side
        if abs(straight - round(straight)) > 1e-9 or abs(side - round(side)) > 1e-9:
            raise ValueError("each side's straight and turn phases must be whole command periods")

    @property
    def side_period_s(self) -> float:
        return self.lap_period_s / 4

    @property
    def ticks_per_side(self) -> float:
        return self.side_period_s * self.rate_hz

    @property
    def straight_ticks(self) -> int:
        return round(self.ticks_per_side * self.straight_fraction)

    @property
    def duration_s(self) -> float:
        return self.laps * self.lap_period_s

    @property
    def command_count(self) -> int:
        """Commands in the run, the final STOP included."""
        return round(self.duration_s * self.rate_hz) + 1

    @property
    def speed_mps(self) -> float:
        return self.side_m / (self.straight_ticks / self.rate_hz)

    @property
    def turn_rate_rps(self) -> float:
        turn_s = (round(self.ticks_per_side) - self.straight_ticks) / self.rate_hz
        return (math.pi / 2) / turn_s


def command(plan: SquarePlan, seq: int) -> Twist:
    """The command the host sends as sample ``seq`` (sent at seq / rate_hz)."""
    if seq < 0 or seq >= plan.command_count:
        raise ValueError(f"seq {seq} outside the plan (0..{plan.command_count - 1})")
    if seq == plan.command_count - 1:
        return STOP
    tick_in_side = seq % round(plan.ticks_per_side)
    if tick_in_side < plan.straight_ticks:
        return Twist(linear_x=plan.speed_mps)
    return Twist(angular_z=plan.turn_rate_rps)


@dataclass(frozen=True)
class Pose:
    x: float = 0.0
    y: float = 0.0
    theta: float = 0.0


def advance(pose: Pose, twist: Twist, dt: float) -> Pose:
    """Exact unicycle motion for constant (linear.x, angular.z) over ``dt`` seconds."""
    v, w = twist.linear_x, twist.angular_z
    if dt <= 0:
        return pose
    theta = pose.theta + w * dt
    if abs(w) < 1e-12:
        return Pose(pose.x + v * dt * math.cos(pose.theta),
                    pose.y + v * dt * math.sin(pose.theta), theta)
    return Pose(pose.x + v / w * (math.sin(theta) - math.sin(pose.theta)),
                pose.y - v / w * (math.cos(theta) - math.cos(pose.theta)), theta)


@dataclass(frozen=True)
class Received:
    """One command as the robot got it: which sample, when (seconds on the robot's clock)."""

    seq: int
    t_recv_s: float


@dataclass(frozen=True)
class Trajectory:
    times_s: tuple[float, ...]  # since the robot received its first command
    poses: tuple[Pose, ...]


def simulate(plan: SquarePlan, trace: Sequence[Received], sample_period_s: float = 0.05,
             tail_s: float = 0.0) -> Trajectory:
    """Integrate the commands in ``trace`` (arrival order = application order; a late
    duplicate or out-of-order sample replaces the held command like a real subscriber
    callback would). Time zero is the first arrival; the run is sampled every
    ``sample_period_s`` for the plan's duration plus ``tail_s``."""
    events = sorted(trace, key=lambda r: (r.t_recv_s, r.seq))
    if not events:
        return Trajectory((0.0,), (Pose(),))
    t0 = events[0].t_recv_s
    horizon = plan.duration_s + tail_s
    n_samples = int(round(horizon / sample_period_s)) + 1
    times = tuple(i * sample_period_s for i in range(n_samples))
    poses: list[Pose] = []
    pose, now, held = Pose(), 0.0, STOP
    index = 0
    for t in times:
        # apply every arrival up to t, integrating the held command between arrivals
        while index < len(events) and events[index].t_recv_s - t0 <= t:
            arrival = events[index].t_recv_s - t0
            pose = advance(pose, held, arrival - now)
            now = arrival
            held = command(plan, events[index].seq)
            index += 1
        pose = advance(pose, held, t - now)
        now = t
        poses.append(pose)
    return Trajectory(times, tuple(poses))


@dataclass(frozen=True)
class Drift:
    """First lap vs last lap, compared at the same time into the lap (seed 004 Fig. 8)."""

    mean_m: float
    max_m: float
    end_of_lap_m: float  # position after the last lap vs after the first
    heading_deg: float  # heading after the last lap vs after the first
    final_position_error_m: float  # distance from the start when the run ends


def _position_at(trajectory: Trajectory, t: float) -> Pose:
    period = trajectory.times_s[1] - trajectory.times_s[0] if len(trajectory.times_s) > 1 else 1
    index = min(int(round(t / period)), len(trajectory.poses) - 1)
    return trajectory.poses[index]


def drift(plan: SquarePlan, trajectory: Trajectory) -> Drift:
    if len(trajectory.times_s) < 2:
        nan = float("nan")
        return Drift(nan, nan, nan, nan, nan)
    period = trajectory.times_s[1] - trajectory.times_s[0]
    per_lap = int(round(plan.lap_period_s / period))
    last_start = (plan.laps - 1) * per_lap
    distances = []
    for k in range(per_lap + 1):
        a, b = trajectory.poses[k], trajectory.poses[last_start + k]
        distances.append(math.hypot(b.x - a.x, b.y - a.y))
    end_first = trajectory.poses[per_lap]
    end_last = trajectory.poses[min(plan.laps * per_lap, len(trajectory.poses) - 1)]
    heading = math.degrees(end_last.theta - end_first.theta - 2 * math.pi * (plan.laps - 1))
    final = trajectory.poses[-1]
    return Drift(mean_m=sum(distances) / len(distances), max_m=max(distances),
                 end_of_lap_m=math.hypot(end_last.x - end_first.x, end_last.y - end_first.y),
                 heading_deg=heading, final_position_error_m=math.hypot(final.x, final.y))


def perfect_trace(plan: SquarePlan, latency_s: float = 0.0) -> list[Received]:
    """Every command arrives, each ``latency_s`` after it was sent."""
    return [Received(seq, seq / plan.rate_hz + latency_s) for seq in range(plan.command_count)]
