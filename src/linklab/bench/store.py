"""The run directory: what a bench run leaves behind, written as it goes (format 2).

docs/run-directory.md is the contract for everything that reads a run (``linklab
report``, the HTML report, comparisons): the files, run.json's keys and every column of
cells.parquet and streams.parquet. docs/metrics.md defines each metric. Rows of format 1
(runs made before 2026-11-28) are read in today's terms (format1.py); a run resumed now
becomes format 2, each row saying its own ``metrics_version``.

A killed run loses at most the cell in flight: ``linklab bench --resume RUN_DIR`` reads
run.json, skips every cell id that has a row and runs the rest.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from linklab import __version__
from linklab.bench import format1
from linklab.errors import UsageError

FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)  # format 1's rows: bench/format1.py
RUN_JSON = "run.json"
CELLS_PARQUET = "cells.parquet"
CELLS_JSONL = "cells.jsonl"
STREAMS_PARQUET = "streams.parquet"
STREAMS_JSONL = "streams.jsonl"

# Debian packages whose versions a run records.
PACKAGES = ("libfastrtps-dev", "fastdds-tools", "libfastcdr-dev", "cyclonedds-dev",
            "cyclonedds-tools", "mosquitto", "libmosquitto-dev", "nftables", "iproute2")
PYTHON_PACKAGES = ("cyclonedds", "eclipse-zenoh", "paho-mqtt")


def measured_with(info: dict[str, Any]) -> str:
    """The commit(s) a run's cells were measured at, for a report's header: "commit X",
    or, for a run resumed at other commits or on other machines, every distinct one in
    order with the number of sessions and machines."""
    sessions = [s for s in info.get("sessions") or [] if isinstance(s, dict)]
    first = info.get("versions") or {}

    def commit(versions: dict[str, Any]) -> str:
        text = str(versions.get("git_commit") or "?")[:10]
        return text + (" (dirty)" if versions.get("git_dirty") else "")

    commits = list(dict.fromkeys(commit(s.get("versions") or {}) for s in sessions)) \
        or [commit(first)]
    hosts = {s.get("host") for s in sessions if s.get("host")}
    if len(sessions) < 2:
        return f"commit {commits[0]}"
    where = f", {len(hosts)} machines" if len(hosts) > 1 else ""
    label = "commit" if len(commits) == 1 else "commits"
    return f"{label} {', '.join(commits)} ({len(sessions)} sessions{where})"


def now_utc() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def collect_versions(repo: Path | None = None) -> dict[str, Any]:
    """Versions of linklab (and its git commit), the kernel and every middleware."""
    versions: dict[str, Any] = {"linklab": __version__, "kernel": platform.release(),
                                "python": platform.python_version()}
    repo = repo or Path(__file__).resolve().parents[3]
    try:
        commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"],
                                capture_output=True, text=True, timeout=10)
        versions["git_commit"] = commit.stdout.strip() or None
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        versions["git_dirty"] = bool(dirty.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        versions["git_commit"] = None
    for package in PACKAGES:
        try:
            out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package],
                                 capture_output=True, text=True, timeout=10)
            versions[package] = out.stdout.strip() if out.returncode == 0 else None
        except (OSError, subprocess.SubprocessError):
            versions[package] = None
    from importlib import metadata
    for package in PYTHON_PACKAGES:
        try:
            versions[f"python:{package}"] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[f"python:{package}"] = None
    return versions


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and value != value:  # NaN -> null in JSON
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


@dataclass
class RunStore:
    """A run directory being written (or read)."""

    root: Path
    info: dict[str, Any]
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
        info = {
            "format_version": FORMAT_VERSION,
            "created_utc": now_utc(),
            "updated_utc": now_utc(),
            "finished": False,
            "interrupted": False,
            "scenario": scenario,
            "options": options,
            "versions": versions if versions is not None else collect_versions(),
            "links": {},
            "profiles": {},
            "planned": planned,
            "estimated_s": estimated_s,
        }
        store = cls(root, info, created_versions=info["versions"])
        store.save_info()
        return store

    @classmethod
    def open(cls, root: Path) -> RunStore:
        root = Path(root)
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
            raise UsageError(f"{path} is not JSON ({_first_line(error)})",
                             argument="RUN_DIR") from None
        if not isinstance(info, dict):
            raise UsageError(f"{path} holds a JSON {type(info).__name__}, not an object",
                             argument="RUN_DIR")
        version = info.get("format_version")
        if type(version) is not int or version not in READABLE_VERSIONS:
            raise UsageError(f"{path}: format version {_short(version)}, this linklab reads "
                             f"{' and '.join(map(str, READABLE_VERSIONS))}",
                             argument="RUN_DIR")
        for key, kind in (("scenario", dict), ("options", dict), ("versions", dict),
                          ("links", dict), ("profiles", dict), ("planned", list)):
            if key in info and not isinstance(info[key], kind):
                raise UsageError(f"{path}: {key} is not a JSON {kind.__name__}",
                                 argument="RUN_DIR")
        if not all(isinstance(c, str) for c in info.get("planned", [])):
            raise UsageError(f"{path}: planned holds something other than cell ids",
                             argument="RUN_DIR")
        warnings: list[str] = []
        rows = read_rows(root, warnings)
        streams = read_streams(root, {r["cell_id"] for r in rows})
        return cls(root, info, *in_todays_terms(rows, streams), warnings=warnings)

    # --- writing ------------------------------------------------------------------------

    def save_info(self) -> None:
        self.info["updated_utc"] = now_utc()
        _atomic_write(self.root / RUN_JSON,
                      (json.dumps(_jsonable(self.info), indent=2) + "\n").encode())

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
            _atomic_write(path, xml.encode())
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
            _append_jsonl(self.root / STREAMS_JSONL, streams)
            write_parquet(self.root / STREAMS_PARQUET, self.streams)
        self.rows = [r for r in self.rows if r["cell_id"] != row["cell_id"]] + [row]
        _append_jsonl(self.root / CELLS_JSONL, [row])
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
            starts = sorted(str(r.get("started_utc") or "") for r in self.rows)
            sessions.append({"started_utc": starts[0] or self.info.get("created_utc"),
                             "ended_utc": self.info.get("updated_utc"),
                             "link_run_name": None, "host": None, "cells_before": 0,
                             "cells_measured": len(self.rows),
                             "versions": self.info.get("versions") or {}})
        if versions is None:  # a run created in this process was versioned just now
            versions = (self.created_versions if self.created_versions is not None
                        else collect_versions())
        self.created_versions = None
        # a run made with format 1 and resumed now holds rows of both: its run.json says
        # the newer format (a linklab that reads only format 1 refuses it, rightly)
        self.info["format_version"] = FORMAT_VERSION
        session = {"started_utc": now_utc(), "ended_utc": None,
                   "link_run_name": link_run_name, "host": platform.node(),
                   "cells_before": len(self.rows), "cells_measured": 0,
                   "versions": versions}
        sessions.append(session)
        self.save_info()
        return session

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


def in_todays_terms(rows: list[dict[str, Any]], streams: list[dict[str, Any]]
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rows and streams with format-1 rows re-derived in today's definitions (format1.py);
    rows written now pass unchanged."""
    streams = [format1.upgrade_stream(s) for s in streams]
    by_cell: dict[str, list[dict[str, Any]]] = {}
    for stream in streams:
        by_cell.setdefault(str(stream.get("cell_id")), []).append(stream)
    return [format1.upgrade_cell(r, by_cell.get(r["cell_id"], [])) for r in rows], streams


def _append_jsonl(path: Path, rows) -> None:
    """Append one JSON line per row. A last line cut by a kill (no newline) is ended
    first, so the next row gets a line of its own instead of joining the cut one."""
    try:
        with open(path, "rb") as existing:
            existing.seek(-1, os.SEEK_END)
            cut = existing.read(1) != b"\n"
    except (FileNotFoundError, OSError):
        cut = False
    with open(path, "a") as out:
        if cut:
            out.write("\n")
        for row in rows:  # the cell id first: a line cut by a kill still names its cell
            first = {"cell_id": row["cell_id"]} if "cell_id" in row else {}
            out.write(json.dumps(_jsonable({**first, **row})) + "\n")
        out.flush()
        os.fsync(out.fileno())


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` atomically, with every column any row has (a resumed run's older
    rows lack columns added since: null there, not dropped from the newer rows as
    pyarrow's schema from the first row alone would)."""
    keys = list(dict.fromkeys(key for row in rows for key in row))
    table = pa.Table.from_pylist([{key: row.get(key) for key in keys} for row in rows])
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_streams(root: Path, cell_ids: set[str] | None = None) -> list[dict[str, Any]]:
    """Per-subscriber rows of a run (empty for runs made before they existed).
    streams.parquet is the truth; cells whose streams are only in streams.jsonl (a kill
    between the two writes) are added from there; streams of a cell without a row (a kill
    before the row was written) are left out."""
    have_cells = cell_ids if cell_ids is not None else {r["cell_id"] for r in read_rows(root)}
    rows: list[dict[str, Any]] = []
    parquet, jsonl = root / STREAMS_PARQUET, root / STREAMS_JSONL
    if parquet.exists():
        try:
            rows = pq.read_table(parquet).to_pylist()
        except (pa.ArrowException, OSError):
            rows = []
    have = {r.get("cell_id") for r in rows}
    if jsonl.exists():
        extra: dict[str, list[dict[str, Any]]] = {}
        for line in jsonl.read_text(errors="replace").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and row.get("cell_id") not in have:
                extra.setdefault(row["cell_id"], []).append(row)
        for cell_rows in extra.values():
            # a cell run again after --resume appended its streams again: the last wins
            rows.extend({r.get("endpoint"): r for r in cell_rows}.values())
    return [r for r in rows if r.get("cell_id") in have_cells]


def read_rows(root: Path, warnings: list[str] | None = None) -> list[dict[str, Any]]:
    """The cells of a run. cells.parquet is the truth; rows only in cells.jsonl (a kill
    between the two writes) are added from there. A row that is not a cell (not an
    object, no text ``cell_id``/``link``/``profile``, no integer ``index``, a metric that
    is not a number) is a one-line UsageError naming the file; a cells.jsonl line that is
    not JSON at all (cut by a kill) is skipped -- and said in ``warnings`` unless its cell
    has a row after all (in cells.parquet, or measured again after a --resume)."""
    rows: list[dict[str, Any]] = []
    parquet = root / CELLS_PARQUET
    jsonl = root / CELLS_JSONL
    if parquet.exists():
        try:
            table = pq.read_table(parquet).to_pylist()
        except (pa.ArrowException, OSError, ValueError) as error:
            if not jsonl.exists():
                raise UsageError(f"{parquet} is unreadable ({_first_line(error)}) and there "
                                 f"is no {CELLS_JSONL} to fall back on",
                                 argument="RUN_DIR") from None
            table = []  # damaged: cells.jsonl holds the same rows
        rows = [check_row(row, f"{parquet}, row {i + 1}") for i, row in enumerate(table)]
    have = {r["cell_id"] for r in rows}
    broken: list[tuple[int, str | None]] = []
    if jsonl.exists():
        try:
            lines = jsonl.read_bytes().splitlines()
        except OSError as error:
            raise UsageError(f"{jsonl} is unreadable: {error.strerror or error}",
                             argument="RUN_DIR") from None
        for number, line in enumerate(lines, 1):
            try:
                row = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError):
                if line.strip():  # a line cut by a kill, or damaged: said below
                    found = _CELL_ID.search(line.decode("utf-8", "replace"))
                    broken.append((number, found[1] if found else None))
                continue
            row = check_row(row, f"{jsonl}, line {number}")
            if row["cell_id"] not in have:
                rows.append(row)
                have.add(row["cell_id"])
    if warnings is not None:
        for number, cell_id in broken:
            if cell_id in have:
                continue
            what = f"cell {cell_id}" if cell_id else "a row"
            warnings.append(f"{jsonl}, line {number}: not a JSON row ({what}, cut by a kill "
                            "or damaged); skipped: that cell has no row (linklab bench "
                            "--resume runs it again)")
    rows.sort(key=lambda r: r["index"])
    return rows


_CELL_ID = re.compile(r'"cell_id"\s*:\s*"((?:[^"\\]|\\.)*)"')


# Columns that hold numbers (NaN = not measured): by name, and by suffix.
_NUMBER_COLUMNS = frozenset({"count", "trial", "published", "received", "duplicates",
                             "warmup_samples", "write_failures", "payload_bytes"})
_NUMBER_SUFFIXES = ("_s", "_ms", "_hz", "_ratio", "_amplification", "_bytes", "_packets",
                    "_errors")
_TEXT_COLUMNS = frozenset({"middleware", "profile", "link", "qos", "history",
                           "history_applied", "type", "status", "failure_reason",
                           "exit_note", "profile_file", "started_utc",
                           "latency_basis"})


def check_row(row: Any, where: str) -> dict[str, Any]:
    """One cell row as read back, checked (see ``read_rows``); a missing number (null) in
    a float column becomes NaN, as cells.parquet has it."""
    if not isinstance(row, dict):
        raise UsageError(f"{where}: a cell row is a JSON {type(row).__name__}, not an "
                         "object", argument="RUN_DIR")
    cell_id = row.get("cell_id")
    if not isinstance(cell_id, str) or not cell_id:
        raise UsageError(f"{where}: no cell_id (text)", argument="RUN_DIR")
    index = row.get("index")
    if type(index) is not int or index < 0:
        raise UsageError(f"{where}: cell {_short(cell_id)} has index {_short(index)}, not a "
                         "whole number >= 0", argument="RUN_DIR")
    if not _is_number(row.get("payload_bytes")):
        raise UsageError(f"{where}: cell {_short(cell_id)} has no payload_bytes (a number)",
                         argument="RUN_DIR")
    for key in ("link", "profile"):  # what a report groups cells by
        if not isinstance(row.get(key), str):
            raise UsageError(f"{where}: cell {_short(cell_id)} has no {key} (text)",
                             argument="RUN_DIR")
    out = {}
    for key, value in row.items():
        if key == "rate_bins_hz":
            if value is not None and (not isinstance(value, list)
                                      or not all(_is_number(v) for v in value)):
                raise UsageError(f"{where}: cell {_short(cell_id)}: rate_bins_hz is not a "
                                 "list of numbers", argument="RUN_DIR")
        elif key in _NUMBER_COLUMNS or key.endswith(_NUMBER_SUFFIXES):
            if value is None:
                value = float("nan") if key not in _NUMBER_COLUMNS else None
            elif not _is_number(value):
                raise UsageError(f"{where}: cell {_short(cell_id)}: {key} is "
                                 f"{_short(value)}, not a number", argument="RUN_DIR")
        elif key in _TEXT_COLUMNS and value is not None and not isinstance(value, str):
            raise UsageError(f"{where}: cell {_short(cell_id)}: {key} is {_short(value)}, "
                             "not text", argument="RUN_DIR")
        out[key] = value
    if out.get("payload_bytes") != out.get("payload_bytes") or \
            abs(out["payload_bytes"]) == float("inf"):
        raise UsageError(f"{where}: cell {_short(cell_id)}: payload_bytes is not finite",
                         argument="RUN_DIR")
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _first_line(error: BaseException) -> str:
    return (str(error).splitlines() or [type(error).__name__])[0][:200]
