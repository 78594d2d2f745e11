"""What will not work on a cluster, said before a run (``linklab k8s preflight``).

Checks the cluster can be reached and which version it runs, that each cell's
placement has nodes (roles, several nodes for cross-host), and warns about what
Kubernetes networks commonly break for ROS 2 traffic:

- DDS multicast discovery across pods: most CNIs drop multicast. linklab's probes get
  unicast peers (the tuner writes them too); a ROS 2 system of yours needs
  ROS_STATIC_PEERS, initial peers or a discovery server there.
- shared-memory transports between pods: Fast DDS's SHM and Cyclone's iceoryx work
  within a pod only (containers of a pod share its IPC namespace); intra-host and
  cross-host cells measure UDP.
- MTU: with ``--pod-check`` one pod runs the probe image and reports its interface MTU
  (which also proves the image can be pulled and started); a link MTU above it means
  the profile assumes larger frames than the pod network carries (tunnels: VXLAN -50,
  WireGuard -80 bytes).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from linklab.bench.links import LinkChoice
from linklab.bench.matrix import Cell
from linklab.k8s import manifests as M
from linklab.k8s import placement as PL
from linklab.k8s import reasons as R
from linklab.k8s.cluster import Cluster, ClusterError
from linklab.k8s.cluster_bed import K8sOptions, check_cell
from linklab.k8s.podrun import BundleError, read_bundle
from linklab.middleware import family_of


@dataclass
class Preflight:
    lines: list[str] = field(default_factory=list)     # facts
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _ready(node: dict[str, Any]) -> bool:
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def _matches(node: dict[str, Any], selector: dict[str, str]) -> bool:
    labels = (node.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def check(cluster: Cluster, cells: list[Cell], options: K8sOptions, links,
          pod_check: bool = False) -> Preflight:
    out = Preflight()
    version = cluster.version()
    out.lines.append(f"cluster {cluster.server} (context {cluster.context or '-'}), "
                     f"Kubernetes {version['git_version']}, namespace {cluster.namespace}")
    nodes = [n for n in cluster.nodes() if _ready(n)]
    out.lines.append(f"{len(nodes)} ready, schedulable nodes")
    seen: set[str] = set()
    for cell in cells:
        placement = check_cell(cell, links, options)
        for pod in placement.pods:
            fit = [n for n in nodes if _matches(n, pod.node_selector)]
            if not fit:
                want = ", ".join(f"{k}={v}" for k, v in pod.node_selector.items())
                out.errors.append(f"cell {cell.cell_id}: no ready node has {want} for the "
                                  f"{pod.key} pod (label nodes: kubectl label node NODE {want})")
        if placement.flow == "cross-host":
            fit = [n for n in nodes if _matches(n, options.node_selector)]
            if len(fit) < len(placement.pods):
                out.errors.append(f"cell {cell.cell_id}: cross-host needs {len(placement.pods)}"
                                  f" nodes, {len(fit)} ready node(s) match")
        dds = family_of(cell.middleware).dds
        if dds and "multicast" not in seen and \
                len(placement.pods) > 1:
            seen.add("multicast")
            out.warnings.append("DDS discovery across pods: most CNIs drop multicast; "
                                "linklab's probes use unicast peers. ROS 2 nodes of your own "
                                "need ROS_STATIC_PEERS / initial peers or a discovery server")
        if dds and placement.flow in ("intra-host", "cross-host") \
                and "shm" not in seen:
            seen.add("shm")
            out.warnings.append("shared memory between pods: Fast DDS SHM / Cyclone iceoryx "
                                "work within one pod only; intra-host and cross-host cells "
                                "measure UDP between pod network namespaces")
        spec = links.spec(cell.link_choice or LinkChoice(cell.link))
        if spec.up.rate_bps and f"rate:{cell.link}" not in seen:
            seen.add(f"rate:{cell.link}")
            out.lines.append(f"link {cell.link}: its rate ({spec.up.rate_bps / 1e6:g} Mbit/s) "
                             "describes the cluster network to the tuner and the model; "
                             "linklab k8s does not shape it")
    if pod_check:
        mtu = pod_mtu(cluster, options)
        if mtu is None:
            out.warnings.append("MTU: the check pod reported no interface")
        else:
            out.lines.append(f"pod network MTU {mtu} (from a pod of {options.image})")
            for cell in cells:
                spec = links.spec(cell.link_choice or LinkChoice(cell.link))
                key = f"mtu:{cell.link}"
                if spec.mtu > mtu and key not in seen:
                    seen.add(key)
                    out.warnings.append(f"link {cell.link} assumes MTU {spec.mtu}; pods here "
                                        f"carry {mtu}: profiles tuned for {spec.mtu} fragment")
    return out


def pod_mtu(cluster: Cluster, options: K8sOptions, timeout_s: float = 180.0) -> int | None:
    """Run one pod of the probe image with no probe; its bundle reports the MTU."""
    plan = PL.PodPlan("preflight", (), 0, True, dict(options.node_selector))
    from linklab.k8s.procs import ContainerSpec

    spec = ContainerSpec("check", (), {"version": 1, "container": "check", "deadline_s": 5,
                                        "records_dir": "/records", "processes": []})
    cm = M.configmap(options.run_id, 0, "preflight", {})
    pod = M.pod(options.run_id, 0, "preflight", None, plan, [spec], image=options.image,
                pull_policy=options.pull_policy, deadline_s=30, pull_secret=options.pull_secret)
    name = pod["metadata"]["name"]
    try:
        cluster.create(cm)
        cluster.create(pod)
        end = time.monotonic() + timeout_s
        while True:
            found = [p for p in cluster.pods(M.run_selector(options.run_id))
                     if p["metadata"]["name"] == name]
            if not found:
                raise ClusterError(f"pod {name} is gone")
            reason = R.stuck(found[0])
            if reason:
                raise ClusterError(reason)
            if R.ended(found[0]):
                break
            if time.monotonic() > end:
                raise ClusterError(f"pod {name} did not end within {timeout_s:g} s")
            time.sleep(0.5)
        try:
            files = read_bundle(cluster.log(name, "check"))
        except BundleError as error:
            raise ClusterError(f"pod {name}: {error}") from None
        import json

        info = json.loads(files.get("pod-check.json", b"{}"))
        mtus = [s.get("mtu") for n, s in ((info.get("before") or {}).get("interfaces")
                                          or {}).items() if n != "lo" and s.get("mtu")]
        return min(mtus) if mtus else None
    finally:
        cluster.delete_labelled(M.run_selector(options.run_id), wait_s=60)
