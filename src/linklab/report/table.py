"""A run's cells laid out like seed 000's Table II, for the terminal and for export.

Rows: reception rate, average latency, jitter (and how many samples arrived); columns:
payload, grouped by profile; one block per link condition (and per any other setting
that varies, e.g. history). Where the link preset is one of the paper's conditions and
the cell matches its setting (Fast DDS, 30 Hz, RELIABLE, 32..512 KB), the paper's value
is shown under ours.

"—" follows the paper: a cell that did not complete (or crashed) shows "—" everywhere;
one whose mean latency is above 100 publish intervals shows its reception rate and "—"
for latency and jitter. Exports keep the measured numbers of failed cells.
With several trials, a column shows the mean over trials and is "—" if any trial failed;
``--pool type`` puts the message types in one column too, as the paper averages over
them.
A cell linklab could not measure (status "error", linklab.report.outcome) is "error",
never "—": it is not a link result. "Delivered" is received/expected (each topic's
published samples times its subscribers). Throughput searches (``rate: max``) are not
in this layout (their rate is a result, not a setting): see linklab.report.searches.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from linklab.errors import UsageError
from linklab.report import outcome
from linklab.report.paper_000 import CONDITION_TITLES, condition_of, paper_value
from linklab.report.run import Run
from linklab.report.sections import Report, build
from linklab.report.settings import CPU_KEYS
from linklab.report.view import to_rich
from linklab.rundir import measured_with
from linklab.units import size_label

METRICS = (
    ("reception_rate_hz", "Reception rate (Hz)"),
    ("latency_mean_ms", "Avg. latency (ms)"),
    ("jitter_ms", "Jitter (ms)"),
)
# Settings that split blocks when they vary (profile and payload are the columns).
BLOCK_KEYS = ("link", "middleware", "topology", "flow", "hosts", "subscribers", "topics",
              "rate_hz", "qos", "history", "durability", "type", "outage_start_s",
              "outage_length_s", "count", "duration_s", "warmup_s", "grace_s",
              "cpu_load", "cpu_load_on", "cpu_quota", "cpu_quota_on", "broker_host")
# Settings a report may pool (--pool): their cells share a block and a column averages
# over them, as seed 000's Table II averages over its message types (§V-C).
POOLABLE = tuple(k for k in BLOCK_KEYS if k != "link")
# The last resort when two different cells would still share a column (same settings
# above, same trial): their endpoint lists tell them apart.
TIEBREAK_KEY = "endpoints"
SPARK = " ▁▂▃▄▅▆▇█"


def _num(value: Any) -> float | None:
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


@dataclass
class Column:
    profile: str
    payload_bytes: int
    rows: list[dict[str, Any]]

    @property
    def failed(self) -> bool:
        """Not ok: failed, or an error (see :attr:`error`)."""
        return any(r.get("status") != "ok" for r in self.rows)

    @property
    def error(self) -> bool:
        """A trial linklab could not measure: the column shows "error"."""
        return any(outcome.is_error(r) for r in self.rows)

    @property
    def state(self) -> str:
        return "error" if self.error else ("failed" if self.failed else "ok")

    @property
    def reasons(self) -> list[str]:
        return [r["failure_reason"] for r in self.rows if r.get("failure_reason")]

    def measured(self, metric: str) -> float | None:
        values = [v for v in (_num(r.get(metric)) for r in self.rows) if v is not None]
        return sum(values) / len(values) if values else None

    def shown(self, metric: str) -> float | None:
        """The value Table II would print (None = "—")."""
        return None if outcome.dashed(self.rows, metric) else self.measured(metric)

    def text(self, metric: str, digits: int = 2) -> str:
        """What the tables print for ``metric``: the value, "—" or "error"."""
        if self.error:
            return outcome.ERROR
        value = self.shown(metric)
        return "—" if value is None else f"{value:.{digits}f}"

    def delivered(self) -> tuple[int, int]:
        """(received, expected) over the trials (expected: published x subscribers)."""
        pairs = [outcome.delivered(r) for r in self.rows]
        return sum(g or 0 for g, _ in pairs), sum(w or 0 for _, w in pairs)

    def delivered_text(self) -> str:
        return outcome.delivered_sum(self.rows)


@dataclass
class Block:
    key: dict[str, Any]
    condition: str | None  # the paper's condition for this link preset, if any
    columns: list[Column] = field(default_factory=list)

    @property
    def title(self) -> str:
        link = self.key["link"]
        parts = [link]
        if self.condition:
            parts.append(CONDITION_TITLES[self.condition])
        extras = [f"{k}={_fmt_key(k, v)}" for k, v in self.key.items() if k != "link"]
        return " — ".join(parts) + (f"  [{', '.join(extras)}]" if extras else "")

    def paper(self, column: Column, metric: str) -> tuple[bool, float | None]:
        if self.condition is None:
            return False, None
        first = column.rows[0]
        if (first.get("middleware") != "fastdds" or _num(first.get("rate_hz")) != 30.0
                or first.get("qos") != "reliable"
                or (_num(first.get("subscribers")) or 1) != 1
                or (_num(first.get("topics")) or 1) != 1):
            return False, None  # the paper's cells: Fast DDS, one pair, 30 Hz, RELIABLE
        return paper_value(self.condition, column.profile, column.payload_bytes, metric)

    def to_dict(self) -> dict[str, Any]:
        out = {"title": self.title, "key": self.key, "condition": self.condition,
               "columns": []}
        for col in self.columns:
            entry = {"profile": col.profile, "payload_bytes": col.payload_bytes,
                     "cell_ids": [r["cell_id"] for r in col.rows],
                     "status": col.state,
                     "failure_reasons": col.reasons,
                     "delivered": list(col.delivered()),
                     "delivered_text": col.delivered_text()}
            for metric, _label in METRICS:
                has, paper = self.paper(col, metric)
                entry[metric] = {"shown": col.shown(metric), "measured": col.measured(metric),
                                 "paper": paper if has else None, "paper_has_cell": has}
            entry["wire_amplification"] = col.measured("wire_amplification")
            entry["model_amplification"] = _model_entry(col)
            out["columns"].append(entry)
        return out


def _model_entry(column: Column) -> dict[str, Any]:
    """The model row for --json: the figure (null without one), "∞" or the figure as
    printed, and why it is "∞" (report/interface_counters.py)."""
    from linklab.report.interface_counters import model_text

    text, note = model_text(column.rows)
    return {"value": None if note else column.measured("model_amplification"),
            "text": text, "note": note}


def profile_label(profile: str) -> str:
    """A profile's short name: shipped names as they are, files by their stem."""
    return profile.rsplit("/", 1)[-1].removesuffix(".xml")


def _fmt_key(key: str, value: Any) -> str:
    if key == "rate_hz" and isinstance(value, (int, float)):
        return f"{value:g} Hz"
    if key in ("cpu_load_on", "cpu_quota_on") and value is None:
        return "endpoints"  # the default: the hosts of the cell's probes
    if key == "broker_host":
        return f"broker on {value or 'edge'}"  # bench.broker_host's default
    return str(value)


def _block_value(row: dict[str, Any], key: str) -> Any:
    if key == "rate_hz" and str(row.get("rate_asked") or "").endswith("%"):
        return row["rate_asked"]  # rate: 75% -- its rate in Hz differs per payload
    if key == "cpu_load" and row.get("cpu_load") not in (None, "none") \
            and isinstance(row.get("cpu_load_processes"), int):
        # as asked and as applied (N/core: per online CPU of the machine that ran it)
        return f"{row['cpu_load']} ({row['cpu_load_processes']} competitors)"
    return row.get(key)


def _cpu_keys(rows: list[dict[str, Any]]) -> list[str]:
    """The CPU settings a title names even when every cell has them: a load or a quota
    is never left unsaid (bench/cpu.py)."""
    return [k for k in CPU_KEYS if any(r.get(k) not in (None, "none") for r in rows)]


def is_search(row: dict[str, Any]) -> bool:
    return str(row.get("rate_asked") or "") == "max"


def check_pool(keys: Sequence[str]) -> tuple[str, ...]:
    """--pool's keys, each once, or a one-line error naming what may be pooled."""
    for key in keys:
        if key not in POOLABLE:
            raise UsageError(f"cannot pool {key!r}; accepted: {', '.join(POOLABLE)}",
                             argument="--pool")
    return tuple(dict.fromkeys(keys))


def build_blocks(rows: list[dict[str, Any]], pool: Sequence[str] = ()) -> list[Block]:
    """Group a run's rows into Table II blocks, in the order the cells ran (throughput
    searches are left out: linklab.report.searches has them). A ``pool`` key does not
    split blocks: its cells share a column, which then averages over all their trials
    (the block's title lists the pooled values)."""
    rows = [r for r in rows if not is_search(r)]
    cpu_keys = _cpu_keys(rows)
    varying = [k for k in BLOCK_KEYS if k not in pool
               and (len({str(_block_value(r, k)) for r in rows}) > 1 or k in cpu_keys)]
    if _merges_cells(rows, varying, pool):
        varying.append(TIEBREAK_KEY)
    blocks: OrderedDict[tuple, Block] = OrderedDict()
    for row in rows:
        key = {"link": row.get("link")}
        key.update({k: _block_value(row, k) for k in varying if k != "link"})
        block = blocks.get(tuple(key.items()))
        if block is None:
            block = Block(key=key, condition=condition_of(row))
            blocks[tuple(key.items())] = block
        for col in block.columns:
            if col.profile == row.get("profile") and col.payload_bytes == row.get(
                    "payload_bytes"):
                col.rows.append(row)
                break
        else:
            block.columns.append(Column(row.get("profile"), int(row.get("payload_bytes")),
                                        [row]))
    profile_order = list(OrderedDict.fromkeys(r.get("profile") for r in rows))
    for block in blocks.values():
        block.columns.sort(key=lambda c: (profile_order.index(c.profile), c.payload_bytes))
        for key in pool:  # the title names what a column pooled
            values = OrderedDict.fromkeys(str(_block_value(r, key))
                                          for c in block.columns for r in c.rows)
            if len(values) > 1:
                block.key[key] = "/".join(values)
    return list(blocks.values())


def _merges_cells(rows: list[dict[str, Any]], keys: list[str],
                  pool: Sequence[str] = ()) -> bool:
    """Whether grouping by ``keys`` (with profile, payload and trial) would put two
    different cells in one column -- a column averages trials of one cell, never cells
    (but for the values of a pooled key, which it averages over on purpose)."""
    seen: dict[tuple, str] = {}
    for row in rows:
        slot = (tuple(str(_block_value(row, k)) for k in ("link", *keys, *pool)),
                row.get("profile"), row.get("payload_bytes"), row.get("trial"))
        if seen.setdefault(slot, str(row.get("cell_id"))) != str(row.get("cell_id")):
            return True
    return False


# --- terminal rendering ---------------------------------------------------------------

def _cell_text(ours: str, paper: tuple[bool, float | None], digits: int) -> Text:
    text = Text(ours, style="bold magenta" if ours == outcome.ERROR else "")
    has, value = paper
    if has:
        text.append("\n" + ("—" if value is None else f"{value:.{digits}f}"), style="dim")
    return text


def render_block(block: Block, columns: list[Column] | None = None) -> Group:
    """One block: its title on its own line (a table's title is cut to the table's width),
    then the table, then why a model figure is "∞" (one line per such column)."""
    columns = block.columns if columns is None else columns
    notes = [Text(f"∞ {profile_label(c.profile)} {size_label(c.payload_bytes)}: {note}",
                  style="dim") for c, note in model_notes(columns)]
    return Group(Text(block.title, style="bold"), _block_table(block, columns), *notes)


def model_notes(columns: list[Column]) -> list[tuple[Column, str]]:
    """The columns whose model row is "∞", with the reason (report/interface_counters.py)."""
    from linklab.report.interface_counters import model_text

    return [(c, note) for c in columns for _, note in [model_text(c.rows)] if note]


def _block_table(block: Block, columns: list[Column] | None = None) -> Table:
    columns = block.columns if columns is None else columns
    any_paper = any(block.paper(c, "reception_rate_hz")[0] for c in columns)
    caption = "dim second line: the paper's Table II" if any_paper else None
    table = Table(caption=caption, caption_justify="left", show_lines=True, pad_edge=False)
    table.add_column("Profile\nPayload", no_wrap=True)
    for col in columns:
        table.add_column(f"{profile_label(col.profile)}\n{size_label(col.payload_bytes)}",
                         justify="right", no_wrap=True)
    for metric, label in METRICS:
        row_label = Text(label)
        if any_paper:
            row_label.append("\n  paper", style="dim")
        table.add_row(row_label, *(_cell_text(c.text(metric), block.paper(c, metric), 2)
                                   for c in columns))
    delivered = []
    for c in columns:
        delivered.append(Text(c.delivered_text(), style={"error": "bold magenta",
                                                         "failed": "red"}.get(c.state, "")))
    table.add_row("Delivered", *delivered)
    table.add_row(Text("Wire / published\n  model R_DDS/R_pub", style=""),
                  *(_wire_text(c) for c in columns))
    return table


def _wire_text(column: Column) -> Text:
    """Measured wire / published, and under it the model's figure: "∞" where the model
    says the cell cannot complete (the reason under the table; report/interface_counters.py)."""
    from linklab.report.interface_counters import model_text

    wire = column.measured("wire_amplification")
    text = Text("—" if wire is None else f"{wire:.2f}")
    text.append("\n" + model_text(column.rows)[0], style="dim")
    return text


def render_blocks(blocks: list[Block], width: int) -> list[Group]:
    """One table per block, or one per block and profile when the terminal is narrow."""
    tables = []
    for block in blocks:
        needed = 24 + 10 * len(block.columns)
        if needed <= width:
            tables.append(render_block(block))
            continue
        profiles = list(OrderedDict.fromkeys(c.profile for c in block.columns))
        for profile in profiles:
            tables.append(render_block(block, [c for c in block.columns
                                               if c.profile == profile]))
    return tables


def sparkline(bins: list[float], top: float) -> str:
    if not bins or top <= 0:
        return ""
    steps = len(SPARK) - 1
    return "".join(SPARK[min(steps, int(round(min(b, top) / top * steps)))] for b in bins)


def render_bins(rows: list[dict[str, Any]]) -> Table | None:
    """Reception rate per second across a run (seed 000 Fig. 7), one line per cell."""
    with_bins = [r for r in rows if r.get("rate_bins_hz") and _num(r.get("outage_s"))]
    if not with_bins:
        return None
    table = Table(title="Reception rate per 1 s bin from the publisher's start "
                        "(seed 000 Fig. 7; █ = publish rate)", title_justify="left",
                  pad_edge=False)
    table.add_column("Cell", no_wrap=True)
    table.add_column("outage", justify="right", no_wrap=True)
    table.add_column("Hz per second", no_wrap=True)
    table.add_column("min after", justify="right", no_wrap=True)
    table.add_column("delivered", justify="right", no_wrap=True)
    for r in with_bins:
        bins = list(r["rate_bins_hz"])
        start = _num(r.get("outage_at_s"))
        start = _num(r.get("outage_start_s")) or 0.0 if start is None else start
        length = _num(r.get("outage_s")) or 0.0
        after = bins[int(start + length) + 1:] if len(bins) > start + length + 1 else []
        table.add_row(r["cell_id"], f"{start:g}s+{length:g}s",
                      sparkline(bins, float(r.get("rate_hz") or 30.0)),
                      f"{min(after):g}" if after else "—", outcome.delivered_text(r))
    return table


def header(info: dict[str, Any], rows: list[dict[str, Any]], planned: int,
           finished: bool) -> Text:
    scenario = info.get("scenario", {})
    failed = sum(1 for r in rows if r.get("status") == "failed")
    errors = sum(1 for r in rows if outcome.is_error(r))
    head = Text()
    head.append(f"{scenario.get('title', scenario.get('name', 'run'))}\n", style="bold")
    if scenario.get("source"):
        head.append(f"source: {scenario['source']}\n")
    versions = info.get("versions", {})
    head.append(f"cells: {len(rows)}/{planned} done, {failed} failed")
    if errors:
        head.append(f", {errors} error{'s' if errors != 1 else ''} (not measured)",
                    style="bold magenta")
    head.append(f"{'' if finished else ' (run not finished)'}; "
                f"Fast DDS {versions.get('libfastrtps-dev') or '?'}, "
                f"kernel {versions.get('kernel', '?')}, "
                f"{measured_with(info)}\n")
    note = outcome.format1_note(rows)
    if note:
        head.append(f"{note}\n", style="yellow")
    return head


def render_report(report: Report, console: Console) -> Group:
    """The terminal view of a report (linklab.report.sections.Report)."""
    run = report.run
    parts: list[Any] = [header(run.info, run.rows, len(run.planned), run.finished)]
    if report.paper_004 is not None:
        parts.extend(to_rich(s) for s in report.paper_004)
    else:
        from linklab.report.interface_counters import run_links, with_model_verdicts

        rows = with_model_verdicts(run.rows, run_links(run))
        parts.extend(render_blocks(build_blocks(rows, run.pool), console.width))
    bins = render_bins(run.rows)
    if bins is not None:
        parts.append(bins)
    parts.extend(to_rich(s) for s in report.shown("terminal"))
    return Group(*parts)


def run_report(info: dict[str, Any], rows: list[dict[str, Any]],
               streams: list[dict[str, Any]] | None = None, root: Path | None = None
               ) -> Report:
    """A run's report from its (info, rows, streams), as linklab bench shows it at the end
    of a run. Without ``root`` (the run directory), seed 004's CPU table and the search
    trials are left out (``linklab report RUN_DIR`` has them)."""
    run = Run(Path(root or "."), info, rows, list(streams or []))
    return build(run, with_records=root is not None)


def render_run(info: dict[str, Any], rows: list[dict[str, Any]], console: Console,
               streams: list[dict[str, Any]] | None = None, root: Path | None = None
               ) -> Group:
    """A run's terminal view (:func:`run_report`)."""
    return render_report(run_report(info, rows, streams, root), console)
