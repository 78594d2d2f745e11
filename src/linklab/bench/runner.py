"""Run the cells of a scenario, one after another, into a run directory.

For each cell: make the profile, bring a fresh link up (LinkKeeper says why nothing is
reused), run the cell's endpoints (cellrun.py), compute metrics per subscriber and for
the cell, mark failure, append the row and its streams, and take the link down. A cell
with ``rate: max`` is a throughput search (search.py); one with ``rate: 75%`` runs at
that share of the maximum found for its settings.

A cell whose measurement fails is a failed cell ("failed", "—" in tables). A cell that
could not be measured at all is an error ("error"): a linklab error (environment, input
found late) or a bug in linklab (any other exception, with its traceback in
records/<cell>/error.txt) -- never averaged into a study as if the link lost everything.

Side effects (links, probes) go through an :class:`Environment`; the real one is
:class:`linklab.bench.environment.LinklabEnvironment`. A Bed may also have
``run_cell(cell, profile, profile_path, out_dir, probes, history_of, model_fanout)``:
it then runs each measurement whole instead of cellrun spawning processes on it
(linklab.k8s.bed.KubeBed: endpoints are pods). Nothing here prints: progress is
reported through a callback.
"""

from __future__ import annotations

import contextlib
import json
import math
import signal
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from linklab.bench import search as S
from linklab.bench.matrix import SETUP_S, Cell, estimate_s
from linklab.bench.store import RunStore, now_utc
from linklab.errors import LinklabError
from linklab.held_signals import signals_held
from linklab.model.overhead import WirePath
from linklab.probes.types import sample_bytes

# A pause between two trials of a search: the link's queues drain.
TRIAL_PAUSE_S = 0.5


class Bed(Protocol):
    """A link that is up: named hosts, processes in them, counters (environment.py)."""

    outage_s: float

    def spawn(self, host: str, argv: list[str], stdout: Any, stderr: Any) -> Any: ...
    def address(self, host: str) -> str | None: ...
    def host(self, name: str) -> Any: ...
    def interface(self, host: str) -> str | None: ...
    def snapshot(self, hosts: tuple[str, ...] = ()) -> dict[str, Any]: ...
    def start_traffic(self, first_sample_in_s: float) -> None: ...
    def outage_on_ns(self) -> int | None: ...
    def stages(self) -> dict[str, Any]: ...


class Environment(Protocol):
    def link(self, cell: Cell, run_tag: str) -> contextlib.AbstractContextManager[Bed]: ...
    def outage_s(self, cell: Cell) -> float: ...
    def profile(self, cell: Cell) -> ResolvedProfile: ...
    def history_for(self, cell: Cell, topic: Any) -> str: ...
    def model_amplification(self, cell: Cell) -> float: ...
    def link_rate_bits(self, cell: Cell) -> float | None: ...
    def link_mtu(self, cell: Cell) -> int: ...
    def wire_path(self, cell: Cell) -> WirePath: ...


@dataclass(frozen=True)
class ResolvedProfile:
    file_name: str | None  # under the run's profiles/ directory
    xml: str | None
    history: str  # what the probe gets: keep_all | keep_last:N
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Progress:
    """What the CLI's progress bar shows."""

    total_cells: int
    done_cells: int
    skipped_cells: int
    remaining_s: float
    current: Cell | None = None
    last_status: str | None = None
    detail: str = ""  # e.g. the search's current trial


ProgressCallback = Callable[[Progress], None]

# Finished cells needed before their pace corrects what is left (one cell also pays for
# bringing its link up; a few say how this machine and these cells really go).
PACE_AFTER_CELLS = 3


def observed_pace(estimated_s: list[float], wall_s: list[float]) -> float:
    """Wall time finished cells took over the time estimated for them (1.0 until
    PACE_AFTER_CELLS have both): what is left of a run is estimated times this. Measured:
    the calibrated Table II's 1200 cells took 0.95 of their estimate here
    (docs/RESULTS.md)."""
    pairs = [(e, w) for e, w in zip(estimated_s, wall_s, strict=True)
             if e > 0 and isinstance(w, (int, float)) and math.isfinite(w) and w > 0]
    if len(pairs) < PACE_AFTER_CELLS:
        return 1.0
    return sum(w for _, w in pairs) / sum(e for e, _ in pairs)


def finished_timing(rows: list[dict[str, Any]], cells: list[Cell], env: Any,
                    settings: Any) -> tuple[list[float], list[float]]:
    """(estimate, wall time) of each of ``cells`` a run's ``rows`` hold, in run order: a
    resumed run's finished cells say how fast its cells go on this machine
    (observed_pace of the two lists)."""
    walls = {r["cell_id"]: r.get("wall_s") for r in rows}
    done = [c for c in cells if c.cell_id in walls]
    return cell_estimates_s(done, env, settings), [walls[c.cell_id] for c in done]


def _cell_row_base(cell: Cell) -> dict[str, Any]:
    row: dict[str, Any] = {"index": cell.index}
    row.update(cell.axes())
    return row


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM ends a run like Ctrl-C: finished cells stay, the link is cleaned."""
    def handler(signum, frame):  # noqa: ARG001
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class LinkKeeper:
    """The link of the measurement in progress: a fresh one for every measurement.

    Nothing carries over from one cell (or search trial) to the next. Measured: a trial
    of 16 KiB samples at 1.8x the capacity of a 20 Mbit/s link left the receiver's IP
    reassembly memory (net.ipv4.ipfrag_high_thresh, 4 MiB, held for ipfrag_time = 30 s)
    full of incomplete datagrams; the next trial on the same link, at 1.07x, passed 4217
    fragments through the rate limiter and got 25 datagrams reassembled (0 of 318
    samples), against 87 % on a fresh link. Bringing a pair up and down costs about
    0.35 s (linklab.link, measured in-process).
    """

    def __init__(self, env: Environment, run_tag: str):
        self.env = env
        self.run_tag = run_tag
        self.stack: contextlib.ExitStack | None = None
        self.bed: Bed | None = None

    def get(self, cell: Cell) -> Bed:
        self.close()
        self.stack = contextlib.ExitStack()
        self.bed = self.stack.enter_context(self.env.link(cell, self.run_tag))
        return self.bed

    def close(self) -> None:
        stack, self.stack, self.bed = self.stack, None, None
        if stack is not None:
            stack.close()


def run_cells(store: RunStore, cells: list[Cell], env: Environment, *,
              run_tag: str, on_progress: ProgressCallback | None = None,
              search_settings: Any = None) -> list[dict]:
    """Run every cell not already in the store. Ctrl-C / SIGTERM: stop, clean, re-raise."""
    from linklab.bench.spec import SearchSettings

    settings = search_settings or SearchSettings()
    done = store.done_ids()
    todo = [c for c in cells if c.cell_id not in done]

    costs = dict(zip((c.cell_id for c in todo),
                     cell_estimates_s(todo, env, settings,
                                      searched=set(store.info.get("searches") or {})),
                     strict=True))

    def cost(c: Cell) -> float:
        return costs[c.cell_id]

    remaining = sum(costs.values())
    # the run's finished cells (earlier sessions', then this one's): estimate, wall time
    estimated, took = finished_timing(store.rows, cells, env, settings)
    progress = Progress(total_cells=len(cells), done_cells=len(cells) - len(todo),
                        skipped_cells=len(cells) - len(todo),
                        remaining_s=remaining * observed_pace(estimated, took))
    keeper = LinkKeeper(env, run_tag)
    results = []
    store.info.setdefault("link_run_names", [])
    if run_tag not in store.info["link_run_names"]:
        store.info["link_run_names"].append(run_tag)  # namespaces: linklab-<name>-<host>
    store.info["interrupted"] = False
    session = store.begin_session(run_tag)  # saves run.json

    def report(detail: str) -> None:
        progress.detail = detail
        if on_progress:
            on_progress(progress)

    try:
        with _sigterm_as_interrupt():
            for cell in todo:
                progress.current = cell
                report("")
                row, streams = run_one(store, cell, env, keeper, settings, report)
                store.append(row, streams)
                results.append(row)
                progress.done_cells += 1
                remaining -= cost(cell)
                estimated.append(cost(cell))
                took.append(row.get("wall_s", math.nan))
                progress.remaining_s = remaining * observed_pace(estimated, took)
                progress.last_status = row["status"]
                report("")
    except (KeyboardInterrupt, SystemExit):
        store.info["interrupted"] = True
        raise
    finally:
        # Clean the link and save run.json even on Ctrl-C; a Ctrl-C or SIGTERM during
        # clean-up takes effect after it.
        with signals_held():
            keeper.close()
            store.end_session(session)  # saves run.json
    progress.current = None
    report("")
    return results


def search_budget_s(settings: Any, trials: int | None = None) -> float:
    """Wall time a search may take: its trials (all ``max_trials`` unless ``trials``),
    each with setup, discovery and a pause."""
    count = settings.max_trials if trials is None else min(trials, settings.max_trials)
    return count * (settings.trial_s + SETUP_S / 2 + TRIAL_PAUSE_S)


# Trials a search typically takes before its bracket is within the precision: 7.05 on
# average over paper-001-fig6-latency's 40 searches (5-9 each), 7.7 over -fig7-datapath's
# 28 (6-10), both max_trials 12, precision 5 % (run alone 2026-11-25; docs/RESULTS.md).
TYPICAL_SEARCH_TRIALS = 8


def cell_estimates_s(cells: list[Cell], env: Any, settings: Any,
                     searched: set[str] | frozenset[str] = frozenset(),
                     bound: bool = False) -> list[float]:
    """Each cell's expected wall time, in run order. A ``rate: N %`` cell shares the search
    of every cell with its search_key: the first one that needs it pays for it, none when
    the run already holds it (``searched``: keys of store.info["searches"]); a
    ``rate: max`` cell runs its own. A search counts TYPICAL_SEARCH_TRIALS, or with
    ``bound`` all of max_trials (the most it may take)."""
    per_search = search_budget_s(settings, None if bound else TYPICAL_SEARCH_TRIALS)
    paid = set(searched)
    out = []
    for cell in cells:
        search_s = 0.0
        if cell.search:
            search_s = per_search
            paid.add(search_key(cell))
        elif cell.rate_fraction is not None and search_key(cell) not in paid:
            search_s = per_search
            paid.add(search_key(cell))
        out.append(estimate_s(cell, env.outage_s(cell), search_s))
    return out


def run_one(store: RunStore, cell: Cell, env: Environment, keeper: LinkKeeper,
            settings: Any, report: Callable[[str], None] = lambda _: None
            ) -> tuple[dict, list[dict]]:
    """One cell, start to finish: (its row, its streams). Errors become an "error" row."""
    row = _cell_row_base(cell)
    row["started_utc"] = now_utc()
    started = time.monotonic()
    streams: list[dict] = []
    out_dir = store.cell_dir(cell.cell_id)
    try:
        if cell.search:
            row.update(_search_cell(store, cell, env, keeper, settings, out_dir, report,
                                    streams))
        else:
            if cell.rate_fraction is not None:
                best = _max_rate(store, cell, env, keeper, settings, out_dir, report)
                if best <= 0:
                    raise LinklabError(f"no rate was sustained for {search_key_text(cell)}; "
                                       f"{cell.rate} of it cannot be run")
                rate = cell.rate_fraction * best
                count = None if cell.duration_s is not None else cell.count
                cell = cell.with_rate(rate, count)
                row.update(rate_hz=rate, search_max_rate_hz=best)
            measured, streams = measure(store, cell, env, keeper, out_dir)
            row.update(measured)
    except (KeyboardInterrupt, SystemExit):
        raise
    except LinklabError as error:  # could not run: the environment or input found late
        (out_dir / "error.txt").write_text(traceback.format_exc())
        row.update(status="error", failure_reason=f"could not run: {error}")
        keeper.close()  # the link may be in an unknown state
    except Exception as error:  # noqa: BLE001 -- a bug in linklab, reported as such
        (out_dir / "error.txt").write_text(traceback.format_exc())
        row.update(status="error", failure_reason=(
            f"linklab bug: {type(error).__name__}: {error} (traceback in "
            f"records/{cell.cell_id}/error.txt)"))
        keeper.close()
    row["wall_s"] = time.monotonic() - started
    return _complete_row(row), streams


def measure(store: RunStore, cell: Cell, env: Environment, keeper: LinkKeeper,
            out_dir: Path) -> tuple[dict[str, Any], list[dict]]:
    """One measurement of a cell at known rates: the row's fields and the streams."""
    from linklab.bench.cellrun import run_cell

    out_dir.mkdir(parents=True, exist_ok=True)
    probes: list[Any] = []
    row: dict[str, Any] = {}
    try:
        profile = env.profile(cell)
        row["history_applied"] = profile.history
        row["profile_file"] = None
        profile_path = None
        if profile.xml is not None and profile.file_name is not None:
            row["profile_file"] = store.add_profile(profile.file_name, profile.xml,
                                                    profile.meta, cell.cell_id)
            profile_path = store.root / "profiles" / profile.file_name
        bed = keeper.get(cell)
        store.record_link(cell.link, bed.stages())

        def history_of(topic) -> str:
            return env.history_for(cell, topic)

        def fanout(c, t, k):
            return model_fanout_ms(env, c, t, k)

        if hasattr(bed, "run_cell"):
            # A Bed that places a cell's endpoints itself runs the cell whole, with the
            # same arguments (linklab.k8s: pods; it ends in cellrun's own collection).
            fields, streams = bed.run_cell(cell, profile, profile_path, out_dir, probes,
                                           history_of, fanout)
        else:
            fields, streams = run_cell(cell, bed, profile, profile_path, out_dir, probes,
                                       history_of, fanout)
        row.update(fields)
        # a bed's own columns (linklab.field: the latency basis and the clock's uncertainty)
        row.update(getattr(bed, "row_fields", dict)())
        row["model_amplification"] = env.model_amplification(cell)
        return row, streams
    finally:
        for probe in probes:
            probe.stop(timeout_s=2.0)


# --- searches ------------------------------------------------------------------------------

SEARCH_IGNORES = ("cell_id", "rate_hz", "rate_asked", "count", "duration_s", "trial",
                  "warmup_s", "grace_s", "endpoints")


def search_key(cell: Cell) -> str:
    """Cells with equal keys share one maximum rate (every setting but rate and length)."""
    axes = {k: v for k, v in cell.axes().items() if k not in SEARCH_IGNORES}
    axes["endpoints"] = [(t.name, t.publisher, t.subscribers, t.type, t.payload_bytes, t.qos,
                          t.history, t.durability) for t in cell.topics]
    return json.dumps(axes, sort_keys=True, default=str)


def search_key_text(cell: Cell) -> str:
    return f"{cell.middleware} {cell.link} {cell.payload_bytes} B {cell.qos}"


def _max_rate(store: RunStore, cell: Cell, env: Environment, keeper: LinkKeeper,
              settings: Any, out_dir: Path, report: Callable[[str], None]) -> float:
    key = search_key(cell)
    found = store.search_result(key)
    if found is not None:
        return float(found["max_rate_hz"])
    result = _run_search(store, cell, env, keeper, settings, out_dir / "search", report,
                         _model_columns(cell, env))
    store.record_search(key, cell.cell_id, result.max_rate_hz, result.stop)
    return result.max_rate_hz


def _search_cell(store: RunStore, cell: Cell, env: Environment, keeper: LinkKeeper,
                 settings: Any, out_dir: Path, report: Callable[[str], None],
                 streams_out: list[dict]) -> dict[str, Any]:
    if len(cell.topics) != 1:
        raise LinklabError("rate: max searches one topic; this cell has "
                           f"{len(cell.topics)}")
    model = _model_columns(cell, env)
    result = _run_search(store, cell, env, keeper, settings, out_dir, report, model)
    store.record_search(search_key(cell), cell.cell_id, result.max_rate_hz, result.stop)
    row: dict[str, Any] = {}
    if result.best is not None:
        row.update(result.best.row)
        streams_out.extend(result.best.streams)
    elif result.trials:
        # Nothing sustained: the row keeps what the lowest trial measured (its socket
        # overflows, link drops, delivery), so the failure can be read, not only named.
        lowest = min(result.trials, key=lambda t: t.rate_hz)
        row.update(lowest.row)
        streams_out.extend(lowest.streams)
        row.update(status="failed", failure_reason=(
            f"search: {result.stop}; lowest trial ({lowest.rate_hz:.4g} Hz): {lowest.reason}"))
    else:
        row.update(status="failed", failure_reason=f"search: {result.stop}")
    row["completion_rule"] = S.rule_text(reliable=S.reliable_qos(cell.topics[0].qos))
    topic = cell.topics[0]
    row.update({
        "rate_hz": result.max_rate_hz,
        "search_max_rate_hz": result.max_rate_hz,
        "search_max_throughput_bit_s": result.max_rate_hz * topic.payload_bytes * 8,
        "search_trials": len(result.trials),
        "search_stop": result.stop,
        "search_next_failure": result.next_failure,
    })
    row.update(model)
    return row


def _run_search(store: RunStore, cell: Cell, env: Environment, keeper: LinkKeeper,
                settings: Any, out_dir: Path, report: Callable[[str], None],
                model: dict[str, Any]) -> S.SearchResult:
    """Search ``cell``'s maximum rate, starting below the model's capacity (``model``:
    the cell's _model_columns)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    topic = cell.topics[0]
    reliable = S.reliable_qos(topic.qos)
    capacity = model.get("model_capacity_hz")
    capacity = None if capacity is None or math.isnan(capacity) else capacity
    log: list[dict[str, Any]] = []

    def run_trial(rate: float) -> S.Trial:
        k = len(log) + 1
        report(f"search trial {k}: {rate:.4g} Hz")
        trial_cell = cell.with_rate(rate, S.trial_count(rate, settings.trial_s))
        trial_dir = out_dir / f"trial-{k:02d}"
        fields, streams = measure(store, trial_cell, env, keeper, trial_dir)
        row = _complete_row({**_cell_row_base(trial_cell), **fields})
        reason = S.judge(row, streams, rate, reliable)
        log.append({"trial": k, "rate_hz": rate, "sustained": reason is None,
                    "reason": reason, "received": row.get("received"),
                    "expected": row.get("expected"),
                    "publish_rate_hz": row.get("publish_rate_hz"),
                    "latency_p50_ms": row.get("latency_p50_ms"),
                    "latency_growth_ms": row.get("latency_growth_ms")})
        (out_dir / "search.json").write_text(json.dumps(
            {"cell_id": cell.cell_id, "start_hz": start, "model": model, "trials": log},
            indent=1, default=str) + "\n")
        time.sleep(TRIAL_PAUSE_S)
        return S.Trial(rate, reason is None, reason, row, streams)

    start = S.start_rate(topic.payload_bytes, capacity)
    return S.search(run_trial, start, precision=settings.precision,
                    max_trials=settings.max_trials)


def _model_columns(cell: Cell, env: Environment) -> dict[str, Any]:
    """The model's header overhead for a searched cell (DDS over UDP only): the
    serialized sample's bytes, not only the payload's, go on the wire."""
    from linklab.bench.middlewares import base_middleware

    topic = cell.topics[0]
    link_bits = env.link_rate_bits(cell)
    out: dict[str, Any] = {"link_rate_bit_s": link_bits}
    base = base_middleware(cell.middleware)
    if base not in ("fastdds", "cyclonedds") or cell.profile == "large_data":
        out["model_note"] = f"{cell.middleware} runs over TCP: no RTPS/UDP header model"
        return out
    # Fast DDS's UDP transport sends an RTPS message up to 65500 B (the default and
    # ROS 2's profile); Cyclone DDS 0.10 up to General/MaxMessageSize = 14720 B.
    max_message = 65500 if base == "fastdds" else 14720
    if cell.profile in ("optimized", "optimized-paced"):
        max_message = 1472
    path = env.wire_path(cell)
    out.update(S.model_overhead(topic.payload_bytes, max_message, topic.qos, path, link_bits,
                                sample_bytes=sample_bytes(topic.type, topic.payload_bytes)))
    out["model_note"] = (f"{path.label()} per paper 001 §V-A, max message {max_message} B"
                         + ("" if path.bounded else
                            "; both ends on one node: the link's rate does not bound it"))
    return out


def model_fanout_ms(env: Environment, cell: Cell, topic: Any, subscribers: int) -> float:
    """The model's time between two subscribers' copies of one sample (paper 002 Table
    III; linklab.tune.wirecheck.fanout_step_s: one datagram's copy time at the link's
    rate). NaN for one subscriber, a link without a rate, or where the wire model does not
    apply (middlewares other than Fast DDS / Cyclone DDS, other profiles)."""
    from linklab.bench.middlewares import base_middleware
    from linklab.tune.wirecheck import MIDDLEWARES, PROFILES, LinkInfo, fanout_step_s

    link_bits = env.link_rate_bits(cell)
    base = base_middleware(cell.middleware)
    if subscribers < 2 or not link_bits or base not in MIDDLEWARES \
            or cell.middleware != base or cell.profile not in PROFILES:
        return math.nan
    link = LinkInfo(link_bits, 0.0, env.link_mtu(cell))
    return fanout_step_s(base, cell.profile, topic.payload_bytes, topic.rate_hz, link,
                         topic.type) * 1000


# --- rows ---------------------------------------------------------------------------------

def _complete_row(row: dict[str, Any]) -> dict[str, Any]:
    from linklab.bench.columns import complete_row

    return complete_row(row)
