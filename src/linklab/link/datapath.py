"""The cluster's datapath on each node: kube-proxy's iptables rules, or eBPF programs.

001 §V-B, Fig. 7 compares Calico's "traditional iptables-based routing" with its eBPF
datapath, which "bypasses the costly iptables/conntrack rule chain".

* ``iptables``: the rule set kube-proxy (iptables mode) installs on a node, for a small
  cluster's services (``SERVICES``: the API server, DNS, metrics, an ingress): nat
  PREROUTING/OUTPUT -> KUBE-SERVICES -> KUBE-SVC-* -> KUBE-SEP-* (DNAT), POSTROUTING ->
  KUBE-POSTROUTING (MASQUERADE of marked packets), filter INPUT/FORWARD/OUTPUT with
  KUBE-FORWARD's conntrack state matches and KUBE-FIREWALL. With these rules every
  packet a node forwards or sends is tracked by conntrack (fragmented datagrams are
  reassembled for it and fragmented again). Loaded with ``iptables-nft-restore`` (the
  nf_tables backend, Debian 12's and current kube-proxy's default): the rules live in
  the node's nft tables ``ip nat`` and ``ip filter``, journaled as nft tables.
* ``ebpf``: no iptables rule at all (so no conntrack); a tc program (``ebpf.py``) on the
  ingress of every pod's node-side veth and of the vxlan device redirects packets for
  the node's pods and for the other nodes' pod subnets straight to the device they
  leave by. Journaled as the clsact qdisc that holds it. Packets arriving on the
  underlay without an overlay are routed by the node's stack (the underlay port's
  ingress carries the link's own stages).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
from pathlib import Path

from linklab.errors import EnvironmentProblem
from linklab.link import made
from linklab.link.cluster_plan import ClusterPlan, NodePlan
from linklab.link.ebpf import SECTION, redirect_program
from linklab.link.netops import NetOps

POD_CIDR = "10.244.0.0/16"
SERVICE_PREFIX = "10.96.0."
MASQ_MARK = "0x4000/0x4000"
# (namespace/name, port name, protocol, port): a small cluster's services, as k3s has
SERVICES = (
    ("default/kubernetes", "https", "tcp", 443),
    ("kube-system/kube-dns", "dns", "udp", 53),
    ("kube-system/kube-dns", "dns-tcp", "tcp", 53),
    ("kube-system/kube-dns", "metrics", "tcp", 9153),
    ("kube-system/metrics-server", "https", "tcp", 443),
    ("kube-system/traefik", "web", "tcp", 80),
    ("kube-system/traefik", "websecure", "tcp", 443),
    ("kube-system/calico-typha", "calico-typha", "tcp", 5473),
)


def build(net: NetOps, cluster: ClusterPlan) -> None:
    for node in cluster.nodes:
        if cluster.options.datapath == "iptables":
            _iptables(net, cluster, node)
        else:
            _ebpf(net, cluster, node)


# --- iptables -----------------------------------------------------------------------

def _chain(kind: str, *parts: str) -> str:
    """kube-proxy's chain names: KUBE-SVC-/KUBE-SEP- and 16 characters of a hash."""
    digest = hashlib.sha256("/".join(parts).encode()).hexdigest().upper()[:16]
    return f"KUBE-{kind}-{digest}"


def kube_proxy_rules(cluster: ClusterPlan) -> tuple[str, str]:
    """(nat table, filter table) in iptables-restore format, the same on every node."""
    endpoints = [pod.address for pod in cluster.pods]
    nat = ["*nat", ":PREROUTING ACCEPT [0:0]", ":INPUT ACCEPT [0:0]", ":OUTPUT ACCEPT [0:0]",
           ":POSTROUTING ACCEPT [0:0]", ":KUBE-SERVICES - [0:0]", ":KUBE-POSTROUTING - [0:0]",
           ":KUBE-MARK-MASQ - [0:0]", ":KUBE-NODEPORTS - [0:0]"]
    body = [
        '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" '
        '-j KUBE-POSTROUTING',
        f"-A KUBE-MARK-MASQ -j MARK --set-xmark {MASQ_MARK}",
        f"-A KUBE-POSTROUTING -m mark ! --mark {MASQ_MARK} -j RETURN",
        "-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0",
        '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring '
        'SNAT" -j MASQUERADE --random-fully',
    ]
    for i, (service, port_name, proto, port) in enumerate(SERVICES):
        ip = f"{SERVICE_PREFIX}{10 + i}"
        endpoint = endpoints[i % len(endpoints)]
        svc, sep = _chain("SVC", service, port_name), _chain("SEP", service, port_name, endpoint)
        nat += [f":{svc} - [0:0]", f":{sep} - [0:0]"]
        body += [
            f'-A KUBE-SERVICES -d {ip}/32 -p {proto} -m comment --comment '
            f'"{service}:{port_name} cluster IP" -m {proto} --dport {port} -j {svc}',
            f"-A {svc} ! -s {POD_CIDR} -d {ip}/32 -p {proto} -m {proto} --dport {port} "
            f"-j KUBE-MARK-MASQ",
            f"-A {svc} -j {sep}",
            f"-A {sep} -s {endpoint}/32 -j KUBE-MARK-MASQ",
            f"-A {sep} -p {proto} -m {proto} -j DNAT --to-destination {endpoint}:{port}",
        ]
    body.append('-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; '
                'NOTE: this must be the last rule in this chain" -m addrtype --dst-type '
                'LOCAL -j KUBE-NODEPORTS')
    new = "-m conntrack --ctstate NEW"
    filter_ = [
        "*filter", ":INPUT ACCEPT [0:0]", ":FORWARD ACCEPT [0:0]", ":OUTPUT ACCEPT [0:0]",
        ":KUBE-FORWARD - [0:0]", ":KUBE-SERVICES - [0:0]", ":KUBE-EXTERNAL-SERVICES - [0:0]",
        ":KUBE-NODEPORTS - [0:0]", ":KUBE-PROXY-FIREWALL - [0:0]", ":KUBE-FIREWALL - [0:0]",
        f'-A INPUT {new} -m comment --comment "kubernetes load balancer firewall" '
        "-j KUBE-PROXY-FIREWALL",
        '-A INPUT -m comment --comment "kubernetes health check service ports" '
        "-j KUBE-NODEPORTS",
        f'-A INPUT {new} -m comment --comment "kubernetes externally-visible service '
        'portals" -j KUBE-EXTERNAL-SERVICES',
        "-A INPUT -j KUBE-FIREWALL",
        f'-A FORWARD {new} -m comment --comment "kubernetes load balancer firewall" '
        "-j KUBE-PROXY-FIREWALL",
        '-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD',
        f'-A FORWARD {new} -m comment --comment "kubernetes service portals" '
        "-j KUBE-SERVICES",
        f'-A FORWARD {new} -m comment --comment "kubernetes externally-visible service '
        'portals" -j KUBE-EXTERNAL-SERVICES',
        f'-A OUTPUT {new} -m comment --comment "kubernetes load balancer firewall" '
        "-j KUBE-PROXY-FIREWALL",
        f'-A OUTPUT {new} -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        "-A OUTPUT -j KUBE-FIREWALL",
        '-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block '
        'incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT '
        "-j DROP",
        "-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP",
        f'-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark '
        f"{MASQ_MARK} -j ACCEPT",
        '-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" '
        "-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
        "COMMIT", ""]
    return "\n".join(nat + body + ["COMMIT", ""]), "\n".join(filter_)


def _iptables(net: NetOps, cluster: ClusterPlan, node: NodePlan) -> None:
    nat, filter_ = kube_proxy_rules(cluster)
    for table, text in (("nat", nat), ("filter", filter_)):
        # iptables-nft-restore makes the nft table "ip <table>" in the node's namespace
        # (a fresh one: nothing else is in it), and deleting that table undoes it all
        net.journal.change(f"kube-proxy iptables rules {node.netns} ({table})",
                           ["iptables-nft-restore"], made.nft_table(node.netns, "ip", table),
                           node.netns, input=text)


# --- eBPF ----------------------------------------------------------------------------

def _ifindex(net: NetOps, netns: str, ifname: str) -> int:
    out = net.journal.shell.run(["ip", "-n", netns, "-j", "link", "show", "dev", ifname])
    return int(json.loads(out.stdout)[0]["ifindex"])


def redirect_table(net: NetOps, cluster: ClusterPlan, node: NodePlan) -> list[tuple[str, int]]:
    """(destination, ifindex) for this node's program: its pods, the other nodes' pod
    subnets (through the overlay device, or the underlay port without one)."""
    table = [(f"{pod.address}/32", _ifindex(net, node.netns, pod.host_if))
             for pod in cluster.pods_of(node.name)]
    out_dev = node.vxlan_if if cluster.options.overlay == "vxlan" else node.underlay_if
    out_index = _ifindex(net, node.netns, out_dev)
    table += [(other.pod_subnet, out_index) for other in cluster.nodes
              if other.name != node.name]
    return table


def assemble(source: str, directory: Path) -> Path:
    """BPF assembly -> ELF object (llvm-mc), in ``directory``."""
    src, obj = directory / "redirect.s", directory / "redirect.o"
    src.write_text(source)
    result = subprocess.run(["llvm-mc", "-triple", "bpf", "-filetype=obj", str(src), "-o",
                             str(obj)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        first = (result.stderr.strip().splitlines() or ["no output"])[0]
        raise EnvironmentProblem(f"llvm-mc could not assemble the eBPF datapath: {first}")
    return obj


def _ebpf(net: NetOps, cluster: ClusterPlan, node: NodePlan) -> None:
    program = redirect_program(redirect_table(net, cluster, node))
    devices = [pod.host_if for pod in cluster.pods_of(node.name)]
    if cluster.options.overlay == "vxlan":
        devices.append(node.vxlan_if)
    with tempfile.TemporaryDirectory(prefix="linklab-bpf-") as tmp:
        obj = assemble(program, Path(tmp))
        for dev in devices:
            net.tc(node.netns, ["qdisc", "add", "dev", dev, "clsact"],
                   undo=made.qdisc(node.netns, dev, "clsact"))
            # (the program is loaded into the kernel and held by the filter, which goes
            # away with the clsact qdisc; the object file is not needed afterwards)
            net.tc(node.netns, ["filter", "add", "dev", dev, "ingress", "bpf", "da", "obj",
                                str(obj), "sec", SECTION], undo=None)
