"""One ``linklab k8s run``: the bench's runner over a KubeEnvironment, and the promise
that nothing it created stays in the cluster.

A session has its own run id (``linklab.io/run``); a resumed run gets a new one and
keeps the list in run.json (``k8s.sessions``). Whatever happens -- cells done, a cell
that failed, a linklab error, Ctrl-C or SIGTERM -- the session ends by deleting every
Pod and ConfigMap carrying its run id (and only those), and waits until they are gone.
"""

from __future__ import annotations

import secrets
from typing import Any

from linklab.bench.matrix import Cell
from linklab.bench.runner import run_cells
from linklab.bench.spec import Scenario
from linklab.errors import LinklabError
from linklab.held_signals import signals_held
from linklab.k8s import manifests as M
from linklab.k8s.cluster import Cluster
from linklab.k8s.cluster_bed import K8sOptions, KubeEnvironment, cell_objects, check_cell
from linklab.rundir import RunStore, now_utc

CLEANUP_WAIT_S = 90.0


def new_run_id() -> str:
    return "r" + secrets.token_hex(4)


def cleanup_run(cluster: Cluster, run_id: str) -> list[str]:
    """Delete the session's objects by label; a Ctrl-C or SIGTERM meanwhile takes effect
    after it."""
    with signals_held():
        return cluster.delete_labelled(M.run_selector(run_id), wait_s=CLEANUP_WAIT_S)


def record_session(store: RunStore, cluster: Cluster, options: K8sOptions,
                   version: dict[str, Any] | None) -> None:
    k8s = store.info.setdefault("k8s", {"sessions": []})
    k8s["sessions"].append({"run_id": options.run_id, "started_utc": now_utc(),
                            "server": cluster.server, "context": cluster.context,
                            "namespace": cluster.namespace, "image": options.image,
                            "kubernetes": version, "roles": options.roles,
                            "node_selector": options.node_selector})
    store.save_info()


def run(store: RunStore, cells: list[Cell], cluster: Cluster, options: K8sOptions,
        scenario: Scenario, on_progress=None) -> list[dict]:
    env = KubeEnvironment(cluster, options, scenario.presets)
    try:
        version = cluster.version()
    except LinklabError:
        version = None
    record_session(store, cluster, options, version)
    left: list[str] = []
    try:
        return run_cells(store, cells, env, run_tag=options.run_id, on_progress=on_progress,
                         search_settings=scenario.search)
    finally:
        left = cleanup_run(cluster, options.run_id)
        store.info["k8s"]["sessions"][-1]["left_in_cluster"] = left
        store.save_info()
        if left:
            raise LinklabError(f"still in namespace {cluster.namespace} after "
                               f"{CLEANUP_WAIT_S:g} s: {', '.join(left)} (linklab k8s clean "
                               f"--run {options.run_id})")


def dry_run_objects(cells: list[Cell], options: K8sOptions, scenario: Scenario
                    ) -> list[dict[str, Any]]:
    """Every object every cell would create (later pods show earlier pods' addresses as
    placeholders: they exist only once those pods run)."""
    env = KubeEnvironment(None, options, scenario.presets)  # type: ignore[arg-type]
    objects: list[dict[str, Any]] = []
    for cell in cells:
        placement = check_cell(cell, env.links, options)
        profile = env.profile(cell)

        def history_of(topic, cell=cell):
            return env.history_for(cell, topic)

        cm, pods = cell_objects(cell, placement, profile, history_of, options)
        objects.append(cm)
        objects += [manifest for _plan, _specs, manifest in pods]
    return objects
