"""The fast mode of a radio link: the ns-3 medium's measured loss-vs-distance curve.

``radio-curve.json`` (beside this file) is what ``python -m linklab.link.ns3.calibrate``
measured with the ns-3 program in simulated time: the loss of 60-byte packets sent
between two nodes at each distance (paper 002 §IV, Fig. 4), with every setting and the
command that made it. ``radio: curve`` gives each robot's link the loss at its distance
from the edge, applied by the kernel loss stage (nft, Bernoulli per packet) -- no
simulator, so any rate is carried, but the loss does not depend on the frame's size
(DDS frames are larger than 60 bytes and lose more on the real medium), on retries seen
by the sender, or on contention. The stage names the curve as its model in every output.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

from linklab.errors import EnvironmentProblem
from linklab.link.stages import LOSS_RESOLUTION, LossStage
from linklab.units import format_percent

CURVE_FILE = "radio-curve.json"
MODEL_NAME = "ns3-80211a-60B"


@dataclass(frozen=True)
class Curve:
    points: tuple[tuple[float, float], ...]   # (distance m, loss fraction), by distance
    size_bytes: int
    packets: int
    settings: dict[str, Any]
    command: str

    def loss_at(self, distance_m: float) -> float:
        """Linear interpolation between measured distances; the ends hold outside them."""
        pts = self.points
        if distance_m <= pts[0][0]:
            return pts[0][1]
        if distance_m >= pts[-1][0]:
            return pts[-1][1]
        for (d0, l0), (d1, l1) in zip(pts, pts[1:], strict=False):
            if d0 <= distance_m <= d1:
                return l0 + (l1 - l0) * (distance_m - d0) / (d1 - d0)
        raise AssertionError("unreachable: points are sorted")

    def onset_m(self) -> float | None:
        """The first measured distance with any loss."""
        return next((d for d, loss in self.points if loss > 0), None)


def curve_path() -> Path:
    return Path(str(resources.files("linklab.link"))) / CURVE_FILE


def parse_curve(data: dict[str, Any], where: str) -> Curve:
    try:
        points = tuple(sorted((float(p["distance_m"]), float(p["loss"]))
                              for p in data["points"]))
        curve = Curve(points, int(data["size_bytes"]), int(data["packets"]),
                      dict(data["settings"]), str(data["command"]))
    except (KeyError, TypeError, ValueError) as error:
        raise EnvironmentProblem(f"{where} is not a loss curve ({error!r}); make it again: "
                                 "python -m linklab.link.ns3.calibrate") from None
    if len(points) < 2 or any(not 0 <= loss <= 1 for _, loss in points):
        raise EnvironmentProblem(f"{where}: a curve needs two or more points with loss in "
                                 "0..1; make it again: python -m linklab.link.ns3.calibrate")
    return curve


@cache
def measured_curve() -> Curve:
    path = curve_path()
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise EnvironmentProblem(f"{path} cannot be read ({error}); make it: "
                                 "python -m linklab.link.ns3.calibrate") from None
    return parse_curve(data, str(path))


@dataclass
class CurveLossStage(LossStage):
    """The kernel loss stage with its loss taken from the measured curve (named as such)."""

    distance_m: float = 0.0
    model: str = MODEL_NAME
    kind: ClassVar[str] = "loss"

    def params(self) -> dict[str, Any]:
        text = format_percent(self.threshold / LOSS_RESOLUTION)
        return {**super().params(), "model": self.model, "distance_m": self.distance_m,
                "text": f"{text} ({self.model} curve at {self.distance_m:g} m)"}
