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
  (%, paper 002's counter gaps), ``latency_mean|p50|p95|p99|max`` and ``jitter``
  (durations), ``goodput`` (bit/s);
- per probe process: ``cpu`` (% of one core over the probe's life; publisher and
  subscribers of the topic);
- per cell: ``wire_amplification`` (wire bytes / payload bytes published), ``max_rate``
  (Hz) and ``max_throughput`` (bit/s) of a throughput search (``rate: max``).

A gate on a cell that failed (did not complete, crashed) is missed, with the cell's
reason. Evaluation is a pure function of the stored rows, so ``linklab report`` checks
the same gates (and any given with ``--gate``) on a finished run.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from linklab.bench.fields import Located, mapping, plain
from linklab.errors import UsageError
from linklab.units import (
    format_bitrate,
    parse_bitrate,
    parse_duration,
    parse_fraction,
    parse_frequency,
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


def _hz(value: float) -> str:
    return f"{value:.2f} Hz"


def _pct(value: float) -> str:
    return f"{value * 100:.2f} %"


def _show_ms(value: float) -> str:
    return f"{value:.2f} ms"


METRICS: dict[str, Metric] = {
    "reception_rate": Metric("reception_rate_hz", "stream", parse_frequency, _hz),
    "delivery": Metric("delivery_ratio", "stream", _fraction, _pct),
    "message_loss": Metric("message_loss_rate", "stream", _fraction, _pct),
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

    def holds(self, value: float) -> bool:
        return OPERATORS[self.op](value, self.target)

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "op": self.op, "target": self.target,
                "text": self.text, "topic": self.topic, "where": dict(self.where)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Gate:
        return cls(data["metric"], data["op"], float(data["target"]), data["text"],
                   data.get("topic"), tuple((data.get("where") or {}).items()))


def make_gate(metric: str, target_text: Any, *, topic: str | None = None,
              where: tuple[tuple[str, Any], ...] = (), argument: str = "--gate") -> Gate:
    if metric not in METRICS:
        raise UsageError(f"unknown metric {metric!r}; expected one of {', '.join(METRICS)}",
                         argument=argument)
    match = _TARGET.match(str(target_text))
    if not match:
        raise UsageError(f"{target_text!r} is not a target; expected OP VALUE, e.g. "
                         "'>= 29Hz' (OP: >= <= > <)", argument=argument)
    op, value_text = match.groups()
    try:
        target = METRICS[metric].parse(value_text)
    except UsageError as error:
        raise UsageError(f"{metric}: {error}", argument=argument) from None
    return Gate(metric, op, float(target), f"{metric} {op} {value_text}", topic, where)


def parse_cli_gate(text: str) -> Gate:
    """``[TOPIC:]METRIC OP VALUE`` from ``--gate``."""
    match = _CLI.match(text)
    if not match:
        raise UsageError(f"{text!r}: expected [TOPIC:]{ACCEPTED}", argument="--gate")
    return make_gate(match["metric"], f"{match['op']} {match['value']}", topic=match["topic"])


def parse_gate_mapping(node: yaml.Node, where: Located, *, topic: str | None = None,
                       allow_scope: bool = False,
                       cell_field: Callable[[str, Any, Located], Any] | None = None
                       ) -> tuple[Gate, ...]:
    """A mapping ``metric: "OP VALUE"`` (with ``where:`` and ``topic:`` when allowed)."""
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
        try:
            gates.append(make_gate(key, plain(value_node, loc), topic=topic))
        except UsageError as error:
            raise loc.error(str(error).removeprefix("--gate: ")) from None
    if not gates:
        raise where.error(f"no targets; expected {ACCEPTED}")
    return tuple(Gate(g.metric, g.op, g.target, g.text, g.topic, tuple(scope))
                 for g in gates)


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
    cell_id: str
    gate: str
    measured: str
    topic: str | None = None
    subscriber: str | None = None

    def line(self) -> str:
        place = self.cell_id
        if self.topic:
            place += f" topic {self.topic}"
        if self.subscriber:
            place += f" subscriber {self.subscriber}"
        return f"gate missed: {place}: {self.gate} (measured {self.measured})"

    def to_dict(self) -> dict[str, Any]:
        return {"cell_id": self.cell_id, "gate": self.gate, "measured": self.measured,
                "topic": self.topic, "subscriber": self.subscriber}


# where: keys -> the row column holding that setting
WHERE_COLUMNS = {"payload": "payload_bytes", "rate": "rate_hz", "duration": "duration_s",
                 "warmup": "warmup_s", "grace": "grace_s", "outage_start": "outage_start_s",
                 "outage_length": "outage_length_s"}


def _applies(gate: Gate, row: Mapping[str, Any]) -> bool:
    for key, value in gate.where:
        actual = row.get(WHERE_COLUMNS.get(key, key))
        if isinstance(value, float) or isinstance(actual, float):
            try:
                if not math.isclose(float(actual), float(value), rel_tol=1e-9):
                    return False
            except (TypeError, ValueError):
                return False
        elif actual != value:
            return False
    return True


def _value(row: Mapping[str, Any], key: str) -> float | None:
    value = row.get(key)
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def evaluate(gates: Iterable[Gate], rows: Iterable[Mapping[str, Any]],
             streams: Iterable[Mapping[str, Any]]) -> list[Miss]:
    """Every gate missed, per cell / topic / subscriber, in row order."""
    gates = list(gates)
    by_cell: dict[str, list[Mapping[str, Any]]] = {}
    for stream in streams:
        by_cell.setdefault(str(stream.get("cell_id")), []).append(stream)
    misses: list[Miss] = []
    for row in rows:
        cell_id = str(row.get("cell_id"))
        cell_streams = by_cell.get(cell_id, [])
        for gate in gates:
            if not _applies(gate, row):
                continue
            metric = METRICS[gate.metric]
            if row.get("status") != "ok":
                misses.append(Miss(cell_id, gate.text,
                                   f"cell {row.get('status')}: {row.get('failure_reason')}",
                                   gate.topic))
                continue
            if metric.level == "cell":
                if gate.topic is not None:
                    continue
                misses.extend(_check(gate, metric, row, cell_id))
                continue
            targets = [s for s in cell_streams if gate.topic in (None, s.get("topic"))]
            if gate.topic is not None and not targets:
                continue  # the topic is not in this cell
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
    return misses


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
