"""linklab k8s without a cluster: placement per flow, manifests (validated offline against
Kubernetes 1.33's schemas), the flow axis, refusals, failure reasons, clock alignment."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from linklab.bench import metrics as M
from linklab.bench.namespace_environment import Links
from linklab.bench.spec import parse_scenario
from linklab.errors import UsageError
from linklab.k8s import collect as C
from linklab.k8s import manifests as MF
from linklab.k8s import reasons as R
from linklab.k8s.cluster_bed import K8sOptions, check_cell
from linklab.k8s.cluster_run import dry_run_objects
from linklab.k8s.scenario import expand_with_flows
from linklab.k8s.validate import validate_objects

BASE = """name: t
fixed: {{link: {link}, payload: 1KiB, rate: 50Hz, count: 20{extra}}}
axes:
  flow: [intra-container, intra-pod, intra-host, cross-host]
  middleware: [fastdds, mqtt]
"""


def scenario(link: str = "ethernet-1g", extra: str = ""):
    return parse_scenario(BASE.format(link=link, extra=extra), "t.yaml")


def options(**kw) -> K8sOptions:
    return K8sOptions(run_id="rtest01", image="localhost/linklab-probe:latest", **kw)


def test_flow_axis_expands_with_the_flow_in_each_cell_id():
    cells = expand_with_flows(scenario())
    assert [c.cell_id for c in cells] == [
        "intra-container-fastdds", "intra-container-mqtt", "intra-pod-fastdds", "intra-pod-mqtt",
        "intra-host-fastdds", "intra-host-mqtt", "cross-host-fastdds", "cross-host-mqtt"]
    assert [c.flow for c in cells][::2] == ["intra-container", "intra-pod", "intra-host",
                                            "cross-host"]
    assert [c.index for c in cells] == list(range(8))


def test_flow_goes_after_link_and_before_middleware_like_the_bench():
    text = """name: t
fixed: {payload: 1KiB, rate: 50Hz, count: 20}
axes:
  middleware: [fastdds, mqtt]
  flow: [intra-pod, cross-host]
  link: [ethernet-1g, lan-2.5g]
"""
    cells = expand_with_flows(parse_scenario(text, "t.yaml"))
    assert cells[0].cell_id == "ethernet-1g-intra-pod-fastdds"
    assert [c.cell_id for c in cells[:4]] == [
        "ethernet-1g-intra-pod-fastdds", "ethernet-1g-intra-pod-mqtt",
        "ethernet-1g-cross-host-fastdds", "ethernet-1g-cross-host-mqtt"]


def by_id(objects):
    return {o["metadata"]["name"]: o for o in objects}


def test_each_flow_places_pods_as_paper_001_fig3():
    cells = expand_with_flows(scenario())
    objects = dry_run_objects(cells, options(), scenario())
    pods = [o for o in objects if o["kind"] == "Pod"]
    by_cell: dict[str, list] = {}
    for pod in pods:
        by_cell.setdefault(pod["metadata"]["annotations"][MF.CELL_ID_ANNOTATION], []).append(pod)
    one = by_cell["intra-container-fastdds"]
    assert len(one) == 1 and [c["name"] for c in one[0]["spec"]["containers"]] == ["probes"]
    spec = json.loads(one[0]["spec"]["containers"][0]["env"][0]["value"])
    assert [p["name"] for p in spec["processes"]] == ["sub", "pub"]
    two = by_cell["intra-pod-mqtt"]
    assert len(two) == 1
    assert [c["name"] for c in two[0]["spec"]["containers"]] == ["broker", "sub", "pub"]
    host = by_cell["intra-host-fastdds"]
    assert [p["metadata"]["labels"][MF.HOST_LABEL] for p in host] == ["edge", "robot"]
    cross = by_cell["cross-host-fastdds"]
    assert [p["metadata"]["labels"][MF.HOST_LABEL] for p in cross] == ["edge", "robot"]
    # the whole affinity, nothing more: one required term (a preferred one would let the
    # scheduler decide otherwise) selecting exactly this cell's pods of this run (labels
    # each of them carries, and no other cell's pod) per node; no affinity for one pod
    kinds = {"intra-host": "podAffinity", "cross-host": "podAntiAffinity"}
    for name, cell_pods in by_cell.items():
        flow = cell_pods[0]["metadata"]["annotations"][MF.FLOW_ANNOTATION]
        index = cell_pods[0]["metadata"]["labels"][MF.CELL_LABEL]
        selected = {MF.RUN_LABEL: "rtest01", MF.CELL_LABEL: index}
        for pod in cell_pods:
            assert selected.items() <= pod["metadata"]["labels"].items()
            if flow not in kinds:
                assert "affinity" not in pod["spec"], name
                continue
            assert len(cell_pods) == 2 and pod["spec"]["affinity"] == {kinds[flow]: {
                "requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": selected},
                    "topologyKey": "kubernetes.io/hostname"}]}}, name
        others = [p for n, ps in by_cell.items() if n != name for p in ps]
        assert not any(selected.items() <= p["metadata"]["labels"].items() for p in others)
    assert {n for n, ps in by_cell.items() if "affinity" in ps[0]["spec"]} == {
        "intra-host-fastdds", "intra-host-mqtt", "cross-host-fastdds", "cross-host-mqtt"}
    # the later pod is told the earlier one's address; the earlier one none
    edge, robot = (json.loads(p["spec"]["containers"][0]["env"][0]["value"]) for p in cross)
    argv = edge["processes"][0]["argv"]  # unicast discovery, answering the robot's
    assert argv[argv.index("--peer") + 1] == "127.0.0.1"
    argv = robot["processes"][0]["argv"]
    assert argv[argv.index("--peer") + 1] == "<edge pod IP>"
    mqtt = by_cell["cross-host-mqtt"]
    robot_spec = json.loads(mqtt[1]["spec"]["containers"][0]["env"][0]["value"])
    assert robot_spec["processes"][0]["wait_tcp"] == "<edge pod IP>:1883"


def test_manifests_validate_against_kubernetes_1_33_and_a_broken_one_does_not():
    objects = dry_run_objects(expand_with_flows(scenario()), options(memory="256Mi"),
                              scenario())
    assert validate_objects(objects, "1.33") == "1.33.0"
    broken = json.loads(json.dumps(objects[1]))
    broken["spec"]["containers"][0]["imagePullPolicy"] = 3
    with pytest.raises(UsageError, match="does not validate against Kubernetes 1.33.0"):
        validate_objects([broken], "1.33")
    broken = json.loads(json.dumps(objects[1]))
    broken["spec"]["containerz"] = []
    with pytest.raises(UsageError, match="containerz"):
        validate_objects([broken], "1.33")


def test_roles_place_pods_without_a_flow():
    text = "name: t\nfixed: {link: ethernet-1g, payload: 1KiB, rate: 50Hz, count: 20}\n"
    sc = parse_scenario(text, "t.yaml")
    objects = dry_run_objects(expand_with_flows(sc), options(roles={"edge": "cloud"},
                                                             node_selector={"zone": "a"}), sc)
    selectors = [o["spec"]["nodeSelector"] for o in objects if o["kind"] == "Pod"]
    assert selectors == [{"zone": "a", "linklab.io/role": "cloud"},
                         {"zone": "a", "linklab.io/role": "robot"}]


@pytest.mark.parametrize("link, match", [
    ("wifi-severe", "loss .up. would have to be emulated"),
    ("wifi-outage", "outage .up. would have to be emulated"),
])
def test_a_link_that_needs_emulation_is_refused(link, match):
    cell = expand_with_flows(scenario(link))[0]
    with pytest.raises(UsageError, match=match):
        check_cell(cell, Links(), options())


def test_what_a_cluster_cannot_place_is_refused():
    text = "name: t\nfixed: {link: ethernet-1g, payload: 1KiB, rate: 50Hz, count: 20, flow: %s}\n"
    cell = expand_with_flows(parse_scenario(text % "bare-metal", "t.yaml"))[0]
    with pytest.raises(UsageError, match="bare-metal runs processes on the nodes"):
        check_cell(cell, Links(), options())
    text2 = ("name: t\nfixed: {link: ethernet-1g, payload: 1KiB, rate: 50Hz, count: 20,"
             " flow: cross-host, middleware: fastdds-secure}\n")
    cell = expand_with_flows(parse_scenario(text2, "t.yaml"))[0]
    with pytest.raises(UsageError, match="keystore"):
        check_cell(cell, Links(), options())
    text3 = """name: t
fixed:
  link: ethernet-1g
  middleware: zenoh-peer
  flow: cross-host
  count: 20
  topics: [{name: back, payload: 1KiB, rate: 50Hz, from: edge, to: robot}]
"""
    cell = expand_with_flows(parse_scenario(text3, "t.yaml"))[0]
    with pytest.raises(UsageError, match="zenoh-peer publisher on edge dials"):
        check_cell(cell, Links(), options())


def pod_status(**status):
    return {"metadata": {"name": "p"}, "status": status}


def test_the_clusters_reasons_are_one_line():
    unsched = pod_status(phase="Pending", conditions=[{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 node(s) didn't match Pod's node "
                   "affinity/selector."}])
    assert R.stuck(unsched) == ("pod p is unschedulable: 0/3 nodes are available: 3 node(s) "
                                "didn't match Pod's node affinity/selector.")
    pull = pod_status(phase="Pending", containerStatuses=[{
        "name": "sub", "image": "reg/x:1", "state": {"waiting": {
            "reason": "ErrImagePull", "message": "failed to pull\nsecond line"}}}])
    assert R.stuck(pull) == "pod p container sub: ErrImagePull: failed to pull (image reg/x:1)"
    oom = pod_status(phase="Failed", containerStatuses=[{"name": "pub", "state": {
        "terminated": {"exitCode": 137, "reason": "OOMKilled"}}}])
    assert R.stuck(oom) is None
    assert R.exit_line(oom, "pub") == ("pod p container pub: OOMKilled (exit 137: the "
                                       "container's memory limit was reached)")
    crash = pod_status(phase="Failed", containerStatuses=[{"name": "pub", "state": {
        "terminated": {"exitCode": 3, "reason": "Error"}}}])
    assert R.exit_line(crash, "pub") == "pod p container pub: exited 3"
    ok = pod_status(phase="Succeeded", containerStatuses=[{"name": "pub", "state": {
        "terminated": {"exitCode": 0, "reason": "Completed"}}}])
    assert R.exit_line(ok, "pub") is None and R.ended(ok)


def test_records_from_two_nodes_are_put_on_one_time_line(tmp_path: Path):
    from linklab.bench.endpoints import Endpoint
    from linklab.bench.topics import Topic

    topic = Topic.__new__(Topic)
    object.__setattr__(topic, "name", "t")
    plan = [Endpoint("sub", topic, "edge", "sub", (), (), ()),
            Endpoint("pub", topic, "robot", "pub", (), (), ())]
    # node A (sub): realtime - monotonic = 1_000_000; node B (pub): 5_000_000
    pub = M.make_records([(0, 100, 0, 10), (1, 200, 0, 10)])
    sub = M.make_records([(0, 100, 4_000_150, 10), (1, 200, 4_000_260, 10)])
    M.write_records(tmp_path / "pub.bin", M.ROLE_PUBLISHER, pub)
    M.write_records(tmp_path / "sub.bin", M.ROLE_SUBSCRIBER, sub)

    def result(name, boot, offset):
        return C.ContainerResult(name, name, name, None, {}, {
            "clock": {"boot_id": boot, "realtime_ns": offset + 10, "monotonic_ns": 10},
            "processes": {name: {}}})

    note = C.align_clocks(plan, [result("sub", "A", 1_000_000), result("pub", "B", 5_000_000)],
                          tmp_path)
    assert note and "CLOCK_REALTIME" in note
    _, sub2 = M.read_records(tmp_path / "sub.bin")
    _, pub2 = M.read_records(tmp_path / "pub.bin")
    # everything on the sub's (first container's) clock: send + 4 ms, receive unchanged
    assert list(pub2["t_send_ns"]) == [4_000_100, 4_000_200]
    assert list(sub2["t_recv_ns"] - sub2["t_send_ns"]) == [50, 60]
    assert (tmp_path / "sub.node-clock.bin").exists()
    # one kernel: nothing moves
    assert C.align_clocks(plan, [result("sub", "A", 1), result("pub", "A", 9)], tmp_path) is None
    assert np.array_equal(M.read_records(tmp_path / "sub.bin")[1], sub2)


KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- {name: one, cluster: {server: "https://127.0.0.1:6443"}}
- {name: two, cluster: {server: "https://127.0.0.1:7443"}}
users:
- {name: u, user: {token: t}}
contexts:
- {name: a, context: {cluster: one, user: u, namespace: team-a}}
- {name: b, context: {cluster: two, user: u}}
current-context: a
"""


def test_the_cluster_is_found_as_kubectl_finds_it(tmp_path: Path, monkeypatch):
    from linklab.k8s.cluster import connect

    path = tmp_path / "config"
    path.write_text(KUBECONFIG)
    monkeypatch.setenv("KUBECONFIG", str(path))
    current = connect()
    assert (current.context, current.namespace, current.server) == (
        "a", "team-a", "https://127.0.0.1:6443")
    other = connect(context="b")
    assert (other.context, other.namespace, other.server) == (
        "b", "default", "https://127.0.0.1:7443")
    assert connect(context="b", namespace="mine").namespace == "mine"
    with pytest.raises(UsageError, match=r"--context: no context 'c' in the kubeconfig "
                                         r"\(contexts: a, b\)"):
        connect(context="c")
    monkeypatch.delenv("KUBECONFIG")
    with pytest.raises(UsageError, match="--kubeconfig: kubeconfig"):
        connect(kubeconfig=str(tmp_path / "absent"))
