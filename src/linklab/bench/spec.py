"""Scenario YAML -> validated :class:`Scenario`.

A scenario names the settings of a benchmark: some are fixed, some are axes of a
matrix. Every field may appear in either place (``topics`` only under fixed)::

    name: paper-000-table2          # used in run directory names
    title: Table II of seed 000     # free text, shown by the report
    source: 000_10b8b18b6f5db8a8.txt §V-C, Table II
    presets: my-links.yaml          # link presets of your own (a file or a list of files)
    hosts:                          # real machines instead of namespaces (linklab.field):
      robot: ssh://ubuntu@robot.local   #   ssh://, local, netns:NAME (bench/host_address.py);
      edge: local                   #   then link: (optional) is the measured preset
    fixed:                          # one value each
      middleware: fastdds
      rate: 30Hz                    # Hz, max (search the highest rate), or 75% (of it)
      qos: reliable                 # reliable | best_effort | ROS 2 profile: default,
                                    # sensor_data, parameters, services_default,
                                    # system_default
      history: keep_all             # keep_all | keep_last:N | N | tuned | profile
      durability: volatile          # volatile | transient_local (default: the QoS's)
      count: 1000
      topology: pair                # pair | star | chain (hosts: N robots in a star)
      cpu_load: 2/core              # none | N/core | N CPU-bound competitors (bench/cpu.py)
      cpu_quota: 1.5cores           # none | the probes' CPU quota per host, in cores
      cpu_quota_on: [robot]         # (and cpu_load_on): hosts; default: the endpoints'
      broker_host: edge             # where MQTT's broker / Zenoh's router runs (a host)
    axes:                           # lists; the matrix is their product
      link: [wifi-ideal, wifi-mild, {preset: wifi-severe, loss: 10%}]
      link.loss: [0%, 10%, 20%]     # one link field swept (over the link's value)
      payload: [32KiB, 64KiB, 128KiB, 256KiB, 512KiB]
      profile: [default, large_data, optimized]
    trials: 1                       # repeats of every cell (the ``trial`` axis), <= 1000
    gates:                          # pass/fail targets (gates.py)
      reception_rate: ">= 29Hz"
    search: {trial: 2s, precision: 3%, max_trials: 12}   # for rate: max (search.py)
    quick:                          # overrides applied by ``linklab bench --quick``
      count: 100
      payload: [64KiB, 256KiB]

Endpoints (several publishers and subscribers, traffic mixes) are in topics.py, links
written inline in links.py. Errors name the file, the line and the field:
``scenarios/x.yaml:12: axes.payload[2]: '12' has no unit; expected a size ...``. Limits
(fields.py: MAX_TRIALS, MAX_CELLS, MAX_COUNT, MAX_CELL_S, MAX_SEARCH_TRIAL_S) are named
in the error that refuses a value beyond them; the matrix's size is checked before it is
expanded (matrix.check_size). ``places`` keeps where each field (``key``) and each value
of an axis (``key[i]``) is written, for errors found later (bench.checks.located).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from linklab.bench import links as L
from linklab.bench.fields import (
    FIELDS,
    MAX_SEARCH_TRIAL_S,
    MAX_TRIALS,
    NAME,
    SCALAR_PARSERS,
    Located,
    compose,
    mapping,
    plain,
    positive_int,
    with_units,
)
from linklab.bench.gates import Gate, parse_gates
from linklab.bench.topics import TopicTemplate, parse_topics, topic_names
from linklab.errors import UsageError
from linklab.probes.types import ANY_SIZE_TYPES
from linklab.units import parse_duration, parse_fraction

TOP_LEVEL = ("name", "title", "source", "description", "presets", "hosts", "fixed", "axes",
             "trials", "quick", "gates", "search")
FIELD_LINK = "field"  # the link label of a field run without a measured preset
TRIALS_LIMIT = "the most trials a cell takes"
DEFAULTS: dict[str, Any] = {
    "middleware": "fastdds",
    "profile": "default",
    "qos": "reliable",
    "history": None,       # from the QoS: keep_all for reliable/best_effort (topics.py)
    "depth": None,
    "durability": None,
    "type": "Bytes",
    "topology": "pair",
    "hosts": None,
    "flow": None,
    "subscribers": None,
    "pairs": None,
    "topics": None,
    "warmup": 1.0,
    "duration": None,
    "outage_start": 5.0,
    "outage_length": None,
    "grace": None,
    "cpu_load": "none",      # CPU-bound competitors (bench/cpu.py)
    "cpu_load_on": None,     # their hosts: the cell's endpoint hosts
    "cpu_quota": "none",     # the probes' CPU quota per host
    "cpu_quota_on": None,
    "broker_host": None,     # where MQTT's broker / Zenoh's router runs (default edge)
}


@dataclass(frozen=True)
class SearchSettings:
    """How ``rate: max`` searches (search.py): trial length, precision, trial budget."""

    trial_s: float = 2.0
    precision: float = 0.03
    max_trials: int = 12

    def to_dict(self) -> dict[str, Any]:
        return {"trial_s": self.trial_s, "precision": self.precision,
                "max_trials": self.max_trials}


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
    gates: tuple[Gate, ...] = ()
    search: SearchSettings = field(default_factory=SearchSettings)
    presets: dict[str, dict[str, Any]] = field(default_factory=dict)  # the user's own
    places: dict[str, Located] = field(default_factory=dict, repr=False)  # where each field is
    # real hosts (top-level ``hosts:``): name -> {at, address}; empty for namespaces
    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "name": self.name, "title": self.title,
                "source": self.source, "fixed": {k: _jsonable(v) for k, v in self.fixed.items()},
                "axes": {k: [_jsonable(v) for v in vs] for k, vs in self.axes.items()},
                "trials": self.trials, "gates": [g.to_dict() for g in self.gates],
                "search": self.search.to_dict(), "presets": self.presets,
                **({"hosts": self.hosts} if self.hosts else {})}


def _jsonable(value: Any) -> Any:
    if isinstance(value, L.LinkChoice):
        return value.to_dict()
    if isinstance(value, tuple):  # topics
        return [{"name": t.name, "from": t.publisher, "to": t.subscribers, "pairs": t.pairs,
                 **t.settings} for t in value]
    return value


# --- one field ------------------------------------------------------------------------

class FieldParser:
    """Parses cell fields; knows the link presets the scenario may name."""

    def __init__(self, known_presets: Mapping[str, Any]):
        self.known = known_presets

    def node(self, key: str, node: yaml.Node, where: Located) -> Any:
        if key == "link":
            return L.parse_link(node, where, self.known)
        if key == "topics":
            return parse_topics(node, where)
        return self.value(key, plain(node, where), where)

    def gate_value(self, key: str, value: Any, where: Located) -> Any:
        """A value of a gate's ``where:``, as the cell rows hold it: ``link`` selects by
        the link's label or preset name (whether the matrix has it is checked against
        the cells: gates.check_scope); the rest as :meth:`value`."""
        if key == "link":
            if not isinstance(value, str) or not value.strip():
                raise where.error(f"{value!r}: select a link by its preset name or label")
            return value
        return self.value(key, value, where)

    def value(self, key: str, value: Any, where: Located) -> Any:
        """A plain value (quick:)."""
        if key == "link":
            if isinstance(value, str):
                return L.LinkChoice(L._check_preset(value, self.known, where))
            raise where.error("select a link by its preset name or label")
        if key.startswith("link."):
            return L.check_field(key[5:], value, where)
        if key in SCALAR_PARSERS:
            return SCALAR_PARSERS[key](value, where)
        raise where.error(f"unknown field; expected one of {', '.join(FIELDS)} or "
                          f"link.FIELD ({', '.join(L.LINK_FIELDS)})")

    def known_key(self, key: str, where: Located) -> None:
        if key in FIELDS:
            return
        if key.startswith("link.") and key[5:] in L.LINK_FIELDS:
            return
        if key.startswith("link."):
            raise where.error(f"unknown link field {key[5:]!r}; known: "
                              f"{', '.join(L.LINK_FIELDS)}")
        raise where.error(f"unknown field; expected one of {', '.join(FIELDS)} or "
                          f"link.FIELD ({', '.join(L.LINK_FIELDS)})")


def _section(node: yaml.Node, where: Located, parser: FieldParser, *,
             as_axes: bool, places: dict[str, Located] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value_node, loc in mapping(node, where):
        parser.known_key(key, loc)
        if places is not None:
            places[key] = loc
        if as_axes:
            if key == "topics":
                raise loc.error("topics cannot be an axis; sweep subscribers:, pairs: or a "
                                "setting the topics take from the cell (payload, rate, ...)")
            if not isinstance(value_node, yaml.SequenceNode):
                raise loc.error("an axis is a list of values, e.g. [32KiB, 64KiB]")
            if not value_node.value:
                raise loc.error("an axis needs at least one value")
            values = []
            for i, item in enumerate(value_node.value):
                item_loc = Located(where.file, item.start_mark.line + 1, f"{loc.field}[{i}]")
                values.append(parser.node(key, item, item_loc))
                if places is not None:  # each value's own line (checks.located)
                    places[f"{key}[{i}]"] = item_loc
            texts = [v.key() if isinstance(v, L.LinkChoice) else str(v) for v in values]
            if len(set(texts)) != len(texts):
                raise loc.error("lists the same value twice")
            out[key] = values
        else:
            out[key] = parser.node(key, value_node, loc)
    return out


# --- the scenario ---------------------------------------------------------------------

def load_scenario(path: str | Path, *, quick: bool = False, repeat: int | None = None,
                  display_path: str | None = None, preset_files: Sequence[Path] = ()
                  ) -> Scenario:
    """Read and validate a scenario file. ``quick`` applies its ``quick:`` overrides."""
    path = Path(path)
    shown = display_path or str(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read scenario {shown}: {error.strerror}",
                         argument="SCENARIO") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise UsageError(f"{shown}:{line}: not UTF-8 text (byte {error.start}); save the "
                         "scenario as UTF-8") from None
    return parse_scenario(text, shown, quick=quick, repeat=repeat,
                          preset_files=preset_files)


def _preset_paths(node: yaml.Node, where: Located, base: Path) -> list[Path]:
    value = plain(node, where)
    items = value if isinstance(value, list) else [value]
    paths = []
    for item in items:
        if not isinstance(item, str) or not item:
            raise where.error("expected a preset file name or a list of them")
        path = (base / item).resolve()
        if not path.is_file():
            raise where.error(f"preset file {item!r} not found (looked at {str(path)!r})")
        paths.append(path)
    return paths


def _top_items(root: Any, path: str) -> dict[str, tuple[Any, Located]]:
    """The scenario's top-level keys, each with its node and place; an unknown key is an
    error."""
    top = Located(path, 1, "")
    if root is None:
        raise top.error("the file is empty; a scenario needs name, fixed and axes")
    items = {key: (node, loc) for key, node, loc in mapping(root, top)}
    for key, (_node, loc) in items.items():
        if key not in TOP_LEVEL:
            raise loc.error(f"unknown key; expected one of {', '.join(TOP_LEVEL)}")
    return items


def _text_of(items: dict[str, tuple[Any, Located]], key: str, default: str) -> str:
    if key not in items:
        return default
    node, loc = items[key]
    value = plain(node, loc)
    if not isinstance(value, str) or not value.strip():
        raise loc.error("expected a text")
    return value.strip()


def _user_presets(items: dict[str, tuple[Any, Located]], path: str,
                  preset_files: Sequence[Path],
                  saved_presets: Mapping[str, dict[str, Any]] | None) -> dict[str, Any]:
    """The user presets the scenario may name: the run's saved ones, else those of the
    ``--presets`` files and the scenario's ``presets:`` (not shadowing a shipped one)."""
    if saved_presets is not None:
        return dict(saved_presets)
    files = list(preset_files)
    if "presets" in items:
        files += _preset_paths(*items["presets"], Path(path).parent)
    return {name: fields for name, fields in L.presets_known(files).items()
            if files and name not in _shipped()}


def _apply_quick(items: dict[str, tuple[Any, Located]], parser: FieldParser,
                 fixed: dict[str, Any], axes: dict[str, Any], places: dict[str, Located],
                 trials: int) -> int:
    """``--quick``: the scenario's ``quick:`` fields replace its fixed values and axes (a
    list becomes an axis); returns the trials, which quick: may set too."""
    node, loc = items["quick"]
    for key, value_node, item_loc in mapping(node, loc):
        if key == "trials":
            trials = positive_int(plain(value_node, item_loc), item_loc, most=MAX_TRIALS,
                                  limit=TRIALS_LIMIT)
            continue
        parser.known_key(key, item_loc)
        if isinstance(value_node, yaml.SequenceNode) and key != "topics":
            for stale in [k for k in places if k.startswith(f"{key}[")]:
                del places[stale]
            sub = _section(yaml.MappingNode("tag:yaml.org,2002:map",
                                            [(_key_node(key, value_node), value_node)]),
                           loc, parser, as_axes=True, places=places)
            fixed.pop(key, None)
            axes[key] = sub[key]
        else:
            axes.pop(key, None)
            fixed[key] = parser.node(key, value_node, item_loc)
            places[key] = item_loc
    return trials


def _complete_fields(path: str, fixed_line: int, fixed: dict[str, Any], axes: dict[str, Any],
                     hosts: dict[str, Any]) -> None:
    """Checks that the link, and without topics the payload, rate and count (or duration),
    are given as a fixed value or an axis; fills in the defaults of the rest."""
    has = (lambda key: key in fixed or key in axes)  # noqa: E731
    if hosts and not has("link"):
        fixed["link"] = L.LinkChoice(None, (), FIELD_LINK)  # the real path, as it is
    if not has("link"):
        raise Located(path, fixed_line, "link").error("missing; give it under fixed: or axes:")
    topics = fixed.get("topics")
    if topics is None:
        types = axes.get("type") or [fixed.get("type", DEFAULTS["type"])]
        if not has("payload") and not set(types) & set(ANY_SIZE_TYPES):
            fixed["payload"] = None  # performance_test types carry their own size
        for key in ("payload", "rate"):
            if not has(key):
                raise Located(path, fixed_line, key).error(
                    "missing; give it under fixed: or axes: (or in every topic)")
        searched = fixed.get("rate") == "max" or axes.get("rate") == ["max"]
        if not has("count") and fixed.get("duration") is None and "duration" not in axes \
                and not searched:
            raise Located(path, fixed_line, "count").error(
                "missing; give count (messages per cell) or duration under fixed: or axes:")
    for key, value in DEFAULTS.items():
        if key not in axes:
            fixed.setdefault(key, value)
    fixed.setdefault("count", None)
    fixed.setdefault("payload", None)
    fixed.setdefault("rate", None)


def parse_scenario(text: str, path: str, *, quick: bool = False,
                   repeat: int | None = None, preset_files: Sequence[Path] = (),
                   saved_presets: Mapping[str, dict[str, Any]] | None = None) -> Scenario:
    """Validate a scenario's text. ``preset_files``: ``--presets`` files of the command
    line; ``saved_presets``: the user presets a run recorded (``--resume`` uses them, so a
    run continues even if the files changed or are gone)."""
    items = _top_items(compose(text, path), path)
    user = _user_presets(items, path, preset_files, saved_presets)
    parser = FieldParser({**_shipped(), **user})

    name = _text_of(items, "name", Path(path).stem)
    if not NAME.match(name):
        raise items["name"][1].error(f"{name!r}: use letters, digits, _ . - only")
    places: dict[str, Located] = {}
    fixed = _section(*items["fixed"], parser, as_axes=False, places=places) \
        if "fixed" in items else {}
    axes = _section(*items["axes"], parser, as_axes=True, places=places) \
        if "axes" in items else {}
    for key in fixed:
        if key in axes:
            raise items["fixed"][1].error(f"{key} is both fixed and an axis; keep one")
    trials = 1
    if "trials" in items:
        trials = positive_int(plain(*items["trials"]), items["trials"][1], most=MAX_TRIALS,
                              limit=TRIALS_LIMIT)
    if quick and "quick" in items:
        trials = _apply_quick(items, parser, fixed, axes, places, trials)
    if repeat is not None:
        trials = check_repeat(repeat)

    hosts = _hosts(*items["hosts"]) if "hosts" in items else {}
    _complete_fields(path, items["fixed"][1].line if "fixed" in items else 1, fixed, axes,
                     hosts)
    gates: tuple[Gate, ...] = ()
    if "gates" in items:
        gates = parse_gates(*items["gates"], cell_field=parser.gate_value)
    if fixed.get("topics"):  # a topic's own gates: on that topic (each of its copies)
        gates += _topic_gates(fixed["topics"])
    search = _search(*items["search"]) if "search" in items else SearchSettings()
    return Scenario(path=path, name=name, title=_text_of(items, "title", name),
                    source=_text_of(items, "source", ""), fixed=fixed, axes=axes,
                    trials=trials, text=text, gates=gates, search=search, presets=user,
                    places=places, hosts=hosts)


def check_repeat(repeat: Any) -> int:
    """``--repeat N``: trials of every cell, 1 to MAX_TRIALS (as ``trials:``)."""
    if isinstance(repeat, str):
        text = repeat.strip()
        if not text.isascii() or not text.isdigit():
            raise UsageError(f"{repeat!r} is not a whole number; expected 1 to {MAX_TRIALS}",
                             argument="--repeat")
        repeat = int(text)
    if isinstance(repeat, bool) or not isinstance(repeat, int):
        raise UsageError(f"{repeat!r} is not a whole number; expected 1 to {MAX_TRIALS}",
                         argument="--repeat")
    if repeat < 1:
        raise UsageError(f"{repeat} must be 1 or more (at most {MAX_TRIALS})",
                         argument="--repeat")
    if repeat > MAX_TRIALS:
        raise UsageError(f"{repeat} is more than {MAX_TRIALS}, {TRIALS_LIMIT} (as trials:)",
                         argument="--repeat")
    return repeat


def _topic_gates(templates: tuple[TopicTemplate, ...]) -> tuple[Gate, ...]:
    """The ``gates:`` of each topic entry, on that topic's name (on every copy of a topic
    with ``pairs: N``, named as the cell names them: topics.topic_names)."""
    out: list[Gate] = []
    for template, names in zip(templates, topic_names(templates), strict=True):
        for gate in template.gates:
            out.extend(replace(gate, topic=name) for name in names)
    return tuple(out)


def _hosts(node: yaml.Node, where: Located) -> dict[str, dict[str, Any]]:
    """Top-level ``hosts:``: real machines (linklab.bench.host_address), each validated."""
    from linklab.bench.host_address import parse_hosts

    value = plain(node, where)
    try:
        specs = parse_hosts(value)
    except UsageError as error:
        line = where.line
        if isinstance(node, yaml.MappingNode):  # the line of the entry that is wrong
            for key, item in node.value:
                if f"hosts.{key.value}" in str(error):
                    line = item.start_mark.line + 1
        raise Located(where.file, line, "").error(str(error)) from None
    return {name: spec.to_dict() for name, spec in specs.items()}


def _search(node: yaml.Node, where: Located) -> SearchSettings:
    values: dict[str, Any] = {}
    for key, value_node, loc in mapping(node, where):
        value = plain(value_node, loc)
        if key == "trial":
            values["trial_s"] = with_units(parse_duration, value, loc)
            if values["trial_s"] > MAX_SEARCH_TRIAL_S:
                raise loc.error(f"{value!r} is longer than {MAX_SEARCH_TRIAL_S / 60:g} min, "
                                "the longest search trial linklab takes")
        elif key == "precision":
            precision = with_units(parse_fraction, value, loc)
            if not 0.005 <= precision <= 0.5:
                raise loc.error(f"{value!r}: expected 0.5 % to 50 %")
            values["precision"] = precision
        elif key == "max_trials":
            values["max_trials"] = positive_int(value, loc, most=100)
        else:
            raise loc.error("unknown key; expected trial, precision, max_trials")
    return SearchSettings(**values)


def _shipped() -> dict[str, dict[str, Any]]:
    from linklab.link.presets import load_presets

    return load_presets()


def _key_node(key: str, near: yaml.Node) -> yaml.ScalarNode:
    return yaml.ScalarNode("tag:yaml.org,2002:str", key, start_mark=near.start_mark,
                           end_mark=near.end_mark)
