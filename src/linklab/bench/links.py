"""The link of a cell: a preset by name, a preset with overrides, or a link written inline.

In a scenario::

    link: wifi-severe                                   # a preset (shipped or --presets)
    link: {preset: wifi-severe, loss: 10%}              # a preset with overrides
    link: {name: lossy, rate: 300Mbit/s, loss: 10%, delay: 2ms}   # inline, named
    link.loss: [0%, 5%, 10%, 20%]                       # (under axes:) one field swept

Fields are those of ``linklab link`` presets (linklab.link.spec: rate, loss, outage, mtu,
tcp_congestion, delay, jitter, jitter_distribution, burst_loss, trace, and up:/down:
mappings; the radio medium's radio, distance, positions, tx_power, motion:
linklab.link.radio; the relay's 802.11 medium, medium: linklab.link.medium).
Each is validated where it is written, with the file and line. A :class:`LinkChoice` is
what a cell carries: a preset name and the overrides on top of it, plus the label tables show.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from linklab.bench.fields import NAME, Located, mapping, plain
from linklab.errors import UsageError

LINK_FIELDS = ("rate", "loss", "outage", "mtu", "tcp_congestion", "delay", "jitter",
               "jitter_distribution", "burst_loss", "trace", "up", "down",
               # the radio medium of paper 002 (linklab.link.radio): link.distance sweeps
               "radio", "distance", "positions", "tx_power", "motion",
               # the relay's shared 802.11 medium (linklab.link.medium, issue 43)
               "medium")
# The cluster topology's own fields (linklab.link.cluster_plan): overlay vxlan|none,
# encryption none|wireguard, datapath iptables|ebpf, nodes 2..8, pods 1..8 per node.
CLUSTER_FIELDS = ("overlay", "encryption", "datapath", "nodes", "pods")
LINK_FIELDS = LINK_FIELDS + CLUSTER_FIELDS
INLINE_KEYS = ("preset", "name") + LINK_FIELDS


@dataclass(frozen=True)
class LinkChoice:
    """A preset (or none) and the link fields written over it."""

    preset: str | None
    overrides: tuple[tuple[str, Any], ...] = ()   # (field, value as written), in order
    name: str | None = None                       # an inline link's own name

    @property
    def label(self) -> str:
        """What tables and cell ids show: the preset, the name, or the fields."""
        fields = ",".join(f"{k}={_text(v)}" for k, v in self.overrides)
        if self.name:
            return self.name
        if self.preset and fields:
            return f"{self.preset}+{fields}"
        return self.preset or fields or "link"

    def key(self) -> str:
        """Identity: two cells with equal keys can share one link."""
        return json.dumps([self.preset, [[k, v] for k, v in self.overrides]],
                          sort_keys=True, default=str)

    def with_field(self, field: str, value: Any) -> LinkChoice:
        rest = tuple((k, v) for k, v in self.overrides if k != field)
        return LinkChoice(self.preset, rest + ((field, value),), self.name)

    def overrides_dict(self) -> dict[str, Any]:
        return dict(self.overrides)

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "preset": self.preset, "name": self.name,
                "overrides": self.overrides_dict()}


def _text(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}={_text(v)}" for k, v in value.items()) + "}"
    return str(value)


def presets_known(user_files: Sequence[Path]) -> dict[str, dict[str, Any]]:
    """Every preset a scenario may name: the user's files first, then the shipped ones."""
    from linklab.link import presets as link_presets

    known: dict[str, dict[str, Any]] = {}
    loader = getattr(link_presets, "load_preset_file", None)
    for path in user_files:
        if loader is None:
            raise UsageError("user preset files need linklab.link.presets.load_preset_file",
                             argument="--presets")
        known.update(loader(path))
    for name, fields in link_presets.load_presets().items():
        known.setdefault(name, fields)
    return known


def _check_preset(name: Any, known: Mapping[str, Any], where: Located) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise where.error(f"{name!r} is not a link preset name (letters, digits, _ . -)")
    if name not in known:
        raise where.error(f"unknown link preset {name!r}; known: {', '.join(known)} "
                          "(or write the link inline, e.g. {rate: 300Mbit/s, loss: 10%})")
    return name


def check_field(field: str, value: Any, where: Located) -> Any:
    """One link field, validated on its own (its file:line on error); returns it as written."""
    from linklab.link.spec import build_spec

    if field not in LINK_FIELDS:
        raise where.error(f"unknown link field {field!r}; known: {', '.join(LINK_FIELDS)}")
    try:
        if field in CLUSTER_FIELDS:
            from linklab.link.cluster_plan import parse_option

            return parse_option(field, value)
        if field == "medium":   # alone: its keys' forms (combinations: with the preset)
            from linklab.link.medium import parse_given

            parse_given(value, "medium")
            return value
        build_spec(None, None, {field: value})
    except UsageError as error:
        message = re.sub(r"^--[a-z-]+: ", "", str(error))
        raise where.error(message) from None
    return value


def parse_link(node: yaml.Node, where: Located, known: Mapping[str, Any]) -> LinkChoice:
    """``link:`` as a preset name or an inline mapping."""
    if isinstance(node, yaml.ScalarNode):
        return LinkChoice(_check_preset(plain(node, where), known, where))
    if not isinstance(node, yaml.MappingNode):
        raise where.error("expected a preset name or a mapping of link fields, "
                          "e.g. {preset: wifi-severe, loss: 10%}")
    preset = None
    name = None
    overrides: list[tuple[str, Any]] = []
    for key, value_node, loc in mapping(node, where):
        value = plain(value_node, loc)
        if key == "preset":
            preset = _check_preset(value, known, loc)
        elif key == "name":
            if not isinstance(value, str) or not NAME.match(value):
                raise loc.error(f"{value!r} is not a link name (letters, digits, _ . -)")
            name = value
        elif key in LINK_FIELDS:
            overrides.append((key, check_field(key, value, loc)))
        else:
            raise loc.error(f"unknown key; expected preset, name or a link field "
                            f"({', '.join(LINK_FIELDS)})")
    if preset is None and not overrides:
        raise where.error("an inline link needs a preset or at least one link field")
    choice = LinkChoice(preset, tuple(overrides), name)
    check_choice(choice, known, where)
    return choice


def check_choice(choice: LinkChoice, known: Mapping[str, Any], where: Located) -> None:
    """The preset and its overrides together build a valid link (e.g. up:/down: fit)."""
    from linklab.link.spec import build_spec
    from linklab.link.spec_checks import check_tcp_congestion

    try:
        spec = build_spec(choice.preset, known.get(choice.preset) if choice.preset else None,
                          link_only(choice.overrides_dict()))
        check_tcp_congestion(spec, "tcp_congestion")  # this kernel must have it
    except UsageError as error:
        raise where.error(f"link {choice.label}: {error}") from None


def link_only(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The fields that shape the link itself (a cluster's own fields left out)."""
    return {k: v for k, v in overrides.items() if k not in CLUSTER_FIELDS}


def cluster_fields(choice: LinkChoice | None) -> dict[str, Any]:
    """A link's cluster fields (overlay, encryption, datapath, nodes, pods) as given."""
    if choice is None:
        return {}
    return {k: v for k, v in choice.overrides if k in CLUSTER_FIELDS}
