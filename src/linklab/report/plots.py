"""The report's figures, as PNG bytes (matplotlib, Agg backend, no display needed).

Every figure reads only the run directory (cells.parquet rows, and records/<cell_id>/
sub*.bin for latency distributions; a search's best trial-NN/), so an old run can be
re-plotted. Figures are drawn
for print: white background, black text, colours from the Okabe-Ito palette (readable
for colour-blind readers) combined with distinct line styles and markers, so lines stay
apart on a grey-scale printout too.

- latency CDF per cell, one panel per link condition;
- reception rate per 1 s bin through an outage, the outage window shaded (seed 000 Fig. 7);
- reception rate and mean latency vs payload per profile, the paper's Table II values
  dotted beside ours (seed 000 Table II);
- wire amplification: interface bytes / published bytes measured, beside the model's
  R_DDS / R_pub (seed 000 Eq. 4 over Eq. 1; plot_bars.py);
- CPU seconds per probe (publisher and subscriber; plot_bars.py);
- maximum throughput vs payload of throughput searches, the model's capacity dashed
  (seed 001 Fig. 5; plot_throughput.py).

A function returns None when the run has nothing to draw for its figure.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.lines  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from linklab.bench import metrics as M  # noqa: E402
from linklab.report.paper_000 import CONDITION_TITLES, condition_of  # noqa: E402
from linklab.report.settings import (  # noqa: E402
    format_setting,
    group_by_settings,
    label,
    num,
    varying_keys,
)
from linklab.report.table import Block, build_blocks  # noqa: E402
from linklab.units import size_label  # noqa: E402

# Okabe-Ito, then line styles and markers so that print in grey keeps lines apart.
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
           "#F0E442")
LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
FAILED_COLOUR = "#B00020"
WIDTH_IN = 7.5  # fits an A4 / letter page with margins
DPI = 150
# More samples than this per CDF line are thinned to evenly spaced quantiles.
CDF_POINTS = 2000

RC = {
    "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8,
    "xtick.labelsize": 8, "ytick.labelsize": 8, "axes.grid": True, "grid.color": "#cccccc",
    "grid.linewidth": 0.6, "axes.edgecolor": "#333333", "figure.facecolor": "white",
    "axes.facecolor": "white", "savefig.facecolor": "white", "lines.linewidth": 1.6,
}


@dataclass
class Plot:
    """One figure of the report."""

    key: str
    title: str
    caption: str
    png: bytes
    notes: list[str] = field(default_factory=list)  # what could not be drawn, and why


def style(i: int) -> dict[str, Any]:
    return {"color": COLOURS[i % len(COLOURS)],
            "linestyle": LINESTYLES[(i // len(COLOURS) + i) % len(LINESTYLES)],
            "marker": MARKERS[i % len(MARKERS)]}


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=DPI, bbox_inches="tight")
    return out.getvalue()


def _figure(n_panels: int, panel_height_in: float, ncols: int = 1) -> tuple[Figure, list]:
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(WIDTH_IN, 0.6 + panel_height_in * n_panels), dpi=DPI,
                     layout="constrained")
        axes = fig.subplots(n_panels, ncols, squeeze=False)
    return fig, [list(row) for row in axes]


def _log_axis(axis, limits: tuple[float, float]) -> None:
    """A log axis labelled 2, 5, 10, 20 ... rather than 10^1, readable in print."""
    if axis.axis_name == "x":
        axis.axes.set_xscale("log")
    else:
        axis.axes.set_yscale("log")
    label = FuncFormatter(lambda v, _p: f"{v:g}")
    axis.set_major_formatter(label)
    low, high = (max(v, 1e-9) for v in limits)
    if high / low < 100:  # few decades: label the minor ticks too
        axis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
        axis.set_minor_formatter(label)
    else:
        axis.set_minor_formatter(NullFormatter())


def condition_title(link: str, rows: list[dict[str, Any]] | None = None) -> str:
    """The link and the paper's condition its cells ran under (paper_000.condition_of:
    the preset exactly, no overrides); an outage of another length than the paper's
    20 s (scenario outage_length) is named by its own length."""
    condition = condition_of(rows[0]) if rows else None
    if condition is None:
        return str(link)
    lengths = sorted({num(r.get("outage_s")) for r in rows or []} - {None, 0.0})
    if condition == "outage" and lengths and lengths != [20.0]:
        return f"{link} — link outage, {' / '.join(f'{v:g}' for v in lengths)} s"
    return f"{link} — {CONDITION_TITLES[condition]}"


def _by_link(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(str(row.get("link")), []).append(row)
    return groups


# --- latency CDF ---------------------------------------------------------------------

def cell_latencies_ms(cell_dir: Path, cell_id: str) -> tuple[np.ndarray | None, str | None]:
    """Latencies of the unique samples a cell's subscribers received (sub.bin, or every
    sub-<topic>-<host>.bin of a cell with several, pooled), or (None, why not)."""
    cell_dir = Path(cell_dir)
    paths = [cell_dir / "sub.bin"] if (cell_dir / "sub.bin").is_file() else sorted(
        cell_dir.glob("sub-*.bin"))
    if not paths:
        return None, f"{cell_id}: no records/{cell_id}/sub.bin"
    parts = []
    for path in paths:
        try:
            role, records = M.read_records(path)
        except M.RecordFileError as error:
            return None, f"{cell_id}: {error}"
        if role != M.ROLE_SUBSCRIBER:
            return None, f"{cell_id}: {path.name} is a publisher file (role {role})"
        parts.append(M.latencies_ms(M.unique_received(records)))
    return np.concatenate(parts), None


def _thin(sorted_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = len(sorted_values)
    y = np.arange(1, n + 1) / n
    if n <= CDF_POINTS:
        return sorted_values, y
    pick = np.unique(np.linspace(0, n - 1, CDF_POINTS).astype(int))
    return sorted_values[pick], y[pick]


# A link with more lines than this is split into one panel per value of SPLIT_KEYS[0]...
MAX_LINES_PER_PANEL = 6
SPLIT_KEYS = ("profile", "middleware", "history", "qos", "type", "rate_hz")


def _split_key(link_rows: list[dict[str, Any]], n_lines: int) -> str | None:
    if n_lines <= MAX_LINES_PER_PANEL:
        return None
    varying = varying_keys(link_rows)
    for key in SPLIT_KEYS:
        if key in varying and len({str(r.get(key)) for r in link_rows}) <= 4:
            return key
    return None


def _link_columns(cell_dir: Callable[[str], Path], link_rows: list[dict[str, Any]],
                  notes: list[str], silent: list[str]) -> list[tuple[str, list]]:
    """One link's panels: (column title, [(line name, sorted latencies, failed)]), split by
    the setting _split_key picks; cells that cannot be read add to NOTES, cells that
    received nothing to SILENT."""
    groups = list(group_by_settings(link_rows).values())
    split = _split_key(link_rows, len(groups))
    keys = [k for k in varying_keys(link_rows) if k not in ("link", split)]
    columns: dict[str, list] = {}
    for group in groups:
        parts, failed = [], any(r.get("status") != "ok" for r in group)
        for row in group:
            values, why = cell_latencies_ms(cell_dir(row["cell_id"]), row["cell_id"])
            if why:
                notes.append(why)
            elif len(values) == 0:
                silent.append(str(row["cell_id"]))
            else:
                parts.append(values)
        column = "" if split is None else format_setting(split, group[0].get(split))
        lines = columns.setdefault(column, [])
        if parts:
            name = label(group[0], keys)
            if len(group) > 1:
                name += f" ({len(group)} trials)"
            lines.append((name, np.sort(np.concatenate(parts)), failed))
    return [(k, v) for k, v in columns.items() if v]


def _draw_cdf(ax, lines: list, styles: dict[str, dict[str, Any]]) -> None:
    """One panel's CDF lines (failed cells thin and pale), log x when they span > 30x."""
    low = min(float(v[0]) for _, v, _ in lines)
    high = max(float(v[-1]) for _, v, _ in lines)
    for name, values, failed in lines:
        x, y = _thin(values)
        st = styles[name]
        ax.plot(x, y, color=st["color"], linestyle=st["linestyle"],
                linewidth=0.9 if failed else 1.6, alpha=0.7 if failed else 1.0,
                label=name, drawstyle="steps-post")
    if low > 0 and high / low > 30:
        _log_axis(ax.xaxis, (low, high))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("one-way latency (ms)")


def _cdf_figure(panel_rows: list[tuple[str, list[dict[str, Any]], list[tuple[str, list]]]]
                ) -> Figure:
    """A row of panels per link, one legend for the figure."""
    ncols = max(len(cols) for _, _, cols in panel_rows)
    names = list(dict.fromkeys(n for _, _, cols in panel_rows for _, lines in cols
                               for n, _, _ in lines))
    styles = {name: style(i) for i, name in enumerate(names)}
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(WIDTH_IN, 1.0 + (2.6 if ncols == 1 else 2.2) * len(panel_rows)
                              + 0.16 * (len(names) // min(3, len(names)) + 1)),
                     dpi=DPI, layout="constrained")
        grid = fig.subplots(len(panel_rows), ncols, squeeze=False, sharey=True)
    for (link, link_rows, cols), axes in zip(panel_rows, grid, strict=True):
        for j, ax in enumerate(axes):
            if j >= len(cols):
                ax.set_axis_off()
                continue
            column, lines = cols[j]
            _draw_cdf(ax, lines, styles)
            if j == 0:
                ax.set_ylabel("fraction of samples")
            title = condition_title(link, link_rows)
            if column:
                title = f"{link}: {column}" if ncols > 2 else f"{title}\n{column}"
            ax.set_title(title, loc="left", fontsize=9 if ncols > 1 else 10)
    handles = [matplotlib.lines.Line2D([], [], color=styles[n]["color"],
                                       linestyle=styles[n]["linestyle"]) for n in names]
    fig.legend(handles, names, loc="outside lower center", ncols=min(3, len(names)),
               frameon=False)
    return fig


def latency_cdf(cell_dir: Callable[[str], Path], rows: list[dict[str, Any]]) -> Plot | None:
    """One-way latency CDF of every cell (trials pooled): a row of panels per link
    condition, split by profile (or another setting) when a link has many cells. A line
    has the same style wherever its label appears, so one legend serves the figure."""
    notes: list[str] = []
    silent: list[str] = []  # cells that received nothing: nothing to draw, not a problem
    panel_rows: list[tuple[str, list[dict[str, Any]], list[tuple[str, list]]]] = []
    for link, link_rows in _by_link(rows).items():
        columns = _link_columns(cell_dir, link_rows, notes, silent)
        if columns:
            panel_rows.append((link, link_rows, columns))
    if not panel_rows:
        return None
    fig = _cdf_figure(panel_rows)
    failed_ids = [str(r["cell_id"]) for r in rows if r.get("status") != "ok"
                  and str(r["cell_id"]) not in silent]
    return Plot("latency_cdf", "Latency distribution per cell",
                "Cumulative distribution of one-way latency (t_recv − t_send, one clock) "
                "of every sample received, from records/<cell>/sub.bin; trials of one "
                "setting are pooled."
                + (" Thin, pale lines: failed cells (what arrived before failure: "
                   f"{', '.join(failed_ids)})." if failed_ids else "")
                + (f" Received nothing, so not drawn: {', '.join(silent)}."
                   if silent else ""), _png(fig), notes)


# --- reception rate through an outage ----------------------------------------------------

def rate_over_time(rows: list[dict[str, Any]]) -> Plot | None:
    """Samples per 1 s bin from the publisher's start, for cells whose link had an outage."""
    outage_rows = [r for r in rows if r.get("rate_bins_hz") and (num(r.get("outage_s")) or 0)]
    if not outage_rows:
        return None
    panels: dict[tuple, list[dict[str, Any]]] = {}
    for row in outage_rows:
        key = (row.get("link"), row.get("payload_bytes"), num(row.get("outage_s")))
        panels.setdefault(key, []).append(row)
    keys_all = [k for k in varying_keys(outage_rows)
                if k not in ("link", "payload_bytes", "outage_length_s")]
    fig, axes = _figure(len(panels), 2.4)
    for ((link, payload, length), panel_rows), (ax,) in zip(panels.items(), axes,
                                                             strict=True):
        keys = [k for k in keys_all if k in varying_keys(panel_rows)]
        # the outage as it really happened (outage_at_s, measured per cell), else as planned
        starts = [num(r.get("outage_at_s")) for r in panel_rows]
        starts = [s if s is not None else (num(r.get("outage_start_s")) or 0.0)
                  for s, r in zip(starts, panel_rows, strict=True)]
        ax.axvspan(min(starts), max(starts) + length, color="#999999", alpha=0.3, lw=0,
                   label=f"outage ({length:g} s)")
        for i, row in enumerate(panel_rows):
            bins = list(row["rate_bins_hz"])
            st = style(i)
            name = label(row, keys) if keys else str(row.get("cell_id"))
            if num(row.get("trial")) and len(panel_rows) > len(group_by_settings(panel_rows)):
                name += f" (trial {row['trial']})"
            if row.get("status") != "ok":
                name += " — failed"
            ax.step(np.arange(len(bins)), bins, where="post", color=st["color"],
                    linestyle=st["linestyle"], label=name)
        rate = num(panel_rows[0].get("rate_hz"))
        if rate:
            ax.axhline(rate, color="#333333", linewidth=0.8, linestyle=":",
                       label=f"publish rate {rate:g} Hz")
        ax.set_ylim(bottom=0)
        ax.set_xlim(left=0)
        ax.set_xlabel("time since the first measured sample (s)")
        ax.set_ylabel("reception rate (Hz)")
        ax.set_title(f"{link}, {size_label(int(payload))}, {length:g} s outage", loc="left")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return Plot("rate_over_time", "Reception rate through the outage",
                "Samples received per 1 s bin (rate_bins_hz) from the first measured "
                "sample; grey: the link's outage window, from when it really began "
                "(outage_at_s) (seed 000 Fig. 7).", _png(fig))


# --- payload sweep -----------------------------------------------------------------------

def _block_title(block: Block) -> str:
    extras = [f"{k}={v}" for k, v in block.key.items() if k != "link"]
    rows = [r for c in block.columns for r in c.rows]
    return condition_title(block.key["link"], rows) + (
        f" [{', '.join(extras)}]" if extras else "")


def payload_sweep(rows: list[dict[str, Any]], pool: Sequence[str] = ()) -> Plot | None:
    """Reception rate and mean latency vs payload, a line per profile, per Table II block."""
    blocks = [b for b in build_blocks(rows, pool)
              if len({c.payload_bytes for c in b.columns}) >= 2]
    if not blocks:
        return None
    fig, axes = _figure(len(blocks), 2.5, ncols=2)
    metrics = (("reception_rate_hz", "reception rate (Hz)"),
               ("latency_mean_ms", "mean latency (ms)"))
    any_failed = False
    for block, panel in zip(blocks, axes, strict=True):
        profiles = list(dict.fromkeys(c.profile for c in block.columns))
        for ax, (metric, axis_label) in zip(panel, metrics, strict=True):
            for i, profile in enumerate(profiles):
                cols = [c for c in block.columns if c.profile == profile]
                st = style(i)
                ok = [(c.payload_bytes, c.measured(metric), c) for c in cols
                      if not c.failed and c.measured(metric) is not None]
                if ok:
                    x = [p for p, _, _ in ok]
                    y = [v for _, v, _ in ok]
                    ax.plot(x, y, color=st["color"], linestyle="-", marker=st["marker"],
                            markersize=4, label=profile)
                    spread = [(c.payload_bytes, v, c) for p, v, c in ok if len(c.rows) > 1]
                    for p, v, c in spread:
                        vals = [num(r.get(metric)) for r in c.rows]
                        vals = [u for u in vals if u is not None]
                        ax.errorbar([p], [v], yerr=[[v - min(vals)], [max(vals) - v]],
                                    color=st["color"], capsize=2, linewidth=0.8)
                failed = [(c.payload_bytes, c.measured(metric)) for c in cols
                          if c.failed and c.measured(metric) is not None]
                if failed:
                    any_failed = True
                    ax.plot([p for p, _ in failed], [v for _, v in failed], linestyle="none",
                            marker="x", markersize=6, color=FAILED_COLOUR)
                paper = [(c.payload_bytes, block.paper(c, metric)) for c in cols]
                paper = [(p, v) for p, (has, v) in paper if has and v is not None]
                if paper:
                    ax.plot([p for p, _ in paper], [v for _, v in paper], color=st["color"],
                            linestyle=":", marker=st["marker"], markerfacecolor="white",
                            markersize=4, linewidth=1.0, label=f"{profile} (paper)")
            ax.set_xscale("log", base=2)
            payloads = sorted({c.payload_bytes for c in block.columns})
            ax.set_xticks(payloads)
            ax.set_xticklabels([size_label(p) for p in payloads])
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel("payload")
            ax.set_ylabel(axis_label)
            if metric == "latency_mean_ms":
                _log_axis(ax.yaxis, tuple(ax.dataLim.intervaly))
            else:
                ax.set_ylim(bottom=0)
        panel[0].set_title(_block_title(block), loc="left")
    handles: dict[str, Any] = {}
    for ax in fig.axes:
        for handle, name in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(name, handle)
    if any_failed:
        handles["failed (measured)"] = matplotlib.lines.Line2D(
            [], [], linestyle="none", marker="x", color=FAILED_COLOUR)
    fig.legend(list(handles.values()), list(handles), loc="outside lower center",
               ncols=min(4, len(handles)), frameon=False)
    return Plot("payload_sweep", "Reception rate and latency vs payload",
                "Per profile, the mean over trials (bars: min–max of trials). Dotted, "
                "hollow markers: the paper's Table II. Red ×: failed cells, at what they "
                "measured before failing (the tables show them as —).", _png(fig))
