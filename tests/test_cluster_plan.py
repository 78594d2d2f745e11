"""The cluster topology as a plan, the flow setting in scenarios, and the records the
cluster journals -- pure, no root needed (llvm-mc assembles the eBPF program)."""

from __future__ import annotations

import subprocess
import textwrap

import pytest

from conftest import require_tool
from linklab.bench.matrix import expand
from linklab.bench.namespace_environment import LinklabEnvironment
from linklab.bench.spec import parse_scenario
from linklab.bench.topics import flow_hosts
from linklab.errors import UsageError
from linklab.link import made
from linklab.link.blueprint import design
from linklab.link.cluster_plan import ClusterOptions, endpoint_names, wire_path
from linklab.link.datapath import assemble, kube_proxy_rules
from linklab.link.ebpf import redirect_program
from linklab.link.names import parse_netns_name
from linklab.model.overhead import WirePath

# --- the plan ------------------------------------------------------------------------------


def test_a_cluster_is_two_nodes_on_a_1gbit_underlay_with_two_pods_each():
    planned = design(None, topology="cluster", name="p1")
    cluster = planned.plan.cluster
    assert [n.name for n in cluster.nodes] == ["robot", "edge"]
    assert [(p.name, p.node, p.address) for p in cluster.pods] == [
        ("robotpod1", "robot", "10.244.1.11"), ("robotpod2", "robot", "10.244.1.12"),
        ("edgepod1", "edge", "10.244.100.11"), ("edgepod2", "edge", "10.244.100.12")]
    assert cluster.options == ClusterOptions("vxlan", "none", "iptables", 2, 2)
    assert planned.spec.up.rate_bps == planned.spec.down.rate_bps == 1e9
    assert cluster.mtu == {"underlay": 1500, "pod": 1450, "vxlan": 1450}
    assert [link.name for link in planned.plan.links] == ["robot-edge"]
    # the pods are namespaces of the run, recognised by clean's sweep
    assert parse_netns_name("linklab-p1-robotpod2") == ("p1", "robotpod2")
    assert set(planned.plan.cluster.containers()) == {
        "robotpod1", "robotpod1c2", "robotpod2", "robotpod2c2",
        "edgepod1", "edgepod1c2", "edgepod2", "edgepod2c2"}


@pytest.mark.parametrize(("fields", "mtus"), [
    ({"overlay": "none"}, {"underlay": 1500, "pod": 1500}),
    ({"encryption": "wireguard"}, {"underlay": 1500, "pod": 1380, "wireguard": 1440,
                                   "vxlan": 1390}),
    ({"overlay": "none", "encryption": "wireguard"}, {"underlay": 1500, "pod": 1380,
                                                      "wireguard": 1440}),
    ({"mtu": 9000}, {"underlay": 9000, "pod": 8950, "vxlan": 8950}),
])
def test_pod_mtus_follow_the_overlay_and_encryption(fields, mtus):
    assert design(None, topology="cluster", name="p2", **fields).plan.cluster.mtu == mtus


def test_a_preset_rate_or_mtu_applies_to_the_underlay():
    planned = design("lan-2.5g", topology="cluster", name="p3")
    assert planned.spec.up.rate_bps == 2.5e9
    planned = design(None, topology="cluster", name="p3", rate="100Mbit/s", loss="1%")
    assert planned.spec.up.rate_bps == 1e8 and planned.spec.up.loss == 0.01


def test_more_nodes_sit_on_a_switch_with_a_shared_rate():
    planned = design(None, topology="cluster", name="p4", nodes=4, pods=1)
    cluster = planned.plan.cluster
    assert [n.name for n in cluster.nodes] == ["robot1", "robot2", "robot3", "edge"]
    assert [p.name for p in cluster.pods] == ["robot1pod1", "robot2pod1", "robot3pod1",
                                              "edgepod1"]
    assert cluster.node("robot3").pod_subnet == "10.244.3.0/24"
    assert {link.name for link in planned.plan.links} == {
        "robot1-ap", "robot2-ap", "robot3-ap", "ap-edge"}
    assert len({n.wg_if for n in cluster.nodes}) == 4   # one UAPI socket name each


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"topology": "pair", "overlay": "vxlan"},
     "--overlay: overlay applies to the cluster topology (nodes and pods); this link is a pair"),
    ({"topology": "cluster", "overlay": "geneve"}, "--overlay: 'geneve' is not one of vxlan, none"),
    ({"topology": "cluster", "pods": 9}, "--pods: 9: expected a whole number of pods per node, "
                                         "1..8"),
    ({"topology": "cluster", "nodes": 1}, "--nodes: 1: expected a whole number of nodes"),
    ({"topology": "cluster", "datapath": "ebpf", "encryption": "wireguard", "overlay": "none"},
     "--datapath: ebpf with wireguard needs overlay vxlan"),
    ({"topology": "cluster", "hosts": 3}, "--hosts: --hosts applies to the star topology; a "
                                          "cluster takes --nodes"),
    ({"topology": "cluster", "mtu": 600, "encryption": "wireguard"},
     "--mtu: an underlay MTU of 600 leaves the pods 480 B"),
])
def test_bad_cluster_settings_are_one_line_errors(kwargs, message):
    with pytest.raises(UsageError) as info:
        design(None, name="p5", **kwargs)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_endpoint_names():
    assert endpoint_names(2, 1) == ("robot", "robotpod1", "robotpod1c2",
                                    "edge", "edgepod1", "edgepod1c2")


# --- the datapath ----------------------------------------------------------------------------

def test_kube_proxy_rules_dnat_services_to_pods_and_track_forwarded_packets():
    cluster = design(None, topology="cluster", name="p6").plan.cluster
    nat, filter_ = kube_proxy_rules(cluster)
    assert nat.startswith("*nat\n") and nat.rstrip().endswith("COMMIT")
    assert "-A PREROUTING -m comment --comment \"kubernetes service portals\" " \
           "-j KUBE-SERVICES" in nat
    assert "-j DNAT --to-destination 10.244.1.11:443" in nat
    assert nat.count("-j DNAT") == 8
    assert "-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP" in filter_
    assert "--ctstate RELATED,ESTABLISHED -j ACCEPT" in filter_


@pytest.mark.native
def test_the_ebpf_program_redirects_by_destination_and_assembles(tmp_path):
    require_tool("llvm-mc")
    text = redirect_program([("10.244.100.0/24", 9), ("10.244.1.11/32", 3),
                             ("10.244.1.12/32", 4)])
    lines = text.splitlines()
    # /32s before the /24 (longest prefix first); 10.244.1.12 as a little-endian load
    assert lines.index("\tif w5 == 201454602 goto to_4") < lines.index(
        "\tif w5 == 6616074 goto to_9")
    assert "\tcall 152" in lines       # bpf_redirect_neigh
    obj = assemble(text, tmp_path)
    sections = subprocess.run(["llvm-objdump", "-h", str(obj)], capture_output=True,
                              text=True, check=True).stdout
    assert "classifier" in sections and "license" in sections


# --- the records it journals ---------------------------------------------------------------

def test_records_of_a_wireguard_socket_and_a_clsact_qdisc():
    socket = made.check({"what": "s", **made.wg_socket("l1a2b3-wgr")}, "run")
    assert made.undo_command(socket) == (["rm", "-f", "/run/wireguard/l1a2b3-wgr.sock"], None)
    qdisc = made.check({"what": "q", **made.qdisc("linklab-run-robot", "l1a2b3-p1",
                                                  "clsact")}, "run")
    assert made.undo_command(qdisc) == (["tc", "-n", "linklab-run-robot", "qdisc", "del",
                                         "dev", "l1a2b3-p1", "clsact"], None)
    for bad in ("../../etc/passwd", "a" * 16, "x y"):
        with pytest.raises(made.BadRecord):
            made.check({"what": "s", "kind": "wg_socket", "ifname": bad}, "run")


# --- flows in scenarios ------------------------------------------------------------------------

BASE = textwrap.dedent("""\
    name: t
    fixed:
      topology: cluster
      link: ethernet-1g
      middleware: cyclonedds
      payload: 1KiB
      rate: 50Hz
      count: 10
    """)


def cells_of(text: str):
    return expand(parse_scenario(text, "s.yaml"))


def error_of(text: str) -> str:
    with pytest.raises(UsageError) as info:
        cells_of(text)
    assert "\n" not in str(info.value)
    return str(info.value)


def test_each_flow_places_publisher_and_subscriber():
    cells = cells_of(BASE + "axes:\n  flow: [bare-metal, intra-container, intra-pod, "
                            "intra-host, cross-host]\n")
    placed = {c.flow: (c.topics[0].publisher, c.topics[0].subscribers) for c in cells}
    assert placed == {"bare-metal": ("robot", ("edge",)),
                      "intra-container": ("robotpod1", ("robotpod1",)),
                      "intra-pod": ("robotpod1", ("robotpod1c2",)),
                      "intra-host": ("robotpod1", ("robotpod2",)),
                      "cross-host": ("robotpod1", ("edgepod1",))}
    (cell,) = cells_of(BASE)   # no flow: cross-host
    assert (cell.topics[0].publisher, cell.topics[0].subscribers) == ("robotpod1",
                                                                      ("edgepod1",))
    assert flow_hosts("intra-host", 3) == ("robot1pod1", "robot1pod2")


@pytest.mark.parametrize(("link", "pod_mtu", "cross_host"), [
    ("ethernet-1g", 1450, WirePath(1450, vxlan=True)),
    ("{preset: ethernet-1g, overlay: none}", 1500, WirePath(1500)),
    ("{preset: ethernet-1g, encryption: wireguard}", 1380,
     WirePath(1380, vxlan=True, wireguard_mtu=1440)),
    ("{preset: ethernet-1g, overlay: none, encryption: wireguard}", 1380,
     WirePath(1380, wireguard_mtu=1440)),
])
def test_the_models_path_follows_each_flow(link, pod_mtu, cross_host):
    # 001 V-A: the underlay carries VXLAN / WireGuard only for pod-to-pod traffic between
    # nodes; nodes talk directly; within one node the underlay (and its rate) is not used
    cells = cells_of(BASE.replace("link: ethernet-1g", f"link: {link}")
                     + "axes:\n  flow: [bare-metal, intra-container, intra-pod, "
                       "intra-host, cross-host]\n")
    env = LinklabEnvironment()
    paths = {c.flow: env.wire_path(c) for c in cells}
    assert paths == {"bare-metal": WirePath(1500),
                     "intra-container": WirePath(65536, bounded=False),
                     "intra-pod": WirePath(65536, bounded=False),
                     "intra-host": WirePath(pod_mtu, bounded=False),
                     "cross-host": cross_host}
    options = ClusterOptions()
    assert wire_path(options, 1500, "robot", "edgepod2") == WirePath(1450, vxlan=True)
    assert wire_path(options, 1500, "robotpod1c2", "edge") == WirePath(1450)
    assert wire_path(ClusterOptions(nodes=4), 1500, "robot2pod1", "robot3") == WirePath(1450)
    with pytest.raises(UsageError, match="not a cluster host"):
        wire_path(options, 1500, "robotpod1", "ap")


def test_pairs_and_cluster_link_fields():
    text = BASE.replace("link: ethernet-1g", "link: {preset: ethernet-1g, nodes: 3, "
                        "encryption: wireguard}") + "  pairs: 3\n  flow: cross-host\n" \
        + "axes:\n  link.datapath: [iptables, ebpf]\n"
    cells = cells_of(text)
    assert [c.link for c in cells] == [
        "ethernet-1g+nodes=3,encryption=wireguard,datapath=iptables",
        "ethernet-1g+nodes=3,encryption=wireguard,datapath=ebpf"]
    assert [(t.publisher, t.subscribers) for t in cells[0].topics] == [
        ("robot1pod1", ("edgepod1",)), ("robot2pod1", ("edgepod1",)),
        ("robot1pod1", ("edgepod1",))]


def test_pods_named_in_topics():
    text = BASE + "  topics:\n    - {name: imu, from: robotpod2c2, to: [edgepod1, edge]}\n"
    (cell,) = cells_of(text)
    assert (cell.topics[0].publisher, cell.topics[0].subscribers) == ("robotpod2c2",
                                                                      ("edgepod1", "edge"))


@pytest.mark.parametrize(("extra", "message"), [
    ("  topics:\n    - {name: a, to: robotpod3}\n",
     "s.yaml:10: fixed.topics[0]: host 'robotpod3' is not in the cluster with nodes: 2, "
     "pods: 2; hosts that run endpoints: nodes robot, edge; pods robotpod1..2, edgepod1..2"),
    ("  flow: intra-pod\n  topics:\n    - {name: a, from: robot}\n",
     "s.yaml:11: fixed.topics[0]: from:/to: place this topic, and flow: intra-pod places "
     "every topic"),
    ("  subscribers: 2\n", "s.yaml:9: fixed.subscribers: subscribers: 2: a flow places one "
                           "subscriber per topic"),
    ("  hosts: 2\n", "s.yaml:9: fixed.hosts: hosts: is the star's robot count"),
    ("  flow: sideways\n", "s.yaml:9: fixed.flow: 'sideways' is not one of bare-metal, "
                           "intra-container, intra-pod, intra-host, cross-host"),
    ("axes:\n  link.overlay: [vxlan, geneve]\n",
     "s.yaml:10: axes.link.overlay[1]: 'geneve' is not one of vxlan, none"),
])
def test_cluster_scenario_mistakes_are_file_line_errors(extra, message):
    assert error_of(BASE + extra).startswith(message)


def test_a_topic_that_would_publish_nothing_is_refused():
    text = BASE.replace("  count: 10\n", "  duration: 3s\n") + \
        "  topics:\n    - {name: vla, rate: 0.1Hz}\n"
    assert error_of(text) == ("s.yaml:10: fixed.topics[0]: rate 0.1 Hz for 3 s publishes no "
                              "sample; give a longer duration or a count")


def test_a_flow_outside_a_cluster_is_refused():
    text = BASE.replace("topology: cluster", "topology: pair") + "  flow: intra-host\n"
    assert "flow: intra-host places endpoints in a cluster; the pair topology has no " \
           "nodes and pods" in error_of(text)
