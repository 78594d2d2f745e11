"""Where a cell's endpoints run on a cluster: a pure plan of pods, containers, processes.

A linklab host (robot, edge, robot1..N: a network namespace in the emulated bench) is a
**pod** here: both are one network namespace with its own address. Paper 001 §III-C
(Fig. 3) names the deployment flows, and the cell's ``flow`` (bench.fields.FLOWS) picks
one:

- ``intra-container``: one pod, one container, every endpoint (and the broker) a process
  in it; every host's address is 127.0.0.1.
- ``intra-pod``: one pod, one container per endpoint (and one for the broker); 127.0.0.1.
- ``intra-host``: one pod per host, all required on one node (required pod affinity on
  ``kubernetes.io/hostname`` to the cell's pods).
- ``cross-host``: one pod per host, each on a node of its own (required pod
  anti-affinity on ``kubernetes.io/hostname`` to the cell's other pods).
- no flow: one pod per host on a node of the host's role: node selector
  ``linklab.io/role=<role>``, the role being the host name without its number
  (robot1 -> robot) unless ``--role HOST=ROLE`` says otherwise (e.g. edge=cloud).
- ``bare-metal`` (processes on the nodes, no pods) is not a cluster placement: refused.

Pods are created one after another, the edge host's first (the broker's, and most
subscribers'): a pod's address exists only once it runs, so a later pod is told the
addresses of the earlier ones, and an earlier pod's endpoints learn later ones from
them (DDS: a participant answers the unicast announcements it receives -- an endpoint
with no earlier peer gets 127.0.0.1, which keeps its discovery unicast on well-known
ports; MQTT/Zenoh router: every client dials the broker). A Zenoh peer publisher must dial its
subscribers, so its pod must come after theirs: refused otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from linklab.bench.matrix import Cell
from linklab.errors import UsageError

HOSTNAME_KEY = "kubernetes.io/hostname"
ROLE_LABEL = "linklab.io/role"
SINGLE_POD_FLOWS = ("intra-container", "intra-pod")
POD_PER_HOST_FLOWS = ("intra-host", "cross-host", None)
CLUSTER_FLOWS = ("intra-container", "intra-pod", "intra-host", "cross-host")
BROKER_HOST = "edge"
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class PodPlan:
    key: str                      # "all" (one pod) or the host name
    hosts: tuple[str, ...]        # linklab hosts whose endpoints run in this pod
    order: int                    # creation order (0 first)
    one_container: bool           # intra-container: every process in one container
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity: str | None = None   # "same-node" | "other-nodes" | None


@dataclass(frozen=True)
class Placement:
    flow: str | None
    pods: tuple[PodPlan, ...]

    def pod_of(self, host: str) -> PodPlan:
        for pod in self.pods:
            if host in pod.hosts:
                return pod
        raise KeyError(host)

    def same_pod(self, a: str, b: str) -> bool:
        return self.pod_of(a).key == self.pod_of(b).key


def role_of(host: str, roles: dict[str, str]) -> str:
    return roles.get(host) or re.sub(r"\d+$", "", host) or host


def cell_hosts(cell: Cell, brokered: bool) -> tuple[str, ...]:
    """The hosts a cell uses, edge first (the broker's; most subscribers')."""
    hosts: list[str] = [BROKER_HOST] if brokered else []
    for topic in cell.topics:
        hosts += [*topic.subscribers, topic.publisher]
    ordered = list(dict.fromkeys(hosts))
    if BROKER_HOST in ordered:
        ordered.remove(BROKER_HOST)
        ordered.insert(0, BROKER_HOST)
    return tuple(ordered)


def place(cell: Cell, *, brokered: bool, roles: dict[str, str] | None = None,
          node_selector: dict[str, str] | None = None) -> Placement:
    """The pods of a cell per its flow. Raises UsageError for what a cluster cannot place."""
    roles = roles or {}
    extra = dict(node_selector or {})
    flow = cell.flow
    if flow == "bare-metal":
        raise UsageError(f"cell {cell.cell_id}: flow bare-metal runs processes on the nodes "
                         "themselves, without pods; linklab k8s places pods: use "
                         f"{', '.join(CLUSTER_FLOWS)} (or linklab bench)", argument="flow")
    if flow is not None and flow not in CLUSTER_FLOWS:
        raise UsageError(f"cell {cell.cell_id}: unknown flow {flow!r}; a cluster takes "
                         f"{', '.join(CLUSTER_FLOWS)}", argument="flow")
    if cell.topology == "chain":
        raise UsageError(f"cell {cell.cell_id}: topology chain routes through an ap host; "
                         "a cluster has no such hop: use pair or star", argument="topology")
    hosts = cell_hosts(cell, brokered)
    if flow in SINGLE_POD_FLOWS:
        pod = PodPlan("all", hosts, 0, flow == "intra-container", dict(extra))
        return Placement(flow, (pod,))
    pods = []
    for i, host in enumerate(hosts):
        selector = dict(extra)
        if flow is None:
            selector[ROLE_LABEL] = role_of(host, roles)
        affinity = {"intra-host": "same-node", "cross-host": "other-nodes"}.get(flow or "")
        pods.append(PodPlan(host, (host,), i, False, selector, affinity))
    return Placement(flow, tuple(pods))


def check_order(cell: Cell, placement: Placement, zenoh_peer: bool) -> None:
    """A Zenoh peer publisher dials its subscribers: their pods must exist before its."""
    if not zenoh_peer:
        return
    for topic in cell.topics:
        pub = placement.pod_of(topic.publisher)
        for host in topic.subscribers:
            sub = placement.pod_of(host)
            if sub.order > pub.order:
                raise UsageError(
                    f"cell {cell.cell_id}: topic {topic.name}: a zenoh-peer publisher on "
                    f"{topic.publisher} dials its subscriber on {host}, whose pod can only "
                    f"start after the {pub.key} pod here (the edge host's pod starts first);"
                    " use zenoh-router, or a flow with one pod (intra-pod, intra-container)",
                    argument="middleware")
    if placement.flow in SINGLE_POD_FLOWS:
        sub_hosts = [h for t in cell.topics for h in t.subscribers]
        if len(set(sub_hosts)) > 1:
            raise UsageError(f"cell {cell.cell_id}: zenoh-peer subscribers of several hosts "
                             "would listen on the same port of one pod", argument="flow")


def address_for(placement: Placement, asking: PodPlan, known: dict[str, str]):
    """The address function endpoints.plan uses for the pod ``asking``: 127.0.0.1 for
    hosts in that pod, the pod IP of hosts in earlier pods, None for later ones."""
    def address(host: str) -> str | None:
        if host in asking.hosts:
            return LOOPBACK
        return known.get(host)
    return address


def describe(placement: Placement) -> list[dict[str, Any]]:
    return [{"pod": p.key, "hosts": list(p.hosts), "order": p.order,
             "one_container": p.one_container, "node_selector": p.node_selector,
             "affinity": p.affinity} for p in placement.pods]
