"""Cells with several subscribers or topics: per subscriber, per topic, and the fan-out.

Read from streams.parquet (one row per subscriber, linklab.rundir) beside the cells:

- per subscriber: topic, publisher -> subscriber host, delivered (received/published),
  reception rate, latency mean/p50/p95/p99/max, jitter, message loss rate from counter
  gaps (paper 002), status;
- per topic: the topic's subscribers together: delivered (sums), reception rate (mean
  and lowest), mean latency over every received sample (the subscribers' means weighted
  by what each received), the worst subscriber's p99, loss pooled over the published
  samples, goodput (sum);
- fan-out, one topic to k >= 2 subscribers: each subscriber by rank (1 = first to get
  its copies, by mean latency), its offset from rank 1 beside the model's (one copy's
  wire bytes at the link's rate per rank: ``linklab model --subscribers K``), and the
  fitted step per subscriber, measured and model. Where the cell is paper 002's case
  (one publisher, four subscribers), its Table III (002_d18906a16de1bd6a.txt §IV-C, ns:
  linklab.model.fanout.TABLE_III_NS) stands beside ours.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from linklab.model.fanout import TABLE_III_NS, fit_fanout_step
from linklab.report.latency import stall_text
from linklab.report.outcome import (
    delivered_sum,
    delivered_text,
    expected_is_lower_bound,
    status_cell,
)
from linklab.report.view import Cell, Section, count, fmt, pct
from linklab.rundir import num

STREAM_KEYS = ("cell_id", "topic", "publisher", "subscriber", "endpoint", "published",
               "published_exact", "received", "duplicates", "delivery_ratio", "reception_rate_hz",
               "latency_mean_ms", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms",
               "latency_max_ms", "jitter_ms", "message_loss_rate", "gap_loss_rate",
               "stall_max_s", "stall_link_up_s", "goodput_bit_s",
               "status", "failure_reason", "completion_rule", "fanout_rank",
               "model_fanout_offset_ms")
# a cell's QoS -> the row of Table III it is compared with (ROS 2 profile names)
TABLE_III_ROW = {"sensor_data": "Sensor", "default": "Default", "parameters": "Parameters"}


def _streams_by_cell(rows: list[dict[str, Any]], streams: list[dict[str, Any]]
                     ) -> OrderedDict[str, list[dict[str, Any]]]:
    """The streams of the cells with more than one subscriber or topic, in row order."""
    by_cell: dict[str, list[dict[str, Any]]] = {}
    for stream in streams:
        by_cell.setdefault(str(stream.get("cell_id")), []).append(stream)
    out: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
    for row in rows:
        mine = by_cell.get(str(row["cell_id"]), [])
        several = (int(num(row.get("subscribers")) or 1) > 1
                   or int(num(row.get("topics")) or 1) > 1 or len(mine) > 1)
        if several and mine:
            out[str(row["cell_id"])] = mine
    return out


def _by_topic(streams: list[dict[str, Any]]) -> OrderedDict[str, list[dict[str, Any]]]:
    topics: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
    for s in streams:
        topics.setdefault(str(s.get("topic")), []).append(s)
    return topics


def _who(stream: dict[str, Any]) -> str:
    return f"{stream.get('publisher')} → {stream.get('subscriber')}"


def per_subscriber(rows: list[dict[str, Any]], streams: list[dict[str, Any]]
                   ) -> Section | None:
    cells = _streams_by_cell(rows, streams)
    if not cells:
        return None
    section = Section(
        "subscribers", "Per subscriber",
        ["Cell", "Topic", "Publisher → subscriber", "Delivered", "Rate (Hz)", "Mean (ms)",
         "p50", "p95", "p99", "Max", "Jitter (ms)", "Loss", "Stall (s)", "Status"],
        legend="Each subscriber against its topic's publisher: delivered = received/"
               "published; latency one-way in ms; loss = 1 - delivered (paper 002's rate "
               "of message loss, counted from the publisher's records); stall = the "
               "longest time nothing arrived while samples were outstanding "
               "(docs/metrics.md).", right=tuple(range(3, 13)))
    for cell_id, mine in cells.items():
        for s in mine:
            section.add(cell_id, str(s.get("topic")),
                        Cell(_who(s), title=str(s.get("endpoint") or "")),
                        Cell(delivered_text(s), data={"metric": "delivered"}),
                        fmt(s.get("reception_rate_hz")), fmt(s.get("latency_mean_ms")),
                        fmt(s.get("latency_p50_ms")), fmt(s.get("latency_p95_ms")),
                        fmt(s.get("latency_p99_ms")), fmt(s.get("latency_max_ms")),
                        fmt(s.get("jitter_ms")), pct(s.get("message_loss_rate")),
                        stall_text(s), status_cell(s))
            section.records.append({k: s.get(k) for k in STREAM_KEYS})
    return section


def _weighted(values: list[tuple[float | None, float | None]]) -> float | None:
    pairs = [(v, w) for v, w in values if v is not None and w]
    total = sum(w for _, w in pairs)
    return sum(v * w for v, w in pairs) / total if total else None


def topic_aggregate(topic_streams: list[dict[str, Any]]) -> dict[str, Any]:
    """One topic's subscribers together (see the module docstring)."""
    rates = [num(s.get("reception_rate_hz")) for s in topic_streams]
    rates = [r for r in rates if r is not None]
    p99 = [v for v in (num(s.get("latency_p99_ms")) for s in topic_streams) if v is not None]
    goodput = [v for v in (num(s.get("goodput_bit_s")) for s in topic_streams)
               if v is not None]
    failed = [s for s in topic_streams if s.get("status") != "ok"]
    return {
        "topic": topic_streams[0].get("topic"), "publisher": topic_streams[0].get("publisher"),
        "subscribers": len(topic_streams),
        "received": sum(int(num(s.get("received")) or 0) for s in topic_streams),
        "expected": sum(int(num(s.get("published")) or 0) for s in topic_streams),
        "expected_is_lower_bound": any(expected_is_lower_bound(s) for s in topic_streams),
        "reception_rate_mean_hz": sum(rates) / len(rates) if rates else None,
        "reception_rate_min_hz": min(rates) if rates else None,
        "latency_mean_ms": _weighted([(num(s.get("latency_mean_ms")), num(s.get("received")))
                                      for s in topic_streams]),
        "latency_p99_worst_ms": max(p99) if p99 else None,
        "message_loss_rate": _weighted([(num(s.get("message_loss_rate")),
                                         num(s.get("published"))) for s in topic_streams]),
        "goodput_bit_s": sum(goodput) if goodput else None,
        "failed_subscribers": len(failed),
    }


def per_topic(rows: list[dict[str, Any]], streams: list[dict[str, Any]]) -> Section | None:
    cells = _streams_by_cell(rows, streams)
    if not cells:
        return None
    section = Section(
        "topics", "Per topic",
        ["Cell", "Topic", "Publisher → subscribers", "Delivered", "Rate mean (Hz)",
         "Rate min (Hz)", "Mean (ms)", "Worst p99 (ms)", "Loss (gaps)", "Goodput (Mbit/s)",
         "Status"],
        legend="A topic's subscribers together: delivered summed; mean latency over every "
               "received sample; the worst subscriber's p99; loss pooled over the "
               "published samples.", right=tuple(range(3, 10)))
    for cell_id, mine in cells.items():
        for topic_streams in _by_topic(mine).values():
            agg = topic_aggregate(topic_streams)
            n, bad = agg["subscribers"], agg["failed_subscribers"]
            status = Cell("ok") if not bad else Cell(f"{bad} of {n} failed", "failed")
            goodput = agg["goodput_bit_s"]
            section.add(cell_id, str(agg["topic"]),
                        f"{agg['publisher']} → {n} subscriber{'s' if n != 1 else ''}",
                        Cell(delivered_sum(topic_streams), data={"metric": "delivered"}),
                        fmt(agg["reception_rate_mean_hz"]), fmt(agg["reception_rate_min_hz"]),
                        fmt(agg["latency_mean_ms"]), fmt(agg["latency_p99_worst_ms"]),
                        pct(agg["message_loss_rate"]),
                        fmt(None if goodput is None else goodput / 1e6, 3), status)
            section.records.append(dict(agg, cell_id=cell_id))
    return section


# --- fan-out ---------------------------------------------------------------------------

def paper_row(qos: Any) -> str:
    """The Table III row a cell is compared with: its ROS 2 profile, else Default."""
    return TABLE_III_ROW.get(str(qos), "Default")


def paper_fanout(qos: Any) -> dict[str, Any]:
    """Paper 002 Table III in ms for the cell's profile: one subscriber alone, the four
    nodes, their offsets from node 1 and the fitted step."""
    name = paper_row(qos)
    alone, nodes = TABLE_III_NS[name]
    nodes_ms = [n / 1e6 for n in nodes]
    return {"profile": name, "alone_ms": alone / 1e6, "nodes_ms": nodes_ms,
            "offsets_ms": [n - nodes_ms[0] for n in nodes_ms],
            "step_ms": fit_fanout_step(nodes_ms)[1]}


def fanout(rows: list[dict[str, Any]], streams: list[dict[str, Any]]) -> Section | None:
    by_id = {str(r["cell_id"]): r for r in rows}
    cases = []
    for cell_id, mine in _streams_by_cell(rows, streams).items():
        topics = _by_topic(mine)
        if len(topics) == 1 and len(mine) >= 2:
            cases.append((by_id[cell_id], mine))
    if not cases:
        return None
    any_paper = any(len(mine) == 4 for _, mine in cases)
    columns = ["Cell", "Rank", "Subscriber", "Mean (ms)", "Offset (ms)", "Model offset (ms)"]
    if any_paper:
        columns += ["Paper node (ms)", "Paper offset (ms)"]
    section = Section(
        "fanout", "Fan-out: one topic to several subscribers",
        columns, right=tuple(range(3, len(columns))),
        legend="Rank 1 = the subscriber whose copies came first (by mean latency); offset = "
               "its mean latency minus rank 1's. Model: each copy is sent after the "
               "previous one, one copy's wire bytes at the link's rate apart (linklab "
               "model --subscribers K). Paper: 002 Table III (ns-3, 802.11a 54 Mbit/s, "
               "45-byte messages, 1 publisher -> 4 subscribers), shown for cells with "
               "four subscribers, row by the cell's QoS profile (Default when it is not "
               "a ROS 2 profile).")
    for row, mine in cases:
        ranked = sorted(mine, key=lambda s: (num(s.get("fanout_rank")) or 1e9,
                                             str(s.get("subscriber"))))
        first = num(ranked[0].get("latency_mean_ms"))
        paper = paper_fanout(row.get("qos")) if len(mine) == 4 else None
        for i, s in enumerate(ranked):
            mean = num(s.get("latency_mean_ms"))
            offset = None if mean is None or first is None else mean - first
            cells: list[Cell | str] = [
                str(row["cell_id"]), count(s.get("fanout_rank")), str(s.get("subscriber")),
                fmt(mean, 3), fmt(offset, 3), fmt(s.get("model_fanout_offset_ms"), 3)]
            if any_paper:
                cells += ([fmt(paper["nodes_ms"][i], 3), fmt(paper["offsets_ms"][i], 3)]
                          if paper else ["", ""])
            section.add(*cells)
        step, model = num(row.get("fanout_step_ms")), num(row.get("model_fanout_step_ms"))
        note = (f"{row['cell_id']}: {len(mine)} subscribers of {ranked[0].get('publisher')}; "
                f"step per subscriber {fmt(step, 3)} ms measured, {fmt(model, 3)} ms model")
        record = {"cell_id": row["cell_id"], "subscribers": len(mine),
                  "fanout_step_ms": step, "model_fanout_step_ms": model,
                  "ranks": [{"rank": s.get("fanout_rank"), "subscriber": s.get("subscriber"),
                             "latency_mean_ms": s.get("latency_mean_ms"),
                             "model_fanout_offset_ms": s.get("model_fanout_offset_ms")}
                            for s in ranked],
                  "paper_002_table_iii": paper}
        if paper:
            note += (f"; paper 002 Table III ({paper['profile']}): {paper['step_ms']:.3f} ms, "
                     f"one subscriber alone {paper['alone_ms']:.3f} ms")
        section.notes.append(note)
        section.records.append(record)
    return section
