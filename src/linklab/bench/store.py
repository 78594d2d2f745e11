"""The run directory: what a bench run leaves behind, written as it goes.

This docstring is the contract for everything that reads a run (``linklab report``, the
HTML report, comparisons). Format version 1::

    RUN_DIR/
      run.json          description of the run (below); rewritten atomically
      cells.parquet     one row per finished cell; rewritten atomically after each cell
      cells.jsonl       the same rows, one JSON object a line, appended after each cell
      streams.parquet   one row per subscriber of each finished cell (below)
      streams.jsonl     the same rows, appended after each cell
      gates.json        the gates checked at the end of the run, and those missed
      records/<cell_id>/
        pub.bin, sub.bin     probe record files (linklab.bench.metrics, DESIGN.md "Probes");
                             with several endpoints pub-<topic>.bin, sub-<topic>-<host>.bin
        pub.json, sub.json   each probe's JSON summary line ("applied": what the middleware
                             really used), exit status, CPU seconds and peak RSS
        pub.log, sub.log     the probes' stderr
        endpoints.json       where each probe ran and what it was told
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
- ``sessions``: one entry per bench session that measured cells (the first run and every
  ``--resume``, which may be on another machine or commit): ``started_utc``,
  ``ended_utc``, ``link_run_name``, ``host`` (the machine's name), ``cells_before`` and
  ``cells_measured``, ``versions`` (as above, for that session); a cell belongs to the
  session whose times hold its ``started_utc``. ``versions`` above is the first session's
  (a run made before sessions were recorded gets one entry for its earlier cells, from
  ``versions``, with ``host`` null, when it is resumed);
- ``link_run_names``: the linklab.link run names this run used (one per session), so its
  hosts were the namespaces ``linklab-<name>-robot`` / ``linklab-<name>-edge``.

``cells.parquet`` columns (one row per cell; NaN = not measured):
- identity and settings: ``index``, ``cell_id``, ``middleware``, ``profile``, ``link`` (the
  link's label: preset, ``preset+field=value,...`` or an inline link's name),
  ``link_preset``, ``link_overrides`` (JSON text of the fields over the preset, or null),
  ``topology`` (pair | star | chain), ``hosts`` (robots of a star), ``payload_bytes``,
  ``rate_hz`` (the rate run; for ``rate: max`` the maximum found), ``rate_asked`` ("30",
  "max", "75%"), ``qos`` (reliable | best_effort | a ROS 2 profile name), ``history``
  (what was asked: keep_all, keep_last:N, tuned, profile, system_default),
  ``durability`` (asked, or null), ``history_applied`` (what the probes were given),
  ``type``, ``count``, ``duration_s``, ``warmup_s``, ``outage_start_s``, ``grace_s``,
  ``trial``, ``topics`` (how many), ``subscribers`` (subscriber endpoints in all),
  ``endpoints`` (text: one "name: from->to type size @rate qos" per topic). A cell with
  several topics shows its first topic's payload, rate, QoS and history;
- outcome: ``status`` ("ok" | "failed" | "error"), ``failure_reason`` (null when ok; a
  failed cell's starts with "crashed:", "not completed:" or "latency:" -- with several
  subscribers each failing one is named "topic T subscriber S: ..."; an error row's with
  "could not run:" (a linklab error: environment, input found late) or "linklab bug:"
  (an exception in linklab; traceback in records/<cell>/error.txt) -- an error row holds
  no measurement and is never a link result), ``known_failure`` (a failure of the
  middleware itself recognised by its signature in the probes' logs,
  linklab.probes.upstream, e.g. Fast DDS 2.9.1's TCP negotiation race; its reason starts
  with "known upstream failure:"; null otherwise), ``completion_rule`` (the rule that decided
  the status: every sample must arrive for RELIABLE KEEP_ALL, reliable MQTT and Zenoh;
  otherwise completed when the publishers finished and samples arrived -- delivery
  shows what was lost), ``exit_note`` (a probe that died after completing its run, or
  samples taken by the Fast DDS poll fallback; noted, not a failure);
- metrics, aggregated over the cell's subscribers (linklab.bench.streams: sums for
  counts, the mean over subscribers for reception rate, pooled samples for latency):
  ``published`` (samples written, all publishers), ``published_exact`` (false when a
  publisher left no summary -- killed at the deadline or crashed: its count is then its
  records to their last flush plus every sample received, a lower bound; reports print
  "≥N"), ``expected`` (deliveries expected: each topic's published x its subscribers),
  ``received``, ``duplicates``,
  ``delivery_ratio`` (received / expected), ``reception_rate_hz``, ``latency_mean_ms``,
  ``latency_p50_ms``, ``latency_p95_ms``, ``latency_p99_ms``, ``latency_max_ms``,
  ``jitter_ms``, ``latency_first_third_ms`` and ``latency_growth_ms`` (median latency of
  the first third of the samples by send time, and how much the last third's exceeds
  it), ``message_loss_rate`` (paper 002: counter gaps at the subscribers),
  ``goodput_bit_s`` (sum), ``publish_rate_hz`` (mean over publishers),
  ``bytes_published``, ``wire_bytes`` (rx + tx of the publishers' hosts' link
  interfaces), ``wire_amplification`` (wire bytes / payload bytes published including the
  ``warmup_samples``), ``model_amplification`` (the model's R_DDS / R_pub: Fast DDS over
  UDP, one topic; NaN otherwise), ``rate_bins_hz`` (list: samples received per 1 s bin
  from the first measured sample, all subscribers), ``interfaces`` (list of {host,
  interface, rx_bytes, tx_bytes, rx_packets, tx_packets} during the cell),
  ``fanout_step_ms`` / ``model_fanout_step_ms`` (one topic to several subscribers: the
  fitted time between two subscribers' copies, measured and the model's, paper 002
  Table III), ``outage_s`` (length of the link's outage, 0 if none), ``outage_at_s``
  (when the outage really began, seconds after the first measured sample; NaN without
  outage), ``warmup_samples`` (sent before the measured ones), ``write_failures``
  (writes the middleware refused), ``polled_samples`` (Fast DDS: taken by the poll
  fallback, with late receive timestamps);
- link counters during the cell: ``link_dropped_packets`` / ``link_passed_packets`` (the
  loss and outage stages, both directions), ``rate_dropped_packets`` (the rate limiter's
  queue overflowed), ``sub_udp_rcvbuf_errors``, ``pub_udp_rcvbuf_errors``,
  ``pub_udp_sndbuf_errors`` (/proc/net/snmp, summed over the subscribers' / publishers'
  hosts); counters.json has them all;
- probes: ``pub_cpu_s``, ``sub_cpu_s`` (user + system seconds from the kernel's rusage,
  summed over the publishers / subscribers), ``cpu_fraction_max`` (the busiest probe:
  CPU seconds over its lifetime, 1.0 = one core), ``broker_cpu_s``,
  ``pub_rss_peak_bytes``, ``sub_rss_peak_bytes`` (the largest VmHWM, sampled every 0.1 s);
- a throughput search (``rate: max``; the row's metrics are those of the highest
  sustained trial): ``search_max_rate_hz``, ``search_max_throughput_bit_s`` (payload
  bits per second at that rate), ``search_trials``, ``search_stop`` (why the search
  ended), ``search_next_failure`` (why the lowest failing rate above it failed),
  ``link_rate_bit_s``, ``model_wire_bytes_per_sample`` (the serialized sample of the
  topic's type and its headers), ``model_ip_packets_per_sample``,
  ``model_efficiency`` (payload / wire bytes), ``model_capacity_hz`` and
  ``model_capacity_bit_s`` (what the link's rate carries by the model's headers, paper
  001 §V-A, counting Ethernet frames), ``model_note``; a ``rate: N %`` cell also has
  ``search_max_rate_hz`` (the maximum it is a share of);
- bookkeeping: ``profile_file`` (under profiles/, or null), ``started_utc``, ``wall_s``;
- cells on real hosts (linklab.field): ``latency_basis`` (how send and receive times were
  put on one clock), ``clock_uncertainty_ms``, ``path_rtt_ms``; null / NaN elsewhere.

``streams.parquet`` (and ``streams.jsonl``): one row per subscriber of every cell that
has a row: ``cell_id``, ``topic``, ``publisher`` and ``subscriber`` (hosts),
``endpoint`` (the file stem under records/<cell_id>/), the metrics above for that
subscriber against its topic's publisher (``published``, ``received``, ``duplicates``,
``delivery_ratio``, ``reception_rate_hz``, latency columns, ``jitter_ms``,
``message_loss_rate``, ``goodput_bit_s``, ``publish_rate_hz``, ``bytes_published``),
``status`` / ``failure_reason`` of that subscriber, ``completion_rule``,
``history_applied``, ``pub_cpu_s``, ``sub_cpu_s``, ``pub_cpu_fraction``,
``sub_cpu_fraction``, ``pub_rss_peak_bytes``, ``sub_rss_peak_bytes``,
``write_failures``, ``polled_samples``, ``applied_qos`` and ``pub_applied_qos`` (JSON
text: the subscriber's and the publisher's ``applied.ros_qos``, read back from the
middleware), ``fanout_rank`` (1 = the first of
the topic's subscribers to get its copies, by mean latency) and
``model_fanout_offset_ms`` (the model's delay of that rank's copy).

``gates.json`` (written at the end of a bench run): the gates checked and every one
missed (linklab.bench.gates). ``records/<cell_id>/endpoints.json``: each probe's role,
topic, host, file stem, peers and QoS flags; ``records/<cell_id>/search.json`` (and
``trial-NN/``): a search's trials, each a full measurement.

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
        rows = read_rows(root)
        return cls(root, info, rows, read_streams(root, {r["cell_id"] for r in rows}))

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
        """The maximum rate a search of this run found for ``key`` (runner.search_key)."""
        return (self.info.get("searches") or {}).get(key)

    def record_search(self, key: str, cell_id: str, max_rate_hz: float, stop: str) -> None:
        self.info.setdefault("searches", {})[key] = {
            "cell_id": cell_id, "max_rate_hz": max_rate_hz, "stop": stop}
        self.save_info()


def _append_jsonl(path: Path, rows) -> None:
    with open(path, "a") as out:
        for row in rows:
            out.write(json.dumps(_jsonable(row)) + "\n")
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
