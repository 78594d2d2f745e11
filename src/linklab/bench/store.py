"""The run directory: what a bench run leaves behind, written as it goes.

This docstring is the contract for everything that reads a run (``linklab report``, the
HTML report, comparisons). Format version 1::

    RUN_DIR/
      run.json          description of the run (below); rewritten atomically
      cells.parquet     one row per finished cell; rewritten atomically after each cell
      cells.jsonl       the same rows, one JSON object a line, appended after each cell
      records/<cell_id>/
        pub.bin, sub.bin     probe record files (linklab.bench.metrics, DESIGN.md "Probes")
        pub.json, sub.json   each probe's JSON summary line ("applied": what the middleware
                             really used), exit status, CPU seconds and peak RSS
        pub.log, sub.log     the probes' stderr
        counters.json        interface byte counters before/after (from the link)
      profiles/<file>.xml    every DDS profile a cell used (default, large_data, tuned ones)

``run.json`` keys:
- ``format_version`` (int, 1), ``created_utc``, ``updated_utc`` (ISO 8601), ``finished``
  (bool: every planned cell has a row), ``interrupted`` (bool: last session ended by a
  signal);
- ``scenario``: ``path``, ``name``, ``title``, ``source``, ``fixed`` and ``axes`` (values in
  SI units: bytes, Hz, s), ``trials``, ``text`` (the YAML as read); ``options``: ``quick``,
  ``repeat``;
- ``versions``: ``linklab``, ``git_commit`` (+ ``git_dirty``), ``kernel``, ``python``, and
  one entry per middleware package (Debian package versions, Python bindings);
- ``links``: preset name -> the parameters and the stages the link applied
  (as reported by linklab.link);
- ``profiles``: file name (under profiles/) -> {``profile``, ``cell_ids``, tuning input};
- ``planned``: the cell ids of the matrix, in run order; ``estimated_s``;
- ``link_run_names``: the linklab.link run names this run used (one per session), so its
  hosts were the namespaces ``linklab-<name>-robot`` / ``linklab-<name>-edge``.

``cells.parquet`` columns (one row per cell; NaN = not measured):
- identity and axes: ``index``, ``cell_id``, ``middleware``, ``profile``, ``link``,
  ``payload_bytes``, ``rate_hz``, ``qos``, ``history`` (what was asked: keep_all,
  keep_last:N, tuned), ``history_applied`` (what was passed to the probe), ``type``,
  ``count``, ``duration_s``, ``warmup_s``, ``outage_start_s``, ``grace_s``, ``trial``;
- outcome: ``status`` ("ok" | "failed"), ``failure_reason`` (null when ok; starts with
  "crashed:", "not completed:", "latency:" or "error:"), ``exit_note`` (a probe that died
  after completing its run — summary printed, normal end, no errors — e.g. Fast DDS 2.9
  aborting in its TCP transport's destructor; noted, not a failure);
- metrics (see linklab.bench.metrics): ``published``, ``received``, ``duplicates``,
  ``delivery_ratio``, ``reception_rate_hz``, ``latency_mean_ms``, ``latency_p50_ms``,
  ``latency_p95_ms``, ``latency_p99_ms``, ``latency_max_ms``, ``jitter_ms``,
  ``goodput_bit_s``, ``publish_rate_hz``, ``bytes_published``, ``wire_bytes``,
  ``wire_amplification`` (interface bytes, both directions, / payload bytes published
  including the ``warmup_samples``), ``model_amplification``
  (the model's R_DDS / R_pub), ``rate_bins_hz`` (list: samples received per 1 s bin from
  the first measured sample), ``outage_s`` (length of the link's outage, 0 if none),
  ``outage_at_s`` (when the outage really began, seconds after the first measured
  sample; NaN without outage), ``warmup_samples`` (sent before the measured ones),
  ``write_failures`` (writes the middleware refused, e.g. blocked past max_blocking_time);
- link counters during the cell: ``link_dropped_packets`` / ``link_passed_packets`` (the
  loss and outage stages, both directions), ``rate_dropped_packets`` (the rate limiter's
  queue overflowed), ``sub_udp_rcvbuf_errors``, ``pub_udp_rcvbuf_errors``,
  ``pub_udp_sndbuf_errors`` (/proc/net/snmp of each host); counters.json has them all;
- probes: ``pub_cpu_s``, ``sub_cpu_s`` (user + system seconds from the kernel's rusage),
  ``pub_rss_peak_bytes``, ``sub_rss_peak_bytes`` (VmHWM of the probe, sampled every 0.1 s);
- bookkeeping: ``profile_file`` (under profiles/, or null), ``started_utc``, ``wall_s``.

A killed run loses at most the cell in flight: ``linklab bench --resume RUN_DIR`` reads
run.json, skips every cell id that has a row and runs the rest.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from linklab import __version__
from linklab.errors import UsageError

FORMAT_VERSION = 1
RUN_JSON = "run.json"
CELLS_PARQUET = "cells.parquet"
CELLS_JSONL = "cells.jsonl"

# Debian packages whose versions a run records.
PACKAGES = ("libfastrtps-dev", "fastdds-tools", "libfastcdr-dev", "cyclonedds-dev",
            "cyclonedds-tools", "mosquitto", "libmosquitto-dev", "nftables", "iproute2")
PYTHON_PACKAGES = ("cyclonedds", "eclipse-zenoh", "paho-mqtt")


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
        store = cls(root, info)
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
        if version != FORMAT_VERSION:
            raise UsageError(f"{path}: format version {_short(version)}, this linklab reads "
                             f"{FORMAT_VERSION}", argument="RUN_DIR")
        for key, kind in (("scenario", dict), ("options", dict), ("versions", dict),
                          ("links", dict), ("profiles", dict), ("planned", list)):
            if key in info and not isinstance(info[key], kind):
                raise UsageError(f"{path}: {key} is not a JSON {kind.__name__}",
                                 argument="RUN_DIR")
        if not all(isinstance(c, str) for c in info.get("planned", [])):
            raise UsageError(f"{path}: planned holds something other than cell ids",
                             argument="RUN_DIR")
        return cls(root, info, read_rows(root))

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
        path = self.root / "profiles" / file_name
        if not path.exists() or path.read_text() != xml:
            _atomic_write(path, xml.encode())
        entry = self.info["profiles"].setdefault(file_name, dict(meta, cell_ids=[]))
        if cell_id not in entry["cell_ids"]:
            entry["cell_ids"].append(cell_id)
        return file_name

    def record_link(self, preset: str, description: dict[str, Any]) -> None:
        self.info["links"][preset] = description

    def append(self, row: dict[str, Any]) -> None:
        """Add one finished cell: jsonl append first, then the parquet file, then run.json."""
        row = dict(row)
        self.rows = [r for r in self.rows if r["cell_id"] != row["cell_id"]] + [row]
        with open(self.root / CELLS_JSONL, "a") as out:
            out.write(json.dumps(_jsonable(row)) + "\n")
            out.flush()
            os.fsync(out.fileno())
        write_parquet(self.root / CELLS_PARQUET, self.rows)
        done = {r["cell_id"] for r in self.rows}
        self.info["finished"] = all(c in done for c in self.info.get("planned", []))
        self.save_info()

    def done_ids(self) -> set[str]:
        return {r["cell_id"] for r in self.rows}


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    table = pa.Table.from_pylist(rows)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_rows(root: Path) -> list[dict[str, Any]]:
    """The cells of a run. cells.parquet is the truth; rows only in cells.jsonl (a kill
    between the two writes) are added from there. A row that is not a cell (not an
    object, no text ``cell_id``/``link``/``profile``, no integer ``index``, a metric that
    is not a number) is
    a one-line UsageError naming the file; a cells.jsonl line that is not JSON at all (cut
    by a kill) is skipped."""
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
                continue  # a line cut by a kill
            row = check_row(row, f"{jsonl}, line {number}")
            if row["cell_id"] not in have:
                rows.append(row)
                have.add(row["cell_id"])
    rows.sort(key=lambda r: r["index"])
    return rows


# Columns that hold numbers (NaN = not measured): by name, and by suffix.
_NUMBER_COLUMNS = frozenset({"count", "trial", "published", "received", "duplicates",
                             "warmup_samples", "write_failures", "payload_bytes"})
_NUMBER_SUFFIXES = ("_s", "_ms", "_hz", "_ratio", "_amplification", "_bytes", "_packets",
                    "_errors")
_TEXT_COLUMNS = frozenset({"middleware", "profile", "link", "qos", "history",
                           "history_applied", "type", "status", "failure_reason",
                           "exit_note", "profile_file", "started_utc"})


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
