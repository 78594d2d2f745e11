"""Compose a drive run: hosts -> commands through each middleware -> robot model -> drift."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from linklab.drive.command_transport import MIDDLEWARES, transmit
from linklab.drive.hosts import Hosts
from linklab.drive.kinematics import SquarePlan, drift, simulate
from linklab.drive.report import DriveResult, mean_ms, plot, write_trajectory
from linklab.errors import UsageError
from linklab.units import parse_duration


@contextlib.contextmanager
def link_hosts(preset: str, run: str) -> Iterator[Hosts]:
    """Robot and edge hosts joined by ``preset`` (a linklab.link testbed, pair topology)."""
    from linklab.link import testbed

    with testbed(preset=preset, topology="pair", name=run) as bed:
        robot, edge = bed.hosts["robot"], bed.hosts["edge"]
        yield Hosts(robot=robot.netns, edge=edge.netns, robot_addr=robot.address,
                    edge_addr=edge.address, robot_if=robot.interface,
                    edge_if=edge.interface)


def _parse_length_m(text: str) -> float:
    text = text.strip()
    if text.endswith("cm"):
        return float(text[:-2]) / 100
    if text.endswith("m"):
        return float(text[:-1])
    raise UsageError(f"expected a length like 1m or 50cm, got {text!r}", argument="--side")


def drive_plan(laps: int, lap_period: str, side: str) -> SquarePlan:
    try:
        side_m = _parse_length_m(side)
    except ValueError:
        raise UsageError(f"expected a length like 1m or 50cm, got {side!r}",
                         argument="--side") from None
    try:
        period_s = parse_duration(lap_period, "--lap-period")
        return SquarePlan(side_m=side_m, laps=laps, lap_period_s=period_s)
    except ValueError as error:
        raise UsageError(f"{error} (laps >= 2; at 10 Hz a lap lasts a multiple of 1.2s)",
                         argument="--laps/--lap-period") from None


def run_drive(middlewares: tuple[str, ...], link: str, plan: SquarePlan, out: Path,
              run: str) -> list[DriveResult]:
    chosen = middlewares or MIDDLEWARES
    for name in chosen:
        if name not in MIDDLEWARES:
            raise UsageError(f"expected one of {', '.join(MIDDLEWARES)}, got {name!r}",
                             argument="--middleware")
    from linklab.link.presets import get_preset

    try:
        get_preset(link)  # an unknown preset is a usage error before anything starts
    except UsageError as error:
        raise UsageError(str(error).removeprefix("PRESET: "), argument="--link") from None
    out.mkdir(parents=True, exist_ok=True)
    results, trajectories = [], {}
    for name in chosen:
        with link_hosts(link, f"{run}{name[:2]}") as hosts:
            trace = transmit(name, hosts, plan, out / "records")
        trajectory = simulate(plan, trace.received)
        csv_path = out / f"trajectory-{name}.csv"
        write_trajectory(csv_path, trajectory)
        trajectories[name] = trajectory
        results.append(DriveResult(
            middleware=name, link=link, sent=trace.sent, received=len(trace.received),
            latency_mean_ms=mean_ms(trace.latencies_s),
            latency_max_ms=1000 * max(trace.latencies_s, default=float("nan")),
            drift=drift(plan, trajectory), broker_cpu_percent=trace.broker_cpu_percent,
            trajectory_csv=str(csv_path), errors=tuple(trace.errors)))
    plot(out / "trajectories.png", plan, trajectories)
    return results

