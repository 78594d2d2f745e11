"""Does a replay match the path it was measured from? (issue 16's tolerances)

Both sides are measurements by ``linklab link measure``, so each number carries a
standard error from its own sample (fit.py). A row compares one quantity:

- ``tolerance``: loss within 1 point; mean burst length within 20 %; RTT median within
  10 %; carried rate within 10 % (relative ones relative to the measured value);
- ``bound``: Z standard errors of the difference (Z = 4.42, two-sided 1e-5): what the
  difference may reach by sampling alone if the replay were perfect. ``enough`` is
  bound <= tolerance: the samples are large enough for the tolerance to be a fair test.
  A test asserts ``enough`` (the sample size is right) and ``within`` (the replay is).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from linklab.field.measure import Measurement

Z = 4.42
TOLERANCE = {"loss": 0.01, "mean burst": 0.20, "RTT median": 0.10, "rate": 0.10}


@dataclass(frozen=True)
class Row:
    quantity: str
    direction: str
    measured: float
    replay: float
    difference: float          # replay - measured (absolute for loss, relative otherwise)
    tolerance: float
    bound: float
    unit: str                  # "points", "relative" or "bytes"

    @property
    def within(self) -> bool:
        return abs(self.difference) <= self.tolerance

    @property
    def enough(self) -> bool:
        return self.bound <= self.tolerance

    def to_dict(self) -> dict:
        return {**asdict(self), "within": self.within, "enough": self.enough}


def _relative(quantity: str, direction: str, ref: float, rep: float, se_ref: float,
              se_rep: float) -> Row:
    return Row(quantity, direction, ref, rep, (rep - ref) / ref, TOLERANCE[quantity],
               Z * math.hypot(se_ref, se_rep) / ref, "relative")


def compare(ref: Measurement, rep: Measurement) -> list[Row]:
    rows = []
    for name in ("up", "down"):
        a, b = ref.direction(name).loss, rep.direction(name).loss
        rows.append(Row("loss", name, a.mean_loss, b.mean_loss, b.mean_loss - a.mean_loss,
                        TOLERANCE["loss"], Z * math.hypot(a.se_loss, b.se_loss), "points"))
        if a.bursts and b.bursts:
            rows.append(_relative("mean burst", name, a.mean_burst, b.mean_burst, a.se_burst,
                                  b.se_burst))
    rows.append(_relative("RTT median", "both", ref.rtt.p50_ms, rep.rtt.p50_ms,
                          ref.rtt.se_median_ms, rep.rtt.se_median_ms))
    for name in ("up", "down"):
        a, b = ref.direction(name), rep.direction(name)
        if a.carried_bound == b.carried_bound == "saturated":
            rows.append(_relative("rate", name, a.carried_bps, b.carried_bps,
                                  a.carried_se_bps, b.carried_se_bps))
        if a.pmtu and b.pmtu:   # found by a search that losses cannot shrink: exact
            rows.append(Row("path MTU", name, a.pmtu, b.pmtu, b.pmtu - a.pmtu, 0, 0, "bytes"))
    return rows


def comparable_gaps(ref: Measurement, rep: Measurement) -> list[str]:
    """What could not be compared, and why (a lower bound of a rate, no bursts)."""
    out = []
    for name in ("up", "down"):
        a, b = ref.direction(name), rep.direction(name)
        if not (a.carried_bound == b.carried_bound == "saturated"):
            out.append(f"rate {name}: not saturated on both sides ({a.carried_bound} / "
                       f"{b.carried_bound})")
        if bool(a.loss.bursts) != bool(b.loss.bursts):
            out.append(f"mean burst {name}: losses on one side only")
        if not (a.pmtu and b.pmtu):
            out.append(f"path MTU {name}: not found on both sides ({a.pmtu} / {b.pmtu})")
    return out
