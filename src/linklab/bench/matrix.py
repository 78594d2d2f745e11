"""Scenario axes -> the list of cells to run, in an order that keeps links up.

The link is the outermost loop (bringing a link up and down costs seconds; a cell
whose link equals the previous cell's reuses it, unless the link has an outage that
must be replayed), then middleware, profile, history, type, rate, QoS, payload,
trial. The order, and so every cell's id, depends only on the scenario: a resumed
run finds the same ids.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from linklab.bench.spec import Scenario
from linklab.probes.types import FIXED_TYPE_BYTES

# Outer to inner. Keys not listed here cannot be axes (spec.FIELDS holds the same set).
LOOP_ORDER = ("link", "middleware", "profile", "history", "type", "rate", "qos",
              "payload", "count", "duration", "warmup", "outage_start", "outage_length",
              "grace")

# Seconds a cell costs beyond publishing: link up, discovery, probe start/stop, tear-down.
SETUP_S = 8.0


@dataclass(frozen=True)
class Cell:
    """One run of publisher + subscriber under one combination of settings."""

    index: int
    cell_id: str
    middleware: str
    profile: str
    link: str
    payload_bytes: int
    rate_hz: float
    qos: str
    history: str
    type: str
    count: int | None
    duration_s: float | None
    warmup_s: float
    outage_start_s: float
    outage_length_s: float | None
    grace_s: float | None
    trial: int

    @property
    def interval_s(self) -> float:
        return 1.0 / self.rate_hz

    @property
    def messages(self) -> int:
        """Messages the publisher sends (count, or rate x duration)."""
        if self.count is not None:
            return self.count
        return int(round(self.rate_hz * (self.duration_s or 0.0)))

    @property
    def publish_s(self) -> float:
        if self.count is not None:
            return self.count / self.rate_hz
        return self.duration_s or 0.0

    def axes(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("index")
        return data


def size_label(n_bytes: int) -> str:
    """Exact, short: 262144 -> '256KiB', 231000 -> '231KB', 1500 -> '1500B'."""
    for unit, factor in (("MiB", 1024**2), ("KiB", 1024), ("MB", 1000**2), ("KB", 1000)):
        if n_bytes >= factor and n_bytes % factor == 0:
            return f"{n_bytes // factor}{unit}"
    return f"{n_bytes}B"


def _slug(value: Any, key: str) -> str:
    if key == "payload":
        text = size_label(value)
    elif key == "rate":
        text = f"{value:g}Hz"
    elif key in ("duration", "warmup", "outage_start", "outage_length", "grace"):
        text = f"{key}{value:g}s"
    elif key == "count":
        text = f"n{value}"
    elif key == "profile" and str(value).endswith(".xml"):
        text = Path(value).stem
    elif key == "history":
        text = "h-" + str(value).replace("keep_last:", "last")
    else:
        text = str(value)
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)


def expand(scenario: Scenario) -> list[Cell]:
    """All cells of a scenario, outer axis first (see LOOP_ORDER)."""
    keys = [k for k in LOOP_ORDER if k in scenario.axes]
    cells: list[Cell] = []
    value_lists = [scenario.axes[k] for k in keys] + [list(range(1, scenario.trials + 1))]
    for combo in itertools.product(*value_lists):
        values = dict(scenario.fixed)
        values.update(zip(keys, combo[:-1], strict=True))
        trial = combo[-1]
        parts = [_slug(values[k], k) for k in keys]
        if scenario.trials > 1:
            parts.append(f"t{trial}")
        cell_id = "-".join(parts) or "cell"
        cells.append(Cell(
            index=len(cells), cell_id=cell_id,
            middleware=values["middleware"], profile=values["profile"], link=values["link"],
            payload_bytes=values["payload"] or FIXED_TYPE_BYTES[values["type"]],
            rate_hz=values["rate"], qos=values["qos"],
            history=values["history"], type=values["type"], count=values.get("count"),
            duration_s=values.get("duration"), warmup_s=values["warmup"],
            outage_start_s=values["outage_start"], outage_length_s=values.get("outage_length"),
            grace_s=values.get("grace"), trial=trial,
        ))
    return cells


def deadline_s(cell: Cell, outage_s: float = 0.0) -> float:
    """How long after the publisher starts a cell may take before it counts as not completed.

    Publishing time, plus any outage, plus a grace: the cell's ``grace`` or
    max(10 s, 25 % of the publishing time, 100 publish intervals) — a sample later than
    100 intervals already marks the cell failed (seed 000, Table II caption).
    """
    grace = cell.grace_s if cell.grace_s is not None else max(
        10.0, 0.25 * cell.publish_s, 100 * cell.interval_s)
    return cell.publish_s + outage_s + grace


def estimate_s(cell: Cell, outage_s: float = 0.0) -> float:
    """Expected wall time of a cell: setup, warm-up and publishing (plus an outage)."""
    if outage_s and cell.outage_length_s:
        outage_s = cell.outage_length_s
    return SETUP_S + cell.warmup_s + cell.publish_s + outage_s + 2.0


def estimate_total_s(cells: list[Cell], outage_of=lambda link: 0.0) -> float:
    return sum(estimate_s(c, outage_of(c.link)) for c in cells)
