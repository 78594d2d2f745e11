"""Maximum throughput vs payload (seed 001 Fig. 5): the throughput searches of a run.

001_20e21b052d053958.txt §V-A, Fig. 5: the payload a link carried at the highest rate a
subscriber kept up with, per payload size, log axes. One solid line per middleware (and
link, QoS when they vary) through the searched payloads, in Mbit/s of payload that
arrived in the best sustained trial (linklab.report.searches.figures: never the rate
asked times the payload, also for runs recorded before issue 37); beside
each, dashed with hollow markers in the same colour, the model's capacity of the link's
rate with that middleware's headers (RTPS + UDP + IPv4 per packet, VXLAN and WireGuard on a
cluster's underlay, Ethernet frames counted: ``model_capacity_bit_s``,
linklab.bench.search.model_overhead). A search that sustained
nothing is drawn as a red cross on the axis floor.
"""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402

from linklab.report.plots import DPI, FAILED_COLOUR, RC, WIDTH_IN, Plot, _log_axis, _png, style  # noqa: E402
from linklab.report.searches import figures, is_search  # noqa: E402
from linklab.rundir import num  # noqa: E402
from linklab.units import size_label  # noqa: E402


def _series(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    keys = [k for k in ("middleware", "link", "qos", "profile")
            if len({str(r.get(k)) for r in rows}) > 1] or ["middleware"]
    out: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(", ".join(str(row.get(k)) for k in keys), []).append(row)
    return out


def throughput(rows: list[dict[str, Any]]) -> Plot | None:
    searched = [r for r in rows if is_search(r)]
    if not searched:
        return None
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(WIDTH_IN, 3.6), dpi=DPI, layout="constrained")
        ax = fig.subplots()
    values: list[float] = []
    floor_marks: list[float] = []
    for i, (name, series) in enumerate(_series(searched).items()):
        series = sorted(series, key=lambda r: num(r.get("payload_bytes")) or 0)
        st = style(i)
        points = [(num(r.get("payload_bytes")), figures(r)["max_throughput_bit_s"])
                  for r in series]
        ok = [(p, v / 1e6) for p, v in points if p and v]
        floor_marks += [p for p, v in points if p and not v]
        if ok:
            ax.plot([p for p, _ in ok], [v for _, v in ok], color=st["color"],
                    linestyle="-", marker=st["marker"], markersize=4, label=name)
            values += [v for _, v in ok]
        model = [(num(r.get("payload_bytes")), num(r.get("model_capacity_bit_s")))
                 for r in series]
        model = [(p, v / 1e6) for p, v in model if p and v]
        if model:
            ax.plot([p for p, _ in model], [v for _, v in model], color=st["color"],
                    linestyle="--", linewidth=1.0, marker=st["marker"], markersize=5,
                    markerfacecolor="white", label=f"{name}: model capacity")
            values += [v for _, v in model]
    if not values:
        values = [1.0]
    low = min(values) / 2
    if floor_marks:
        ax.plot(floor_marks, [low] * len(floor_marks), linestyle="none", marker="x",
                color=FAILED_COLOUR, markersize=7, label="nothing sustained")
    payloads = sorted({int(num(r.get("payload_bytes")) or 0) for r in searched} - {0})
    ax.set_xscale("log", base=2)
    ax.set_xticks(payloads)
    ax.set_xticklabels([size_label(p) for p in payloads])
    ax.xaxis.set_minor_formatter(NullFormatter())
    if len(payloads) == 1:
        ax.set_xlim(payloads[0] / 2, payloads[0] * 2)
    ax.set_ylim(low * 0.9, max(values) * 1.5)
    _log_axis(ax.yaxis, (low * 0.9, max(values) * 1.5))
    ax.set_xlabel("payload per sample")
    ax.set_ylabel("payload throughput (Mbit/s)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return Plot("throughput", "Maximum throughput vs payload",
                "Per payload, the payload bits per second that arrived in the best trial a "
                "throughput search sustained (rate: max; seed 001 Fig. 5), one line per "
                "middleware. "
                "Dashed, hollow markers, same colour: the model's capacity of the link's "
                "rate with that middleware's headers (RTPS + UDP + IPv4, VXLAN and "
                "WireGuard on a cluster's underlay, Ethernet frames counted); none for TCP "
                "transports or paths that stay on one node. Log axes.", _png(fig))
