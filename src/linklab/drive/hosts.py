"""The two hosts of a drive run: the robot (far host, runs the robot model's
subscriber) and the edge (commanding host; broker/router when the middleware needs one).
They come from a linklab.link testbed (``drive.run.link_hosts``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Hosts:
    robot: str  # namespace of the robot model (the far host)
    edge: str  # namespace of the commanding host (and broker/router)
    robot_addr: str
    edge_addr: str
    robot_if: str | None = None
    edge_if: str | None = None
