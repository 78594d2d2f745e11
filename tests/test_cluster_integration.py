"""The cluster topology with real Cyclone DDS traffic: which interfaces the bytes cross
for each deployment flow and each overlay / encryption / datapath, the MTUs, ciphertext
on the underlay with WireGuard, and nothing left after down, Ctrl-C or a SIGKILL.

Needs root. Assertions are on bytes, packets, interfaces, MTUs and delivery, never on
timing (the machine is shared). Runs are named with this process's pid.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cluster_traffic import cyclone_flow
from conftest import require_root, require_tool
from linklab.link import testbed as open_testbed
from linklab.link.journal import process_alive
from linklab.link.lifecycle import residue

pytestmark = pytest.mark.integration

PY = sys.executable
COUNT, SIZE = 200, 1024
PAYLOAD = COUNT * SIZE
VXLAN_BYTES = 50


@pytest.fixture(autouse=True)
def _needs(monkeypatch, tmp_path):
    require_root()
    for tool in ("ip", "tc", "nft", "nsenter", "unshare", "tcpdump", "wireguard-go", "wg",
                 "llvm-mc", "iptables-nft-restore"):
        require_tool(tool)
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))


def run_name(tag: str) -> str:
    return f"c{os.getpid()}{tag}"


def reliable_flow(bed, pub: str, sub: str, tmp: Path, **kw):
    flow = cyclone_flow(bed, pub, sub, tmp, size=SIZE, count=COUNT, rate=1000,
                        qos="reliable", **kw)
    assert flow.published == COUNT
    assert flow.received == COUNT, f"{pub} -> {sub}: {flow.received}/{COUNT} arrived"
    return flow


def namespaces_of(bed, host: str) -> dict[str, str]:
    out = bed.run(host, ["readlink", "/proc/self/ns/net", "/proc/self/ns/mnt",
                         "/proc/self/ns/ipc"], check=True).stdout.split()
    return dict(zip(("net", "mnt", "ipc"), out, strict=True))


def link_mtu(bed, netns: str, ifname: str) -> int:
    out = subprocess.run(["ip", "-n", netns, "-j", "link", "show", "dev", ifname],
                         capture_output=True, text=True, check=True).stdout
    return int(json.loads(out)[0]["mtu"])


def forwarded(bed, node: str) -> int:
    """Ip ForwDatagrams of a node: packets its IP stack forwarded."""
    lines = [line.split() for line in
             bed.run(node, ["cat", "/proc/net/snmp"], check=True).stdout.splitlines()
             if line.startswith("Ip:")]
    return int(dict(zip(lines[0][1:], lines[1][1:], strict=True))["ForwDatagrams"])


def count_forwarded(bed, node: str, match: str) -> None:
    """A test's own nft counter on a node's forward hook (no conntrack: a plain filter
    chain does not need it); gone with the run's namespace."""
    bed.run(node, ["nft", "-f", "-"], check=True, input=(
        "add table ip clustertest\n"
        "add chain ip clustertest passed { type filter hook forward priority 0 ; }\n"
        f"add rule ip clustertest passed {match} counter\n"))


def forwarded_count(bed, node: str) -> int:
    out = bed.run(node, ["nft", "-j", "list", "chain", "ip", "clustertest", "passed"],
                  check=True).stdout
    rules = [i["rule"] for i in json.loads(out)["nftables"] if "rule" in i]
    return int(next(e["counter"]["packets"] for e in rules[0]["expr"] if "counter" in e))


def tracked(bed, node: str, address: str) -> int:
    """Connections conntrack holds in a node for ``address``."""
    text = bed.run(node, ["cat", "/proc/net/nf_conntrack"]).stdout
    return sum(f"src={address} " in line for line in text.splitlines())


def settled(path: Path, quiet_s: float = 0.5, most_s: float = 15.0) -> None:
    """Wait until a capture file has stopped growing (tcpdump reads its ring buffer
    behind the traffic on a loaded machine; ending it early loses the tail)."""
    deadline = time.monotonic() + most_s
    size = -1
    while time.monotonic() < deadline:
        now = path.stat().st_size if path.exists() else 0
        if now == size:
            return
        size = now
        time.sleep(quiet_s)


def payload_pattern(n: int) -> bytes:
    """The probes' payload bytes (probes/common/probe.cpp fill_pattern: xorshift32)."""
    x, out = 2463534242, bytearray()
    for _ in range(n):
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        out.append(x & 0xFF)
    return bytes(out)


# --- the five flows ---------------------------------------------------------------------

def test_flows_cross_the_interfaces_of_their_path(tmp_path, monkeypatch):
    """bare-metal: underlay only; intra-container and intra-pod: nothing leaves the pod;
    intra-host: the two pods' veths, not the underlay; cross-host: the VXLAN device, and
    the underlay carries exactly its packets, each with VXLAN's 50 B and the outer
    Ethernet header (the vxlan device counts the inner IP packet)."""
    with open_testbed(None, topology="cluster", name=run_name("flows")) as bed:
        cluster = bed.plan.cluster
        robot = cluster.node("robot")
        under, vx = robot.underlay_if, robot.vxlan_if
        p1, p2 = (p.host_if for p in cluster.pods_of("robot"))
        e1 = cluster.pods_of("edge")[0].host_if
        # a container runs a command where its caller is: a relative path (bench --out
        # runs) names the same file inside and outside
        monkeypatch.chdir(tmp_path)
        inside = subprocess.run(bed.argv("robotpod1", ["pwd"]), capture_output=True,
                                text=True, check=True).stdout.strip()
        assert inside == str(tmp_path)
        flows = {}
        for flow_name, (pub, sub) in {
                "bare-metal": ("robot", "edge"),
                "intra-container": ("robotpod1", "robotpod1"),
                "intra-pod": ("robotpod1", "robotpod1c2"),
                "intra-host": ("robotpod1", "robotpod2"),
                "cross-host": ("robotpod1", "edgepod1")}.items():
            (tmp_path / flow_name).mkdir()
            flows[flow_name] = reliable_flow(bed, pub, sub, tmp_path / flow_name)

        f = flows["bare-metal"]
        assert f.delta("robot", under) >= PAYLOAD
        assert f.delta("robot", vx) == 0
        for pod in ("robotpod1", "robotpod2", "edgepod1"):
            assert f.delta(pod, "eth0") == 0, pod

        for name in ("intra-container", "intra-pod"):
            f = flows[name]
            for host, ifname in (("robotpod1", "eth0"), ("robot", p1), ("robot", under),
                                 ("robot", vx)):
                assert f.delta(host, ifname) == 0, (name, host, ifname)
                assert f.delta(host, ifname, "rx_bytes") == 0, (name, host, ifname)

        f = flows["intra-host"]
        assert f.delta("robotpod1", "eth0") >= PAYLOAD
        assert f.delta("robot", p2) >= PAYLOAD   # the node sends it into pod 2
        assert f.delta("robot", under) == 0 and f.delta("robot", vx) == 0

        f = flows["cross-host"]
        vx_bytes, vx_frames = f.delta("robot", vx), f.delta("robot", vx, "tx_packets")
        assert vx_bytes >= PAYLOAD
        assert f.delta("robot", under) == vx_bytes + (VXLAN_BYTES + 14) * vx_frames
        assert f.delta("edge", e1) >= PAYLOAD
        assert f.delta("robotpod2", "eth0") == 0

        # a container: one process environment; a pod's two containers share the
        # network namespace only (own /dev/shm: shared memory cannot meet)
        c1, c1_again = namespaces_of(bed, "robotpod1"), namespaces_of(bed, "robotpod1")
        c2, other_pod = namespaces_of(bed, "robotpod1c2"), namespaces_of(bed, "robotpod2")
        assert c1 == c1_again
        assert c2["net"] == c1["net"]
        assert c2["mnt"] != c1["mnt"] and c2["ipc"] != c1["ipc"]
        assert other_pod["net"] != c1["net"]
        marker = f"/dev/shm/linklab-{os.getpid()}"
        bed.run("robotpod1", ["touch", marker], check=True)
        assert bed.run("robotpod1", ["test", "-e", marker]).returncode == 0
        assert bed.run("robotpod1c2", ["test", "-e", marker]).returncode != 0
        assert not Path(marker).exists()   # nor on the machine itself


# --- overlay x encryption x datapath ----------------------------------------------------

VARIANTS = [("vxlan", "none", "iptables"), ("none", "none", "iptables"),
            ("vxlan", "wireguard", "iptables"), ("none", "wireguard", "iptables"),
            ("vxlan", "none", "ebpf"), ("none", "none", "ebpf"),
            ("vxlan", "wireguard", "ebpf")]
POD_MTU = {("vxlan", "none"): 1450, ("none", "none"): 1500}   # WireGuard: 1380


@pytest.mark.parametrize(("overlay", "encryption", "datapath"), VARIANTS)
def test_variant_paths_mtus_ciphertext_and_datapath(overlay, encryption, datapath, tmp_path):
    name = run_name(f"{overlay[0]}{encryption[0]}{datapath[0]}")
    with open_testbed(None, topology="cluster", name=name, overlay=overlay,
                      encryption=encryption, datapath=datapath) as bed:
        cluster = bed.plan.cluster
        robot = cluster.node("robot")
        pod_mtu = POD_MTU.get((overlay, encryption), 1380)

        # MTUs as set, and as the pods' packets meet them (DF pings across the nodes)
        assert cluster.mtu["pod"] == pod_mtu
        for pod in cluster.pods:
            assert link_mtu(bed, pod.netns, "eth0") == pod_mtu
            assert link_mtu(bed, cluster.node(pod.node).netns, pod.host_if) == pod_mtu
        if overlay == "vxlan":
            assert link_mtu(bed, robot.netns, robot.vxlan_if) == (1450 if encryption == "none"
                                                                  else 1390)
        if encryption == "wireguard":
            assert link_mtu(bed, robot.netns, robot.wg_if) == 1440
        edge_pod = bed.hosts["edgepod1"].address
        fits = bed.run("robotpod1", ["ping", "-c", "1", "-W", "2", "-M", "do", "-s",
                                     str(pod_mtu - 28), edge_pod])
        assert fits.returncode == 0, fits.stdout + fits.stderr
        too_big = bed.run("robotpod1", ["ping", "-c", "1", "-W", "2", "-M", "do", "-s",
                                        str(pod_mtu - 27), edge_pod])
        assert too_big.returncode != 0 and "message too long" in too_big.stdout + too_big.stderr

        # cross-host Cyclone DDS traffic, captured on the robot node's underlay port
        capture = tmp_path / "underlay.pcap"
        count_forwarded(bed, "robot", f"ip saddr {bed.hosts['robotpod1'].address}")
        count_forwarded(bed, "edge", f"ip daddr {bed.hosts['edgepod1'].address}")
        tcpdump = bed.popen("robot", ["tcpdump", "-i", robot.underlay_if, "-w", str(capture),
                                      "-U", "-Z", "root", "-s", "0", "-n"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert "listening" in tcpdump.stderr.readline()
        flow = reliable_flow(bed, "robotpod1", "edgepod1", tmp_path)
        settled(capture)   # tcpdump has written what it saw
        tcpdump.terminate()
        tcpdump.wait(timeout=10)

        links = bed.counters()["interfaces"]["robot"]
        assert (robot.vxlan_if in links) == (overlay == "vxlan")
        assert (robot.wg_if in links) == (encryption == "wireguard")
        if overlay == "vxlan":
            assert flow.delta("robot", robot.vxlan_if) >= PAYLOAD
        if encryption == "wireguard":
            assert flow.delta("robot", robot.wg_if) >= PAYLOAD
        assert flow.delta("robot", robot.underlay_if) >= PAYLOAD

        # ciphertext: the payload's bytes are in a capture of the underlay exactly when
        # the nodes do not encrypt
        pattern = payload_pattern(SIZE)[400:432]
        data = capture.read_bytes()
        assert len(data) > PAYLOAD
        assert (pattern in data) == (encryption == "none")

        # datapath: kube-proxy's rules track every pod flow and the nodes' IP stacks
        # forward its packets; eBPF redirects them past the stack, untracked -- except,
        # without an overlay, at the receiving node: what arrives on the underlay port
        # (whose ingress carries the link's own stages) is routed by its stack
        pod_address = bed.hosts["robotpod1"].address
        moved = {n: forwarded_count(bed, n) for n in ("robot", "edge")}
        if datapath == "iptables":
            assert tracked(bed, "robot", pod_address) >= 1
            assert moved["robot"] >= COUNT and moved["edge"] >= COUNT
        else:
            assert tracked(bed, "robot", pod_address) == 0
            assert moved["robot"] == 0
            if overlay == "vxlan":
                assert moved["edge"] == 0
            else:
                assert moved["edge"] >= COUNT
            filters = bed.run("robot", ["tc", "filter", "show", "dev",
                                        cluster.pods_of("robot")[0].host_if, "ingress"]).stdout
            assert "linklab_redir" in filters and "direct-action" in filters


def test_ebpf_redirects_intra_host_traffic_past_the_node_stack(tmp_path):
    with open_testbed(None, topology="cluster", name=run_name("ebih"),
                      datapath="ebpf") as bed:
        before = forwarded(bed, "robot")
        flow = reliable_flow(bed, "robotpod1", "robotpod2", tmp_path)
        assert flow.delta("robot", bed.plan.cluster.pods_of("robot")[1].host_if) >= PAYLOAD
        assert forwarded(bed, "robot") == before
        assert tracked(bed, "robot", bed.hosts["robotpod1"].address) == 0


# --- nothing left -----------------------------------------------------------------------

def root_view() -> str:
    """The machine's own namespace: links, routes, nft, qdiscs, iptables rules."""
    commands = (["ip", "-d", "link", "show"], ["ip", "route", "show", "table", "all"],
                ["nft", "list", "ruleset"], ["tc", "qdisc", "show"], ["iptables-nft-save"])
    return "\n".join(subprocess.run(argv, capture_output=True, text=True, check=True).stdout
                     for argv in commands)


def traces(view: str, tag: str) -> list[str]:
    """Lines of the root namespace that name this run (its tag) or its cluster's
    addresses. (Other engineers change the root namespace while the tests run, so
    the check is on what this run could have made, not on a byte-for-byte copy.)"""
    return [line for line in view.splitlines()
            if tag in line or "10.244." in line or "10.78.0." in line]


def run_processes(state: dict) -> list[tuple[int, str]]:
    return [(s["pid"], s["start"]) for s in state["steps"] if s["kind"] == "process"]


def leftovers(name: str, tag: str, processes: list[tuple[int, str]]) -> list[str]:
    left = [f"namespace {ns}" for ns in residue(name)]
    left += [f"socket {p}" for p in Path("/run/wireguard").glob(f"{tag}-*")]
    left += [f"process {pid}" for pid, start in processes if process_alive(pid, start)]
    return left


def cluster_state(name: str) -> dict:
    path = Path(os.environ["LINKLAB_STATE_DIR"]) / f"{name}.json"
    return json.loads(path.read_text())


HOLD = """
import sys, time
from linklab.link import testbed
with testbed(None, topology="cluster", name=sys.argv[1], encryption="wireguard",
             datapath="ebpf") as bed:
    print(bed.plan.tag, flush=True)
    time.sleep(600)
"""


@pytest.mark.parametrize("how", ["down", "sigint", "sigkill"])
def test_nothing_is_left_after_down_ctrl_c_or_kill(how, tmp_path):
    name = run_name(f"end{how[-3:]}")
    before = root_view()
    if how == "down":
        up = subprocess.run([PY, "-m", "linklab.cli", "link", "up", "--topology", "cluster",
                             "--encryption", "wireguard", "--datapath", "ebpf", "--name", name,
                             "--json"], capture_output=True, text=True, timeout=120)
        assert up.returncode == 0, up.stderr
        state = cluster_state(name)
        tag = json.loads(up.stdout)["links"][0]["robot_side"].split("/")[1].split("-")[0]
    else:
        holder = subprocess.Popen([PY, "-c", HOLD, name], stdout=subprocess.PIPE, text=True)
        tag = holder.stdout.readline().strip()
        assert tag, "the testbed did not come up"
        state = cluster_state(name)
    processes = run_processes(state)
    assert len(processes) == 2 + 8   # two wireguard-go, eight container holders
    assert all(process_alive(pid, start) for pid, start in processes)
    assert len(list(Path("/run/wireguard").glob(f"{tag}-*"))) == 2
    if how == "down":
        result = subprocess.run([PY, "-m", "linklab.cli", "link", "down", "--name", name],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
    elif how == "sigint":
        holder.send_signal(signal.SIGINT)
        holder.wait(timeout=60)
    else:
        holder.kill()
        holder.wait(timeout=30)
        # killed: everything is still there until clean
        assert residue(name) and any(process_alive(p, s) for p, s in processes)
        result = subprocess.run([PY, "-m", "linklab.cli", "link", "clean", "--name", name],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
    deadline = time.monotonic() + 10
    while leftovers(name, tag, processes) and time.monotonic() < deadline:
        time.sleep(0.1)   # (a holder ending after SIGINT finishes its own teardown)
    assert leftovers(name, tag, processes) == []
    assert not (Path(os.environ["LINKLAB_STATE_DIR"]) / f"{name}.json").exists()
    assert traces(root_view(), tag) == traces(before, tag) == []
