"""One preset file -> validated presets; every problem is one line ``FILE:LINE: ...``.

A preset file (the shipped ``presets*.yaml`` and the user's ``--presets FILE`` alike) is
a YAML mapping of preset names to fields::

    my-wifi:
      description: the lab's access point, measured 2024-05   # optional text
      source: iperf3 -u between the robot and the edge        # optional text
      rate: 50Mbit/s
      loss: 2%
      delay: 3ms
      up: {loss: 5%}          # robot -> edge only (down: edge -> robot)

Fields: description, source, mtu and tcp_congestion (for the whole run), the stage
fields of ``linklab.link.spec`` (rate, loss, outage, delay, jitter, jitter_distribution,
burst_loss, trace), and up/down.
A stage field takes one value for both directions, ``up=A,down=B``, or a mapping
``{up: A, down: B}``. A trace path is relative to the file; it is stored absolute.

Every preset is validated the way ``linklab link up`` would, before anything is made:
each value is parsed by ``build_spec`` (so unit errors are those of ``linklab.units``),
trace files are read, and combinations that could not be applied are refused
(``spec_checks``). Which wire carries the stages is decided at ``up``, so fields that
need the userspace emulator are fine here. Errors read
``FILE:LINE: preset NAME: FIELD: what is wrong; what is accepted``.
"""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from linklab.errors import UsageError
from linklab.link.medium import EXAMPLES as MEDIUM_EXAMPLES
from linklab.link.medium import parse_given
from linklab.link.spec import (
    DIRECTIONS,
    LINK_WIDE_FIELDS,
    MEDIUM_FIELD,
    STAGE_FIELDS,
    build_spec,
    per_direction,
)
from linklab.link.spec_checks import conflicts

TEXT_FIELDS = ("description", "source")
FIELDS = (*TEXT_FIELDS, *LINK_WIDE_FIELDS, *STAGE_FIELDS, *DIRECTIONS)
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
NAME_FORMS = "1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"
SHAPE = "a mapping of preset names to fields, e.g. 'my-wifi: {rate: 50Mbit/s, loss: 2%}'"
BURST_KEYS = ("p", "r", "loss_good", "loss_bad")
# What each field takes (for a field with no value, or a list).
HINTS = {
    "mtu": "a size in bytes such as 1500",
    "tcp_congestion": "a TCP congestion control of the kernel such as cubic, reno or bbr",
    "trace_start": "first-packet, now, or a UTC time such as 2026-11-28T10:30:00Z",
    "rate": "a bit rate such as 50Mbit/s",
    "loss": "a fraction such as 1% or 0.01",
    "outage": "START+LENGTH[/PERIOD] such as 10s+20s",
    "delay": "a duration such as 20ms",
    "jitter": "a duration such as 5ms",
    "jitter_distribution": "uniform, normal, pareto or paretonormal",
    "burst_loss": "gemodel:p,r,1-h,1-k such as gemodel:1%,30%,100%,0%, or a mapping "
                  "with p, r (and loss_good, loss_bad) under up: or down:",
    "trace": "a Mahimahi trace file (a path relative to the preset file, or absolute)",
    "queue": "droptail, headdrop or codel (the queue in front of the rate or trace)",
    "queue_limit": "N packets, a size such as 1MiB, or both: '200 packets, 1MiB'",
    "medium": "a mapping of 802.11 medium keys such as {standard: ac, mcs: 9}, or "
              "standard=ac,mcs=9",
}

_YAML = "tag:yaml.org,2002:"
_MERGE = _YAML + "merge"
_PLAIN_TAGS = {_YAML + t for t in ("str", "int", "float", "bool", "null", "map", "seq",
                                   "timestamp", "merge")}


@dataclass(frozen=True)
class Preset:
    """A validated preset: its fields (as written, traces made absolute) and origin."""

    name: str
    fields: dict[str, Any]
    file: str
    line: int


def read_preset_file(path: Path | str) -> dict[str, Preset]:
    """Read and validate every preset of one file (raises one-line UsageErrors)."""
    return _FileReader(Path(path)).read()


def _error(label: str, line: int | None, message: str, *where: str) -> UsageError:
    head = f"{label}:{line}" if line else label
    return UsageError(" ".join(message.split()), argument=": ".join([head, *where]))


def _line(node: Node) -> int:
    return node.start_mark.line + 1


def _kind(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    if node.tag == _YAML + "null":
        return "nothing"
    if node.tag == _YAML + "str":
        return f"text {node.value!r}"
    return str(node.value)


def _yaml_line(error: yaml.MarkedYAMLError, text: str) -> int | None:
    """Where a YAML error is: where it was found, unless that is the end of the file (an
    unclosed bracket or a key without ':'), then where the unfinished part began."""
    marks = [m for m in (error.problem_mark, error.context_mark) if m is not None]
    if not marks:
        return None
    last = len(text.rstrip().splitlines())
    line = marks[0].line + 1
    at_end = line > last or "end of stream" in str(error.problem)
    return marks[-1].line + 1 if at_end else line


def _inside(where: tuple[str, ...], key: str | None) -> tuple[str, ...]:
    """The context of a mapping's value: (), (preset NAME), (preset NAME, FIELD[.SUB])."""
    if key is None:
        return where
    if not where:
        return (f"preset {key}",)
    if len(where) == 1:
        return (*where, key)
    return (where[0], f"{where[1]}.{key}")


def _message(error: UsageError) -> str:
    """A UsageError's message without the argument it names."""
    text = str(error)
    prefix = f"{error.argument}: " if error.argument else ""
    return text[len(prefix):] if prefix and text.startswith(prefix) else text


class _FileReader:
    def __init__(self, path: Path):
        self.path = path
        self.label = str(path)
        self.base = path.resolve().parent
        self.loader: yaml.SafeLoader | None = None

    def fail(self, node: Node | int | None, message: str, *where: str) -> UsageError:
        line = _line(node) if isinstance(node, Node) else node
        return _error(self.label, line, message, *where)

    # --- text -> nodes ---------------------------------------------------------------

    def read(self) -> dict[str, Preset]:
        text = self._text()
        try:
            root = self._compose(text)
            if root is None:
                raise self.fail(1, f"the file holds no presets; expected {SHAPE}")
            self._check_tree(root, (), set())
            if not isinstance(root, MappingNode):
                raise self.fail(root, f"the top level is {_kind(root)}; expected {SHAPE}")
            pairs = self._pairs(root)
            if not pairs:
                raise self.fail(root, f"the file holds no presets; expected {SHAPE}")
            return {name: self._preset(name, key, value) for name, (key, value) in pairs.items()}
        except RecursionError:
            raise self.fail(None, f"invalid YAML: nested too deeply; expected {SHAPE}") from None
        finally:
            if self.loader is not None:
                self.loader.dispose()

    def _text(self) -> str:
        accepted = f"expected a readable YAML file of presets ({SHAPE})"
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            raise self.fail(None, f"no such file; {accepted}") from None
        except IsADirectoryError:
            raise self.fail(None, f"is a directory; {accepted}") from None
        except OSError as error:
            raise self.fail(None, f"cannot read it ({error.strerror}); {accepted}") from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as error:
            line = data.count(b"\n", 0, error.start) + 1
            raise self.fail(line, f"not UTF-8 text (byte 0x{data[error.start]:02x}); save "
                            "the file as UTF-8") from None

    def _compose(self, text: str) -> Node | None:
        try:
            self.loader = yaml.SafeLoader(text)
            return self.loader.get_single_node()
        except yaml.MarkedYAMLError as error:
            problem = ", ".join(t for t in (error.context, error.problem) if t) or "not valid"
            raise self.fail(_yaml_line(error, text),
                            f"invalid YAML: {problem}; expected {SHAPE}") from None
        except yaml.YAMLError as error:  # e.g. ReaderError: a control character
            position = getattr(error, "position", None)
            line = text.count("\n", 0, position) + 1 if position is not None else None
            character = getattr(error, "character", None)
            what = (f"character #x{character:04x} is not allowed" if
                    isinstance(character, int) else "not valid")
            raise self.fail(line, f"invalid YAML: {what}; expected {SHAPE}") from None

    def _check_tree(self, node: Node, where: tuple[str, ...], seen: set[int]) -> None:
        """No YAML tags beyond plain values, and no key twice in one mapping; ``where``
        is (preset NAME, FIELD) as far as the node is inside one."""
        if id(node) in seen:
            return
        seen.add(id(node))
        self._check_tag(node, where)
        if isinstance(node, MappingNode):
            first: dict[str, int] = {}
            for key, value in node.value:
                self._check_tag(key, where)
                if key.tag == _MERGE:  # <<: *base -- its keys are this mapping's keys
                    self._check_tag(value, where)
                    for merged in value.value if isinstance(value, SequenceNode) else [value]:
                        self._check_tree(merged, where, seen)
                    continue
                text = str(key.value) if isinstance(key, ScalarNode) else None
                inner = _inside(where, text)
                if text is not None:
                    if text in first:
                        what = "field" if where else "preset"
                        raise self.fail(key, f"given twice (first at line {first[text]}); "
                                        f"give each {what} once", *inner)
                    first[text] = _line(key)
                self._check_tree(value, inner, seen)
        elif isinstance(node, SequenceNode):
            for item in node.value:
                self._check_tree(item, where, seen)

    def _check_tag(self, node: Node, where: tuple[str, ...]) -> None:
        if node.tag not in _PLAIN_TAGS:
            tag = node.tag.replace(_YAML, "!!")
            raise self.fail(node, f"YAML tag {tag} is not accepted; write plain values "
                            "(text, numbers) and mappings", *where)

    def _pairs(self, node: MappingNode, *where: str) -> dict[str, tuple[Node, Node]]:
        """key text -> (key node, value node), after YAML merge keys (``<<: *base``);
        a key given in the mapping itself wins over a merged one."""
        assert self.loader is not None
        try:
            self.loader.flatten_mapping(node)
        except yaml.MarkedYAMLError as error:
            mark = error.problem_mark or error.context_mark
            raise self.fail(mark.line + 1 if mark else node,
                            f"invalid merge: {error.problem}; merge mappings (<<: *name)",
                            *where) from None
        out: dict[str, tuple[Node, Node]] = {}
        for key, value in node.value:
            if not isinstance(key, ScalarNode):
                raise self.fail(key, f"a key is {_kind(key)}; keys are names (text)", *where)
            out[str(key.value)] = (key, value)
        return out

    # --- nodes -> presets ------------------------------------------------------------

    def _preset(self, name: str, key: Node, node: Node) -> Preset:
        if not NAME.match(name):
            raise self.fail(key, f"{name!r} is not a preset name; use {NAME_FORMS}")
        where = f"preset {name}"
        if not isinstance(node, MappingNode):
            raise self.fail(node, f"the preset is {_kind(node)}; expected a mapping of "
                            f"fields ({', '.join(FIELDS)})", where)
        fields: dict[str, Any] = {}
        lines: dict[str, int] = {}
        for field, (field_key, value) in self._pairs(node, where).items():
            if field not in FIELDS:
                raise self.fail(field_key, f"unknown field; known fields: {', '.join(FIELDS)}",
                                where, field)
            lines[field] = _line(value)
            if field in TEXT_FIELDS:
                if not (isinstance(value, ScalarNode) and value.tag == _YAML + "str"):
                    raise self.fail(value, f"is {_kind(value)}; expected text", where, field)
                fields[field] = value.value
            elif field in DIRECTIONS:
                fields[field] = self._direction(name, field, value, lines)
            elif field == MEDIUM_FIELD and isinstance(value, MappingNode):
                fields[field] = self._medium(name, value, lines)
            elif isinstance(value, MappingNode) and field not in LINK_WIDE_FIELDS:
                fields[field] = self._per_direction(name, field, value, lines)
            else:
                fields[field] = self._leaf(name, field, value, {field: None}, field)
        self._traces(name, fields, lines)
        try:
            spec = build_spec(name, fields, {})
        except UsageError as error:  # each value passed alone: a combination failed
            field = _named_field(error, name)
            if field is None or field not in lines:
                raise self.fail(key, _message(error), where) from None
            raise self.fail(lines[field], _message(error), where, field) from None
        for field, message in conflicts(spec):
            line = min((v for k, v in lines.items() if field in k.split(".")),
                       default=_line(key))
            raise self.fail(line, message, where, field)
        return Preset(name, fields, self.label, _line(key))

    def _direction(self, name: str, direction: str, node: Node,
                   lines: dict[str, int]) -> dict[str, Any]:
        if not isinstance(node, MappingNode):
            raise self.fail(node, f"is {_kind(node)}; expected a mapping of stage fields "
                            f"({', '.join(STAGE_FIELDS)})", f"preset {name}", direction)

        def unknown(field: str) -> str | None:
            return None if field in STAGE_FIELDS else (
                f"unknown field; known fields here: {', '.join(STAGE_FIELDS)} "
                f"({', '.join(LINK_WIDE_FIELDS)} are for both directions)")

        return self._nested(name, direction, node, lines, unknown, lambda field: field)

    def _medium(self, name: str, node: MappingNode, lines: dict[str, int]) -> dict[str, Any]:
        """The medium's keys, each checked alone where it is written (linklab.link.medium;
        combinations are checked with the whole preset)."""
        where = f"preset {name}"
        out: dict[str, Any] = {}
        for inner, (key, value) in self._pairs(node, where, MEDIUM_FIELD).items():
            path = f"{MEDIUM_FIELD}.{inner}"
            lines[path] = _line(value)
            if not isinstance(value, ScalarNode) or value.tag == _YAML + "null":
                raise self.fail(value, f"is {_kind(value)}; expected a value, e.g. "
                                f"{MEDIUM_EXAMPLES.get(inner, 'see linklab.link.medium')}",
                                where, path)
            item = self._scalar(value)
            try:
                parse_given({inner: item}, None)
            except UsageError as error:
                raise self.fail(key if "unknown key" in str(error) else value,
                                _message(error).removeprefix(f"medium.{inner}: "),
                                where, path) from None
            out[inner] = item
        return out

    def _per_direction(self, name: str, field: str, node: MappingNode,
                       lines: dict[str, int]) -> dict[str, Any]:
        def unknown(direction: str) -> str | None:
            return None if direction in DIRECTIONS else (
                f"{direction!r} is not a direction; expected one value for both directions "
                f"({HINTS.get(field, 'a value')}) or a mapping with up and/or down")

        return self._nested(name, field, node, lines, unknown, lambda direction: field)

    def _nested(self, name: str, outer: str, node: MappingNode, lines: dict[str, int],
                unknown: Callable[[str], str | None],
                field_of: Callable[[str], str]) -> dict[str, Any]:
        """The entries of a mapping under ``outer`` (a direction's fields, or a field's
        directions), each checked (``unknown``: why not, or None) and parsed as the field
        ``field_of(key)``."""
        where = f"preset {name}"
        out: dict[str, Any] = {}
        for inner, (key, value) in self._pairs(node, where, outer).items():
            path = f"{outer}.{inner}"
            problem = unknown(inner)
            if problem is not None:
                raise self.fail(key, problem, where, path)
            lines[path] = _line(value)
            out[inner] = self._leaf(name, path, value, {outer: {inner: None}}, field_of(inner))
        return out

    def _leaf(self, name: str, path: str, node: Node, shape: dict[str, Any],
              field: str) -> Any:
        """One value, parsed by build_spec exactly where it sits in the preset."""
        assert self.loader is not None
        where = f"preset {name}"
        hint = HINTS.get(field, "a value")
        if isinstance(node, SequenceNode):
            raise self.fail(node, f"is a list; expected {hint}", where, path)
        if isinstance(node, ScalarNode) and node.tag == _YAML + "null":
            raise self.fail(node, f"has no value; expected {hint} (or leave the field out)",
                            where, path)
        if isinstance(node, MappingNode):
            if field != "burst_loss":
                raise self.fail(node, f"is a mapping; expected {hint}", where, path)
            value: Any = {}
            for key_text, (key, item) in self._pairs(node, where, path).items():
                if key_text not in BURST_KEYS or not isinstance(item, ScalarNode):
                    raise self.fail(key, f"{key_text!r} is not a burst loss parameter; "
                                    f"expected {', '.join(BURST_KEYS)} (fractions)",
                                    where, path)
                value[key_text] = self._scalar(item)
        else:
            value = self._scalar(node)
        filled = _fill(shape, value)
        try:
            build_spec(name, filled, {})
        except UsageError as error:
            raise self.fail(node, _message(error), where, path) from None
        return value

    def _scalar(self, node: Node) -> Any:
        assert self.loader is not None
        value = self.loader.construct_object(node)
        if isinstance(value, (bool, datetime.date)):
            return node.value  # 'yes', '2024-01-01': what was written, as text
        return value

    # --- trace files -----------------------------------------------------------------

    def _traces(self, name: str, fields: dict[str, Any], lines: dict[str, int]) -> None:
        """Make trace paths absolute (relative to this file) and read each trace."""
        if "trace" in fields:
            value = fields["trace"]
            if isinstance(value, str) and "=" in value:
                value = per_direction(value, lambda v, a: v, "trace")
            if isinstance(value, dict):
                fields["trace"] = {d: self._trace(name, f"trace.{d}", v, lines)
                                   for d, v in value.items()}
            else:
                fields["trace"] = self._trace(name, "trace", value, lines)
        for direction in DIRECTIONS:
            sub = fields.get(direction) or {}
            if "trace" in sub:
                sub["trace"] = self._trace(name, f"{direction}.trace", sub["trace"], lines)

    def _trace(self, name: str, path: str, value: Any, lines: dict[str, int]) -> str:
        from linklab.emu.models import read_trace

        trace = Path(os.path.expanduser(str(value)))
        if not trace.is_absolute():
            trace = self.base / trace
        line = lines.get(path) or lines.get(path.split(".")[0])
        try:
            read_trace(trace)
        except UsageError as error:
            message = _message(error)
            if message.startswith("cannot read"):
                message += f"; expected {HINTS['trace']}"
            raise self.fail(line, message, f"preset {name}", path) from None
        return str(trace)


def _named_field(error: UsageError, name: str) -> str | None:
    """The field a combination error of preset ``name`` names (``rate``, ``medium.mcs``)."""
    prefix = f"preset {name!r}: "
    argument = error.argument or ""
    return argument[len(prefix):] if argument.startswith(prefix) else None


def _fill(shape: dict[str, Any], value: Any) -> dict[str, Any]:
    """{"up": {"loss": None}} + "1%" -> {"up": {"loss": "1%"}}."""
    key, inner = next(iter(shape.items()))
    return {key: _fill(inner, value) if isinstance(inner, dict) else value}
