"""One measurement of a cell at known rates, on a fresh link: the row's fields and its
streams (bench.cellrun collects them), and the pieces every measurement shares -- the link
keeper, a row's settings, the model's fan-out step."""

from __future__ import annotations

import contextlib
import math
from pathlib import Path
from typing import Any, cast

from linklab.bench import cpu
from linklab.bench.cellrun import run_cell
from linklab.bench.matrix import Cell
from linklab.bench.protocols import Bed, Environment, WholeCellBed
from linklab.rundir import RunStore


def cell_row_base(cell: Cell) -> dict[str, Any]:
    row: dict[str, Any] = {"index": cell.index}
    row.update(cell.axes())
    return row


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


def measure(store: RunStore, cell: Cell, env: Environment, keeper: LinkKeeper,
            out_dir: Path) -> tuple[dict[str, Any], list[dict]]:
    """One measurement of a cell at known rates: the row's fields and the streams."""
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
            profile_path = store.root / "profiles" / row["profile_file"]
        bed = keeper.get(cell)
        store.record_link(cell.link, bed.stages())
        if cpu.asked(cell):  # cpu_load / cpu_quota: applied here or an error, never dropped
            cpu.refuse_unapplied(cell, bed)
            store.info.setdefault("cpu", cpu.run_info())

        def history_of(topic) -> str:
            return env.history_for(cell, topic)

        def fanout(c, t, k):
            return model_fanout_ms(env, c, t, k)

        if bed.runs_cells_whole:
            # A Bed that places a cell's endpoints itself runs the cell whole, with the
            # same arguments (linklab.k8s: pods; it ends in cellrun's own collection).
            whole = cast(WholeCellBed, bed)
            fields, streams = whole.run_cell(cell, profile, profile_path, out_dir, probes,
                                             history_of, fanout)
        else:
            fields, streams = run_cell(cell, bed, profile, profile_path, out_dir, probes,
                                       history_of, fanout)
        row.update(fields)
        # a bed's own columns (linklab.field: the latency basis and the clock's uncertainty)
        row.update(bed.row_fields())
        row["model_amplification"], row["model_amplification_note"] = env.model_verdict(cell)
        row["tuner_verdict"] = tuner_verdict(profile.meta)
        if row["tuner_verdict"] is not None and not row["tuner_verdict"].startswith("FEAS"):
            # said before the run (linklab tune with the cell's link and cpu_load)
            row["exit_note"] = "; ".join(filter(None, [
                row.get("exit_note"), f"the tuner predicted: {row['tuner_verdict']}"]))
        return row, streams
    finally:
        for probe in probes:
            probe.stop(timeout_s=2.0)


def tuner_verdict(meta: dict[str, Any]) -> str | None:
    """The tuned profile's verdict as the tuner said it (its summary), or None for a
    profile the tuner did not make."""
    summary = meta.get("summary")
    if summary:
        return str(summary)
    return None if meta.get("verdict") is None else str(meta["verdict"]).upper()


def model_fanout_ms(env: Environment, cell: Cell, topic: Any, subscribers: int) -> float:
    """The model's time between two subscribers' copies of one sample (paper 002 Table
    III; linklab.tune.wirecheck.fanout_step_s: one datagram's copy time at the link's
    rate). NaN for one subscriber, a link without a rate, or where the wire model does not
    apply (middlewares other than Fast DDS / Cyclone DDS, other profiles)."""
    from linklab.middleware import family_of
    from linklab.tune.wirecheck import MIDDLEWARES, PROFILES, LinkInfo, fanout_step_s

    link_bits = env.link_rate_bits(cell)
    base = family_of(cell.middleware).name
    if subscribers < 2 or not link_bits or base not in MIDDLEWARES \
            or cell.middleware != base or cell.profile not in PROFILES:
        return math.nan
    link = LinkInfo(link_bits, 0.0, env.link_mtu(cell))
    return fanout_step_s(base, cell.profile, topic.payload_bytes, topic.rate_hz, link,
                         topic.type) * 1000
