"""SFT's CPU and memory overhead per endpoint process, as paper 003 §V-C reports it.

Pure: from the rows of ``linklab sft-bench`` (each pair of trials carries
``usage[mode][process]``, :func:`linklab.sft.usage.window_usage`) to the mean change
SFT - baseline per process role (the publisher; the receivers, each one a sample), in
percentage points and relative for CPU and in kB and relative for memory, and the Fast
DDS reference beside the middleware's full messages.  Definitions: docs/metrics.md.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

# Paper 003 §V-C: "CPU overhead increased by less than one percent in the mean compared to
# the EmbeddedRTPS baseline. Memory usage increased on average by 386.7 kB over
# EmbeddedRTPS's 39.4 MB baseline, a 1.0 % increase."
PAPER_CPU_DELTA = "< 1 %"
PAPER_RSS_BASE_KB = 39.4 * 1000
PAPER_RSS_DELTA_KB = 386.7
PAPER_RSS_DELTA_PCT = 1.0
# Table I, mean bandwidth of all experiments: Fast DDS 521.8 kbit/s against EmbeddedRTPS'
# 530.0 (-1.5 %); mean latency 0.66 ms against 0.96 ms (-30.9 %).
PAPER_FASTDDS = {"kbit_s": 521.8, "baseline_kbit_s": 530.0, "change_pct": -1.5,
                 "latency_ms": 0.66, "baseline_latency_ms": 0.96, "latency_change_pct": -30.9}

METRICS = ("cpu_pct", "cpu_s_per_msg", "rss_mean_kb", "rss_peak_kb")


def role_of(process: str) -> str:
    """``publisher`` or ``receiver`` (receiver1, receiver2 ... are each a receiver)."""
    return "receiver" if process.startswith("receiver") else process


def mean_change(pairs: Iterable[tuple[float | None, float | None]]) -> dict[str, Any]:
    """Means of the baseline and SFT values of the pairs both measured, their difference
    (SFT - baseline, in the metric's unit) and the relative change (% of the baseline)."""
    both = [(b, s) for b, s in pairs if b is not None and s is not None]
    if not both:
        return {"n": 0, "baseline": None, "sft": None, "delta": None, "relative_pct": None}
    base = statistics.fmean(b for b, _ in both)
    sft = statistics.fmean(s for _, s in both)
    return {"n": len(both), "baseline": base, "sft": sft, "delta": sft - base,
            "relative_pct": 100 * (sft - base) / base if base else None}


def _pairs(rows: list[dict[str, Any]], role: str, metric: str) -> list[tuple[Any, Any]]:
    out = []
    for row in rows:
        use = row.get("usage") or {}
        for process, base in (use.get("baseline") or {}).items():
            if role_of(process) == role:
                sft = (use.get("sft") or {}).get(process, {})
                out.append((base.get(metric), sft.get(metric)))
    return out


def rss_drift_kb(rows: list[dict[str, Any]], role: str) -> float | None:
    """How much a process's mean RSS grows per trial with nothing changed: the mean of
    (baseline of the next pair - baseline of this pair) / 2 over consecutive pairs of
    one testbed (the SFT trial sits one trial after its baseline in the same process,
    so this much of the memory change is the process's own growth, not SFT)."""
    steps = []
    for this, following in zip(rows, rows[1:], strict=False):
        if this["params"].get("receivers") != following["params"].get("receivers"):
            continue  # a new testbed: new processes
        a = (this.get("usage") or {}).get("baseline") or {}
        b = (following.get("usage") or {}).get("baseline") or {}
        for process in a.keys() & b.keys():
            x, y = a[process].get("rss_mean_kb"), b[process].get("rss_mean_kb")
            if role_of(process) == role and x is not None and y is not None:
                steps.append((y - x) / 2)
    return statistics.fmean(steps) if steps else None


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per role, over the parametric rows that carry usage: every metric's mean change."""
    measured = [r for r in rows if r.get("case") == "parametric" and r.get("usage")]
    out: dict[str, Any] = {}
    for role in ("publisher", "receiver"):
        changes = {m: mean_change(_pairs(measured, role, m)) for m in METRICS}
        if changes["cpu_pct"]["n"]:
            out[role] = {**changes, "rss_drift_kb_per_trial": rss_drift_kb(measured, role)}
    return out


def fastdds_summary(rows: list[dict[str, Any]], reference: list[dict[str, Any]]) -> dict:
    """The Fast DDS trials beside the middleware's baseline (and SFT) of the same shapes
    (fields, size, receivers): aggregate kbit/s, latency, and CPU/RSS per role."""
    if not reference:
        return {}

    def shape(params: dict[str, Any]) -> tuple:
        return params["fields"], params["size"], params["receivers"]

    shapes = {shape(t["params"]) for t in reference}
    same = [r for r in rows if r.get("case") == "parametric" and shape(r["params"]) in shapes]
    fast = statistics.fmean(sum(t["kbit_s"]) for t in reference)
    out: dict[str, Any] = {
        "n": len(reference), "shapes": sorted(shapes), "kbit_s": fast,
        "baseline_kbit_s": statistics.fmean(r["baseline_kbit_s"] for r in same) if same else None,
        "sft_kbit_s": statistics.fmean(r["sft_kbit_s"] for r in same) if same else None,
        "latency_ms": mean_present(t["latency_mean_ms"] for t in reference),
        "latency_median_ms": mean_present(t["latency_median_ms"] for t in reference),
        "baseline_latency_ms": mean_present(r["baseline_latency_ms"] for r in same),
        "baseline_latency_median_ms": mean_present(r.get("baseline_latency_median_ms")
                                                   for r in same),
    }
    if out["baseline_kbit_s"]:
        out["change_pct"] = 100 * (fast - out["baseline_kbit_s"]) / out["baseline_kbit_s"]
    for role in ("publisher", "receiver"):
        for metric in ("cpu_pct", "rss_mean_kb"):
            out[f"{role}_{metric}"] = mean_present(
                values.get(metric) for t in reference for process, values in t["usage"].items()
                if role_of(process) == role)
    return out


def mean_present(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def _f(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def markdown(summary: dict[str, Any], middleware: str) -> str:
    """Paper 003 §V-C's overhead beside linklab's, one row per process role."""
    lines = [f"| process ({middleware}) | n | CPU % of a core, base / SFT | Δ CPU (pp) | "
             "Δ CPU (rel.) | CPU ms per message, base / SFT | RSS mean base (MB) | "
             "Δ RSS mean (kB) | Δ RSS mean (rel.) | Δ RSS peak (kB) | RSS drift per trial (kB) |",
             "|---|---|---|---|---|---|---|---|---|---|---|",
             f"| paper (EmbeddedRTPS, C++) | 96 exp. | — | — | {PAPER_CPU_DELTA} | — | "
             f"{PAPER_RSS_BASE_KB / 1000:.1f} | +{PAPER_RSS_DELTA_KB} | "
             f"+{PAPER_RSS_DELTA_PCT:.1f} % | — | — |"]
    for role in ("publisher", "receiver"):
        if role not in summary:
            continue
        s = summary[role]
        cpu, per_msg, rss, peak = (s["cpu_pct"], s["cpu_s_per_msg"], s["rss_mean_kb"],
                                   s["rss_peak_kb"])
        ms = {k: None if per_msg[k] is None else 1000 * per_msg[k] for k in ("baseline", "sft")}
        base_mb = None if rss["baseline"] is None else rss["baseline"] / 1000
        lines.append(
            f"| {role} | {cpu['n']} | {_f(cpu['baseline'], '.2f')} / {_f(cpu['sft'], '.2f')} | "
            f"{_f(cpu['delta'], '+.2f')} | {_f(cpu['relative_pct'], '+.1f')} % | "
            f"{_f(ms['baseline'], '.2f')} / {_f(ms['sft'], '.2f')} | {_f(base_mb, '.1f')} | "
            f"{_f(rss['delta'], '+.1f')} | {_f(rss['relative_pct'], '+.2f')} % | "
            f"{_f(peak['delta'], '+.1f')} | {_f(s['rss_drift_kb_per_trial'], '+.1f')} |")
    return "\n".join(lines)


def fastdds_markdown(ref: dict[str, Any], middleware: str) -> str:
    """Table I's Fast DDS column beside the middleware's full messages and SFT."""
    if not ref:
        return ""
    p = PAPER_FASTDDS
    shapes = ", ".join(f"{f}×{s} B, {r} rx" for f, s, r in ref["shapes"])
    return "\n".join([
        f"| full messages, same shapes ({shapes}) | paper | Fast DDS (probe) | "
        f"{middleware} baseline | {middleware} SFT |",
        "|---|---|---|---|---|",
        f"| mean bandwidth, kbit/s (aggregate) | {p['kbit_s']} vs {p['baseline_kbit_s']} "
        f"({p['change_pct']:+.1f} %) | {_f(ref['kbit_s'], '.1f')} "
        f"({_f(ref.get('change_pct'), '+.1f')} %) | {_f(ref['baseline_kbit_s'], '.1f')} | "
        f"{_f(ref['sft_kbit_s'], '.1f')} |",
        f"| latency mean / median, ms | {p['latency_ms']} vs {p['baseline_latency_ms']} | "
        f"{_f(ref['latency_ms'], '.2f')} / {_f(ref['latency_median_ms'], '.2f')} | "
        f"{_f(ref['baseline_latency_ms'], '.2f')} / "
        f"{_f(ref['baseline_latency_median_ms'], '.2f')} | — |",
        f"| CPU % of a core, publisher / receiver | — | {_f(ref['publisher_cpu_pct'], '.2f')} / "
        f"{_f(ref['receiver_cpu_pct'], '.2f')} | (overhead table) | (overhead table) |",
        f"| RSS mean, MB, publisher / receiver | — | "
        f"{_f(none_div(ref['publisher_rss_mean_kb']), '.1f')} / "
        f"{_f(none_div(ref['receiver_rss_mean_kb']), '.1f')} | (overhead table) | "
        f"(overhead table) |"])


def none_div(kb: float | None) -> float | None:
    """kB as MB (None stays None)."""
    return None if kb is None else kb / 1000
