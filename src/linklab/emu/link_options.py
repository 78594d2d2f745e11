"""``linklab link up`` emulator flags -> overrides in linklab.link's spec conventions."""

from __future__ import annotations

from typing import Any

from linklab.emu.parse import gemodel_fields, parse_trace_pair, split_directions


def emu_overrides(*, delay: str | None = None, jitter: str | None = None,
                  jitter_distribution: str | None = None, loss_model: str | None = None,
                  trace: str | None = None) -> dict[str, Any]:
    """Validated overrides for ``linklab.link.up`` (delay, jitter, jitter_distribution,
    burst_loss, trace); None values are left out."""
    out: dict[str, Any] = {}
    if delay is not None:
        out["delay"] = split_directions(delay, "--delay")
    if jitter is not None:
        out["jitter"] = split_directions(jitter, "--jitter")
    if jitter_distribution is not None:
        out["jitter_distribution"] = split_directions(jitter_distribution,
                                                      "--jitter-distribution")
    if loss_model is not None:
        value = split_directions(loss_model, "--loss-model")
        for text in (value.values() if isinstance(value, dict) else [value]):
            gemodel_fields(text)  # fail here, naming --loss-model
        out["burst_loss"] = value
    if trace is not None:
        up_path, down_path = parse_trace_pair(trace)
        out["trace"] = {"up": str(up_path.resolve()), "down": str(down_path.resolve())}
    return out
