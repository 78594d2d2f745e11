"""The run's gates and every miss (``linklab report``'s "Gates" section).

The gates are the scenario's (run.json ``scenario.gates``; "From: scenario"), those
given to ``linklab bench --gate`` (``options.gates``) and the report's own ``--gate``
(both "From: --gate"); each is checked against the stored rows with
linklab.bench.gates.evaluate, the function bench used, so the report and gates.json agree.
A gate that applied to nothing in the run (a topic or ``where:`` no stored cell has) is
"not evaluated" -- a miss, never "met". ``--with`` runs bring their own gates for their
own cells.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from linklab.bench.gates import Gate, Miss, evaluate, parse_cli_gate
from linklab.report.view import Cell, Section


def run_gates(info: dict[str, Any]) -> list[tuple[Gate, str]]:
    """The gates a run was made with, each with where it came from: its scenario's
    ("scenario") and those given to bench with --gate ("--gate")."""
    gates = [(Gate.from_dict(g), "scenario")
             for g in (info.get("scenario") or {}).get("gates") or [] if isinstance(g, dict)]
    gates += [(parse_cli_gate(g, stored=True), "--gate")
              for g in (info.get("options") or {}).get("gates") or [] if isinstance(g, str)]
    return gates


@dataclass
class GateResult:
    gate: Gate
    origin: str                   # "scenario" | "--gate"
    misses: list[Miss] = field(default_factory=list)

    @property
    def evaluated(self) -> bool:
        return all(m.evaluated for m in self.misses)

    def to_dict(self) -> dict[str, Any]:
        return {"gate": self.gate.to_dict(), "origin": self.origin,
                "met": not self.misses, "evaluated": self.evaluated,
                "missed": [m.to_dict() for m in self.misses]}


def check(runs: Iterable[tuple[dict[str, Any], list[dict[str, Any]],
                               list[dict[str, Any]]]],
          extra: list[str]) -> list[GateResult]:
    """Each run's own gates on its own (info, rows, streams); ``extra`` (--gate text) on
    every row. One result per gate, in order."""
    runs = list(runs)
    extra_gates = [parse_cli_gate(g) for g in extra]
    results: list[GateResult] = []
    for info, rows, streams in runs:
        for gate, origin in run_gates(info):
            results.append(GateResult(gate, origin, evaluate([gate], rows, streams)))
    all_rows = [r for _, rows, _ in runs for r in rows]
    all_streams = [s for _, _, streams in runs for s in streams]
    for gate in extra_gates:
        results.append(GateResult(gate, "--gate", evaluate([gate], all_rows, all_streams)))
    return results


def misses(results: list[GateResult]) -> list[Miss]:
    return [m for r in results for m in r.misses]


def _scope(gate: Gate) -> str:
    parts = [f"topic {gate.topic}"] if gate.topic else []
    parts += [f"{k}={v}" for k, v in gate.where]
    return ", ".join(parts) or "every cell"


def section(results: list[GateResult]) -> Section | None:
    if not results:
        return None
    missed = sum(1 for r in results if r.misses)
    section = Section(
        "gates", f"Gates: {len(results) - missed} met, {missed} missed",
        ["Gate", "Applies to", "From", "Result"],
        legend="Each gate is checked on every subscriber (stream metrics), probe (cpu) or "
               "cell (wire_amplification, max_rate, max_throughput) it applies to; a "
               "failed or error cell misses every gate; a gate that applies to no cell or "
               "topic of the run is not evaluated, and missed. A miss makes linklab "
               "report exit 1.")
    for result in results:
        n = len(result.misses)
        verdict = Cell("met", "met") if not n else Cell("missed (not evaluated)", "miss") \
            if not result.evaluated else Cell(f"missed ({n} place{'s' if n != 1 else ''})",
                                              "miss")
        section.add(result.gate.text, _scope(result.gate), result.origin, verdict)
        section.records.append(result.to_dict())
        section.notes.extend(m.line() for m in result.misses)
    if section.notes:  # the terminal has each miss on stderr already, one line each
        section.terminal_notes = [f"{len(section.notes)} miss"
                                  f"{'es' if len(section.notes) != 1 else ''}: one line each "
                                  "on stderr (gate missed: ...)"]
    return section
