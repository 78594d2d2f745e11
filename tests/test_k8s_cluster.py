"""linklab k8s against a real control plane (etcd, kube-apiserver, kube-scheduler,
kube-controller-manager v1.33.13) with kwok's fake nodes: what the scheduler bound,
what the API server accepted, what is left after success, failure and Ctrl-C, and the
scheduler's own reason for a cell it cannot place.

kwok runs no container: its pods go Running and then Succeeded with no log, so every
cell here ends as an error row ("no linklab bundle"); the records path is tested with
real containers in test_k8s_image.py (and test_k8s_kubelet.py where a kubelet runs).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from linklab.rundir import RunStore

sys.path.insert(0, str(Path(__file__).parent))
from k8s_control_plane import ControlPlane, binaries_missing  # noqa: E402

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[1]
LINKLAB = [sys.executable, "-m", "linklab.cli"]
FLOWS = REPO / "scenarios" / "k8s-flows.yaml"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    missing = binaries_missing()
    if missing:
        pytest.fail(missing)
    cp = ControlPlane(tmp_path_factory.mktemp("k8s")).start()
    try:
        cp.add_node("kwok-robot-0", {"linklab.io/role": "robot"})
        cp.add_node("kwok-edge-1", {"linklab.io/role": "edge"})
        cp.add_node("kwok-edge-2", {"linklab.io/role": "edge"})
        yield cp
    finally:
        cp.stop()


@pytest.fixture
def ns(cluster, request):
    name = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:40].strip("-") + \
        f"-{os.getpid() % 10000}"
    cluster.kubectl("create", "namespace", name)
    # things linklab must never touch: someone else's pod, and a linklab object of
    # another run
    cluster.kubectl("apply", "-n", name, "-f", "-", input="""apiVersion: v1
kind: ConfigMap
metadata: {name: not-linklab, labels: {app: other}}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: other-linklab-run
  labels: {app.kubernetes.io/managed-by: linklab, linklab.io/run: rother}
""")
    yield name


def linklab(cluster, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ, KUBECONFIG=str(cluster.kubeconfig), COLUMNS="200")
    return subprocess.run([*LINKLAB, *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=REPO)


def linklab_objects(cluster, ns: str) -> list[str]:
    out = cluster.kubectl("get", "pods,configmaps", "-n", ns, "-l",
                          "app.kubernetes.io/managed-by=linklab", "-o", "name").stdout.split()
    return [o for o in out if "other-linklab-run" not in o]


def assert_untouched(cluster, ns: str) -> None:
    names = cluster.kubectl("get", "configmaps", "-n", ns, "-o", "name").stdout.split()
    assert "configmap/not-linklab" in names and "configmap/other-linklab-run" in names


def scheduled(cluster, ns: str) -> dict[str, tuple[str, datetime]]:
    """pod -> (node, when), from the scheduler's Scheduled events (they outlive the pods)."""
    events = json.loads(cluster.kubectl("get", "events.events.k8s.io", "-n", ns,
                                        "--field-selector", "reason=Scheduled", "-o", "json"
                                        ).stdout)["items"]
    out = {}
    for event in events:
        match = re.search(r"assigned \S+/(\S+) to (\S+)", event["note"])
        assert match, event["note"]
        out[match[1]] = (match[2], datetime.fromisoformat(event["eventTime"]))
    return out


def bindings(cluster, ns: str) -> dict[str, str]:
    """pod -> node the scheduler bound it to."""
    return {pod: node for pod, (node, _) in scheduled(cluster, ns).items()}


def by_cell(bound: dict[str, str]) -> dict[int, dict[str, str]]:
    out: dict[int, dict[str, str]] = {}
    for pod, node in bound.items():
        match = re.fullmatch(r"linklab-r[0-9a-f]+-(\d+)-(\w+)", pod)
        assert match, pod
        out.setdefault(int(match[1]), {})[match[2]] = node
    return out


def run_dir(out: Path) -> Path:
    (found,) = [p for p in out.iterdir() if (p / "run.json").exists()]
    return found


def test_dry_run_manifests_are_accepted_by_the_api_server(cluster, ns):
    done = linklab(cluster, "k8s", "run", str(FLOWS), "--dry-run", "-n", ns)
    assert done.returncode == 0, done.stderr
    assert "validated against Kubernetes 1.33.0" in done.stdout
    applied = cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=done.stdout,
                              check=False)
    assert applied.returncode == 0, applied.stderr
    lines = applied.stdout.strip().splitlines()
    assert len(lines) == 12 + 18 and all("created (server dry run)" in x for x in lines)


# The scenario's --quick cells: 0 intra-container, 1 intra-pod, 2 intra-host, 3 cross-host.
INTRA_HOST, CROSS_HOST = 2, 3
# A pod the scheduler must weigh against linklab's placement. Without pod (anti-)affinity
# of their own, two pods of a cell would land on one node or on two by chance (the
# scheduler's scores tie on empty fake nodes: 1/3 and 2/3 on three nodes). This pod, kept
# Running on kwok-edge-2 (linklab-test/hold), turns the chance into a certainty against
# the terms: the scheduler also scores an existing pod's preferred terms (InterPodAffinity,
# weight 2, normalised 0..100: 200 points for or against kwok-edge-2, where the other
# scores differ by 2 points at most, NodeResourcesFit and BalancedAllocation for this one
# pod). So without linklab's terms the intra-host edge pod is kept off kwok-edge-2 and its
# robot pod drawn onto it (two nodes), and both cross-host pods are drawn onto it (one
# node): with the terms removed the placement assertions fail every time (probability of
# a chance pass 0, not 1/3 or 2/3), which was checked by removing them from
# manifests._affinity. The required terms override the preferences: an intra-host robot
# pod must join its edge pod, a cross-host robot pod may not.
SENTINEL = f"""apiVersion: v1
kind: Pod
metadata:
  name: placement-sentinel
  labels: {{app: placement-sentinel, linklab-test/hold: "true"}}
spec:
  nodeName: kwok-edge-2
  containers: [{{name: hold, image: none}}]
  affinity:
    podAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          labelSelector: {{matchLabels: {{linklab.io/cell: "{CROSS_HOST}"}}}}
          topologyKey: kubernetes.io/hostname
      - weight: 100
        podAffinityTerm:
          labelSelector:
            matchLabels: {{linklab.io/cell: "{INTRA_HOST}", linklab.io/host: robot}}
          topologyKey: kubernetes.io/hostname
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          labelSelector:
            matchLabels: {{linklab.io/cell: "{INTRA_HOST}", linklab.io/host: edge}}
          topologyKey: kubernetes.io/hostname
"""
KWOK_RUNNING_S = 3.0  # tests/k8s/kwok-stages.yaml pod-complete: a pod ends 3 s after it runs


def test_each_flow_is_placed_by_the_scheduler_and_nothing_is_left(cluster, ns, tmp_path):
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=SENTINEL)
    try:
        done = linklab(cluster, "k8s", "run", str(FLOWS), "--quick", "-n", ns, "--out",
                       str(tmp_path))
        held = cluster.kubectl("get", "pod", "placement-sentinel", "-n", ns, "-o",
                               "jsonpath={.spec.nodeName} {.status.phase}").stdout
    finally:
        cluster.kubectl("delete", "pod", "placement-sentinel", "-n", ns, "--wait=false")
    assert held == "kwok-edge-2 Running"  # it weighed on every cell
    # kwok runs no container: each cell is an error row, the run exits 70
    assert done.returncode == 70, done.stderr
    errors = [x for x in done.stderr.splitlines() if x.startswith("linklab error in cell ")]
    assert len(errors) == 4 and all(": could not run: pod linklab-" in x and
                                    "bundle" in x or "log of pod" in x for x in errors), errors
    placed = scheduled(cluster, ns)
    cells = by_cell({pod: node for pod, (node, _) in placed.items()})
    assert sorted(cells) == [0, 1, 2, 3]
    assert list(cells[0]) == ["all"] and list(cells[1]) == ["all"]  # intra-container/-pod
    # the terms are matched against running pods only: the robot pod must have been placed
    # while the edge pod still ran, or a failure below says nothing about the terms
    for index in (INTRA_HOST, CROSS_HOST):
        (edge, robot) = (placed[p][1] for p in sorted(placed)
                         if re.search(rf"-{index}-(edge|robot)$", p))
        assert (robot - edge).total_seconds() < KWOK_RUNNING_S, (index, edge, robot)
    # intra-host: one node, though without the required affinity the robot pod goes to
    # kwok-edge-2 and the edge pod elsewhere
    assert cells[INTRA_HOST]["edge"] == cells[INTRA_HOST]["robot"] != "kwok-edge-2", cells
    # cross-host: two nodes, though without the required anti-affinity both go to kwok-edge-2
    assert cells[CROSS_HOST]["edge"] == "kwok-edge-2" != cells[CROSS_HOST]["robot"], cells
    assert linklab_objects(cluster, ns) == []
    assert_untouched(cluster, ns)
    store = RunStore.open(run_dir(tmp_path))
    assert [r["status"] for r in store.rows] == ["error"] * 4
    assert store.info["k8s"]["sessions"][0]["left_in_cluster"] == []
    assert [r["flow"] for r in store.rows] == ["intra-container", "intra-pod", "intra-host",
                                              "cross-host"]


def test_without_a_flow_pods_go_to_their_roles_nodes(cluster, ns, tmp_path):
    scenario = tmp_path / "roles.yaml"
    scenario.write_text("name: roles\nfixed: {link: ethernet-1g, payload: 1KiB, rate: 50Hz, "
                        "count: 20, middleware: [mqtt]}\n".replace("[mqtt]", "mqtt"))
    done = linklab(cluster, "k8s", "run", str(scenario), "-n", ns, "--out", str(tmp_path))
    assert done.returncode == 70, done.stderr
    (cell,) = by_cell(bindings(cluster, ns)).values()
    assert cell["robot"] == "kwok-robot-0" and cell["edge"] in ("kwok-edge-1", "kwok-edge-2")
    assert linklab_objects(cluster, ns) == []


def test_an_unschedulable_cell_is_one_line_with_the_schedulers_reason(cluster, ns, tmp_path):
    scenario = tmp_path / "cloud.yaml"
    scenario.write_text("name: cloud\nfixed: {link: ethernet-1g, payload: 1KiB, rate: 50Hz, "
                        "count: 20}\n")
    pre = linklab(cluster, "k8s", "preflight", str(scenario), "-n", ns, "--role", "edge=cloud")
    assert pre.returncode == 1
    assert "no ready node has linklab.io/role=cloud for the edge pod" in pre.stderr
    started = time.monotonic()
    done = linklab(cluster, "k8s", "run", str(scenario), "-n", ns, "--out", str(tmp_path),
                   "--role", "edge=cloud")
    assert done.returncode == 70
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("linklab error in cell ")]
    assert re.fullmatch(r"linklab error in cell cell: could not run: "
                        r"pod linklab-r[0-9a-f]+-0-edge is unschedulable: 0/3 nodes are "
                        r"available: 3 node\(s\) didn't match "
                        r"Pod's node affinity/selector\..*", line), line
    assert time.monotonic() - started < 60  # the scheduler's verdict, not a timeout
    assert linklab_objects(cluster, ns) == []
    assert_untouched(cluster, ns)


def kept_rows(out: Path) -> int:
    found = [p / "cells.jsonl" for p in out.iterdir() if (p / "cells.jsonl").exists()]
    return len(found[0].read_text().splitlines()) if found else 0


def test_ctrl_c_deletes_what_the_run_created_and_resume_finishes(cluster, ns, tmp_path):
    """Ctrl-C in the second cell, the first kept as an error row (kwok): the run names
    that cell (one line, as at the end of a run), deletes its pods, and resumes."""
    env = dict(os.environ, KUBECONFIG=str(cluster.kubeconfig), COLUMNS="200")
    proc = subprocess.Popen([*LINKLAB, "k8s", "run", str(FLOWS), "--quick", "-n", ns, "--out",
                             str(tmp_path)], env=env, cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end and not (kept_rows(tmp_path) >= 1 and [
                o for o in linklab_objects(cluster, ns) if o.startswith("pod/")]):
            time.sleep(0.2)
        assert kept_rows(tmp_path) >= 1 and linklab_objects(cluster, ns), \
            "no cell was kept with a later cell's pod running"
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "the run's pods and ConfigMaps were deleted" in err
    assert linklab_objects(cluster, ns) == []
    assert_untouched(cluster, ns)
    root = run_dir(tmp_path)
    store = RunStore.open(root)
    assert store.info["interrupted"] and 1 <= len(store.rows) < len(store.info["planned"])
    # every kept cell could not run (kwok has no containers): one line each, before the
    # line that says how to continue
    lines = err.splitlines()
    named = [x for x in lines if x.startswith("linklab error in cell ")]
    assert named == [f"linklab error in cell {r['cell_id']}: {r['failure_reason']}"
                     for r in store.rows], err
    assert all(r["status"] == "error" and "could not run: pod linklab-" in r["failure_reason"]
               for r in store.rows)
    assert lines.index(named[-1]) < next(
        i for i, x in enumerate(lines) if x.startswith("linklab: interrupted: "))
    done = linklab(cluster, "k8s", "run", "--resume", str(root), "-n", ns)
    assert done.returncode == 70, done.stderr
    store = RunStore.open(root)
    assert sorted(r["cell_id"] for r in store.rows) == sorted(store.info["planned"])
    assert len(store.info["k8s"]["sessions"]) == 2
    assert linklab_objects(cluster, ns) == []


def test_clean_deletes_one_runs_objects_by_label_only(cluster, ns):
    cluster.kubectl("apply", "-n", ns, "-f", "-", input="""apiVersion: v1
kind: ConfigMap
metadata:
  name: left-behind
  labels: {app.kubernetes.io/managed-by: linklab, linklab.io/run: rleft}
""")
    done = linklab(cluster, "k8s", "clean", "--run", "rleft", "-n", ns)
    assert done.returncode == 0, done.stderr
    assert "deleted 1 object(s)" in done.stdout
    names = cluster.kubectl("get", "configmaps", "-n", ns, "-o", "name").stdout.split()
    assert "configmap/left-behind" not in names
    assert_untouched(cluster, ns)
    bad = linklab(cluster, "k8s", "clean", "-n", ns)
    assert bad.returncode == 2 and bad.stderr.strip() == \
        "linklab: error: --run: give --run ID or --all"
