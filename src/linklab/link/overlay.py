"""Node-to-node pod traffic: a VXLAN overlay or direct routing (cluster topology).

VXLAN as Flannel and Calico program it (001 §III-B: "traffic is encapsulated using an
overlay such as VXLAN"): one kernel vxlan device per node (VNI 1, UDP 4789, no
learning, outer UDP checksum zero as RFC 7348 §5 says it SHOULD be -- measured: with
it computed, a receiving node whose stack verified it in software hands the inner packet
a full-packet checksum that a tc redirect does not keep consistent, and the pod counts
UDP InCsumErrors; that was the eBPF datapath over WireGuard), the node's pod subnet's
.0 on it, and for every other node a route to its pod subnet via that node's VTEP
address (onlink), a permanent neighbour entry for the VTEP address and a
forwarding-database entry sending its MAC to the node's underlay address (or WireGuard
address, when the nodes are encrypted). Direct routing
("With direct routing encapsulation is bypassed", §III-C): a route to each other
node's pod subnet via its underlay address (or through the WireGuard device).

Every change goes through the journal (``NetOps``); FDB entries and routes on the
vxlan device go away with it.
"""

from __future__ import annotations

from linklab.link import made
from linklab.link.cluster_plan import VXLAN_PORT, VXLAN_VNI, ClusterPlan, NodePlan
from linklab.link.netops import NetOps


def build(net: NetOps, cluster: ClusterPlan) -> None:
    if cluster.options.overlay == "vxlan":
        for node in cluster.nodes:
            _vxlan(net, cluster, node)
    else:
        for node in cluster.nodes:
            _direct(net, cluster, node)


def _encrypted(cluster: ClusterPlan) -> bool:
    return cluster.options.encryption == "wireguard"


def _vxlan(net: NetOps, cluster: ClusterPlan, node: NodePlan) -> None:
    ns, dev = node.netns, node.vxlan_if
    encrypted = _encrypted(cluster)
    local = node.wg_address if encrypted else node.underlay_address
    lower = [] if encrypted else ["dev", node.underlay_if]
    net.ip(ns, ["link", "add", dev, "address", node.vtep_mac, "type", "vxlan", "id",
                str(VXLAN_VNI), "local", local, *lower, "dstport", str(VXLAN_PORT),
                "nolearning", "noudpcsum"], undo=made.link(ns, dev),
           what=f"vxlan {ns}/{dev} local {local}")
    net.ip(ns, ["link", "set", dev, "mtu", str(cluster.mtu["vxlan"])], undo=None)
    net.offloads_off(ns, dev)
    net.ip(ns, ["addr", "add", f"{node.vtep_address}/32", "dev", dev],
           undo=made.address(ns, dev, f"{node.vtep_address}/32"))
    net.ip(ns, ["link", "set", dev, "up"], undo=made.link_up(ns, dev))
    others = [n for n in cluster.nodes if n.name != node.name]
    lines = [f"neigh replace {o.vtep_address} lladdr {o.vtep_mac} dev {dev} nud permanent"
             for o in others]
    net.journal.change(f"vxlan neighbours {ns}/{dev}", ["ip", "-n", ns, "-batch", "-"],
                       made.neighbours(ns, dev), input="\n".join(lines) + "\n")
    for other in others:
        remote = other.wg_address if encrypted else other.underlay_address
        # (goes away with the device)
        net.journal.change(f"vxlan fdb {ns}/{dev} {other.vtep_mac} -> {remote}",
                           ["bridge", "fdb", "append", other.vtep_mac, "dev", dev,
                            "dst", remote], None, ns)
        net.ip(ns, ["route", "add", other.pod_subnet, "via", other.vtep_address, "dev", dev,
                    "onlink"], undo=made.route(ns, other.pod_subnet, other.vtep_address, dev))


def _direct(net: NetOps, cluster: ClusterPlan, node: NodePlan) -> None:
    ns = node.netns
    for other in (n for n in cluster.nodes if n.name != node.name):
        if _encrypted(cluster):
            net.ip(ns, ["route", "add", other.pod_subnet, "dev", node.wg_if],
                   undo=made.route(ns, other.pod_subnet, None, node.wg_if))
        else:
            net.ip(ns, ["route", "add", other.pod_subnet, "via", other.underlay_address,
                        "dev", node.underlay_if],
                   undo=made.route(ns, other.pod_subnet, other.underlay_address,
                                   node.underlay_if))
