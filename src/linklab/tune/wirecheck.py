"""model.wire against a bench run: measured interface bytes per payload byte vs predicted,
cell by cell. Pure: ``linklab model-check RUN_DIR`` (model/cli.py) reads the run and
prints these rows.

A cell is predicted when it ran Fast DDS or Cyclone DDS with the ``default`` or the
``optimized`` profile over one UDP topic; ``optimized`` is what the bench generates
(linklab.tune with the cell's rate, payload, link rate and loss, as
bench/environment.py's ``tuned`` calls it). The target (issue 15): every completed cell
within 15 %.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from linklab.tune import TuningInput, tune
from linklab.tune.predict import default_profile, predict_wire, tuned_profile

TARGET = 0.15
PROFILES = ("default", "optimized")
MIDDLEWARES = ("fastdds", "cyclonedds")


@dataclass(frozen=True)
class LinkInfo:
    rate_bits_per_s: float
    per: float
    mtu: int = 1500


@dataclass(frozen=True)
class Comparison:
    cell_id: str
    middleware: str
    profile: str
    payload_bytes: int
    per: float
    completed: bool
    measured: float
    predicted: float

    @property
    def error(self) -> float:
        """(predicted - measured) / measured."""
        if not self.measured or math.isnan(self.measured):
            return math.nan
        return (self.predicted - self.measured) / self.measured

    @property
    def within(self) -> bool:
        return abs(self.error) <= TARGET

    def to_dict(self) -> dict:
        return {"cell_id": self.cell_id, "middleware": self.middleware, "profile": self.profile,
                "payload_bytes": self.payload_bytes, "per": self.per,
                "completed": self.completed, "measured": self.measured,
                "predicted": self.predicted, "error": self.error, "within": self.within}


def predicted_for(middleware: str, profile: str, payload_bytes: int, rate_hz: float,
                  link: LinkInfo) -> float:
    if profile == "optimized":
        settings = tune(TuningInput(rate_hz=rate_hz, payload_bytes=payload_bytes,
                                    link_bits_per_s=link.rate_bits_per_s,
                                    per=link.per)).settings
        model = tuned_profile(middleware, settings)
    else:
        model = default_profile(middleware)
    return predict_wire(model, profile, payload_bytes, rate_hz, link.per,
                        link.rate_bits_per_s, link.mtu).amplification


def compare(rows: list[dict], links: dict[str, LinkInfo]) -> list[Comparison]:
    """One Comparison per predictable row (module docstring), in the run's order."""
    out = []
    for row in rows:
        middleware, profile = row.get("middleware"), row.get("profile")
        if middleware not in MIDDLEWARES or profile not in PROFILES:
            continue
        if (row.get("topics") or 1) != 1 or not row.get("rate_hz") or not row.get(
                "payload_bytes"):
            continue
        link = links.get(row.get("link"))
        if link is None:
            continue
        measured = row.get("wire_amplification")
        measured = float(measured) if measured is not None else math.nan
        out.append(Comparison(
            cell_id=str(row.get("cell_id")), middleware=middleware, profile=profile,
            payload_bytes=int(row["payload_bytes"]), per=link.per,
            completed=row.get("status") == "ok", measured=measured,
            predicted=predicted_for(middleware, profile, int(row["payload_bytes"]),
                                    float(row["rate_hz"]), link)))
    return out


def render(comparisons: list[Comparison]) -> list[str]:
    lines = [f"{'cell':<44} {'done':<5} {'measured':>9} {'model':>7} {'error':>7}  "]
    for c in comparisons:
        mark = "" if not c.completed else ("ok" if c.within else "OUTSIDE 15 %")
        lines.append(f"{c.cell_id:<44} {'yes' if c.completed else 'no':<5} "
                     f"{c.measured:>9.3f} {c.predicted:>7.3f} {c.error:>+7.1%}  {mark}")
    done = [c for c in comparisons if c.completed and not math.isnan(c.error)]
    inside = [c for c in done if c.within]
    worst = max((abs(c.error) for c in done), default=math.nan)
    lines.append(f"{len(inside)}/{len(done)} completed cells within {TARGET:.0%} "
                 f"(largest error {worst:.1%}); {len(comparisons) - len(done)} not completed")
    return lines
