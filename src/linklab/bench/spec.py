"""Scenario YAML -> validated :class:`Scenario`.

A scenario names the settings of a benchmark: some are fixed, some are axes of a
matrix. Every field may appear in either place::

    name: paper-000-table2          # used in run directory names
    title: Table II of seed 000     # free text, shown by the report
    source: 000_10b8b18b6f5db8a8.txt §V-C, Table II
    fixed:                          # one value each
      middleware: fastdds
      rate: 30Hz
      qos: reliable
      history: keep_all             # keep_all | keep_last:N | N | tuned | profile
      count: 1000
    axes:                           # lists; the matrix is their product
      link: [wifi-ideal, wifi-mild, wifi-severe, wifi-outage]
      payload: [32KiB, 64KiB, 128KiB, 256KiB, 512KiB]
      profile: [default, large_data, optimized]
      type: [Bytes]
    trials: 1                       # repeats of every cell (the ``trial`` axis)
    quick:                          # overrides applied by ``linklab bench --quick``
      count: 100
      payload: [64KiB, 256KiB]

Errors name the file, the line and the field:
``scenarios/x.yaml:12: axes.payload[2]: '12' has no unit; expected a size ...``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from linklab.errors import UsageError
from linklab.units import parse_duration, parse_frequency, parse_size

MIDDLEWARES = ("fastdds", "cyclonedds", "mqtt", "zenoh-peer", "zenoh-router",
               # secured variants (linklab.brokers.bench_adapter): security on/off
               "fastdds-secure", "mqtt-tls", "zenoh-peer-tls", "zenoh-router-tls")
QOS_VALUES = ("reliable", "best_effort")
# The probe protocol's message types (DESIGN.md "Probes"): a Bytes type of any size and
# the performance_test family.
MESSAGE_TYPES = (
    "Bytes",
    "Array1k", "Array4k", "Array16k", "Array32k", "Array60k", "Array64k", "Array256k",
    "Array1m", "Array2m",
    "PointCloud512k", "PointCloud1m", "PointCloud2m",
)
PROFILE_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
LINK_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")

# Fields a cell has, with where they may appear. ``outage_start`` is when (after the
# publisher starts) an outage preset cuts the link; ``outage_length`` replaces the
# preset's outage length.
FIELDS = (
    "middleware", "profile", "link", "payload", "rate", "qos", "history", "type",
    "count", "duration", "warmup", "outage_start", "outage_length", "grace",
)
TOP_LEVEL = ("name", "title", "source", "description", "fixed", "axes", "trials", "quick")
DEFAULTS: dict[str, Any] = {
    "middleware": "fastdds",
    "profile": "default",
    "qos": "reliable",
    "history": "keep_all",
    "type": "Bytes",
    "warmup": 1.0,
    "duration": None,
    "outage_start": 5.0,
    "outage_length": None,
    "grace": None,
}
REQUIRED = ("link", "payload", "rate")


@dataclass(frozen=True)
class Located:
    """Where a value came from, for error messages."""

    file: str
    line: int
    field: str

    def error(self, message: str) -> UsageError:
        where = f"{self.file}:{self.line}: {self.field}:" if self.field else \
            f"{self.file}:{self.line}:"
        return UsageError(f"{where} {message}")


@dataclass(frozen=True)
class Scenario:
    """A validated scenario: fixed settings and axes, every value already in SI units."""

    path: str
    name: str
    title: str
    source: str
    fixed: dict[str, Any]
    axes: dict[str, list[Any]]  # in the order the file lists them
    trials: int
    text: str = field(repr=False, default="")  # the YAML as read (stored in run.json)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "name": self.name, "title": self.title,
                "source": self.source, "fixed": self.fixed, "axes": self.axes,
                "trials": self.trials}


# --- YAML with line numbers -----------------------------------------------------------

def _compose(text: str, path: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(error, "problem", None) or str(error)
        raise UsageError(f"{path}:{line}: not valid YAML: {problem}") from None


def _plain(node: yaml.Node) -> Any:
    """A scalar node's Python value (YAML 1.1 safe types)."""
    return yaml.safe_load(yaml.serialize(node)) if node is not None else None


def _mapping(node: yaml.Node, where: Located) -> list[tuple[str, yaml.Node, Located]]:
    if not isinstance(node, yaml.MappingNode):
        raise where.error("expected a mapping (key: value lines)")
    items = []
    seen: set[str] = set()
    for key_node, value_node in node.value:
        key = str(key_node.value)
        sub = f"{where.field}.{key}" if where.field else key
        loc = Located(where.file, key_node.start_mark.line + 1, sub)
        if key in seen:
            raise loc.error("appears twice")
        seen.add(key)
        items.append((key, value_node, loc))
    return items


# --- field parsers --------------------------------------------------------------------

def _choice(value: Any, allowed: tuple[str, ...], where: Located) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise where.error(f"{value!r} is not one of {', '.join(allowed)}")
    return value


def _positive_int(value: Any, where: Located) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise where.error(f"{value!r} must be a whole number greater than zero")
    return value


def _with_units(parser, value: Any, where: Located, **kw) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)  # a bare number: let the unit parser say what is missing
    try:
        return parser(value, **kw)
    except UsageError as error:
        raise where.error(str(error)) from None


def parse_history(value: Any, where: Located) -> str:
    """``keep_all`` | ``keep_last:N`` | ``N`` (keep_last) | ``tuned`` | ``profile``.

    ``tuned``: keep_last with N_HC from the tuner (seed 000 eq. 6). ``profile``: what the
    profile brings — the tuned profile its N_HC, the others KEEP_ALL.
    """
    if isinstance(value, bool):
        raise where.error(f"{value!r} is not a history")
    if isinstance(value, int):
        return f"keep_last:{_positive_int(value, where)}"
    if isinstance(value, str):
        if value in ("keep_all", "tuned", "profile"):
            return value
        match = re.fullmatch(r"keep_last:(\d+)", value)
        if match and int(match[1]) > 0:
            return value
    raise where.error(f"{value!r} is not a history; expected keep_all, keep_last:N, "
                      "a number N (keep_last:N), tuned (N_HC from linklab tune) or profile")


def _name(value: Any, pattern: re.Pattern, what: str, where: Located) -> str:
    if not isinstance(value, str) or not pattern.match(value):
        raise where.error(f"{value!r} is not a {what} name (letters, digits, _ . -)")
    return value


def parse_field(name: str, value: Any, where: Located) -> Any:
    """One field's value -> SI units / canonical form, or an error naming file:line:field."""
    if name == "middleware":
        return _choice(value, MIDDLEWARES, where)
    if name == "profile":
        if isinstance(value, str) and value.endswith(".xml"):
            # a profile file of your own, relative to the scenario file
            path = (Path(where.file).parent / value).resolve()
            if not path.is_file():
                raise where.error(f"profile file {value!r} not found (looked at {path})")
            return str(path)
        return _name(value, PROFILE_NAME, "profile", where)
    if name == "link":
        return _name(value, LINK_NAME, "link preset", where)
    if name == "payload":
        return int(_with_units(parse_size, value, where))
    if name == "rate":
        return _with_units(parse_frequency, value, where)
    if name == "qos":
        return _choice(value, QOS_VALUES, where)
    if name == "history":
        return parse_history(value, where)
    if name == "type":
        return _choice(value, MESSAGE_TYPES, where)
    if name == "count":
        return _positive_int(value, where)
    if name in ("duration", "grace", "outage_length"):
        return None if value is None else _with_units(parse_duration, value, where)
    if name in ("warmup", "outage_start"):
        return _with_units(parse_duration, value, where, allow_zero=True)
    raise where.error(f"unknown field; expected one of {', '.join(FIELDS)}")


# --- the scenario ---------------------------------------------------------------------

def _section(node: yaml.Node, where: Located, *, as_axes: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value_node, loc in _mapping(node, where):
        if key not in FIELDS:
            raise loc.error(f"unknown field; expected one of {', '.join(FIELDS)}")
        if as_axes:
            if not isinstance(value_node, yaml.SequenceNode):
                raise loc.error("an axis is a list of values, e.g. [32KiB, 64KiB]")
            if not value_node.value:
                raise loc.error("an axis needs at least one value")
            values = []
            for i, item in enumerate(value_node.value):
                item_loc = Located(where.file, item.start_mark.line + 1, f"{loc.field}[{i}]")
                values.append(parse_field(key, _plain(item), item_loc))
            if len(set(map(str, values))) != len(values):
                raise loc.error("lists the same value twice")
            out[key] = values
        else:
            out[key] = parse_field(key, _plain(value_node), loc)
    return out


def load_scenario(path: str | Path, *, quick: bool = False, repeat: int | None = None,
                  display_path: str | None = None) -> Scenario:
    """Read and validate a scenario file. ``quick`` applies its ``quick:`` overrides."""
    path = Path(path)
    shown = display_path or str(path)
    try:
        text = path.read_text()
    except OSError as error:
        raise UsageError(f"cannot read scenario {shown}: {error.strerror}",
                         argument="SCENARIO") from None
    return parse_scenario(text, shown, quick=quick, repeat=repeat)


def parse_scenario(text: str, path: str, *, quick: bool = False,
                   repeat: int | None = None) -> Scenario:
    root = _compose(text, path)
    top = Located(path, 1, "")
    if root is None:
        raise top.error("the file is empty; a scenario needs name, fixed and axes")
    items = {key: (node, loc) for key, node, loc in _mapping(root, top)}
    for key, (_node, loc) in items.items():
        if key not in TOP_LEVEL:
            raise loc.error(f"unknown key; expected one of {', '.join(TOP_LEVEL)}")

    def text_of(key: str, default: str) -> str:
        if key not in items:
            return default
        node, loc = items[key]
        value = _plain(node)
        if not isinstance(value, str) or not value.strip():
            raise loc.error("expected a text")
        return value.strip()

    name = text_of("name", Path(path).stem)
    if not LINK_NAME.match(name):
        raise items["name"][1].error(f"{name!r}: use letters, digits, _ . - only")
    fixed = _section(items["fixed"][0], items["fixed"][1], as_axes=False) \
        if "fixed" in items else {}
    axes = _section(items["axes"][0], items["axes"][1], as_axes=True) \
        if "axes" in items else {}
    for key in fixed:
        if key in axes:
            raise items["fixed"][1].error(f"{key} is both fixed and an axis; keep one")
    trials = 1
    if "trials" in items:
        trials = _positive_int(_plain(items["trials"][0]), items["trials"][1])

    if quick and "quick" in items:
        node, loc = items["quick"]
        for key, value_node, item_loc in _mapping(node, loc):
            if key == "trials":
                trials = _positive_int(_plain(value_node), item_loc)
                continue
            if key not in FIELDS:
                raise item_loc.error(f"unknown field; expected one of {', '.join(FIELDS)}")
            if isinstance(value_node, yaml.SequenceNode):
                sub = _section(yaml.MappingNode("tag:yaml.org,2002:map",
                                                [(_key_node(key, value_node), value_node)]),
                               loc, as_axes=True)
                fixed.pop(key, None)
                axes[key] = sub[key]
            else:
                axes.pop(key, None)
                fixed[key] = parse_field(key, _plain(value_node), item_loc)
    if repeat is not None:
        if repeat <= 0:
            raise UsageError(f"{repeat} must be 1 or more", argument="--repeat")
        trials = repeat

    fixed_line = items["fixed"][1].line if "fixed" in items else 1
    types = axes.get("type") or [fixed.get("type", DEFAULTS["type"])]
    if "payload" not in fixed and "payload" not in axes and "Bytes" not in types:
        fixed["payload"] = None  # performance_test types carry their own size (matrix)
    for key in REQUIRED:
        if key not in fixed and key not in axes:
            raise Located(path, fixed_line, key).error(
                "missing; give it under fixed: or axes:")
    if "count" not in fixed and "count" not in axes and fixed.get("duration") is None \
            and "duration" not in axes:
        raise Located(path, fixed_line, "count").error(
            "missing; give count (messages per cell) or duration under fixed: or axes:")
    for key, value in DEFAULTS.items():
        if key not in axes:
            fixed.setdefault(key, value)
    fixed.setdefault("count", None)
    return Scenario(path=path, name=name, title=text_of("title", name),
                    source=text_of("source", ""), fixed=fixed, axes=axes, trials=trials,
                    text=text)


def _key_node(key: str, near: yaml.Node) -> yaml.ScalarNode:
    return yaml.ScalarNode("tag:yaml.org,2002:str", key, start_mark=near.start_mark,
                           end_mark=near.end_mark)
