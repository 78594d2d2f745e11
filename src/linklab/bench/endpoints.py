"""Where each probe of a cell runs and what it is told: a pure plan.

One publisher per topic on the topic's ``from`` host, one subscriber per ``to`` host.
Each endpoint learns its peers the way its middleware needs:

- DDS: unicast discovery peers (multicast off): a publisher its subscribers' addresses,
  a subscriber its publisher's address (the chain's router does not pass multicast).
- zenoh-peer: a subscriber listens on its host's address (7447, 7448, ... for several
  on one host), its publisher connects to each of them.
- MQTT, zenoh-router: every endpoint is a client of the one broker/router of the cell,
  on the edge host.

File names: ``pub`` / ``sub`` for a cell with one topic and one subscriber (as runs
before several endpoints existed), else ``pub-<topic>`` and ``sub-<topic>-<host>``
(``-<k>`` when a host has several subscribers of one topic).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from linklab.bench.broker_host import broker_host
from linklab.bench.matrix import Cell
from linklab.bench.topics import Topic
from linklab.brokers.bench_adapter import ZENOH_PORT, MiddlewareAdapter
from linklab.middleware import family_of

BROKER_HOST = "edge"  # a Kubernetes cell's broker: in the edge host's pod (k8s.procs)


@dataclass(frozen=True)
class Endpoint:
    role: str                 # "pub" | "sub"
    topic: Topic
    host: str
    name: str                 # file stem under records/<cell_id>/
    peers: tuple[str, ...]
    extra: tuple[str, ...]    # middleware flags (zenoh --mode/--listen, security profile)
    qos: tuple[str, ...]      # --qos/--history/--durability/--system-default

    @property
    def dds_topic(self) -> str:
        return self.topic.name


def qos_args(middleware: str, topic: Topic, history: str) -> list[str]:
    """The probe's QoS flags for a topic (``history`` as the profile resolved it).

    reliable/best_effort set the reliability and linklab's history; a ROS 2 profile
    brings its history, depth, reliability and durability (linklab.probes.qos); what the
    scenario set itself wins. A policy a middleware has no such thing for is refused if
    the scenario asked for it explicitly, and reported (not passed) if it came with a
    named profile.
    """
    from linklab.probes import qos as Q

    probe = family_of(middleware).name
    if topic.qos in Q.ROS2_PROFILES:
        base = Q.ROS2_PROFILES[topic.qos]
    else:
        base = Q.QosRequest(reliability=topic.qos)
    history_kind, depth = base.history, base.depth
    if history == "keep_all":
        history_kind, depth = "keep_all", None
    elif history.startswith("keep_last:"):
        history_kind, depth = "keep_last", int(history.split(":")[1])
    explicit = set(topic.explicit)
    if history != topic.history and topic.history in ("tuned", "profile"):
        explicit.add("history")  # the tuner's history is the scenario's own choice
    request = Q.QosRequest(reliability=base.reliability, history=history_kind, depth=depth,
                           durability=topic.durability or base.durability,
                           system_default=base.system_default)
    return list(Q.probe_qos_args(request, probe, explicit=frozenset(explicit)))


def plan(cell: Cell, address: Callable[[str], str | None],
         adapter: MiddlewareAdapter | None,
         history_of: Callable[[Topic], str]) -> list[Endpoint]:
    """Every endpoint of a cell: subscribers first (they start first), then publishers."""
    single = len(cell.topics) == 1 and len(cell.topics[0].subscribers) == 1
    broker = address(broker_host(cell)) or ""
    subs: list[Endpoint] = []
    pubs: list[Endpoint] = []
    next_port: Counter[str] = Counter()
    for topic in cell.topics:
        qos = tuple(qos_args(cell.middleware, topic, history_of(topic)))
        per_host = Counter(topic.subscribers)
        seen: Counter[str] = Counter()
        listens: list[str] = []
        for host in topic.subscribers:
            seen[host] += 1
            name = "sub" if single else f"sub-{topic.name}-{host}" + (
                f"-{seen[host]}" if per_host[host] > 1 else "")
            listen = None
            if adapter is not None and adapter.entry.listening_subscribers:
                listen = f"{address(host)}:{ZENOH_PORT + next_port[host]}"
                next_port[host] += 1
                listens.append(listen)
            dds_peers = _unique(address(topic.publisher))
            peers, extra = (adapter.endpoint_args("sub", broker_address=broker, listen=listen,
                                                  connect=dds_peers)
                            if adapter else (dds_peers, ()))
            subs.append(Endpoint("sub", topic, host, name, peers, extra, qos))
        dds_peers = _unique(*(address(h) for h in topic.subscribers))
        peers, extra = (adapter.endpoint_args("pub", broker_address=broker,
                                              connect=tuple(listens) or dds_peers)
                        if adapter else (dds_peers, ()))
        pubs.append(Endpoint("pub", topic, topic.publisher,
                             "pub" if single else f"pub-{topic.name}", peers, extra, qos))
    return subs + pubs


def _unique(*addresses: str | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys(a for a in addresses if a))


def tls_names(cell: Cell, address: Callable[[str], str | None]) -> tuple[str, ...]:
    """Addresses a TLS peer may connect to: the broker's and every subscriber host's."""
    hosts = [broker_host(cell)] + [h for t in cell.topics for h in t.subscribers]
    return _unique(*(address(h) for h in hosts))
