"""Where a run's cells go: a new run directory for a scenario, or the run a ``--resume``
continues, with the scenario and the gates it was started with (linklab bench and linklab
k8s run)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from linklab.bench.spec import Scenario, parse_scenario
from linklab.rundir import RunStore


def create_run(out: Path, scenario: Scenario, cell_ids: list[str], *, options: dict[str, Any],
               estimated_s: float, kind: str = "") -> RunStore:
    """A new run directory ``OUT/NAME[-KIND]-YYYYmmdd-HHMMSS`` holding the scenario (with its
    text, so a --resume parses it again), the command's options and the planned cells."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    name = f"{scenario.name}-{kind}-{stamp}" if kind else f"{scenario.name}-{stamp}"
    return RunStore.create(out / name, scenario=dict(scenario.to_dict(), text=scenario.text),
                           options=options, planned=cell_ids, estimated_s=estimated_s)


def holds_scenario(info: dict[str, Any]) -> bool:
    """Whether a run's run.json keeps its scenario (text and path): it can be resumed."""
    saved = info.get("scenario") or {}
    return isinstance(saved.get("text"), str) and bool(saved.get("path"))


def saved_scenario(info: dict[str, Any]) -> Scenario:
    """The scenario a run was started with, parsed again as then (its --quick and --repeat,
    the presets it recorded)."""
    saved = info.get("scenario") or {}
    options = info.get("options", {})
    return parse_scenario(saved["text"], saved["path"], quick=options.get("quick", False),
                          repeat=options.get("repeat"), saved_presets=saved.get("presets") or {})


def saved_gates(info: dict[str, Any]) -> list[str]:
    """The --gate targets a run was started with."""
    return [g for g in info.get("options", {}).get("gates", []) if isinstance(g, str)]
