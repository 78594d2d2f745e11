"""Pass/fail gates: targets a cell or a topic must meet, for a team's CI.

In a scenario (all cells), per selected cells (``where:``), per topic (``topic:``, or
``gates:`` inside a topic entry), or on the command line (``--gate``)::

    gates:
      reception_rate: ">= 29Hz"         # every subscriber of every topic
      latency_p99: "<= 80ms"
    gates:
      - where: {link: wifi-severe, profile: optimized}
        topic: camera
        delivery: ">= 100%"
    linklab bench s.yaml --gate "reception_rate>=29Hz" --gate "camera:latency_p99<=80ms"

Metrics and where they are measured (ddsperf's ``-Q`` and the iRobot benchmark's target
files are the conventions this follows: a name, a comparison, a value with its unit):

- per subscriber of a topic: ``reception_rate`` (Hz), ``delivery`` (%), ``message_loss``
  (%, 1 - delivered), ``gap_loss`` (%, paper 002's counter gaps between the first and
  the last sample received), ``stall`` (a duration: the longest interval with nothing
  arriving while samples were outstanding; in seconds, unlike the ``*_ms`` columns),
  ``latency_mean|p50|p95|p99|max`` and ``jitter`` (durations), ``goodput`` (bit/s);
- per probe process: ``cpu`` (% of one core over the probe's life; publisher and
  subscribers of the topic);
- per cell: ``wire_amplification`` (wire bytes / payload bytes published), ``max_rate``
  (Hz) and ``max_throughput`` (bit/s) of a throughput search (``rate: max``); a cell
  metric has no topic.

``where:`` selects cells by their settings as the rows hold them: ``link`` by the link's
label or its preset, ``link.FIELD`` by the value a ``link.FIELD`` axis gave the cell,
``rate`` by Hz or as asked (``max``, ``75%``), ``depth: N`` as ``history: keep_last:N``,
``pairs: N`` as N topics.

Before anything runs (``linklab bench``, ``--dry-run`` too) every gate is checked against
the scenario's matrix (:func:`check_scope`): a ``where:`` that selects no cell, or a topic
no selected cell has, is a one-line error naming the scenario's file:line or the ``--gate``
argument. A gate on a cell that failed (did not complete, crashed) is missed, with the
cell's reason; a gate that applied to nothing in a run (:func:`evaluate`: a topic or
``where:`` no stored cell has) is missed as "not evaluated", never met. Evaluation is a
pure function of the stored rows, so ``linklab report`` checks the same gates (and any
given with ``--gate``) on a finished run.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import yaml

from linklab.bench.fields import Located, mapping, plain
from linklab.errors import UsageError
from linklab.units import (
    format_bitrate,
    format_fixed,
    parse_bitrate,
    parse_duration,
    parse_fraction,
    parse_frequency,
    size_label,
)


@dataclass(frozen=True)
class Metric:
    key: str               # the row / stream column
    level: str             # "stream" | "probe" | "cell"
    parse: Callable[[str], float]   # target text -> the column's unit
    show: Callable[[float], str]


def _ms(text: str) -> float:
    return parse_duration(text, allow_zero=True) * 1000


def _fraction(text: str) -> float:
    return parse_fraction(text)


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"{text!r} is not a finite number >= 0")
    return value


_hz = partial(format_fixed, unit="Hz")
_pct = partial(format_fixed, unit="%", scale=100)
_show_ms = partial(format_fixed, unit="ms")


def _seconds(text: str) -> float:
    return parse_duration(text, allow_zero=True)


def _show_s(value: float) -> str:
    return f"{value:.2f} s" if value >= 1 else f"{value * 1000:.1f} ms"


METRICS: dict[str, Metric] = {
    "reception_rate": Metric("reception_rate_hz", "stream", parse_frequency, _hz),
    "delivery": Metric("delivery_ratio", "stream", _fraction, _pct),
    "message_loss": Metric("message_loss_rate", "stream", _fraction, _pct),
    "gap_loss": Metric("gap_loss_rate", "stream", _fraction, _pct),
    "stall": Metric("stall_max_s", "stream", _seconds, _show_s),  # seconds, not ms
    "latency_mean": Metric("latency_mean_ms", "stream", _ms, _show_ms),
    "latency_p50": Metric("latency_p50_ms", "stream", _ms, _show_ms),
    "latency_p95": Metric("latency_p95_ms", "stream", _ms, _show_ms),
    "latency_p99": Metric("latency_p99_ms", "stream", _ms, _show_ms),
    "latency_max": Metric("latency_max_ms", "stream", _ms, _show_ms),
    "jitter": Metric("jitter_ms", "stream", _ms, _show_ms),
    "goodput": Metric("goodput_bit_s", "stream", parse_bitrate, format_bitrate),
    "cpu": Metric("cpu_fraction", "probe", _fraction, _pct),
    "wire_amplification": Metric("wire_amplification", "cell", _number, lambda v: f"{v:.3f}"),
    "max_rate": Metric("search_max_rate_hz", "cell", parse_frequency, _hz),
    "max_throughput": Metric("search_max_throughput_bit_s", "cell", parse_bitrate,
                             format_bitrate),
}
OPERATORS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}
_TARGET = re.compile(r"^\s*(>=|<=|>|<)\s*(\S.*?)\s*$")
_CLI = re.compile(r"^\s*(?:(?P<topic>[A-Za-z][A-Za-z0-9_]*):)?(?P<metric>[a-z_0-9]+)\s*"
                  r"(?P<op>>=|<=|>|<)\s*(?P<value>\S.*?)\s*$")
ACCEPTED = (f"METRIC OP VALUE with OP one of >= <= > < and METRIC one of "
            f"{', '.join(METRICS)}")


@dataclass(frozen=True)
class Gate:
    metric: str
    op: str
    target: float
    text: str                              # as written, e.g. "reception_rate >= 29Hz"
    topic: str | None = None
    where: tuple[tuple[str, Any], ...] = ()  # cell field -> value (parsed like the field)
    # where it was written: the scenario's Located, or the --gate text (errors name it)
    at: Located | str | None = field(default=None, compare=False, repr=False)

    def holds(self, value: float) -> bool:
        return OPERATORS[self.op](value, self.target)

    def refusal(self, message: str) -> UsageError:
        """A one-line error about this gate, naming where it was written."""
        if isinstance(self.at, Located):
            return self.at.error(message)
        if isinstance(self.at, str):
            return UsageError(f"{self.at!r}: {message}", argument="--gate")
        return UsageError(f"gate {self.text}: {message}")

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "op": self.op, "target": self.target,
                "text": self.text, "topic": self.topic, "where": dict(self.where)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Gate:
        return cls(data["metric"], data["op"], float(data["target"]), data["text"],
                   data.get("topic"), tuple((data.get("where") or {}).items()))


def make_gate(metric: str, target_text: Any, *, topic: str | None = None,
              where: tuple[tuple[str, Any], ...] = (), argument: str = "--gate",
              at: Located | str | None = None, stored: bool = False) -> Gate:
    """A gate; ``stored``: one a run recorded (read as it was, so an old run still
    reports: a cell metric on a topic is then "not evaluated", not refused)."""
    if metric not in METRICS:
        raise UsageError(f"unknown metric {metric!r}; expected one of {', '.join(METRICS)}",
                         argument=argument)
    if topic is not None and METRICS[metric].level == "cell" and not stored:
        raise UsageError(f"{metric} is measured per cell; it has no topic (give it "
                         f"without topic {topic!r})", argument=argument)
    match = _TARGET.match(str(target_text))
    if not match:
        raise UsageError(f"{target_text!r} is not a target; expected OP VALUE, e.g. "
                         "'>= 29Hz' (OP: >= <= > <)", argument=argument)
    op, value_text = match.groups()
    try:
        target = METRICS[metric].parse(value_text)
    except UsageError as error:
        raise UsageError(f"{metric}: {error}", argument=argument) from None
    return Gate(metric, op, float(target), f"{metric} {op} {value_text}", topic, where, at)


def parse_cli_gate(text: str, *, stored: bool = False) -> Gate:
    """``[TOPIC:]METRIC OP VALUE`` from ``--gate`` (``stored``: as a run recorded it)."""
    match = _CLI.match(text)
    if not match:
        raise UsageError(f"{text!r}: expected [TOPIC:]{ACCEPTED}", argument="--gate")
    try:
        return make_gate(match["metric"], f"{match['op']} {match['value']}",
                         topic=match["topic"], at=text, stored=stored)
    except UsageError as error:
        raise UsageError(f"{text!r}: {str(error).removeprefix('--gate: ')}",
                         argument="--gate") from None


def parse_gate_mapping(node: yaml.Node, where: Located, *, topic: str | None = None,
                       allow_scope: bool = False,
                       cell_field: Callable[[str, Any, Located], Any] | None = None,
                       in_topic: bool = False) -> tuple[Gate, ...]:
    """A mapping ``metric: "OP VALUE"`` (with ``where:`` and ``topic:`` when allowed;
    ``in_topic``: the ``gates:`` of a topic entry, which take no per-cell metric)."""
    gates = []
    scope: list[tuple[str, Any]] = []
    items = mapping(node, where)
    for key, value_node, loc in items:
        if allow_scope and key == "topic":
            value = plain(value_node, loc)
            if not isinstance(value, str):
                raise loc.error("expected a topic name")
            topic = value
    for key, value_node, loc in items:
        if allow_scope and key == "topic":
            continue
        if allow_scope and key == "where":
            for field_name, field_node, field_loc in mapping(value_node, loc):
                value = plain(field_node, field_loc)
                scope.append((field_name, cell_field(field_name, value, field_loc)
                              if cell_field else value))
            continue
        if in_topic and key in METRICS and METRICS[key].level == "cell":
            raise loc.error(f"{key} is measured per cell; a topic's gates take "
                            "per-subscriber and per-probe metrics (give it under the "
                            "scenario's gates:)")
        try:
            gates.append(make_gate(key, plain(value_node, loc), topic=topic, at=loc))
        except UsageError as error:
            raise loc.error(str(error).removeprefix("--gate: ")) from None
    if not gates:
        raise where.error(f"no targets; expected {ACCEPTED}")
    return tuple(replace(g, where=tuple(scope)) for g in gates)


def parse_gates(node: yaml.Node, where: Located,
                cell_field: Callable[[str, Any, Located], Any]) -> tuple[Gate, ...]:
    """``gates:`` of a scenario: one mapping, or a list of mappings with where:/topic:."""
    if isinstance(node, yaml.SequenceNode):
        out: list[Gate] = []
        for i, item in enumerate(node.value):
            loc = Located(where.file, item.start_mark.line + 1, f"{where.field}[{i}]")
            out.extend(parse_gate_mapping(item, loc, allow_scope=True, cell_field=cell_field))
        return tuple(out)
    return parse_gate_mapping(node, where, allow_scope=True, cell_field=cell_field)


# --- evaluation --------------------------------------------------------------------------

@dataclass(frozen=True)
class Miss:
    cell_id: str              # "" when the gate applied to no cell (evaluated is False)
    gate: str
    measured: str             # the value, or why there is none
    topic: str | None = None
    subscriber: str | None = None
    evaluated: bool = True    # False: the gate applied to nothing (never "met")

    def line(self) -> str:
        place = self.cell_id or "run"
        if self.topic:
            place += f" topic {self.topic}"
        if self.subscriber:
            place += f" subscriber {self.subscriber}"
        if not self.evaluated:
            return f"gate missed: {place}: {self.gate} (not evaluated: {self.measured})"
        return f"gate missed: {place}: {self.gate} (measured {self.measured})"

    def to_dict(self) -> dict[str, Any]:
        return {"cell_id": self.cell_id, "gate": self.gate, "measured": self.measured,
                "topic": self.topic, "subscriber": self.subscriber,
                "evaluated": self.evaluated}


# where: keys -> the row column holding that setting
WHERE_COLUMNS = {"payload": "payload_bytes", "rate": "rate_hz", "duration": "duration_s",
                 "warmup": "warmup_s", "grace": "grace_s", "outage_start": "outage_start_s",
                 "outage_length": "outage_length_s", "pairs": "topics"}


def _setting(row: Mapping[str, Any], key: str, value: Any) -> Any:
    """The row's value of the setting ``where:`` names with ``key`` (compared to
    ``value``)."""
    if key.startswith("link."):
        try:
            overrides = json.loads(row.get("link_overrides") or "{}")
        except (TypeError, ValueError):
            return None
        return overrides.get(key[5:]) if isinstance(overrides, dict) else None
    if key == "rate" and isinstance(value, str):
        return row.get("rate_asked")
    if key == "depth":
        history = str(row.get("history") or "")
        return int(history[10:]) if history.startswith("keep_last:") and \
            history[10:].isdigit() else None
    return row.get(WHERE_COLUMNS.get(key, key))


def _matches(key: str, value: Any, row: Mapping[str, Any]) -> bool:
    actual = _setting(row, key, value)
    if key == "link":
        return value in (row.get("link"), row.get("link_preset"))
    if key.startswith("link."):
        return actual is not None and str(actual) == str(value)
    if isinstance(value, float) or isinstance(actual, float):
        try:
            return math.isclose(float(actual), float(value), rel_tol=1e-9)
        except (TypeError, ValueError):
            return False
    return actual == value


def _applies(gate: Gate, row: Mapping[str, Any]) -> bool:
    return all(_matches(key, value, row) for key, value in gate.where)


def _where_text(gate: Gate) -> str:
    return ", ".join(f"{k}={_shown(k, v)}" for k, v in gate.where)


def _shown(key: str, value: Any) -> str:
    if key == "payload" and isinstance(value, int):
        return size_label(value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _value(row: Mapping[str, Any], key: str) -> float | None:
    value = row.get(key)
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def check_scope(gates: Iterable[Gate],
                cells: Sequence[tuple[Mapping[str, Any], Iterable[str]]]) -> None:
    """Refuse, before anything runs, a gate that would apply to nothing: a ``where:``
    that selects no cell of the matrix, or a topic none of the cells it selects has.
    ``cells``: (the cell's row settings -- matrix.Cell.axes() --, its topic names)."""
    cells = [(row, set(topics)) for row, topics in cells]
    for gate in gates:
        selected = [(row, topics) for row, topics in cells if _applies(gate, row)]
        if not selected:
            raise gate.refusal(f"where: {_where_text(gate)} selects no cell of the matrix; "
                               f"{_values_of(gate, [row for row, _ in cells])}")
        if gate.topic is not None and not any(gate.topic in t for _, t in selected):
            known = sorted(set().union(*(t for _, t in selected)))
            scope = "the cells where: selects" if gate.where else "the scenario's cells"
            raise gate.refusal(f"topic {gate.topic!r} is in none of {scope}; their topics: "
                               f"{', '.join(known)}")


def _values_of(gate: Gate, rows: list[Mapping[str, Any]]) -> str:
    """What the rows have for each setting the gate's where: names."""
    parts = []
    for key, value in gate.where:
        seen: dict[str, None] = {}
        for row in rows:
            if key == "link":
                seen.update(dict.fromkeys(str(v) for v in (row.get("link"),
                                                           row.get("link_preset")) if v))
            else:
                actual = _setting(row, key, value)
                seen[_shown(key, actual) if actual is not None else "(unset)"] = None
        parts.append(f"{key}: {', '.join(seen) or '(none)'}")
    return "the cells have " + "; ".join(parts)


def evaluate(gates: Iterable[Gate], rows: Iterable[Mapping[str, Any]],
             streams: Iterable[Mapping[str, Any]]) -> list[Miss]:
    """Every gate missed, per cell / topic / subscriber, in row order; then every gate
    that applied to no value at all (``evaluated`` False: a gate is met only when it held
    on at least one value)."""
    gates = list(gates)
    rows = list(rows)
    by_cell: dict[str, list[Mapping[str, Any]]] = {}
    for stream in streams:
        by_cell.setdefault(str(stream.get("cell_id")), []).append(stream)
    misses: list[Miss] = []
    touched: set[int] = set()
    for row in rows:
        cell_id = str(row.get("cell_id"))
        cell_streams = by_cell.get(cell_id, [])
        for g, gate in enumerate(gates):
            if not _applies(gate, row):
                continue
            metric = METRICS[gate.metric]
            if metric.level == "cell":
                if gate.topic is not None:
                    continue  # a stored gate from before make_gate refused this
            elif gate.topic is not None:
                topics = _row_topics(row, cell_streams)
                if gate.topic not in topics and (topics or row.get("status") == "ok"):
                    continue  # the topic is not in this cell
            touched.add(g)
            if row.get("status") != "ok":
                misses.append(Miss(cell_id, gate.text,
                                   f"cell {row.get('status')}: {row.get('failure_reason')}",
                                   gate.topic))
                continue
            if metric.level == "cell":
                misses.extend(_check(gate, metric, row, cell_id))
                continue
            targets = [s for s in cell_streams if gate.topic in (None, s.get("topic"))]
            if not targets:
                targets = [row]  # a run stored before per-subscriber streams
            seen_pub: set[str] = set()
            for stream in targets:
                if metric.level == "probe":
                    for role in ("pub", "sub"):
                        key = f"{role}_{metric.key}"
                        if role == "pub":
                            if stream.get("topic") in seen_pub:
                                continue
                            seen_pub.add(str(stream.get("topic")))
                        misses.extend(_check(gate, metric, stream, cell_id, key=key,
                                             who=f"{role}"))
                else:
                    misses.extend(_check(gate, metric, stream, cell_id))
    for g, gate in enumerate(gates):
        if g not in touched:
            misses.append(Miss("", gate.text, _why_not(gate, rows, by_cell), gate.topic,
                               evaluated=False))
    return misses


def _row_topics(row: Mapping[str, Any], streams: list[Mapping[str, Any]]) -> set[str]:
    """The topics of a cell: its streams', and those its ``endpoints`` column names
    (``NAME: robot->edge ...; NAME2: ...``, matrix.Cell.axes: a failed cell may have no
    streams); empty when neither is stored."""
    names = {str(s.get("topic")) for s in streams if s.get("topic") is not None}
    endpoints = row.get("endpoints")
    if isinstance(endpoints, str):
        names |= {part.split(":", 1)[0].strip() for part in endpoints.split("; ")
                  if ":" in part}
    return names


def _why_not(gate: Gate, rows: list[Mapping[str, Any]],
             by_cell: Mapping[str, list[Mapping[str, Any]]]) -> str:
    """Why a gate applied to no value of the run."""
    if not rows:
        return "the run has no cells"
    selected = [r for r in rows if _applies(gate, r)]
    if not selected:
        return f"where: {_where_text(gate)} selects no cell of the run; {_values_of(gate, rows)}"
    if METRICS[gate.metric].level == "cell":
        return f"{gate.metric} is measured per cell; it has no topic"
    topics = sorted({t for r in selected
                     for t in _row_topics(r, by_cell.get(str(r.get("cell_id")), []))})
    scope = "that where: selects " if gate.where else ""
    return (f"no cell {scope}has topic {gate.topic}; the cells' topics: "
            f"{', '.join(topics) or '(none recorded)'}")


def _check(gate: Gate, metric: Metric, where: Mapping[str, Any], cell_id: str,
           key: str | None = None, who: str | None = None) -> list[Miss]:
    value = _value(where, key or metric.key)
    topic = where.get("topic") if isinstance(where.get("topic"), str) else None
    subscriber = where.get("subscriber") if who != "pub" else None
    if value is None:
        return [Miss(cell_id, gate.text, "not measured", topic, subscriber)]
    if gate.holds(value):
        return []
    shown = metric.show(value) + (f" by the {'publisher' if who == 'pub' else 'subscriber'}"
                                  if who else "")
    return [Miss(cell_id, gate.text, shown, topic, subscriber)]
