"""Reading what a cell's probes left (the first step of collecting a cell: read ->
analyse -> row): each probe's report, kept as records/<cell>/<name>.json beside the
counters and the endpoints, and the record files the metrics are computed from."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from linklab.bench import endpoints as E
from linklab.bench import metrics as M
from linklab.bench.probe_driver import ProbeProcess

COMPLETED = ("count", "end_of_stream", "duration")  # a probe's summary's end_reason


@dataclass(frozen=True)
class ProbeReport:
    """What a probe reported (ProbeProcess.report and its JSON summary line), as a row
    takes it; a probe with no summary (killed, crashed) has the summary's fields empty."""

    exit_code: int | None
    signalled_by_runner: bool
    cpu_s: float | None
    wall_s: float | None
    rss_peak_bytes: int | None
    ended_ns: int | None
    summarised: bool  # the probe printed its summary line
    end_reason: str | None
    errors: tuple[Any, ...]
    warmup_samples: int
    write_failures: int | None
    polled_samples: int | None
    matched_readers: int | None  # a publisher's readers matched at the go
    readers_unmatched: int  # a publisher's readers unmatched while it published
    ros_qos: Any  # the QoS the middleware applied, read back (applied.ros_qos)
    # DDS-Security of the probe's participant, read back: {plugin role: plugin}, False
    # (none), None (the probe does not say)
    security: Any = None

    @classmethod
    def of(cls, report: dict[str, Any]) -> ProbeReport:
        summary = report.get("summary") or {}
        applied = summary.get("applied") or {}
        return cls(exit_code=report.get("exit_code"),
                   signalled_by_runner=bool(report.get("signalled_by_runner")),
                   cpu_s=report.get("cpu_s"), wall_s=report.get("wall_s"),
                   rss_peak_bytes=report.get("rss_peak_bytes"),
                   ended_ns=report.get("ended_ns"), summarised=bool(summary),
                   end_reason=summary.get("end_reason"),
                   errors=tuple(summary.get("errors") or ()),
                   warmup_samples=int(summary.get("warmup_samples") or 0),
                   write_failures=summary.get("write_failures"),
                   polled_samples=summary.get("polled_samples"),
                   matched_readers=summary.get("matched_readers"),
                   readers_unmatched=int(summary.get("readers_unmatched_while_publishing")
                                         or 0),
                   ros_qos=applied.get("ros_qos"),
                   security=(applied.get("participant") or {}).get("security"))

    @property
    def completed(self) -> bool:
        """It ended as asked (count, end of stream, duration) and reported no error."""
        return self.end_reason in COMPLETED and not self.errors

    @property
    def cpu_fraction(self) -> float:
        """CPU seconds over its lifetime (1.0 = one core); NaN when unknown."""
        if self.cpu_s is None or not self.wall_s:
            return float("nan")
        return float(self.cpu_s) / float(self.wall_s)

    def ros_qos_text(self) -> str | None:
        """The applied ROS 2 QoS as JSON text (streams.parquet applied_qos)."""
        return None if self.ros_qos is None else json.dumps(self.ros_qos)


@dataclass
class CellFiles:
    """What a cell's run left: the probes' reports, their records and the counters."""

    out_dir: Path
    plan: list[E.Endpoint]
    reports: dict[str, ProbeReport]  # probe name -> its report
    pub_records: dict[str, np.ndarray]  # topic -> its publisher's records
    sub_records: dict[str, np.ndarray]  # subscriber endpoint -> its records
    before: dict[str, Any]  # the bed's snapshots around the cell (Bed.snapshot)
    after: dict[str, Any]

    def log(self, name: str) -> str:
        """A probe's stderr (its middleware's own messages), empty if it left none."""
        try:
            return (self.out_dir / f"{name}.log").read_text(errors="replace")
        except OSError:
            return ""

    @cached_property
    def publishers(self) -> dict[str, E.Endpoint]:
        """topic -> its publisher endpoint (made once: the analysis asks per stream)."""
        return {ep.topic.name: ep for ep in self.plan if ep.role == "pub"}

    def endpoints(self, role: str) -> list[E.Endpoint]:
        return [ep for ep in self.plan if ep.role == role]


def read_cell(plan: list[E.Endpoint], started: dict[str, ProbeProcess], before: dict,
              after: dict, out_dir: Path) -> CellFiles:
    """Keep each probe's report, the counters and the endpoints under ``out_dir``, and
    read the record files back."""
    reports = {name: p.report() for name, p in started.items()}
    for name, report in reports.items():
        (out_dir / f"{name}.json").write_text(json.dumps(report, indent=2) + "\n")
    (out_dir / "counters.json").write_text(json.dumps(
        {"before": before, "after": after}, indent=1) + "\n")
    (out_dir / "endpoints.json").write_text(json.dumps(
        [{"role": ep.role, "topic": ep.topic.name, "host": ep.host, "name": ep.name,
          "peers": ep.peers, "qos": ep.qos} for ep in plan], indent=1) + "\n")
    pub_records = {ep.topic.name: _read_or_empty(out_dir / f"{ep.name}.bin")
                   for ep in plan if ep.role == "pub"}
    sub_records = {ep.name: _read_or_empty(out_dir / f"{ep.name}.bin")
                   for ep in plan if ep.role == "sub"}
    return CellFiles(out_dir, plan, {n: ProbeReport.of(r) for n, r in reports.items()},
                     pub_records, sub_records, before, after)


def _read_or_empty(path: Path) -> np.ndarray:
    if not path.exists():
        return M.empty_records()
    try:
        return M.read_records(path)[1]
    except M.RecordFileError:
        return M.empty_records()
