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
from linklab.link.impairments.loss import LOSS_RESOLUTION, LossStage, steps_text
from linklab.units import format_percent

CURVE_FILE = "radio-curve.json"
MODEL_NAME = "ns3-80211a-60B"
# The medium's path loss grows as 10 * n * log10(d) with n = 3 (002 §III-A: ns-3's default
# LogDistancePropagationLossModel, exponent 3), so a station's transmit power moves the
# curve along distance: received power P - L0 - 30 log10(d) is the same at (P, d) and
# (P0, d * 10 ** ((P0 - P) / 30)), and the loss of a frame depends on nothing else.
PATH_LOSS_EXPONENT = 3.0


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

    def loss_at_power(self, distance_m: float, tx_power_dbm: float) -> float:
        """The loss at ``distance_m`` when every station sends at ``tx_power_dbm`` (the
        curve was measured at ``tx_power_dbm`` of its settings): the loss at the equivalent
        distance at the curve's power (PATH_LOSS_EXPONENT above)."""
        return self.loss_at(equivalent_distance_m(distance_m, tx_power_dbm,
                                                  self.tx_power_dbm))

    @property
    def tx_power_dbm(self) -> float:
        return float(self.settings["tx_power_dbm"])

    def onset_m(self) -> float | None:
        """The first measured distance with any loss."""
        return next((d for d, loss in self.points if loss > 0), None)


def equivalent_distance_m(distance_m: float, tx_power_dbm: float,
                          curve_power_dbm: float) -> float:
    """The distance at ``curve_power_dbm`` with the received power of ``distance_m`` at
    ``tx_power_dbm`` (log-distance path loss, exponent PATH_LOSS_EXPONENT)."""
    return distance_m * 10 ** ((curve_power_dbm - tx_power_dbm)
                               / (10 * PATH_LOSS_EXPONENT))


def curve_path() -> Path:
    return Path(str(resources.files("linklab.link"))) / CURVE_FILE


def parse_curve(data: dict[str, Any], where: str) -> Curve:
    try:
        points = tuple(sorted((float(p["distance_m"]), float(p["loss"]))
                              for p in data["points"]))
        curve = Curve(points, int(data["size_bytes"]), int(data["packets"]),
                      dict(data["settings"]), str(data["command"]))
        curve.tx_power_dbm   # noqa: B018 (the power it was measured at must be there)
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
    """The kernel loss stage with its loss taken from the measured curve (named as such).

    Beyond the curve's range (100 %: 27.4 m and on at 16.0206 dBm) the stage is applied,
    not refused: the link is up and drops every packet, counted, and says "out of range".
    Paper 002 measures there: Fig. 4's loss runs on to 100 % with distance, and its
    message-loss figures (Fig. 5, the Parameters profile: "none of the messages manage to
    be delivered") include distances where nothing arrives; the ns-3 mode at such a
    distance (radio_plan.AirStage) brings the medium up and loses every frame, and the
    fast mode stands in for it, so a distance sweep gets the same answer in both modes.
    A loss that only rounds to 100 % (or to 0 %) in the stage's 0.0001 % steps says what
    the curve gave beside what is applied."""

    distance_m: float = 0.0
    tx_power_dbm: float | None = None   # None: the power the curve was measured at
    model: str = MODEL_NAME
    kind: ClassVar[str] = "loss"

    def params(self) -> dict[str, Any]:
        applied = self.threshold / LOSS_RESOLUTION
        power = "" if self.tx_power_dbm is None else f", {self.tx_power_dbm:g} dBm"
        where = f"{self.model} curve at {self.distance_m:g} m{power}"
        if applied != self.loss and applied in (0.0, 1.0):   # rounded to none / every one
            curve = f"{self.loss * 100:.6f}".rstrip("0").rstrip(".")
            where += (f" gives {curve} %, the nearest "
                      f"{format_percent(1 / LOSS_RESOLUTION)} step")
        if self.drops_all:
            where = "out of range: " + where
        return {**super().params(), "model": self.model, "distance_m": self.distance_m,
                **({} if self.tx_power_dbm is None else {"tx_power_dbm": self.tx_power_dbm}),
                "out_of_range": self.drops_all,
                "text": f"{steps_text(self.threshold)} ({where})"}
