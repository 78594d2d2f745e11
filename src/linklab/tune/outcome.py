"""What ``linklab tune`` concludes from a tuning beyond the profiles themselves: whether
the declared CPU contention leaves no writer that holds, and the tuning as one JSON
document (profiles written, latency model, --verify verdicts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from linklab.tune.inputs import TuningInput
from linklab.tune.result import TuningResult


def cpu_falls_short(result: TuningResult, middlewares: tuple[str, ...]) -> bool:
    """True when a CPU verdict was asked for (--cpu-load, --cpu-share) and no middleware's
    tuned writer holds under it."""
    cpu = result.explanation.cpu
    return cpu is not None and not any(cpu.fits(m) for m in middlewares)


def tuning_document(t: TuningInput, result: TuningResult, paths: dict[str, Path],
                    verdicts: list | None) -> dict[str, Any]:
    """The tuning, the files written, the latency model of each tuned middleware and the
    --verify verdicts (when run), as ``linklab tune --json`` prints them."""
    from linklab.tune.latencycheck import MIDDLEWARES, for_tuning

    data = {**result.to_dict(), "files": {k: str(v) for k, v in paths.items()}}
    data["latency_model"] = {m: for_tuning(t, result.settings, m).to_dict()
                             for m in t.middlewares if m in MIDDLEWARES}
    if verdicts is not None:
        data["verify"] = [v.__dict__ for v in verdicts]
    return data
