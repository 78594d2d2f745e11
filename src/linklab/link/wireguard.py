"""WireGuard between the cluster's nodes, in userspace (``wireguard-go``).

001 §VI-A: "we recommend using Kubernetes CNI encryption ... The overhead of WireGuard
is evaluated, with the MTU reduced to 1380 B" (Calico's node-to-node WireGuard). This
kernel has no WireGuard module, so every node runs Debian's ``wireguard-go`` (the same
protocol: Noise handshake, ChaCha20-Poly1305, 32 B of header and tag per packet, inside
UDP/IPv4 -- model/overhead.py) on a TUN device ``<tag>-wg<node>`` made inside the
node's namespace, configured with ``wg`` (wireguard-tools) through its UAPI socket
``/run/wireguard/<device>.sock``. Each node has one peer per other node: its public
key, its underlay address and port 51820, and as allowed IPs its WireGuard address and
(without an overlay) its pod subnet. A ping across every tunnel at the end makes the
handshakes, so the first samples of a run are not spent on them.

Journal: the process (helper), its socket (``wg_socket``: removed if the process was
killed before it could) and its device (``link``); the configuration and the address
go away with the device.
"""

from __future__ import annotations

import time
from pathlib import Path

from linklab.errors import EnvironmentProblem
from linklab.link import made
from linklab.link.cluster_plan import WIREGUARD_PORT, ClusterPlan, NodePlan
from linklab.link.netops import NetOps

START_TIMEOUT_S = 10.0


def build(net: NetOps, cluster: ClusterPlan) -> None:
    shell = net.journal.shell
    keys: dict[str, tuple[str, str]] = {}
    for node in cluster.nodes:
        private = shell.run(["wg", "genkey"]).stdout.strip()
        public = shell.run(["wg", "pubkey"], input=private + "\n").stdout.strip()
        keys[node.name] = (private, public)
    for node in cluster.nodes:
        _start(net, node)
    for node in cluster.nodes:
        _configure(net, cluster, node, keys)
    for node in cluster.nodes:
        for other in cluster.nodes:
            if other.name != node.name:
                _handshake(net, node, other)


def _start(net: NetOps, node: NodePlan) -> None:
    journal, ns, dev = net.journal, node.netns, node.wg_if
    log = journal.path.with_name(f"{journal.name}.wg-{node.name}.log")
    pid = journal.spawn(f"wireguard-go {ns}/{dev}", ["wireguard-go", "-f", dev], netns=ns,
                        log=log, env={"LOG_LEVEL": "error"})
    socket = Path(made.WG_SOCKET_DIR) / f"{dev}.sock"
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        present = journal.shell.run(["ip", "-n", ns, "link", "show", "dev", dev], check=False)
        if present.returncode == 0 and socket.exists():
            break
        if not Path(f"/proc/{pid}").exists() or time.monotonic() > deadline:
            detail = " ".join(log.read_text(errors="replace").split())[-300:] \
                if log.exists() else ""
            raise EnvironmentProblem(f"wireguard-go did not make {dev} in {ns} within "
                                     f"{START_TIMEOUT_S:g} s: {detail or 'no output'}")
        time.sleep(0.02)
    journal.record(f"wireguard-go socket {socket}", made.wg_socket(dev))
    journal.record(f"wireguard device {ns}/{dev}", made.link(ns, dev))


def _configure(net: NetOps, cluster: ClusterPlan, node: NodePlan,
               keys: dict[str, tuple[str, str]]) -> None:
    ns, dev = node.netns, node.wg_if
    argv = ["wg", "set", dev, "private-key", "/dev/stdin", "listen-port", str(WIREGUARD_PORT)]
    for other in cluster.nodes:
        if other.name == node.name:
            continue
        allowed = [f"{other.wg_address}/32"]
        if cluster.options.overlay == "none":
            allowed.append(other.pod_subnet)
        argv += ["peer", keys[other.name][1], "endpoint",
                 f"{other.underlay_address}:{WIREGUARD_PORT}", "allowed-ips", ",".join(allowed)]
    # (the key goes on stdin, never on a command line; the configuration lives in the
    # device and goes away with it)
    net.journal.change(f"wg set {ns}/{dev}: {len(cluster.nodes) - 1} peer(s)", argv, None, ns,
                       input=keys[node.name][0] + "\n")
    net.ip(ns, ["link", "set", dev, "mtu", str(cluster.mtu["wireguard"])], undo=None)
    net.ip(ns, ["addr", "add", f"{node.wg_address}/24", "dev", dev],
           undo=made.address(ns, dev, f"{node.wg_address}/24"))
    net.ip(ns, ["link", "set", dev, "up"], undo=made.link_up(ns, dev))


def _handshake(net: NetOps, node: NodePlan, other: NodePlan) -> None:
    for _ in range(5):
        result = net.journal.shell.run(["ping", "-n", "-q", "-c", "1", "-W", "1",
                                        other.wg_address], node.netns, check=False)
        if result.returncode == 0:
            return
    raise EnvironmentProblem(f"no WireGuard handshake from {node.name} to {other.name} "
                             f"({other.wg_address}) in 5 tries")
