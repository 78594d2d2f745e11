"""Building a cluster (topology ``cluster``, plan in ``cluster_plan.py``) on its nodes.

``lifecycle._build`` makes the namespaces of nodes and pods and the underlay link with
its stages, as for any topology; then ``build_cluster`` adds, through the journal:

1. the pods' veths, addresses and routes (Calico's wiring: pod /32, gateway
   169.254.1.1 on the node-side veth, a /32 route per pod on the node), pod MTU;
2. WireGuard between the nodes (``wireguard.py``), if asked;
3. the overlay or direct routes (``overlay.py``);
4. the datapath: kube-proxy's iptables rules or the eBPF programs (``datapath.py``);
5. the containers: two per pod, each a holder process (``sleep``) with the pod's network
   namespace and a mount and IPC namespace of its own (its own /dev/shm tmpfs and /sys
   of the pod). ``Testbed.argv`` runs a command in a container with
   ``nsenter --target HOLDER --net --mount --ipc``; the holders are journaled helper
   processes and their pids are kept in the run's state (``cluster.containers``).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from linklab.errors import EnvironmentProblem, LinklabError, PrivilegeError
from linklab.link import datapath, made, overlay, wireguard
from linklab.link.cluster_plan import POD_GATEWAY, ClusterPlan, PodPlan
from linklab.link.journal import process_alive
from linklab.link.netops import NetOps

# A container: its own mount and IPC namespaces (so its own /dev/shm), the pod's network.
CONTAINER_SETUP = ("umount -l /sys && mount -t sysfs sysfs /sys && "
                   "mount -t tmpfs -o mode=1777,nosuid,nodev shm /dev/shm && "
                   "exec sleep infinity")
HOLDER_TIMEOUT_S = 10.0


def tools(cluster: ClusterPlan) -> list[str]:
    """The programs this cluster needs beyond linklab's usual ones."""
    needed = ["bridge", "unshare", "ping"]
    if cluster.options.datapath == "iptables":
        needed.append("iptables-nft-restore")
    else:
        needed.append("llvm-mc")
    if cluster.options.encryption == "wireguard":
        needed += ["wireguard-go", "wg"]
    return needed


def check_ready(cluster: ClusterPlan | None, is_root: bool) -> None:
    """Refuse before anything is built: a cluster needs root and its tools."""
    if cluster is None:
        return
    if not is_root:
        raise PrivilegeError(
            "the cluster topology needs root: wireguard-go's UAPI socket lives in "
            "/run/wireguard and tc bpf programs need CAP_BPF in the initial user "
            "namespace, which an unprivileged user namespace does not give")
    missing = [t for t in tools(cluster) if shutil.which(t) is None]
    if missing:
        raise EnvironmentProblem(
            f"{', '.join(missing)} not found on PATH: run scripts/setup.sh (Debian packages "
            "iproute2, util-linux, iputils-ping, iptables, llvm, wireguard-go, "
            "wireguard-tools)")


def build_cluster(bed: Any, net: NetOps) -> None:
    """Everything a cluster has beyond its nodes and underlay (nothing for other
    topologies)."""
    cluster: ClusterPlan | None = bed.plan.cluster
    if cluster is None:
        return
    for node in cluster.nodes:
        net.sysctl(node.netns, "net.ipv4.ip_forward", "1")
    for pod in cluster.pods:
        _pod(net, cluster, pod)
    if cluster.options.encryption == "wireguard":
        wireguard.build(net, cluster)
    overlay.build(net, cluster)
    datapath.build(net, cluster)
    holders: dict[str, dict[str, Any]] = {}
    for name, (pod, _) in cluster.containers().items():
        holders[name] = _container(net, name, pod)
    net.journal.update(cluster={"containers": holders})


def _pod(net: NetOps, cluster: ClusterPlan, pod: PodPlan) -> None:
    node = cluster.node(pod.node)
    ns, host_if = node.netns, pod.host_if
    net.ip(ns, ["link", "add", host_if, "type", "veth", "peer", "name", pod.pod_if,
                "netns", pod.netns], undo=made.link(ns, host_if),
           what=f"pod veth {ns}/{host_if} <-> {pod.netns}/{pod.pod_if}")
    for netns, ifname in ((ns, host_if), (pod.netns, pod.pod_if)):
        net.ip(netns, ["link", "set", ifname, "mtu", str(cluster.mtu["pod"])], undo=None)
        net.offloads_off(netns, ifname)
    gateway = f"{POD_GATEWAY}/32"
    net.ip(ns, ["addr", "add", gateway, "dev", host_if], undo=made.address(ns, host_if, gateway))
    address = f"{pod.address}/32"
    net.ip(pod.netns, ["addr", "add", address, "dev", pod.pod_if],
           undo=made.address(pod.netns, pod.pod_if, address))
    net.ip(ns, ["link", "set", host_if, "up"], undo=made.link_up(ns, host_if))
    net.ip(pod.netns, ["link", "set", pod.pod_if, "up"], undo=made.link_up(pod.netns, pod.pod_if))
    net.ip(ns, ["route", "add", address, "dev", host_if],
           undo=made.route(ns, address, None, host_if))
    net.ip(pod.netns, ["route", "add", gateway, "dev", pod.pod_if],
           undo=made.route(pod.netns, gateway, None, pod.pod_if))
    net.ip(pod.netns, ["route", "add", "default", "via", POD_GATEWAY, "dev", pod.pod_if],
           undo=made.route(pod.netns, "default", POD_GATEWAY, pod.pod_if))


def _container(net: NetOps, name: str, pod: PodPlan) -> dict[str, Any]:
    journal = net.journal
    log = journal.path.with_name(f"{journal.name}.container-{name}.log")
    pid = journal.spawn(f"container {name} (pod {pod.name})",
                        ["unshare", "--mount", "--ipc", "--propagation", "private", "--",
                         "sh", "-c", CONTAINER_SETUP], netns=pod.netns, log=log)
    deadline = time.monotonic() + HOLDER_TIMEOUT_S
    while True:
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            comm = None
        if comm == "sleep":
            break
        if comm is None or time.monotonic() > deadline:
            detail = " ".join(log.read_text(errors="replace").split())[-300:] \
                if log.exists() else ""
            raise EnvironmentProblem(f"container {name} did not start: "
                                     f"{detail or 'no output'}")
        time.sleep(0.01)
    start = next(s["start"] for s in reversed(journal.steps)
                 if s["kind"] == "process" and s["pid"] == pid)
    return {"pid": pid, "start": start, "pod": pod.name}


def container_argv(bed: Any, host: str, argv: list[str]) -> list[str] | None:
    """The command line that runs ``argv`` in container ``host``, or None if ``host``
    is not a container (a node: the usual ``ip netns exec``)."""
    cluster: ClusterPlan | None = bed.plan.cluster
    if cluster is None or host not in cluster.containers():
        return None
    holders = (bed.journal.state.get("cluster") or {}).get("containers") or {}
    holder = holders.get(host)
    if not isinstance(holder, dict) or type(holder.get("pid")) is not int \
            or not isinstance(holder.get("start"), str) \
            or not process_alive(holder["pid"], holder["start"]):
        raise LinklabError(f"container {host} of run {bed.name!r} is not running (its holder "
                           f"process is gone); take the run down: linklab link down "
                           f"--name {bed.name}")
    # entering a mount namespace moves to its root: keep the caller's working directory
    # (the container's mounts are a copy of the node's), so relative paths (a bench's
    # --out runs) name the same files inside as outside
    return [*bed.shell.prefix, "nsenter", f"--target={holder['pid']}", "--net", "--mount",
            "--ipc", f"--wd={os.getcwd()}", "--", *argv]


def endpoint_hosts(cluster: ClusterPlan | None) -> list[tuple[str, str, str, str]]:
    """(name, netns, address, interface) of every pod and container (none outside a
    cluster)."""
    if cluster is None:
        return []
    return [(name, pod.netns, pod.address, pod.pod_if)
            for name, (pod, _) in cluster.containers().items()]

