"""The run directory's files and run.json as typed records (docs/run-directory.md).

``RunInfo`` is run.json; ``Session`` one entry of its ``sessions``. A run directory holds
them as JSON, and a reader gets them back as the dict it was written as (``RunStore.info``:
other layers add their own keys -- ``cpu``, ``k8s``, ``searches`` -- which this record
keeps in ``extra``); the records say which keys exist, of which type, and check a run.json
read back (:meth:`RunInfo.check`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from linklab.errors import UsageError

FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)  # format 1's rows: rundir/format1.py
# The metric definitions of docs/metrics.md (linklab.bench.metrics) are format 2's; a row
# computed with them says so in ``metrics_version`` (format1.py reads the rows of format 1
# in these terms).
METRICS_VERSION = 2

RUN_JSON = "run.json"
CELLS_PARQUET = "cells.parquet"
CELLS_JSONL = "cells.jsonl"
STREAMS_PARQUET = "streams.parquet"
STREAMS_JSONL = "streams.jsonl"


def now_utc() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class Session:
    """One bench session that measured cells of a run (run.json ``sessions``)."""

    started_utc: str | None
    ended_utc: str | None
    link_run_name: str | None
    host: str | None
    cells_before: int
    cells_measured: int
    versions: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


# run.json's keys that must hold a JSON object or array when present
_KINDS: tuple[tuple[str, type], ...] = (
    ("scenario", dict), ("options", dict), ("versions", dict), ("links", dict),
    ("profiles", dict), ("planned", list))


@dataclass
class RunInfo:
    """run.json: what the run is, what it was measured with and how far it got."""

    scenario: dict[str, Any]
    options: dict[str, Any]
    versions: dict[str, Any]
    planned: list[str]
    estimated_s: float
    format_version: int = FORMAT_VERSION
    created_utc: str = field(default_factory=now_utc)
    updated_utc: str = field(default_factory=now_utc)
    finished: bool = False
    interrupted: bool = False
    links: dict[str, Any] = field(default_factory=dict)
    profiles: dict[str, Any] = field(default_factory=dict)
    # keys written later (sessions, searches, link_run_names) or by other layers (cpu, k8s)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """run.json's object, its keys in the order a new run writes them."""
        return {"format_version": self.format_version, "created_utc": self.created_utc,
                "updated_utc": self.updated_utc, "finished": self.finished,
                "interrupted": self.interrupted, "scenario": self.scenario,
                "options": self.options, "versions": self.versions, "links": self.links,
                "profiles": self.profiles, "planned": self.planned,
                "estimated_s": self.estimated_s, **self.extra}

    @classmethod
    def check(cls, info: Any, where: str) -> RunInfo:
        """run.json as read back, checked: a one-line UsageError naming ``where`` when it
        is not a run's description this linklab reads."""
        if not isinstance(info, dict):
            raise UsageError(f"{where} holds a JSON {type(info).__name__}, not an object",
                             argument="RUN_DIR")
        version = info.get("format_version")
        if type(version) is not int or version not in READABLE_VERSIONS:
            raise UsageError(f"{where}: format version {short(version)}, this linklab reads "
                             f"{' and '.join(map(str, READABLE_VERSIONS))}",
                             argument="RUN_DIR")
        for key, kind in _KINDS:
            if key in info and not isinstance(info[key], kind):
                raise UsageError(f"{where}: {key} is not a JSON {kind.__name__}",
                                 argument="RUN_DIR")
        if not all(isinstance(c, str) for c in info.get("planned", [])):
            raise UsageError(f"{where}: planned holds something other than cell ids",
                             argument="RUN_DIR")
        named = {f.name for f in fields(cls)} - {"extra"}
        return cls(scenario=info.get("scenario", {}), options=info.get("options", {}),
                   versions=info.get("versions", {}), planned=info.get("planned", []),
                   estimated_s=info.get("estimated_s", 0.0), format_version=version,
                   created_utc=info.get("created_utc", ""),
                   updated_utc=info.get("updated_utc", ""),
                   finished=bool(info.get("finished")),
                   interrupted=bool(info.get("interrupted")),
                   links=info.get("links", {}), profiles=info.get("profiles", {}),
                   extra={k: v for k, v in info.items() if k not in named})


def short(value: Any) -> str:
    """A value for an error message, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def first_line(error: BaseException) -> str:
    return (str(error).splitlines() or [type(error).__name__])[0][:200]
