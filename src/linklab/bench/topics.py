"""The endpoints of a cell: which topics, published where, subscribed where.

A cell has one or more topics; each topic has one publisher host and one or more
subscriber hosts of the cell's topology, and its own type, payload, rate and QoS. Three
ways to say it in a scenario (README "Endpoints" has the examples)::

    pairs: 3            # 3 independent pub/sub pairs on topics p1..p3 (paper 001 Fig. 11)
    subscribers: 4      # one topic, publisher on edge, subscribers on robot1..4 (a star;
                        # paper 002: one publisher in the middle, four around it)
    topics:             # a traffic mix (paper 001 Table I): each its own settings
      - {name: imu, payload: 300B, rate: 1kHz, qos: sensor_data}
      - {name: camera, payload: 1MB, rate: 30Hz, from: robot, to: [edge]}

Hosts are named as the topology names them: ``pair`` robot, edge; ``chain`` robot, ap,
edge; ``star`` robot1..N, edge (the star's ap is a bridge without an address);
``cluster`` its nodes (robot, edge; robot1..N-1 and edge with ``link.nodes: N``), pods
(robotpod1..K, edgepod1..K with ``link.pods: K``; a pod's name is its first container)
and the pods' second containers (robotpod1c2, ...). By default a topic goes from robot
(robot1 in a star) to edge; in a cluster ``flow:`` places every topic (``flow_hosts``;
paper 001's deployment flows, defined in fields.py), cross-host when no flow is given,
``pairs: N`` on several robot nodes puts pair i on robot i (round robin), and a topic's
own from:/to: cannot be combined with a flow. A field a topic does not set
comes from the cell (fixed:/axes:), so ``axes: {payload: [...]}`` sweeps every topic
that does not fix its own payload.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from linklab.bench.fields import (
    MAX_CELL_S,
    MAX_PAIRS,
    RATE_MAX,
    RELIABILITIES,
    SCALAR_PARSERS,
    Located,
    mapping,
    plain,
    positive_int,
)
from linklab.units import size_label

TOPIC_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,31}$")
# Fields a topic may set itself; the rest of a cell's fields are the cell's.
TOPIC_SETTINGS = ("type", "payload", "rate", "qos", "history", "depth", "durability",
                  "count", "duration")
TOPIC_KEYS = ("name", "from", "to", "pairs", "gates") + TOPIC_SETTINGS
# rmw's qos_profiles.h: the history each named profile brings (linklab.probes.qos has
# the whole profiles); reliable/best_effort alone keep linklab's KEEP_ALL default.
PROFILE_HISTORY = {"default": "keep_last:10", "sensor_data": "keep_last:5",
                   "parameters": "keep_last:1000", "services_default": "keep_last:10",
                   "system_default": "system_default"}


@dataclass(frozen=True)
class TopicTemplate:
    """A topic as the scenario writes it (unset settings come from the cell)."""

    name: str | None
    publisher: str | None
    subscribers: tuple[str, ...] | None
    pairs: int
    settings: dict[str, Any]
    gates: tuple[Any, ...]
    where: Located


@dataclass(frozen=True)
class Topic:
    """One topic of a cell, every setting resolved."""

    name: str
    publisher: str
    subscribers: tuple[str, ...]
    type: str
    payload_bytes: int
    rate_hz: float            # 0.0 until a searched rate (max / N %) is known
    rate: float | str         # as asked: Hz, "max" or "75%"
    qos: str                  # reliable | best_effort | a ROS 2 profile name
    history: str              # keep_all | keep_last:N | tuned | profile | system_default
    durability: str | None    # volatile | transient_local | None (the QoS's default)
    count: int | None
    duration_s: float | None
    explicit: frozenset[str] = frozenset()  # QoS policies the scenario set itself
    gates: tuple[Any, ...] = field(default=(), compare=False)
    # where the topic entry is written and the settings it sets itself (errors name it)
    where: Located | None = field(default=None, compare=False, repr=False)
    own: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    @property
    def messages(self) -> int:
        if self.count is not None:
            return self.count
        return int(round(self.rate_hz * (self.duration_s or 0.0)))

    @property
    def publish_s(self) -> float:
        if not self.rate_hz:
            return self.duration_s or 0.0
        if self.count is not None:
            return self.count / self.rate_hz
        return self.duration_s or 0.0

    @property
    def interval_s(self) -> float:
        return 1.0 / self.rate_hz if self.rate_hz else 0.0

    def with_rate(self, rate_hz: float, count: int | None = None) -> Topic:
        return replace(self, rate_hz=rate_hz, count=count if count is not None else self.count)

    def describe(self) -> str:
        subs = ",".join(self.subscribers)
        rate = f"{self.rate_hz:g}Hz" if self.rate_hz else str(self.rate)
        return (f"{self.name}: {self.publisher}->{subs} {self.type} "
                f"{size_label(self.payload_bytes)} @{rate} {self.qos}")


def parse_topics(node: yaml.Node, where: Located) -> tuple[TopicTemplate, ...]:
    from linklab.bench.gates import parse_gate_mapping

    if not isinstance(node, yaml.SequenceNode) or not node.value:
        raise where.error("expected a list of topics, e.g. - {name: camera, payload: 1MB, "
                          "rate: 30Hz}")
    out: list[TopicTemplate] = []
    for i, item in enumerate(node.value):
        loc = Located(where.file, item.start_mark.line + 1, f"{where.field}[{i}]")
        name = publisher = None
        subscribers: tuple[str, ...] | None = None
        pairs = 1
        settings: dict[str, Any] = {}
        gates: tuple[Any, ...] = ()
        for key, value_node, key_loc in mapping(item, loc):
            if key == "gates":
                gates = parse_gate_mapping(value_node, key_loc, in_topic=True)
                continue
            value = plain(value_node, key_loc)
            if key == "name":
                if not isinstance(value, str) or not TOPIC_NAME.match(value):
                    raise key_loc.error(f"{value!r} is not a topic name (a letter, then "
                                        "letters, digits, _; at most 32)")
                name = value
            elif key == "from":
                publisher = _host_name(value, key_loc)
            elif key == "to":
                items = value if isinstance(value, list) else [value]
                if not items:
                    raise key_loc.error("needs at least one subscriber host")
                subscribers = tuple(_host_name(v, key_loc) for v in items)
            elif key == "pairs":
                pairs = positive_int(value, key_loc, most=MAX_PAIRS)
            elif key in TOPIC_SETTINGS:
                settings[key] = SCALAR_PARSERS[key](value, key_loc)
            else:
                raise key_loc.error(f"unknown key; expected one of {', '.join(TOPIC_KEYS)}")
        out.append(TopicTemplate(name, publisher, subscribers, pairs, settings, gates, loc))
    return tuple(out)


def _host_name(value: Any, where: Located) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"[a-z][a-z0-9]*", value):
        raise where.error(f"{value!r} is not a host name (e.g. robot, edge, robot2)")
    return value


def cluster_size(values: dict[str, Any]) -> tuple[int, int]:
    """(nodes, pods per node) of a cluster cell: its link's fields, then link.* axes."""
    from linklab.bench.links import LinkChoice, cluster_fields
    from linklab.link.cluster_plan import DEFAULTS

    choice = values.get("link")
    fields = cluster_fields(choice) if isinstance(choice, LinkChoice) else {}
    for key in ("nodes", "pods"):
        if values.get(f"link.{key}") is not None:
            fields[key] = values[f"link.{key}"]
    return int(fields.get("nodes", DEFAULTS["nodes"])), int(fields.get("pods", DEFAULTS["pods"]))


def flow_hosts(flow: str, nodes: int, robot: str | None = None) -> tuple[str, str]:
    """(publisher host, subscriber host) of paper 001's deployment flow (fields.FLOWS),
    on ``robot`` (default: the first robot node) and the edge node."""
    from linklab.link.cluster_plan import node_names

    robot, edge = robot or node_names(nodes)[0], "edge"
    return {"bare-metal": (robot, edge),
            "intra-container": (f"{robot}pod1", f"{robot}pod1"),
            "intra-pod": (f"{robot}pod1", f"{robot}pod1c2"),
            "intra-host": (f"{robot}pod1", f"{robot}pod2"),
            "cross-host": (f"{robot}pod1", f"{edge}pod1")}[flow]


def topology_hosts(topology: str, hosts: int | None,
                   cluster: tuple[int, int] = (2, 2)) -> tuple[str, ...]:
    """The hosts of a topology that can run endpoints (the star's ap has no address);
    ``cluster``: (nodes, pods per node) of a cluster."""
    if topology == "cluster":
        from linklab.link.cluster_plan import endpoint_names

        return endpoint_names(*cluster)
    if topology == "star":
        return tuple(f"robot{k}" for k in range(1, (hosts or 1) + 1)) + ("edge",)
    if topology == "chain":
        return ("robot", "ap", "edge")
    return ("robot", "edge")


def _first_robot(topology: str) -> str:
    return "robot1" if topology == "star" else "robot"


def _locator(places: dict[str, Located], where: Located) -> Callable[..., Located]:
    """at(*keys): where the first of the keys was written, else ``where``."""
    def at(*keys: str) -> Located:
        for key in keys:
            if key in places:
                return places[key]
        return where
    return at


def _check_placement(values: dict[str, Any], templates: tuple[TopicTemplate, ...] | None,
                     topology: str, at: Callable[..., Located]) -> None:
    """flow: only on a cluster, hosts: only off one, and not both flow: and from:/to:;
    topics: or the subscribers:/pairs: shorthands, not both."""
    flow = values.get("flow")
    if flow is not None and topology != "cluster":
        # a deployment flow places endpoints on a cluster's nodes and pods (paper 001)
        raise at("flow").error(f"flow: {flow} places endpoints in a cluster; the "
                               f"{topology} topology has no nodes and pods (topology: "
                               "cluster)")
    if topology == "cluster" and values.get("hosts") is not None:
        raise at("hosts").error("hosts: is the star's robot count; a cluster's nodes and "
                                "pods are link fields (link: {nodes: 3, pods: 2})")
    if topology == "cluster" and flow is not None and templates is not None:
        for template in templates:
            if template.publisher is not None or template.subscribers is not None:
                raise template.where.error(
                    f"from:/to: place this topic, and flow: {flow} places every topic; "
                    "keep one of them (without flow:, name the pods in from:/to:)")
    if templates is not None and (values.get("subscribers") or values.get("pairs")):
        raise at("subscribers", "pairs").error(
            "give either topics: or the subscribers:/pairs: shorthands, not both (a topic "
            "lists its hosts with from: and to:)")


def _shorthand_templates(values: dict[str, Any], topology: str, hosts: int | None,
                         at: Callable[..., Located]
                         ) -> tuple[tuple[TopicTemplate, ...], int | None]:
    """The topics of the subscribers:/pairs: shorthands (one topic by default), and the
    star's robot count they need."""
    subscribers = values.get("subscribers")
    pairs = values.get("pairs")
    k = subscribers or 1
    if k > 1 and topology == "cluster":
        raise at("subscribers").error(
            f"subscribers: {k}: a flow places one subscriber per topic; list the "
            "subscribers' pods under topics: (to: [edgepod1, edgepod2])")
    if k > 1 and topology != "star":
        raise at("subscribers").error(
            f"subscribers: {k} needs {k} subscriber hosts; a {topology} has one. Use "
            "topology: star (robots robot1..N around edge), or list the hosts under "
            "topics: (to: [edge, edge] puts two on one host)")
    if topology == "star":
        hosts = hosts or max(k, pairs or 1)
        if hosts < k:
            raise at("hosts", "subscribers").error(
                f"subscribers: {k} needs hosts: {k} or more in the star (hosts: {hosts})")
    n = pairs or 1
    templates = tuple(
        TopicTemplate(f"p{i}" if pairs else "t",
                      "edge" if subscribers else None,
                      tuple(f"robot{j}" for j in range(1, k + 1)) if subscribers else None,
                      1, {}, (), at("subscribers", "pairs", "payload", "rate"))
        for i in range(1, n + 1))
    if pairs and topology == "star" and not subscribers:
        # pair i from robot i (round robin) to edge: each robot has its own channel
        templates = tuple(replace(t, publisher=f"robot{(i % hosts) + 1}")
                          for i, t in enumerate(templates))
    return templates, hosts


def _place_on_cluster(templates: tuple[TopicTemplate, ...], flow: str | None, nodes: int,
                      pairs: int | None) -> tuple[TopicTemplate, ...]:
    """The cluster's topics with their endpoints where the flow puts them (a from:/to: of
    the topic wins); pairs: N on several robot nodes: pair i on robot i (round robin), as
    in a star."""
    from linklab.link.cluster_plan import node_names

    robots = node_names(nodes)[:-1]
    placed = []
    for i, t in enumerate(templates):
        publisher, subscriber = flow_hosts(flow or "cross-host", nodes,
                                           robots[i % len(robots)] if pairs else None)
        placed.append(replace(t, publisher=t.publisher or publisher,
                              subscribers=t.subscribers or (subscriber,)))
    return tuple(placed)


def _expand_topics(values: dict[str, Any], templates: tuple[TopicTemplate, ...],
                   topology: str, at: Callable[..., Located]) -> list[Topic]:
    """Each template's topics (its copies), resolved; their names must be unique."""
    topics: list[Topic] = []
    for template, names in zip(templates, topic_names(templates), strict=True):
        for name in names:
            topics.append(_resolve_one(values, template, name, topology,
                                       at("count", "rate", "duration")))
    names = [t.name for t in topics]
    for t in topics:
        if names.count(t.name) > 1:
            raise at("topics").error(f"topic name {t.name!r} is used twice; names must be "
                                     "unique")
    return topics


def _star_robots(topics: list[Topic]) -> int:
    """The highest robotN any topic's endpoint runs on (at least 1)."""
    needed = 0
    for t in topics:
        for host in (t.publisher, *t.subscribers):
            if host.startswith("robot") and host[5:].isdigit():
                needed = max(needed, int(host[5:]))
    return max(needed, 1)


def _check_hosts(templates: tuple[TopicTemplate, ...], topics: list[Topic], topology: str,
                 hosts: int | None, size: tuple[int, int]) -> None:
    """Every endpoint runs on a host of the topology (never on the access point)."""
    known = topology_hosts(topology, hosts, size)
    for template, t in zip(_expanded(templates), topics, strict=True):
        for host in (t.publisher, *t.subscribers):
            if host not in known or host == "ap":
                if topology == "cluster":
                    from linklab.link.cluster_plan import describe_names

                    raise template.where.error(
                        f"host {host!r} is not in the cluster with nodes: {size[0]}, pods: "
                        f"{size[1]}; hosts that run endpoints: {describe_names(*size)}")
                raise template.where.error(
                    f"host {host!r} is not in the {topology} topology"
                    + (f" with hosts: {hosts}" if topology == "star" else "")
                    + "; hosts that run endpoints: "
                    + ", ".join(h for h in known if h != "ap"))


def resolve_topics(values: dict[str, Any], templates: tuple[TopicTemplate, ...] | None,
                   where: Located, places: dict[str, Located] | None = None
                   ) -> tuple[tuple[Topic, ...], int | None]:
    """The topics of one cell from its values (fixed + this cell's axis values).

    Returns (topics, hosts): ``hosts`` is the star's robot count the topics need.
    ``places``: where each field was written (errors name that line).
    """
    at = _locator(places or {}, where)
    topology = values.get("topology") or "pair"
    hosts = values.get("hosts")
    size = cluster_size(values) if topology == "cluster" else (2, 2)
    _check_placement(values, templates, topology, at)
    if templates is None:
        templates, hosts = _shorthand_templates(values, topology, hosts, at)
    if topology == "cluster":
        templates = _place_on_cluster(templates, values.get("flow"), size[0],
                                      values.get("pairs"))
    topics = _expand_topics(values, templates, topology, at)
    if topology == "star":
        hosts = hosts or _star_robots(topics)
    _check_hosts(templates, topics, topology, hosts, size)
    return tuple(topics), (hosts if topology == "star" else None)


def topic_names(templates: tuple[TopicTemplate, ...]) -> list[list[str]]:
    """The names of each template's topics in a cell: its name, ``name_1..N`` with
    ``pairs: N``, and ``tK`` (K-th topic of the cell) for a topic without a name."""
    out: list[list[str]] = []
    k = 0
    for template in templates:
        copies = [f"{template.name}_{c}" if template.name else None
                  for c in range(1, template.pairs + 1)] if template.pairs > 1 \
            else [template.name]
        names = []
        for name in copies:
            k += 1
            names.append(name or f"t{k}")
        out.append(names)
    return out


def _expanded(templates: tuple[TopicTemplate, ...]) -> list[TopicTemplate]:
    return [t for t in templates for _ in range(t.pairs)]


def _resolve_one(values: dict[str, Any], template: TopicTemplate, name: str,
                 topology: str, cell_where: Located | None = None) -> Topic:
    settings = {k: template.settings.get(k, values.get(k)) for k in TOPIC_SETTINGS}
    where = template.where
    for key in ("rate", "type"):
        if settings[key] is None:
            raise where.error(f"{key} is missing; give it in the topic or under fixed:/axes:")
    from linklab.probes.ros_types import size_refusal
    from linklab.probes.types import FIXED_TYPE_BYTES

    if settings["type"] in FIXED_TYPE_BYTES:
        # a performance_test type has its own size: a payload the topic sets must match
        # it; one inherited from the cell (written for other topics) does not apply
        size = FIXED_TYPE_BYTES[settings["type"]]
        own = template.settings.get("payload")
        if own is None and template.settings.get("type") is None:
            own = values.get("payload")
        if own is not None and own != size:
            raise where.error(f"type {settings['type']} carries {size} B; payload {own} B "
                              "does not fit it (use type: Bytes for any size)")
        settings["payload"] = size
    elif settings["payload"] is None:
        raise where.error("payload is missing; give it in the topic or under "
                          f"fixed:/axes: (type {settings['type']} has no size of its own)")
    elif refusal := size_refusal(settings["type"], int(settings["payload"])):
        raise where.error(refusal)
    if settings["count"] is None and settings["duration"] is None \
            and settings["rate"] != RATE_MAX:
        raise where.error("give count (messages) or duration, in the topic or under fixed:")
    if isinstance(settings["rate"], str) and settings["rate"] != RATE_MAX \
            and settings["count"] is None and settings["duration"] is None:
        raise where.error("a share of the maximum rate needs count or duration")
    if not isinstance(settings["rate"], str) and settings["count"] is None \
            and round(settings["rate"] * settings["duration"]) < 1:
        raise where.error(f"rate {settings['rate']:g} Hz for {settings['duration']:g} s "
                          "publishes no sample; give a longer duration or a count")
    if not isinstance(settings["rate"], str) and settings["count"] is not None \
            and settings["count"] / settings["rate"] > MAX_CELL_S:
        own = {"count", "rate"} & set(template.settings)
        raise (where if own or cell_where is None else cell_where).error(
            f"count {settings['count']} at {settings['rate']:g} Hz publishes for "
            f"{settings['count'] / settings['rate'] / 3600:.3g} h; one cell publishes at "
            f"most {MAX_CELL_S / 3600:g} h")
    qos = settings["qos"] or "reliable"
    history, explicit = resolve_history(qos, settings["history"], settings["depth"], where)
    durability = settings["durability"]
    if durability is not None:
        explicit = explicit | {"durability"}
    if qos in RELIABILITIES:
        explicit = explicit | {"reliability"}
    rate = settings["rate"]
    return Topic(
        name=name,
        publisher=template.publisher or _first_robot(topology),
        subscribers=template.subscribers or ("edge",),
        type=settings["type"], payload_bytes=int(settings["payload"]),
        rate_hz=float(rate) if not isinstance(rate, str) else 0.0, rate=rate,
        qos=qos, history=history, durability=durability,
        count=settings["count"], duration_s=settings["duration"],
        explicit=frozenset(explicit), gates=template.gates, where=template.where,
        own=frozenset(template.settings))


def resolve_history(qos: str, history: str | None, depth: int | None,
                    where: Located) -> tuple[str, set[str]]:
    """(history, {"history"} if the scenario set it itself).

    ``depth: N`` is ``history: keep_last:N``; a ROS 2 profile brings its own history
    (rmw qos_profiles.h); reliable/best_effort alone keep linklab's KEEP_ALL default.
    """
    if depth is not None:
        if history not in (None, f"keep_last:{depth}") and not (
                history or "").startswith("keep_last:"):
            raise where.error(f"depth: {depth} needs a KEEP_LAST history, not {history}")
        if history is not None and history != f"keep_last:{depth}":
            raise where.error(f"depth: {depth} and history: {history} disagree; keep one")
        return f"keep_last:{depth}", {"history"}
    if history is not None:
        return history, {"history"}
    return PROFILE_HISTORY.get(qos, "keep_all"), set()
