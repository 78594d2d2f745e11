"""Hosts, ports and links of a testbed, as a plan (pure data, nothing is created here).

Topologies (addresses are fixed, so they are the same in every run):

``pair``   robot 10.77.0.1/24 ---- edge 10.77.0.100/24
           one link; all stages on it.
``star``   robot1..N 10.77.0.1..N/24 -- bridge in "ap" -- edge 10.77.0.100/24
           loss/outage/delay per robot link (each station has its own channel errors);
           the rate limit sits on the ap--edge link, so all robots share one channel
           (001 §VI-C, "Multi-Robot with Shared AP").
``chain``  robot 10.77.1.1/24 -- ap 10.77.1.254 | 10.77.2.254 -- edge 10.77.2.100/24
           the robot--ap link is the impaired (wireless) hop, ap--edge is clean; ap routes,
           so uplink and downlink can be given different stages (``up=..,down=..``).
``cluster`` nodes (a pair's robot and edge, or a star's robots and edge) with pods, an
           overlay, encryption and a datapath between them: ``cluster_plan.py``.

Every link has a robot side ``a`` and an edge side ``b``; ``up`` is a -> b. Kernel stages
go on the two ports: loss and outage on the receiving port's ingress (nft), the rate on
the ``b`` port (tbf on its egress for ``down``, an ifb on its ingress for ``up``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from linklab.errors import UsageError
from linklab.link.names import check_name, netns_name, run_tag

TOPOLOGIES = ("pair", "star", "chain", "cluster")
MAX_STAR_HOSTS = 32

ALL_DIRECTION_STAGES = frozenset({"outage", "loss", "burst_loss", "delay", "jitter",
                                  "trace", "rate"})
STATION_STAGES = ALL_DIRECTION_STAGES - {"rate"}


@dataclass(frozen=True)
class Port:
    host: str
    netns: str
    ifname: str


@dataclass(frozen=True)
class PathView:
    """One direction of one link, as the kernel stages see it."""

    link: str
    direction: str       # "up" (robot side -> edge side) or "down"
    sender: Port
    receiver: Port
    shaper: Port         # the link's edge-side port: tbf on egress, ifb on ingress
    ifb: str             # the ifb device name in the shaper's namespace
    # True when this direction's rate is shaped on the receiver's ingress (ifb): nft's
    # ingress hook does not see frames re-injected by an ifb, so loss/outage for this
    # direction hook prerouting instead (see NetOps.ingress_chain).
    receiver_shaped: bool = False


@dataclass(frozen=True)
class LinkPlan:
    name: str
    a: Port              # robot side
    b: Port              # edge side (shaped end)
    carries: frozenset[str]
    index: int

    def path(self, direction: str) -> PathView:
        sender, receiver = (self.a, self.b) if direction == "up" else (self.b, self.a)
        return PathView(self.name, direction, sender, receiver, self.b,
                        self.b.ifname.split("-")[0] + f"-ifb{self.index}")


@dataclass(frozen=True)
class HostPlan:
    name: str
    netns: str
    addresses: tuple[tuple[str, str], ...]             # (ifname, address/prefix)
    routes: tuple[tuple[str, str | None, str], ...] = ()  # (destination, via, dev)
    forwarding: bool = False
    bridge: str | None = None      # a bridge in this host; all its ports join it

    @property
    def address(self) -> str | None:
        return self.addresses[0][1].split("/")[0] if self.addresses else None

    @property
    def interface(self) -> str | None:
        return self.addresses[0][0] if self.addresses else None


@dataclass(frozen=True)
class TopologyPlan:
    kind: str
    run: str
    tag: str
    hosts: tuple[HostPlan, ...]
    links: tuple[LinkPlan, ...]
    notes: tuple[str, ...] = field(default=())
    cluster: Any = None   # cluster_plan.ClusterPlan for the cluster topology

    def host(self, name: str) -> HostPlan:
        for host in self.hosts:
            if host.name == name:
                return host
        known = ", ".join(h.name for h in self.hosts)
        raise UsageError(f"no host {name!r} in run {self.run!r}; hosts: {known}",
                         argument="HOST")


def plan_topology(kind: str, run: str, hosts: int = 1, cluster: Any = None,
                  mtu: int = 1500) -> TopologyPlan:
    check_name(run)
    if kind not in TOPOLOGIES:
        raise UsageError(f"unknown topology {kind!r}; expected one of {', '.join(TOPOLOGIES)}",
                         argument="--topology")
    if kind == "cluster":
        return _plan_cluster(run, hosts, cluster, mtu)
    if kind == "star" and not 1 <= hosts <= MAX_STAR_HOSTS:
        raise UsageError(f"{hosts} robots: expected 1..{MAX_STAR_HOSTS}", argument="--hosts")
    if kind != "star" and hosts != 1:
        raise UsageError(f"--hosts applies to the star topology only ({kind} has one robot)",
                         argument="--hosts")
    tag = run_tag(run)
    ns = {h: netns_name(run, h) for h in ("robot", "edge", "ap")}

    def port(host: str, peer: str) -> Port:
        return Port(host, netns_name(run, host), f"{tag}-{peer}")

    multicast = ("224.0.0.0/4", None)
    if kind == "pair":
        r, e = port("robot", "edge"), port("edge", "robot")
        return TopologyPlan(kind, run, tag, (
            HostPlan("robot", ns["robot"], ((r.ifname, "10.77.0.1/24"),),
                     ((*multicast, r.ifname),)),
            HostPlan("edge", ns["edge"], ((e.ifname, "10.77.0.100/24"),),
                     ((*multicast, e.ifname),)),
        ), (LinkPlan("robot-edge", r, e, ALL_DIRECTION_STAGES, 0),))
    if kind == "chain":
        r, ar = port("robot", "ap"), port("ap", "robot")
        ae, e = port("ap", "edge"), port("edge", "ap")
        return TopologyPlan(kind, run, tag, (
            HostPlan("robot", ns["robot"], ((r.ifname, "10.77.1.1/24"),),
                     (("default", "10.77.1.254", r.ifname),)),
            HostPlan("ap", ns["ap"], ((ar.ifname, "10.77.1.254/24"),
                                      (ae.ifname, "10.77.2.254/24")), forwarding=True),
            HostPlan("edge", ns["edge"], ((e.ifname, "10.77.2.100/24"),),
                     (("default", "10.77.2.254", e.ifname),)),
        ), (LinkPlan("robot-ap", r, ar, ALL_DIRECTION_STAGES, 0),
            LinkPlan("ap-edge", ae, e, frozenset(), 1)),
            ("multicast does not cross the ap router: use unicast peers",))
    # star
    bridge = f"{tag}-br"
    plans: list[HostPlan] = []
    links: list[LinkPlan] = []
    for k in range(1, hosts + 1):
        robot = f"robot{k}"
        rp, ap = port(robot, "ap"), port("ap", f"r{k}")
        plans.append(HostPlan(robot, netns_name(run, robot), ((rp.ifname, f"10.77.0.{k}/24"),),
                              ((*multicast, rp.ifname),)))
        links.append(LinkPlan(f"{robot}-ap", rp, ap, STATION_STAGES, k))
    plans.append(HostPlan("ap", ns["ap"], (), bridge=bridge))
    ae, e = port("ap", "edge"), port("edge", "ap")
    plans.append(HostPlan("edge", ns["edge"], ((e.ifname, "10.77.0.100/24"),),
                          ((*multicast, e.ifname),)))
    # The shared channel: robots -> edge is shaped on the edge port's ingress (ifb),
    # edge -> robots on its egress (tbf). Here "up" is ap -> edge.
    links.append(LinkPlan("ap-edge", ae, e, frozenset({"rate"}), 0))
    return TopologyPlan(kind, run, tag, tuple(plans), tuple(links),
                        ("the rate limit is shared by all robots (ap-edge link)",))


def _plan_cluster(run: str, hosts: int, options: Any, mtu: int) -> TopologyPlan:
    """Nodes on a pair (2) or star (more) underlay, plus their pods (cluster_plan.py)."""
    from linklab.link.cluster_plan import ClusterOptions, plan_cluster

    if hosts != 1:
        raise UsageError("--hosts applies to the star topology; a cluster takes --nodes",
                         argument="--hosts")
    options = options or ClusterOptions()
    if options.nodes == 2:
        underlay = plan_topology("pair", run)
    else:
        underlay = plan_topology("star", run, options.nodes - 1)
    cluster = plan_cluster(run, underlay.tag, options, underlay, mtu)
    pods = tuple(HostPlan(p.name, p.netns, ()) for p in cluster.pods)
    notes = underlay.notes + (f"pods MTU {cluster.mtu['pod']}; overlay {options.overlay}, "
                              f"encryption {options.encryption}, datapath {options.datapath}",)
    return replace(underlay, kind="cluster", hosts=underlay.hosts + pods, notes=notes,
                   cluster=cluster)
