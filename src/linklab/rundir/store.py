"""A run directory being written or read: ``RunStore``.

A killed run loses at most the cell in flight: ``linklab bench --resume RUN_DIR`` reads
run.json, skips every cell id that has a row and runs the rest. Rows of format 1 (runs
made before 2026-11-28) are read in today's terms (format1.py); a run resumed now becomes
format 2, each row saying its own ``metrics_version``.
"""

from __future__ import annotations

import hashlib
import json
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linklab.errors import UsageError
from linklab.rundir import format1
from linklab.rundir.files import (
    append_jsonl,
    atomic_write,
    json_text,
    read_rows,
    read_streams,
    write_parquet,
)
from linklab.rundir.schema import (
    CELLS_JSONL,
    CELLS_PARQUET,
    FORMAT_VERSION,
    RUN_JSON,
    STREAMS_JSONL,
    STREAMS_PARQUET,
    RunInfo,
    Session,
    first_line,
    now_utc,
)
from linklab.rundir.versions import collect_versions


@dataclass
class RunStore:
    """A run directory being written (or read)."""

    root: Path
    info: dict[str, Any]  # run.json as written (schema.RunInfo says its keys)
    rows: list[dict[str, Any]] = field(default_factory=list)
    streams: list[dict[str, Any]] = field(default_factory=list)
    # versions collected by create() in this process: the first session reuses them
    created_versions: dict[str, Any] | None = field(default=None, repr=False)
    # what reading the run found and skipped (read_rows), for a report to say
    warnings: list[str] = field(default_factory=list)

    # --- creating and opening ---------------------------------------------------------

    @classmethod
    def create(cls, root: Path, *, scenario: dict[str, Any], options: dict[str, Any],
               planned: list[str], estimated_s: float,
               versions: dict[str, Any] | None = None) -> RunStore:
        root = Path(root)
        try:
            if (root / RUN_JSON).exists():
                raise UsageError(f"{root} already holds a run; use --resume {root} to "
                                 "continue it", argument="--out")
            (root / "records").mkdir(parents=True, exist_ok=True)
            (root / "profiles").mkdir(exist_ok=True)
        except OSError as error:
            raise UsageError(f"cannot make the run directory {root}: "
                             f"{error.strerror or error} ({error.filename or root})",
                             argument="--out") from None
        info = RunInfo(scenario=scenario, options=options, planned=planned,
                       estimated_s=estimated_s,
                       versions=versions if versions is not None else collect_versions())
        store = cls(root, info.to_dict(), created_versions=info.versions)
        store.save_info()
        return store

    @classmethod
    def open(cls, root: Path) -> RunStore:
        root = Path(root)
        info = _read_info(root)
        warnings: list[str] = []
        rows = read_rows(root, warnings)
        streams = read_streams(root, {r["cell_id"] for r in rows})
        return cls(root, info, *in_todays_terms(rows, streams), warnings=warnings)

    # --- writing ------------------------------------------------------------------------

    def save_info(self) -> None:
        self.info["updated_utc"] = now_utc()
        atomic_write(self.root / RUN_JSON, (json_text(self.info, indent=2) + "\n").encode())

    def cell_dir(self, cell_id: str) -> Path:
        path = self.root / "records" / cell_id
        path.mkdir(parents=True, exist_ok=True)
        return path

    def add_profile(self, file_name: str, xml: str, meta: dict[str, Any],
                    cell_id: str) -> str:
        """Keep a profile under profiles/ and return the name it is kept under: the one
        asked for, or -- when a file of that name already holds other content (the same
        tuned profile made for other CPU contention, say) -- that name with a hash of its
        content, so no cell's profile is ever overwritten by another's."""
        path = self.root / "profiles" / file_name
        if path.exists() and path.read_text() != xml:
            digest = hashlib.sha256(xml.encode()).hexdigest()[:8]
            stem, dot, suffix = file_name.rpartition(".")
            file_name = f"{stem}-{digest}.{suffix}" if dot else f"{file_name}-{digest}"
            path = self.root / "profiles" / file_name
        if not path.exists() or path.read_text() != xml:
            atomic_write(path, xml.encode())
        entry = self.info["profiles"].setdefault(file_name, dict(meta, cell_ids=[]))
        if cell_id not in entry["cell_ids"]:
            entry["cell_ids"].append(cell_id)
        return file_name

    def record_link(self, preset: str, description: dict[str, Any]) -> None:
        self.info["links"][preset] = description

    def append(self, row: dict[str, Any], streams: list[dict[str, Any]] = ()) -> None:
        """Add one finished cell: its streams, then the cell (jsonl append first, then the
        parquet file), then run.json. A cell's row is written last: a kill in between
        leaves streams of a cell without a row, which --resume replaces."""
        row = dict(row)
        if streams:
            self.streams = [s for s in self.streams if s["cell_id"] != row["cell_id"]] + [
                dict(s) for s in streams]
            append_jsonl(self.root / STREAMS_JSONL, streams)
            write_parquet(self.root / STREAMS_PARQUET, self.streams)
        self.rows = [r for r in self.rows if r["cell_id"] != row["cell_id"]] + [row]
        append_jsonl(self.root / CELLS_JSONL, [row])
        write_parquet(self.root / CELLS_PARQUET, self.rows)
        done = {r["cell_id"] for r in self.rows}
        self.info["finished"] = all(c in done for c in self.info.get("planned", []))
        sessions = self.info.get("sessions") or []
        if sessions and sessions[-1].get("ended_utc") is None:  # the session measuring now
            sessions[-1]["cells_measured"] = len(self.rows) - sessions[-1]["cells_before"]
        self.save_info()

    def begin_session(self, link_run_name: str,
                      versions: dict[str, Any] | None = None) -> dict[str, Any]:
        """Record that a bench session starts measuring: where, with what and from which
        cell on (run.json ``sessions``). A study resumed on another machine or at another
        commit says which cells each measured."""
        sessions = self.info.setdefault("sessions", [])
        if not sessions and self.rows:  # resuming a run made before sessions were recorded
            sessions.append(self._earlier_session().to_dict())
        if versions is None:  # a run created in this process was versioned just now
            versions = (self.created_versions if self.created_versions is not None
                        else collect_versions())
        self.created_versions = None
        # a run made with format 1 and resumed now holds rows of both: its run.json says
        # the newer format (a linklab that reads only format 1 refuses it, rightly)
        self.info["format_version"] = FORMAT_VERSION
        session = Session(started_utc=now_utc(), ended_utc=None,
                          link_run_name=link_run_name, host=platform.node(),
                          cells_before=len(self.rows), cells_measured=0,
                          versions=versions).to_dict()
        sessions.append(session)
        self.save_info()
        return session

    def _earlier_session(self) -> Session:
        """The cells a run made before sessions were recorded, as one session."""
        starts = sorted(str(r.get("started_utc") or "") for r in self.rows)
        return Session(started_utc=starts[0] or self.info.get("created_utc"),
                       ended_utc=self.info.get("updated_utc"), link_run_name=None,
                       host=None, cells_before=0, cells_measured=len(self.rows),
                       versions=self.info.get("versions") or {})

    def end_session(self, session: dict[str, Any]) -> None:
        session["ended_utc"] = now_utc()
        session["cells_measured"] = len(self.rows) - session["cells_before"]
        self.save_info()

    def done_ids(self) -> set[str]:
        return {r["cell_id"] for r in self.rows}

    def search_result(self, key: str) -> dict[str, Any] | None:
        """The maximum rate a search of this run found for ``key`` (search_cells.search_key)."""
        return (self.info.get("searches") or {}).get(key)

    def record_search(self, key: str, cell_id: str, max_rate_hz: float, stop: str) -> None:
        self.info.setdefault("searches", {})[key] = {
            "cell_id": cell_id, "max_rate_hz": max_rate_hz, "stop": stop}
        self.save_info()


def _read_info(root: Path) -> dict[str, Any]:
    """run.json of the run at ``root``, checked (RunInfo.check), as the dict it holds."""
    path = root / RUN_JSON
    try:
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        raise UsageError(f"{root} is not a run directory (no {RUN_JSON})",
                         argument="RUN_DIR") from None
    except OSError as error:
        raise UsageError(f"{path} is unreadable: {error.strerror or error}",
                         argument="RUN_DIR") from None
    try:
        info = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not UTF-8 text", argument="RUN_DIR") from None
    except (ValueError, RecursionError) as error:
        raise UsageError(f"{path} is not JSON ({first_line(error)})",
                         argument="RUN_DIR") from None
    RunInfo.check(info, str(path))
    return info


def in_todays_terms(rows: list[dict[str, Any]], streams: list[dict[str, Any]]
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rows and streams with format-1 rows re-derived in today's definitions (format1.py);
    rows written now pass unchanged."""
    streams = [format1.upgrade_stream(s) for s in streams]
    by_cell: dict[str, list[dict[str, Any]]] = {}
    for stream in streams:
        by_cell.setdefault(str(stream.get("cell_id")), []).append(stream)
    return [format1.upgrade_cell(r, by_cell.get(r["cell_id"], [])) for r in rows], streams
