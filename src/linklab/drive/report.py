"""Drive results: one row per middleware, the trajectory files and a Fig. 7-style plot."""

from __future__ import annotations

import csv
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from linklab.drive.kinematics import Drift, SquarePlan, Trajectory, perfect_trace, simulate


@dataclass(frozen=True)
class DriveResult:
    middleware: str
    link: str
    sent: int
    received: int
    latency_mean_ms: float
    latency_max_ms: float
    drift: Drift
    broker_cpu_percent: float | None
    trajectory_csv: str
    errors: tuple[str, ...]

    def to_dict(self) -> dict:
        data = asdict(self)
        data["drift"] = asdict(self.drift)
        data["errors"] = list(self.errors)
        return data


def write_trajectory(path: Path, trajectory: Trajectory) -> None:
    with open(path, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["t_s", "x_m", "y_m", "theta_rad"])
        for t, pose in zip(trajectory.times_s, trajectory.poses, strict=True):
            writer.writerow([f"{t:.3f}", f"{pose.x:.6f}", f"{pose.y:.6f}", f"{pose.theta:.6f}"])


def plot(path: Path, plan: SquarePlan, trajectories: dict[str, Trajectory]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 6))
    ideal = simulate(plan, perfect_trace(plan))
    axes.plot([p.x for p in ideal.poses], [p.y for p in ideal.poses], "k--", lw=1,
              label="commanded square")
    for name, trajectory in trajectories.items():
        axes.plot([p.x for p in trajectory.poses], [p.y for p in trajectory.poses], lw=1,
                  label=name)
    axes.set_aspect("equal")
    axes.set_xlabel("x (m)")
    axes.set_ylabel("y (m)")
    axes.set_title(f"{plan.laps} laps in {plan.duration_s:g} s (seed 004 Fig. 7)")
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def mean_ms(values: list[float]) -> float:
    return 1000 * sum(values) / len(values) if values else math.nan
