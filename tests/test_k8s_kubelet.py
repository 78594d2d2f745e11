"""linklab k8s end to end on real nodes: the test control plane plus two kubelets
(containerd + runc, a bridge each, routed between them), so probe pods truly run and
their records come back through the pod logs. A scenario from scenarios/ runs in all
four flows with Fast DDS and MQTT, the scheduler's bindings show each flow's placement,
`linklab report` reads the run directory as it reads an emulated one, and the
cluster's reasons come back in one line (an image that cannot be pulled)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from linklab.rundir import RunStore

sys.path.insert(0, str(Path(__file__).parent))
from k8s_control_plane import binaries_missing  # noqa: E402
from k8s_node import PAUSE_BIN, two_node_cluster  # noqa: E402
from test_k8s_cluster import (  # noqa: E402
    FLOWS,
    assert_untouched,
    bindings,
    by_cell,
    linklab,
    linklab_objects,
    run_dir,
)
from test_k8s_cluster import ns as ns  # noqa: E402,F401  (the fixture)

pytestmark = pytest.mark.integration
TAG = f"localhost/linklab-probe:kubelet-{os.getpid()}"
REAL = "linklab-test/real=true"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    missing = binaries_missing() or (None if PAUSE_BIN.exists() else
                                     f"{PAUSE_BIN} is not built: run scripts/setup.sh")
    if missing:
        pytest.fail(missing)
    with two_node_cluster(tmp_path_factory.mktemp("k8s-real"), TAG, "real",
                          "linklab-test/real") as cp:
        yield cp


def test_a_scenario_runs_on_real_nodes_and_reports_like_an_emulated_run(cluster, ns, tmp_path):
    done = linklab(cluster, "k8s", "run", str(FLOWS), "-n", ns, "--out", str(tmp_path),
                   "--image", TAG, "--pull-policy", "Never", "--node-selector", REAL,
                   timeout=400)
    assert done.returncode == 0, done.stderr[-2000:]
    root = run_dir(tmp_path)
    store = RunStore.open(root)
    assert [r["cell_id"] for r in store.rows] == [
        f"{flow}-{mw}" for flow in ("intra-container", "intra-pod", "intra-host", "cross-host")
        for mw in ("fastdds", "cyclonedds", "mqtt")]
    for row in store.rows:
        assert row["status"] == "ok", (row["cell_id"], row["failure_reason"])
        assert row["received"] == row["expected"] == 100
        assert 0 < row["latency_p50_ms"] < 50
    # the records came back: the files an emulated cell leaves, and the pods' own
    cell = root / "records" / "cross-host-mqtt"
    for name in ("pub.bin", "sub.bin", "pub.json", "sub.log", "endpoints.json", "k8s.json"):
        assert (cell / name).is_file(), name
    placed = json.loads((cell / "k8s.json").read_text())["placed"]
    assert len({p["node"] for p in placed.values()}) == 2
    # the broker ran in the edge pod and was measured
    assert store.rows[-1]["broker_cpu_s"] > 0
    # pods of separate hosts talk over their interfaces: the wire bytes were counted
    assert store.rows[9]["wire_bytes"] > 100 * 1024
    bound = by_cell(bindings(cluster, ns))
    for i in range(12):
        if i < 6:
            assert list(bound[i]) == ["all"]                                   # one pod
        elif i < 9:
            assert bound[i]["edge"] == bound[i]["robot"]                       # intra-host
        else:
            assert {bound[i]["edge"], bound[i]["robot"]} == {"real-edge", "real-robot"}
    assert linklab_objects(cluster, ns) == []
    assert_untouched(cluster, ns)
    # linklab report reads it as it reads an emulated run (the same reader, the same
    # tables; exit 0: no error row)
    report = linklab(cluster, "report", str(root))
    assert report.returncode == 0, report.stderr
    assert "Paper 001 deployment flows on a cluster" in report.stdout
    assert "Reception rate (Hz)" in report.stdout and "error" not in report.stdout
    exported = json.loads(linklab(cluster, "report", str(root), "--json").stdout)
    cells = exported["cells"]
    assert sorted(c["flow"] for c in cells) == sorted(r["flow"] for r in store.rows)


def test_an_image_that_cannot_be_pulled_is_one_line(cluster, ns, tmp_path):
    scenario = tmp_path / "one.yaml"
    scenario.write_text("name: one\nfixed: {link: ethernet-1g, payload: 1KiB, rate: 50Hz, "
                        "count: 20, flow: intra-pod}\n")
    done = linklab(cluster, "k8s", "run", str(scenario), "-n", ns, "--out", str(tmp_path),
                   "--image", "localhost/linklab-absent:1", "--pull-policy", "Never",
                   "--node-selector", REAL)
    assert done.returncode == 70
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("linklab error in cell ")]
    assert re.fullmatch(r"linklab error in cell cell: could not run: pod linklab-r[0-9a-f]+-0-all "
                        r"container (sub|pub): ErrImageNeverPull: .*"
                        r"\(image localhost/linklab-absent:1\)", line), line
    assert linklab_objects(cluster, ns) == []


def test_an_oom_killed_probe_is_one_line_with_the_clusters_reason(cluster, ns, tmp_path):
    # 8 MiB samples in containers limited to 24 MiB: the publisher's cgroup runs out
    scenario = tmp_path / "oom.yaml"
    scenario.write_text("name: oom\nfixed: {link: ethernet-1g, payload: 8MiB, rate: 20Hz, "
                        "count: 20, flow: intra-pod}\n")
    done = linklab(cluster, "k8s", "run", str(scenario), "-n", ns, "--out", str(tmp_path),
                   "--image", TAG, "--pull-policy", "Never", "--node-selector", REAL,
                   "--memory", "24Mi")
    assert done.returncode == 0, done.stderr  # a failed cell is a result, as in bench
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("cell ")]
    assert re.fullmatch(r"cell cell failed: crashed: .*\(pod linklab-r[0-9a-f]+-0-all "
                        r"container (pub|sub): OOMKilled \(exit 137: the container's memory "
                        r"limit was reached\)\)", line), line
    (row,) = RunStore.open(run_dir(tmp_path)).rows
    assert row["status"] == "failed"
    assert linklab_objects(cluster, ns) == []


def test_preflight_runs_a_pod_of_the_image_and_reads_the_pod_mtu(cluster, ns):
    done = linklab(cluster, "k8s", "preflight", str(FLOWS), "-n", ns, "--pod-check",
                   "--image", TAG, "--pull-policy", "Never", "--node-selector", REAL)
    assert done.returncode == 0, done.stderr
    assert re.search(r"pod network MTU \d+ \(from a pod of ", done.stdout), done.stdout
    assert "Kubernetes v1.33.13" in done.stdout
    assert "DDS discovery across pods" in done.stderr
    assert linklab_objects(cluster, ns) == []
