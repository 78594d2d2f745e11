"""The latency replay's machine (tune/latencymachine.py), fitted on a run's own loss-free
tuned cells, so that ``linklab model-check --latency`` predicts the lossy cells on the
machine that ran them rather than on the one the stored values came from. Pure.

Without loss a sample's latency is the machine's alone -- how fast the writer hands its
fragments to the socket, how fast the reader takes them in, how late its thread wakes --
and nothing of the repair protocol the model is about. So those cells calibrate and every
cell with loss is a prediction. Idle loss-free cells fit each middleware's sending and
receiving rates and hand-over, and the wake-ups; loss-free cells beside CPU-bound
competitors fit what a competitor adds. The search is coordinate descent over fixed
candidate values (two sweeps; a reader's rate and hand-over searched together), scored by
the cells outside the target, then the squared relative errors of mean and p95. The
writer's sending rate and the timers' wake-ups are left as stored: loss-free cells hardly
show them (a writer faster than the link, no repair timer), and fitted on those cells
they wander to values the lossy cells contradict.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from linklab.model.latency import predict
from linklab.tune.latencycheck import (
    MIDDLEWARES,
    TARGET,
    latency_input,
    predictable,
    row_contention,
    tuned_settings,
)
from linklab.tune.latencymachine import STORED, Calibration
from linklab.tune.wirecheck import LinkInfo

FIT_SAMPLES = 400  # replayed samples per cell while fitting (loss-free: few suffice)
SWEEPS = 2
MIN_CELLS = 2  # loss-free idle cells a middleware needs to be fitted
# candidate values (bytes/s, seconds)
RECEIVE = (50e6, 60e6, 80e6, 101e6, 130e6, 160e6, 200e6, 300e6)
HAND_OVER = (0.0, 0.00005, 0.0001, 0.0002, 0.0003)
READER_WAKE = (0.0, 0.00003, 0.00005, 0.0001, 0.0002)
WAKE_SHARE = (0.05, 0.1, 0.15, 0.2, 0.3, 0.4)
SLICE = (0.002, 0.003, 0.0045, 0.006, 0.008)


@dataclass(frozen=True)
class Fit:
    calibration: Calibration
    fitted_cells: tuple[str, ...]  # the cell ids the values were fitted on


def loss_free(row: dict, links: dict[str, LinkInfo]) -> bool:
    """A completed, predictable cell over a link without loss: one to fit on."""
    return predictable(row, links) and links[row["link"]].per == 0 \
        and row.get("status") == "ok" and row.get("latency_mean_ms") is not None \
        and row.get("latency_p95_ms") is not None


def _cell_error(row: dict, link: LinkInfo, calibration: Calibration) -> float:
    competitors, cores = row_contention(row)
    payload, rate = int(row["payload_bytes"]), float(row["rate_hz"])
    settings = tuned_settings(payload, rate, link, competitors, cores)
    x = latency_input(row["middleware"], settings, payload, rate, link, competitors, cores,
                      type_name=row.get("type") or "Bytes", calibration=calibration)
    r = predict(x, samples=FIT_SAMPLES)
    if not math.isfinite(r.mean_s):
        return math.inf
    mean = (r.mean_s * 1e3 - row["latency_mean_ms"]) / row["latency_mean_ms"]
    p95 = (r.p95_s * 1e3 - row["latency_p95_ms"]) / row["latency_p95_ms"]
    # a cell outside the target costs a whole unit; within it, its squared errors
    # choose between settings that put the same cells inside
    return (max(abs(mean), abs(p95)) > TARGET) + mean * mean + p95 * p95


def _score(rows: Sequence[dict], links: dict[str, LinkInfo], c: Calibration) -> float:
    return sum(_cell_error(row, links[row["link"]], c) for row in rows)


def _descend(c: Calibration, axes: list[tuple[tuple, Callable]],
             score: Callable[[Calibration], float]) -> Calibration:
    """Coordinate descent: each axis in turn set to its best candidate, SWEEPS times."""
    best = score(c)
    for _ in range(SWEEPS):
        for candidates, apply in axes:
            for value in candidates:
                trial = apply(c, value)
                s = score(trial)
                if s < best:
                    best, c = s, trial
    return c


def _machine_axis(middleware: str) -> tuple[tuple, Callable]:
    """The reader's rate and hand-over together: they trade off against each other (a
    slower reader with a shorter hand-over gives a loss-free sample the same latency),
    so one at a time the search stops short."""
    def apply(c: Calibration, value: tuple[float, float]) -> Calibration:
        receive, hand_over = value
        return c.with_machine(middleware, replace(c.machine(middleware),
                                                  receive_bytes_per_s=receive,
                                                  receive_s=hand_over))
    return tuple(itertools.product(RECEIVE, HAND_OVER)), apply


def _axis(name: str) -> Callable:
    return lambda c, value: replace(c, **{name: value})


def calibrate(rows: Sequence[dict], links: dict[str, LinkInfo], run_name: str,
              start: Calibration = STORED) -> Fit | None:
    """The machine fitted on ``rows``' loss-free tuned cells, or None when no middleware
    has MIN_CELLS idle ones (the stored values stand)."""
    cells = [r for r in rows if loss_free(r, links)]
    idle = [r for r in cells if row_contention(r)[0] == 0]
    busy = [r for r in cells if row_contention(r)[0] > 0]
    fitted = [m for m in MIDDLEWARES if sum(r["middleware"] == m for r in idle) >= MIN_CELLS]
    if not fitted:
        return None
    used = [r for r in idle if r["middleware"] in fitted]
    axes = [_machine_axis(m) for m in fitted]
    axes.append((READER_WAKE, _axis("reader_wake_s")))
    c = _descend(start, axes, lambda c: _score(used, links, c))
    busy = [r for r in busy if r["middleware"] in fitted]
    if busy:
        c = _descend(c, [(WAKE_SHARE, _axis("busy_wake_share")), (SLICE, _axis("busy_slice_s"))],
                     lambda c: _score(busy, links, c))
        used += busy
    names = " and ".join({"fastdds": "Fast DDS", "cyclonedds": "Cyclone DDS"}[m] for m in fitted)
    c = replace(c, source=f"fitted on {run_name}'s {len(used)} loss-free cells of {names}")
    return Fit(c, tuple(str(r.get("cell_id")) for r in used))
