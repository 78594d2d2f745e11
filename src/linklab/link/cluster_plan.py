"""The ``cluster`` topology as a plan (pure data; ``cluster.py`` builds it).

Paper 001 (§III-B/C, §IV-B) runs ROS 2 in a Kubernetes cluster: nodes (robot, edge) on a
physical link, pods on each node wired by a CNI (Calico, VXLAN, MTU 1450), optionally
WireGuard between the nodes (MTU 1380) and an iptables or eBPF datapath. linklab
reproduces those paths with namespaces::

    robotpod1 (eth0 10.244.1.11/32) ─veth─┐                   ┌─veth─ edgepod1 (10.244.100.11)
    robotpod2 (eth0 10.244.1.12/32) ─veth─┤ robot  ══════════ edge ├─veth─ edgepod2 (10.244.100.12)
                                           node 10.77.0.1  underlay  node 10.77.0.100
                                           vxlan 10.244.1.0  (impairments)  vxlan 10.244.100.0

* **nodes** (network namespaces ``robot`` and ``edge``; ``nodes: N`` > 2 gives robot1..
  robot{N-1} and edge on a switch, the star underlay with one shared rate) joined by
  the underlay link, which carries the link's stages (rate, loss, outage, ...; 1 Gbit/s
  when nothing sets a rate, the paper's baseline).
* **pods** (``pods: K`` per node, namespaces ``<node>pod<k>``) wired as Calico wires them:
  a veth pair per pod (``eth0`` in the pod, ``<tag>-p<k>`` on the node), a /32 address
  from the node's pod subnet 10.244.<n>.0/24 (n = 1 for robot, k for robotk, 100 for
  edge; pod k is .10+k), a default route via 169.254.1.1 (the node-side veth answers
  for it) and a /32 route per pod on the node. No bridge: intra-host traffic is routed
  by the node.
* **containers**: each pod has two, ``<node>pod<k>`` (container 1) and
  ``<node>pod<k>c2``; they share the pod's network namespace and each has its own mount
  and IPC namespace (its own /dev/shm), as a pod's containers do.
* **overlay**: ``vxlan`` (kernel vxlan device ``<tag>-vx``, VNI 1, UDP 4789, static
  FDB and neighbour entries as Flannel/Calico program them; pod MTU = underlay - 50) or
  ``none`` (direct routing: each node routes the other pod subnets via the other
  node's underlay address; pod MTU = underlay MTU).
* **encryption**: ``wireguard`` (userspace ``wireguard-go`` per node, device
  ``<tag>-wg<node>``, 10.78.0.<n>/24, MTU underlay - 60; the VXLAN runs over it, or the
  pod subnets are routed through it; pod MTU = underlay - 120, the paper's 1380 at
  1500) or ``none``.
* **datapath**: ``iptables`` (kube-proxy's rule set in every node: nat
  KUBE-SERVICES/KUBE-SVC/KUBE-SEP chains with DNAT for a handful of services, MASQUERADE
  for marked packets, filter KUBE-FORWARD with conntrack state matches: every packet is
  tracked) or ``ebpf`` (no iptables rules; tc cls_bpf programs on the pods' node-side
  veths and the vxlan device redirect each packet to the destination pod's veth or to
  the overlay with bpf_redirect_neigh, skipping the node's IP stack and netfilter).

Host names that run endpoints: the nodes, the pods and the pods' second containers
(``endpoint_names``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from linklab.errors import UsageError
from linklab.link.names import netns_name
from linklab.model.overhead import OVERLAY_OVERHEAD_BYTES, VXLAN_OVERHEAD, WirePath

CLUSTER_FIELDS = ("overlay", "encryption", "datapath", "nodes", "pods")
OVERLAYS = ("vxlan", "none")
ENCRYPTIONS = ("none", "wireguard")
DATAPATHS = ("iptables", "ebpf")
DEFAULTS: dict[str, Any] = {"overlay": "vxlan", "encryption": "none", "datapath": "iptables",
                            "nodes": 2, "pods": 2}
MAX_NODES = 8
MAX_PODS = 8
CONTAINERS_PER_POD = 2
DEFAULT_UNDERLAY_RATE = "1Gbit/s"   # 001 §IV-B: "switch port speed is reduced to 1 Gbps"
MIN_POD_MTU = 576

POD_GATEWAY = "169.254.1.1"          # Calico's pod gateway
VXLAN_VNI = 1
VXLAN_PORT = 4789
WIREGUARD_PORT = 51820
WIREGUARD_TUNNEL_BYTES = OVERLAY_OVERHEAD_BYTES["wireguard"]   # 32 + IPv4 20 + UDP 8
# 001 §VI-A: "The overhead of WireGuard is evaluated, with the MTU reduced to 1380 B":
# 120 B below a 1500 B underlay (VXLAN over WireGuard needs 110 B).
WIREGUARD_POD_REDUCTION = 120
EDGE_NUMBER = 100
LOOPBACK_MTU = 65536                 # a network namespace's lo


@dataclass(frozen=True)
class ClusterOptions:
    overlay: str = "vxlan"
    encryption: str = "none"
    datapath: str = "iptables"
    nodes: int = 2
    pods: int = 2

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in CLUSTER_FIELDS}


def parse_option(key: str, value: Any) -> Any:
    """One cluster field, validated (UsageError naming ``--KEY`` and what is accepted)."""
    allowed = {"overlay": OVERLAYS, "encryption": ENCRYPTIONS, "datapath": DATAPATHS}
    if key in allowed:
        if not isinstance(value, str) or value not in allowed[key]:
            raise UsageError(f"{value!r} is not one of {', '.join(allowed[key])}",
                             argument=f"--{key}")
        return value
    if key in ("nodes", "pods"):
        lo, hi = (2, MAX_NODES) if key == "nodes" else (1, MAX_PODS)
        number = value
        if isinstance(value, str) and value.strip().isdigit():
            number = int(value)
        if isinstance(number, bool) or not isinstance(number, int) or not lo <= number <= hi:
            what = "nodes, robots and an edge" if key == "nodes" else "pods per node"
            raise UsageError(f"{value!r}: expected a whole number of {what}, {lo}..{hi}",
                             argument=f"--{key}")
        return number
    raise UsageError(f"unknown cluster field {key!r}; known: {', '.join(CLUSTER_FIELDS)}")


def take_options(topology: str, overrides: dict[str, Any]
                 ) -> tuple[ClusterOptions | None, dict[str, Any]]:
    """Split the cluster fields off a link's overrides: (options or None, the rest).

    A cluster field given for another topology is refused (it would be dropped)."""
    given = {k: overrides[k] for k in CLUSTER_FIELDS if overrides.get(k) is not None}
    rest = {k: v for k, v in overrides.items() if k not in CLUSTER_FIELDS}
    if topology != "cluster":
        if given:
            key = next(iter(given))
            raise UsageError(f"{key} applies to the cluster topology (nodes and pods); "
                             f"this link is a {topology}", argument=f"--{key}")
        return None, rest
    values = {**DEFAULTS, **{k: parse_option(k, v) for k, v in given.items()}}
    options = ClusterOptions(**values)
    if options.datapath == "ebpf" and options.encryption == "wireguard" \
            and options.overlay == "none":
        raise UsageError("ebpf with wireguard needs overlay vxlan: a tc program can redirect "
                         "only frames with an Ethernet header, and the WireGuard device has "
                         "none (the VXLAN device on top of it has)", argument="--datapath")
    return options, rest


def pod_mtu(underlay_mtu: int, options: ClusterOptions) -> int:
    """The pods' MTU: the underlay's less what the node-to-node path adds per packet
    (001 §IV-B: VXLAN, 1450 B; §VI-A: WireGuard, 1380 B)."""
    if options.encryption == "wireguard":
        return underlay_mtu - WIREGUARD_POD_REDUCTION
    if options.overlay == "vxlan":
        return underlay_mtu - VXLAN_OVERHEAD
    return underlay_mtu


def mtus(underlay_mtu: int, options: ClusterOptions) -> dict[str, int]:
    out = {"underlay": underlay_mtu, "pod": pod_mtu(underlay_mtu, options)}
    below = underlay_mtu
    if options.encryption == "wireguard":
        below = out["wireguard"] = underlay_mtu - WIREGUARD_TUNNEL_BYTES
    if options.overlay == "vxlan":
        out["vxlan"] = below - VXLAN_OVERHEAD
    return out


def node_names(nodes: int) -> tuple[str, ...]:
    """2 -> robot, edge; N -> robot1..robot{N-1}, edge."""
    if nodes == 2:
        return ("robot", "edge")
    return tuple(f"robot{k}" for k in range(1, nodes)) + ("edge",)


def node_number(node: str) -> int:
    if node == "edge":
        return EDGE_NUMBER
    return int(node[5:] or 1)


def node_short(node: str) -> str:
    """A few characters for interface names: robot -> r, robot3 -> r3, edge -> e."""
    return "e" if node == "edge" else "r" + node[5:]


def pod_names(node: str, pods: int) -> tuple[str, ...]:
    return tuple(f"{node}pod{k}" for k in range(1, pods + 1))


def container_names(pod: str) -> tuple[str, ...]:
    """A pod's containers by number: ``robotpod1`` itself is container 1, then
    ``robotpod1c2`` .. up to CONTAINERS_PER_POD."""
    return (pod, *(f"{pod}c{j}" for j in range(2, CONTAINERS_PER_POD + 1)))


def host_place(host: str, options: ClusterOptions) -> tuple[str, str | None]:
    """(node, pod or None) of an endpoint host of this cluster (endpoint_names):
    robotpod1c2 -> (robot, robotpod1), edge -> (edge, None)."""
    for node in node_names(options.nodes):
        places: dict[str, str | None] = {node: None}
        for pod in pod_names(node, options.pods):
            places.update(dict.fromkeys(container_names(pod), pod))
        if host in places:
            return node, places[host]
    raise UsageError(f"{host!r} is not a cluster host here; "
                     f"{describe_names(options.nodes, options.pods)}", argument="host")


def wire_path(options: ClusterOptions, underlay_mtu: int, sender: str,
              receiver: str) -> WirePath:
    """How ``sender``'s packets reach ``receiver`` (the routes the module doc lists): in
    one pod (or one node's own namespace) over loopback; between a node's pods, or a pod
    and its node, through the node's veths at the pod MTU, never on the underlay; to
    another node's address straight over the underlay (a pod's packets at the pod MTU);
    to another node's pod through the overlay (VXLAN) or the direct routes, inside
    WireGuard when the nodes are encrypted."""
    sizes = mtus(underlay_mtu, options)
    sender_node, sender_pod = host_place(sender, options)
    receiver_node, receiver_pod = host_place(receiver, options)
    if sender_node == receiver_node:
        if sender_pod == receiver_pod:
            return WirePath(LOOPBACK_MTU, bounded=False)
        return WirePath(sizes["pod"], bounded=False)
    if receiver_pod is None:
        return WirePath(sizes["pod"] if sender_pod else underlay_mtu)
    vxlan = options.overlay == "vxlan"
    if sender_pod:
        mtu = sizes["pod"]
    else:   # the node's route to the other pod subnet: the vxlan or WireGuard device
        mtu = sizes.get("vxlan") or sizes.get("wireguard") or underlay_mtu
    return WirePath(mtu, vxlan=vxlan, wireguard_mtu=sizes.get("wireguard"))


def endpoint_names(nodes: int, pods: int) -> tuple[str, ...]:
    """Every host name that runs endpoints: nodes, pods (= their container 1), and the
    pods' further containers (``<pod>c2``)."""
    names: list[str] = []
    for node in node_names(nodes):
        names.append(node)
        for pod in pod_names(node, pods):
            names.extend(container_names(pod))
    return tuple(names)


def describe_names(nodes: int, pods: int) -> str:
    """The endpoint host names, short (for error messages)."""
    node_list = node_names(nodes)
    pods_text = ", ".join(f"{n}pod1..{pods}" if pods > 1 else f"{n}pod1" for n in node_list)
    return (f"nodes {', '.join(node_list)}; pods {pods_text}; a pod's second container "
            f"<pod>c2 (e.g. {node_list[0]}pod1c2)")


@dataclass(frozen=True)
class NodePlan:
    name: str
    netns: str
    number: int
    underlay_if: str
    underlay_address: str
    pod_subnet: str          # 10.244.n.0/24
    vtep_address: str        # 10.244.n.0 (on the vxlan device)
    vtep_mac: str
    vxlan_if: str
    wg_if: str
    wg_address: str          # 10.78.0.n


@dataclass(frozen=True)
class PodPlan:
    name: str
    node: str
    netns: str
    address: str
    host_if: str             # the node-side veth
    pod_if: str = "eth0"


@dataclass(frozen=True)
class ClusterPlan:
    options: ClusterOptions
    nodes: tuple[NodePlan, ...]
    pods: tuple[PodPlan, ...]
    mtu: dict[str, int] = field(default_factory=dict)

    def node(self, name: str) -> NodePlan:
        return next(n for n in self.nodes if n.name == name)

    def pods_of(self, node: str) -> tuple[PodPlan, ...]:
        return tuple(p for p in self.pods if p.node == node)

    def containers(self) -> dict[str, tuple[PodPlan, int]]:
        """Container name -> (its pod, its number): ``robotpod1`` is container 1."""
        out: dict[str, tuple[PodPlan, int]] = {}
        for pod in self.pods:
            for j, name in enumerate(container_names(pod.name), start=1):
                out[name] = (pod, j)
        return out

    def describe(self) -> dict[str, Any]:
        return {"overlay": self.options.overlay, "encryption": self.options.encryption,
                "datapath": self.options.datapath, "pods_per_node": self.options.pods,
                "mtu": dict(self.mtu),
                "nodes": {n.name: {"underlay": f"{n.underlay_if} {n.underlay_address}",
                                   "pod_subnet": n.pod_subnet} for n in self.nodes},
                "pods": {p.name: {"node": p.node, "address": p.address,
                                  "containers": [c for c, (pod, _) in self.containers().items()
                                                 if pod.name == p.name]}
                         for p in self.pods}}


def plan_cluster(run: str, tag: str, options: ClusterOptions, underlay: Any,
                 underlay_mtu: int) -> ClusterPlan:
    """The cluster on top of an underlay plan (a ``pair`` for 2 nodes, a ``star`` for
    more; ``underlay`` is its TopologyPlan)."""
    nodes: list[NodePlan] = []
    pods: list[PodPlan] = []
    for name in node_names(options.nodes):
        host = underlay.host(name)
        n = node_number(name)
        short = node_short(name)
        nodes.append(NodePlan(
            name=name, netns=host.netns, number=n, underlay_if=host.interface,
            underlay_address=host.address, pod_subnet=f"10.244.{n}.0/24",
            vtep_address=f"10.244.{n}.0", vtep_mac=f"02:4c:4c:00:00:{n:02x}",
            vxlan_if=f"{tag}-vx", wg_if=f"{tag}-wg{short}", wg_address=f"10.78.0.{n}"))
        for k, pod in enumerate(pod_names(name, options.pods), start=1):
            pods.append(PodPlan(pod, name, netns_name(run, pod), f"10.244.{n}.{10 + k}",
                                f"{tag}-p{k}"))
    sizes = mtus(underlay_mtu, options)
    if sizes["pod"] < MIN_POD_MTU:
        raise UsageError(f"an underlay MTU of {underlay_mtu} leaves the pods "
                         f"{sizes['pod']} B with {options.overlay} overlay and "
                         f"{options.encryption} encryption; the pods need {MIN_POD_MTU} or "
                         f"more", argument="--mtu")
    return ClusterPlan(options, tuple(nodes), tuple(pods), sizes)
