"""``linklab drive``: the closed-loop robot test (seed 004 §4.3) per middleware and link."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from linklab.output import print_json


def register(app: typer.Typer) -> None:
    @app.command("drive")
    def drive(
        middleware: list[str] = typer.Option(
            None, "--middleware", "-m",
            help="Middleware to drive over: fastdds, cyclonedds, zenoh-peer, zenoh-router or "
                 "mqtt; repeatable. Default: all five."),
        link: str = typer.Option(
            "ethernet-1g", "--link",
            help="Link preset between the host and the robot (linklab link presets), "
                 "e.g. ethernet-1g, wifi-mild."),
        laps: int = typer.Option(4, "--laps", help="Laps of the square (paper 004: 4)."),
        lap_period: str = typer.Option("24s", "--lap-period",
                                       help="Time per lap (paper 004: 96 s for 4 laps)."),
        side: str = typer.Option("1m", "--side", help="Side of the square, e.g. 1m."),
        out: Path = typer.Option(Path("drive-results"), "--out",
                                 help="Directory for the trajectories, records and plot."),
        json_output: bool = typer.Option(False, "--json", help="Print the results as JSON."),
    ) -> None:
        """Drive a simulated robot in a square over each middleware and measure its drift.

        The closed-loop test of paper 004 (Comparison of DDS, MQTT and Zenoh in
        Edge-to-Edge/Cloud Communication with ROS 2): 10 Hz velocity commands go over the
        middleware and the link to a unicycle robot model on the far host; the table
        shows how far the robot drifts between the first and the last lap."""
        from linklab.drive.run import drive_plan, run_drive

        plan = drive_plan(laps, lap_period, side)
        results = run_drive(tuple(middleware or ()), link, plan, out,
                            run=f"drv{os.getpid()}")
        if json_output:
            print_json({"plan": {"laps": plan.laps, "duration_s": plan.duration_s,
                                 "side_m": plan.side_m, "rate_hz": plan.rate_hz},
                        "results": [r.to_dict() for r in results],
                        "plot": str(out / "trajectories.png")})
            return
        from rich.table import Table

        from linklab.output import print_text

        table = Table(title=f"drive: {plan.laps} laps, {plan.duration_s:g} s, link {link}")
        for column in ("middleware", "received", "latency mean", "drift mean", "drift max",
                       "end-of-lap drift", "heading drift"):
            table.add_column(column, justify="right")
        for r in results:
            table.add_row(r.middleware, f"{r.received}/{r.sent}", f"{r.latency_mean_ms:.2f} ms",
                          f"{r.drift.mean_m * 100:.2f} cm", f"{r.drift.max_m * 100:.2f} cm",
                          f"{r.drift.end_of_lap_m * 100:.2f} cm",
                          f"{r.drift.heading_deg:.2f}°")
        print_text(table)
        print_text(f"trajectories and plot in {out}")
