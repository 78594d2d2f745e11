"""The report's bar charts, one bar pair per setting (mean over trials): wire
amplification measured beside the model's, and CPU seconds per probe (the figures'
style and the other figures: plots.py)."""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from linklab.report.plots import COLOURS, DPI, RC, WIDTH_IN, Plot, _png  # noqa: E402
from linklab.report.settings import group_by_settings, label, num, varying_keys  # noqa: E402

# --- wire amplification -------------------------------------------------------------------

def _mean(group: list[dict[str, Any]], key: str) -> float | None:
    values = [v for v in (num(r.get(key)) for r in group) if v is not None]
    return sum(values) / len(values) if values else None


def _bar_rows(rows: list[dict[str, Any]], keys: tuple[str, ...]):
    groups = list(group_by_settings(rows).values())
    names = varying_keys(rows)
    out = []
    for group in groups:
        values = [_mean(group, k) for k in keys]
        if any(v is not None for v in values):
            name = label(group[0], names)
            if any(r.get("status") != "ok" for r in group):
                name += " (failed)"
            out.append((name, values))
    return out


def _hbars(items, series: list[tuple[str, str]], xlabel: str, annotate) -> Figure:
    n = len(items)
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(WIDTH_IN, 0.9 + 0.32 * n * max(1, len(series) / 1.5)),
                     dpi=DPI, layout="constrained")
        ax = fig.subplots()
    height = 0.8 / len(series)
    y = np.arange(n)
    hatches = ("", "///", "..")
    for j, (name, colour) in enumerate(series):
        values = [v[j] for _, v in items]
        pos = y + (j - (len(series) - 1) / 2) * height
        ax.barh(pos, [0 if v is None else v for v in values], height=height * 0.95,
                color=colour, edgecolor="#333333", linewidth=0.5, hatch=hatches[j % 3],
                label=name)
        for p, v in zip(pos, values, strict=True):
            ax.text(0 if v is None else v, p, " " + annotate(v, j), va="center", fontsize=7)
    ax.set_yticks(y)
    ax.set_yticklabels([name for name, _ in items])
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.margins(x=0.18)
    ax.grid(axis="y", visible=False)
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=len(series), frameon=False)
    return fig


def _bar_plot(rows: list[dict[str, Any]], keys: tuple[str, ...],
              series: list[tuple[str, str]], xlabel: str, value_format: str,
              plot: tuple[str, str, str], unity_line: bool = False) -> Plot | None:
    """The Plot (key, title, caption) of _hbars of the mean of each key per setting, each
    bar annotated with its value in ``value_format`` (n/a without one), a dotted line at
    1 with ``unity_line``; None when no row has any of the keys."""
    items = _bar_rows(rows, keys)
    if not items:
        return None

    def annotate(v: float | None, j: int) -> str:
        return "n/a" if v is None else value_format.format(v)

    fig = _hbars(items, series, xlabel, annotate)
    if unity_line:
        fig.axes[0].axvline(1.0, color="#333333", linewidth=0.8, linestyle=":")
    return Plot(*plot, _png(fig))


def amplification(rows: list[dict[str, Any]]) -> Plot | None:
    """Measured wire bytes / published bytes beside the model's R_DDS / R_pub, per cell."""
    return _bar_plot(
        rows, ("wire_amplification", "model_amplification"),
        [("measured", COLOURS[0]), ("model R_DDS / R_pub", COLOURS[4])],
        "wire amplification (1 = payload bytes only)", "{:.3f}",
        ("amplification", "Wire amplification: measured vs model",
         "Bytes on the link's interfaces (data, retransmissions, heartbeats, acks, "
         "headers) over payload bytes published; beside it the model's prediction "
         "R_DDS / R_pub (seed 000 Eq. 4 over Eq. 1). "
         "n/a: not measured, or the model does not cover the cell (TCP transports, "
         "other middlewares)."), unity_line=True)


# --- CPU ---------------------------------------------------------------------------------

def cpu(rows: list[dict[str, Any]]) -> Plot | None:
    """CPU seconds of the publisher and subscriber probe, per cell (mean over trials)."""
    return _bar_plot(
        rows, ("pub_cpu_s", "sub_cpu_s"),
        [("publisher probe", COLOURS[0]), ("subscriber probe", COLOURS[1])],
        "CPU time (user + system, s)", "{:.2f} s",
        ("cpu", "CPU per probe",
         "User + system CPU seconds of each probe process over the whole cell "
         "(discovery, publishing, draining), mean over trials."))
