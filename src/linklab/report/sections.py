"""Every table of a report beside seed 000's Table II, in the order a reader wants them.

:func:`build` turns a run into a :class:`Report`: the seed 004 tables when the run is
one of its studies (they replace the Table II layout, which has nothing to say about
them), then loss and latency vs distance (paper 002), loss per stretch of a cell whose
robots move (link.motion), each cell's latency distribution,
per subscriber, per topic, fan-out, throughput searches, the same searches by QoS (paper
001 Fig. 9), shares of the maximum, search trials, wire bytes per interface, gates, errors
and failed cells. Each section says which outputs draw it
(linklab.report.view.Section.outputs); the terminal, --markdown, --json and the HTML page
all take theirs from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from linklab.report import (
    distance,
    gate_view,
    interface_counters,
    latency,
    motion,
    outcome,
    paper_004,
    qos_throughput,
    searches,
    subscribers,
)
from linklab.report.run import Run
from linklab.report.view import Section


@dataclass
class Report:
    run: Run
    gates: list[gate_view.GateResult]
    paper_004: list[Section] | None = None
    sections: list[Section] = field(default_factory=list)

    def shown(self, output: str) -> list[Section]:
        return [s for s in self.sections if output in s.outputs]

    @property
    def misses(self) -> list[Any]:
        return gate_view.misses(self.gates)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {s.key: s.to_dict() for s in self.shown("json")}
        if self.paper_004 is not None:
            out["paper_004"] = [dict(s.to_dict(), key=s.key) for s in self.paper_004]
        return out


def build(run: Run, extra_gates: list[str] = (), with_records: bool = True) -> Report:
    """The report of ``run``; ``extra_gates``: --gate texts. Without records (a run whose
    directory is not known), the seed 004 CPU table cannot be made and is left out."""
    rows, streams = run.rows, run.streams
    sources = [run.own(s) for s in run.stores] if run.stores else [
        (run.info, rows, streams)]
    report = Report(run, gate_view.check(sources, list(extra_gates)))
    if paper_004.is_study(rows):
        tables = paper_004.sections(paper_004.with_reports(
            rows, run.cell_dir if with_records else None))
        if not with_records:
            tables = [t for t in tables if not t.key.startswith("paper-004-table3")]
        report.paper_004 = tables
    found = [distance.distance_section(rows),
             motion.motion_section(rows, run.cell_dir) if with_records else None,
             latency.latency_section(rows),
             subscribers.per_subscriber(rows, streams),
             subscribers.per_topic(rows, streams),
             subscribers.fanout(rows, streams), searches.searches_section(rows),
             qos_throughput.qos_section(rows),
             searches.shares_section(rows),
             searches.trials_section(rows, run.cell_dir) if with_records else None,
             interface_counters.interfaces_section(rows), gate_view.section(report.gates),
             outcome.errors_section(rows), outcome.failed_section(rows)]
    report.sections = [s for s in found if s is not None]
    return report
