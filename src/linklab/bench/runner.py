"""Run the cells of a scenario, one after another, into a run directory.

For each cell: bring the link up (or keep the previous cell's link when only payload,
profile or trial change and the link has no outage to replay), make the profile, start
the subscriber, let it discover, start the publisher, stop after the count or duration
(or at the deadline), collect records, counters, CPU and peak RSS, compute metrics, mark
failure, append the row, and tear down what the next cell cannot reuse.

Side effects (links, probes) go through an :class:`Environment`; the real one is
:class:`linklab.bench.environment.LinklabEnvironment`. Nothing here prints: progress is
reported through a callback.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from linklab.bench import metrics as M
from linklab.bench.matrix import Cell, deadline_s, estimate_s
from linklab.bench.probe_driver import (
    ProbeArgs,
    ProbeProcess,
    probe_binary,
    start_probe,
)
from linklab.bench.store import RunStore, now_utc
from linklab.brokers.bench_adapter import adapter_for, edge_of

POLL_S = 0.1
# When one probe has ended on its own, how long the other one gets to end too.
SETTLE_S = 1.5
MATCH_TIMEOUT_S = 20.0
MATCH_ALLOWANCE_S = 3.0


class Bed(Protocol):
    """A link that is up: two hosts and their counters (see environment.py)."""

    outage_s: float

    def spawn(self, role: str, argv: list[str], stdout: Any, stderr: Any) -> Any: ...
    def peers(self, role: str) -> tuple[str, ...]: ...
    def interface(self, role: str) -> str | None: ...
    def snapshot(self) -> dict[str, Any]: ...
    def start_traffic(self, warmup_s: float) -> None: ...
    def outage_on_ns(self) -> int | None: ...
    def stages(self) -> dict[str, Any]: ...


class Environment(Protocol):
    def link(self, cell: Cell, run_tag: str) -> contextlib.AbstractContextManager[Bed]: ...
    def outage_s(self, preset: str) -> float: ...
    def profile(self, cell: Cell) -> ResolvedProfile: ...
    def model_amplification(self, cell: Cell) -> float: ...


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


ProgressCallback = Callable[[Progress], None]


def _cell_row_base(cell: Cell) -> dict[str, Any]:
    row: dict[str, Any] = {"index": cell.index, "cell_id": cell.cell_id}
    axes = cell.axes()
    axes.pop("cell_id")
    row.update(axes)
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
    """Keeps the current link up between cells that can share it."""

    def __init__(self, env: Environment, run_tag: str):
        self.env = env
        self.run_tag = run_tag
        self.preset: str | None = None
        self.stack: contextlib.ExitStack | None = None
        self.bed: Bed | None = None
        self.used = False

    def get(self, cell: Cell) -> Bed:
        preset = cell.link
        fresh_needed = self.env.outage_s(preset) > 0  # an outage is replayed per cell
        if self.bed is not None and self.preset == preset and not (fresh_needed and self.used):
            self.used = True
            return self.bed
        self.close()
        self.stack = contextlib.ExitStack()
        self.bed = self.stack.enter_context(self.env.link(cell, self.run_tag))
        self.preset = preset
        self.used = True
        return self.bed

    def close(self) -> None:
        stack, self.stack, self.bed, self.preset = self.stack, None, None, None
        if stack is not None:
            stack.close()


def run_cells(store: RunStore, cells: list[Cell], env: Environment, *,
              run_tag: str, on_progress: ProgressCallback | None = None) -> list[dict]:
    """Run every cell not already in the store. Ctrl-C / SIGTERM: stop, clean, re-raise."""
    done = store.done_ids()
    todo = [c for c in cells if c.cell_id not in done]
    remaining = sum(estimate_s(c, env.outage_s(c.link)) for c in todo)
    progress = Progress(total_cells=len(cells), done_cells=len(cells) - len(todo),
                        skipped_cells=len(cells) - len(todo), remaining_s=remaining)
    keeper = LinkKeeper(env, run_tag)
    results = []
    store.info.setdefault("link_run_names", [])
    if run_tag not in store.info["link_run_names"]:
        store.info["link_run_names"].append(run_tag)  # namespaces: linklab-<name>-<host>
    store.info["interrupted"] = False
    store.save_info()
    try:
        with _sigterm_as_interrupt():
            for cell in todo:
                progress.current = cell
                if on_progress:
                    on_progress(progress)
                row = run_one(store, cell, env, keeper)
                store.append(row)
                results.append(row)
                progress.done_cells += 1
                progress.remaining_s -= estimate_s(cell, env.outage_s(cell.link))
                progress.last_status = row["status"]
                if on_progress:
                    on_progress(progress)
    except (KeyboardInterrupt, SystemExit):
        store.info["interrupted"] = True
        raise
    finally:
        # Clean the link even on Ctrl-C; a second Ctrl-C during clean-up is ignored.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            keeper.close()
            store.save_info()
        finally:
            signal.signal(signal.SIGINT, previous)
    progress.current = None
    if on_progress:
        on_progress(progress)
    return results


def run_one(store: RunStore, cell: Cell, env: Environment, keeper: LinkKeeper) -> dict:
    """One cell, start to finish. Errors of the cell become a failed row, not an abort."""
    row = _cell_row_base(cell)
    row["started_utc"] = now_utc()
    started = time.monotonic()
    out_dir = store.cell_dir(cell.cell_id)
    probes: list[ProbeProcess] = []
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
        row.update(_run_probes(cell, bed, profile, profile_path, out_dir, probes))
        row["model_amplification"] = _safe_float(lambda: env.model_amplification(cell))
    except (KeyboardInterrupt, SystemExit):
        for probe in probes:
            probe.stop(timeout_s=2.0)
        raise
    except Exception as error:  # a cell that cannot run is a failed cell, not a dead run
        for probe in probes:
            probe.stop(timeout_s=2.0)
        (out_dir / "error.txt").write_text(traceback.format_exc())
        row["status"] = "failed"
        row["failure_reason"] = f"error: {error}"
        keeper.close()  # the link may be in an unknown state
    row["wall_s"] = time.monotonic() - started
    return _complete_row(row)


def _safe_float(fn: Callable[[], float]) -> float:
    try:
        return float(fn())
    except Exception:  # the model may not cover a cell (e.g. a non-DDS middleware)
        return math.nan


def _run_probes(cell: Cell, bed: Bed, profile: ResolvedProfile, profile_path: Path | None,
                out_dir: Path, probes: list[ProbeProcess]) -> dict[str, Any]:
    binary = probe_binary(cell.middleware)
    # MQTT / Zenoh: endpoints and a broker/router on the edge host (linklab.brokers)
    adapter = adapter_for(cell.middleware)
    edge_netns, edge_address = edge_of(bed) if adapter else (None, "")
    if adapter:
        adapter.prepare(edge_address, out_dir)
    peers = {role: adapter.peers(role, edge_address, bed.peers(role)) if adapter
             else bed.peers(role) for role in ("pub", "sub")}
    extra = {role: adapter.extra_args(role, edge_address) if adapter else ()
             for role in ("pub", "sub")}
    topic = f"linklab_{os.getpid()}_{cell.index}"
    outage_s = bed.outage_s
    # The publisher keeps retransmitting (lingers) and the subscriber keeps listening
    # until the cell's deadline; both end earlier when everything has arrived.
    grace = deadline_s(cell, outage_s) - cell.publish_s
    common = dict(topic=topic, type=cell.type, size=cell.payload_bytes, rate_hz=cell.rate_hz,
                  count=cell.messages, duration_s=None, qos=cell.qos,
                  history=profile.history, profile=profile_path,
                  match_timeout_s=MATCH_TIMEOUT_S)
    sub_args = ProbeArgs(role="sub", warmup_s=0.0, records=out_dir / "sub.bin",
                         peers=peers["sub"], interface=bed.interface("sub"),
                         # never leave before the runner's deadline: a stream that
                         # stalls may still recover within it
                         idle_timeout_s=MATCH_ALLOWANCE_S + cell.warmup_s
                         + deadline_s(cell, outage_s), extra=extra["sub"], **common)
    pub_args = ProbeArgs(role="pub", warmup_s=cell.warmup_s, records=out_dir / "pub.bin",
                         peers=peers["pub"], interface=bed.interface("pub"),
                         linger_s=grace, extra=extra["pub"], **common)
    for path in (out_dir / "sub.bin", out_dir / "pub.bin"):
        path.unlink(missing_ok=True)
    broker = adapter.start_broker(edge_netns, edge_address, out_dir) if adapter else None
    if broker is not None:
        probes.append(broker)  # stopped with the probes if the cell fails

    sub = start_probe(lambda a, o, e: bed.spawn("sub", a, o, e), sub_args, binary, out_dir)
    probes.append(sub)
    time.sleep(0.3)  # the subscriber's participant exists before the publisher looks
    before = bed.snapshot()
    pub = start_probe(lambda a, o, e: bed.spawn("pub", a, o, e), pub_args, binary, out_dir)
    probes.append(pub)
    pub_started = time.monotonic()
    if broker is not None:
        broker.mark_cpu()
    bed.start_traffic(cell.warmup_s)

    # discovery (a few seconds at most) + warm-up + publishing + grace
    deadline = pub_started + MATCH_ALLOWANCE_S + cell.warmup_s + deadline_s(cell, outage_s)
    expects_all = cell.qos == "reliable" and profile.history == "keep_all"
    expected = cell.messages
    one_ended_at: float | None = None
    while True:
        now = time.monotonic()
        for probe in (pub, sub):
            probe.sample_memory()  # VmHWM only grows; the last read before exit is the peak
        pub_code, sub_code = pub.poll(), sub.poll()
        if pub_code is not None and sub_code is not None:
            break
        if (pub_code not in (None, 0)) or (sub_code not in (None, 0)):
            break  # a crash or an error: nothing more will arrive
        if pub_code is not None or sub_code is not None:
            # the publisher is done lingering, or the subscriber has everything (or the
            # end-of-stream marker): give the other side a moment, then stop it
            one_ended_at = one_ended_at or now
            if now - one_ended_at > SETTLE_S:
                break
        if now >= deadline:
            break
        time.sleep(POLL_S)
    ended_ns = time.monotonic_ns()  # CLOCK_MONOTONIC, the probes' clock
    pub.stop()
    sub.stop()
    broker_cpu_s = broker.stop().cpu_seconds if broker is not None else math.nan
    after = bed.snapshot()

    reports = {p.role: p.report() for p in probes if isinstance(p, ProbeProcess)}
    for role, report in reports.items():
        (out_dir / f"{role}.json").write_text(json.dumps(report, indent=2) + "\n")
    (out_dir / "counters.json").write_text(json.dumps(
        {"before": before, "after": after}, indent=1) + "\n")
    deltas = counter_deltas(before, after)
    wire = deltas.pop("wire_bytes")

    pub_records = _read_or_empty(out_dir / "pub.bin")
    sub_rec = _read_or_empty(out_dir / "sub.bin")
    origin = int(pub_records["t_send_ns"].min()) if len(pub_records) else None
    pub_summary = reports["pub"].get("summary") or {}
    warmup_samples = int(pub_summary.get("warmup_samples") or 0)
    # bins cover the cell until the runner stopped it (zeros included)
    n_bins = max(1, math.ceil((ended_ns - origin) / 1e9)) if origin is not None else None
    measured = M.compute(pub_records, sub_rec, wire_bytes=wire, bins_origin_ns=origin,
                         n_bins=n_bins, warmup_bytes=warmup_samples * cell.payload_bytes)
    outcome = M.Outcome(
        publisher_finished=measured.published >= expected,
        publisher_exit=pub.exit_code, subscriber_exit=sub.exit_code,
        expects_all=expects_all, publisher_signalled=pub.signalled_by_runner,
        subscriber_signalled=sub.signalled_by_runner,
        publisher_completed=_completed(reports["pub"]),
        subscriber_completed=_completed(reports["sub"]))
    reason = M.failure_reason(measured, outcome, cell.interval_s, expected)
    outage_on = bed.outage_on_ns() if outage_s > 0 else None
    if reason is not None and reason.startswith("crashed:"):
        errors = [e for r in reports.values() for e in ((r.get("summary") or {}).get(
            "errors") or [])]
        if errors:
            reason += f" ({'; '.join(map(str, errors))[:300]})"
    row = measured.to_dict()
    row.pop("model_amplification")
    row.update({
        "status": "ok" if reason is None else "failed",
        "failure_reason": reason,
        "exit_note": M.exit_note(outcome),
        "outage_s": outage_s,
        # when the outage really began, seconds after the first measured sample
        "outage_at_s": (outage_on - origin) / 1e9 if outage_on and origin else math.nan,
        "warmup_samples": warmup_samples,
        "write_failures": pub_summary.get("write_failures"),
        **deltas,
        "pub_cpu_s": reports["pub"]["cpu_s"], "sub_cpu_s": reports["sub"]["cpu_s"],
        "broker_cpu_s": broker_cpu_s,
        "pub_rss_peak_bytes": reports["pub"]["rss_peak_bytes"],
        "sub_rss_peak_bytes": reports["sub"]["rss_peak_bytes"],
    })
    return row


def _completed(report: dict[str, Any]) -> bool:
    summary = report.get("summary") or {}
    return (summary.get("end_reason") in ("count", "end_of_stream", "duration")
            and not summary.get("errors"))


COUNTER_COLUMNS = ("link_dropped_packets", "link_passed_packets", "rate_dropped_packets",
                   "sub_udp_rcvbuf_errors", "pub_udp_rcvbuf_errors", "pub_udp_sndbuf_errors")


def counter_deltas(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What happened on the link during the cell, from two snapshots (Bed.snapshot).

    wire_bytes: rx + tx bytes of the robot's (publisher's) link interfaces;
    link_dropped/passed_packets: the loss and outage stages (both directions);
    rate_dropped_packets: the rate limiter's drops (queue overflow);
    *_udp_*_errors: /proc/net/snmp Udp counters of the subscriber / publisher host.
    """
    def interfaces(snap):
        return (snap.get("link") or {}).get("interfaces", {}).get("robot", {})

    def stage_sum(snap, kinds, key):
        return sum(int(st.get(key) or 0) for st in (snap.get("link") or {}).get("stages", [])
                   if st.get("kind") in kinds)

    out: dict[str, Any] = {}
    b_if, a_if = interfaces(before), interfaces(after)
    out["wire_bytes"] = (sum(int(v.get("rx_bytes") or 0) + int(v.get("tx_bytes") or 0)
                             for v in a_if.values())
                         - sum(int(v.get("rx_bytes") or 0) + int(v.get("tx_bytes") or 0)
                               for v in b_if.values())) if a_if else None
    out["link_dropped_packets"] = (stage_sum(after, ("loss", "outage"), "dropped_packets")
                                   - stage_sum(before, ("loss", "outage"), "dropped_packets"))
    out["link_passed_packets"] = (stage_sum(after, ("loss",), "passed_packets")
                                  - stage_sum(before, ("loss",), "passed_packets"))
    out["rate_dropped_packets"] = (stage_sum(after, ("rate",), "dropped_packets")
                                   - stage_sum(before, ("rate",), "dropped_packets"))
    for role, key in (("sub", "RcvbufErrors"), ("pub", "RcvbufErrors"), ("pub", "SndbufErrors")):
        b = (before.get("udp") or {}).get(role, {}).get(key)
        a = (after.get("udp") or {}).get(role, {}).get(key)
        column = f"{role}_udp_{key.replace('bufErrors', 'buf_errors').lower()}"
        out[column] = None if a is None or b is None else a - b
    return out


def _read_or_empty(path: Path):
    if not path.exists():
        return M.empty_records()
    try:
        return M.read_records(path)[1]
    except M.RecordFileError:
        return M.empty_records()


# Every row has every column, so cells.parquet has one schema however cells end.
ROW_DEFAULTS: dict[str, Any] = dict(
    M.CellMetrics().to_dict(),
    status="failed", failure_reason=None, outage_s=math.nan, history_applied=None,
    warmup_samples=0, write_failures=None, exit_note=None, outage_at_s=math.nan,
    **dict.fromkeys(COUNTER_COLUMNS),
    profile_file=None, pub_cpu_s=math.nan, sub_cpu_s=math.nan, broker_cpu_s=math.nan,
    pub_rss_peak_bytes=None,
    sub_rss_peak_bytes=None, started_utc=None, wall_s=math.nan,
)


def _complete_row(row: dict[str, Any]) -> dict[str, Any]:
    full = dict(ROW_DEFAULTS)
    full.update(row)
    for key in ("pub_cpu_s", "sub_cpu_s", "duration_s", "grace_s"):
        if full.get(key) is None:
            full[key] = math.nan
    if full.get("wire_bytes") is not None:
        full["wire_bytes"] = int(full["wire_bytes"])
    return full
