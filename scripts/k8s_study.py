"""Paper 001's deployment flows on a real two-node Kubernetes cluster beside the same
cells on linklab's emulated cluster (issue 42 item 8). A benchmark, not a test.

    sudo .venv/bin/python scripts/k8s_study.py --out runs/k8s-study [--quick]

The cluster is the one tests/test_k8s_kubelet.py runs on: etcd, kube-apiserver,
kube-scheduler and kube-controller-manager v1.33.13 (scripts/k8s-build.sh) and two real
nodes, each a kubelet on Debian's containerd + runc with a CNI bridge of its own, routed
between them (tests/k8s_control_plane.py, tests/k8s_node.py). The probe image is built
here with buildah (linklab k8s image) and imported into each node; nothing is pulled.

1. ``linklab k8s run scenarios/k8s-flows.yaml``: the four flows x Fast DDS, Cyclone DDS,
   MQTT as pods the scheduler places, records back through the pod logs.
2. ``linklab bench`` on the same scenario with ``topology: cluster``: the same cells on
   the emulated cluster (namespaces, veth, bridges, VXLAN between the two hosts).
3. A table, cell by cell: delivered, latency p50 / p95 / max and the subscriber's CPU on
   each bed.

Everything started is stopped at the end (pods, kubelets, containerd, bridges, the
control plane), also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from k8s_node import two_node_cluster  # noqa: E402

SCENARIO = REPO / "scenarios" / "k8s-flows.yaml"
TAG = f"localhost/linklab-probe:k8s-study-{os.getpid()}"
REAL = "linklab-study/real=true"
LINKLAB = [sys.executable, "-m", "linklab.cli"]


def linklab(*args: str, env: dict[str, str] | None = None, timeout: float = 1800) -> None:
    done = subprocess.run([*LINKLAB, *args], cwd=REPO, env=env, timeout=timeout,
                          stdout=sys.stderr)
    if done.returncode != 0:
        raise SystemExit(f"k8s_study: linklab {' '.join(args[:2])} exited {done.returncode}")


def only_run(out: Path) -> Path:
    (found,) = [p for p in out.iterdir() if (p / "run.json").exists()]
    return found


def run_on_cluster(root: Path, out: Path, quick: list[str]) -> Path:
    print("k8s_study: starting the cluster, building the probe image", file=sys.stderr)
    try:
        with two_node_cluster(root, TAG, "study", "linklab-study/real") as cp:
            cp.kubectl("create", "namespace", "k8s-study")
            env = dict(os.environ, KUBECONFIG=str(cp.kubeconfig))
            target = out / "kubernetes"
            linklab("k8s", "run", str(SCENARIO), *quick, "-n", "k8s-study", "--out",
                    str(target), "--image", TAG, "--pull-policy", "Never",
                    "--node-selector", REAL, env=env)
            return only_run(target)
    except RuntimeError as error:  # a binary not built, a node that did not come up
        raise SystemExit(f"k8s_study: {error}") from None


def run_emulated(root: Path, out: Path, quick: list[str]) -> Path:
    text = SCENARIO.read_text().replace("  link: ethernet-1g\n",
                                        "  link: ethernet-1g\n  topology: cluster\n", 1)
    if "topology: cluster" not in text:
        raise SystemExit(f"k8s_study: {SCENARIO} no longer fixes 'link: ethernet-1g'")
    scenario = root / "k8s-flows-emulated.yaml"
    scenario.write_text(text)
    target = out / "emulated"
    linklab("bench", str(scenario), *quick, "--out", str(target))
    return only_run(target)


def _fmt(row: dict | None, key: str, digits: int = 2) -> str:
    if row is None or row.get(key) is None:
        return "—"
    return f"{row[key]:.{digits}f}"


def table(k8s: Path, emulated: Path) -> str:
    from linklab.rundir import RunStore

    real = {r["cell_id"]: r for r in RunStore.open(k8s).rows}
    emu = {r["cell_id"]: r for r in RunStore.open(emulated).rows}
    lines = ["| cell | delivered k8s / emulated | p50 ms k8s / emulated | "
             "p95 ms k8s / emulated | max ms k8s / emulated | sub CPU s k8s / emulated |",
             "|---|---|---|---|---|---|"]
    for cell in real:
        a, b = real[cell], emu.get(cell)

        def got(r: dict | None) -> str:
            return "—" if r is None else f"{r['received']}/{r['expected']}"

        lines.append(
            f"| {cell} | {got(a)} / {got(b)} | {_fmt(a, 'latency_p50_ms')} / "
            f"{_fmt(b, 'latency_p50_ms')} | {_fmt(a, 'latency_p95_ms')} / "
            f"{_fmt(b, 'latency_p95_ms')} | {_fmt(a, 'latency_max_ms')} / "
            f"{_fmt(b, 'latency_max_ms')} | {_fmt(a, 'sub_cpu_s', 3)} / "
            f"{_fmt(b, 'sub_cpu_s', 3)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="directory for both runs")
    parser.add_argument("--quick", action="store_true", help="the scenario's quick cells")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("k8s_study: needs root (kubelets, containerd, namespaces)")
    if args.out.exists() and any(args.out.iterdir()):
        raise SystemExit(f"k8s_study: --out {args.out} is not empty; give a new directory")
    args.out.mkdir(parents=True, exist_ok=True)
    quick = ["--quick"] if args.quick else []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="linklab-k8s-study-") as tmp:
        k8s = run_on_cluster(Path(tmp), args.out.resolve(), quick)
        emulated = run_emulated(Path(tmp), args.out.resolve(), quick)
    print(f"Kubernetes (2 kubelet nodes): {k8s}\nemulated cluster: {emulated}\n"
          f"wall {time.monotonic() - started:.0f} s\n")
    print(table(k8s, emulated))


if __name__ == "__main__":
    main()
