"""The Kubernetes objects of a cell, as plain dicts (pure): a ConfigMap and its Pods.

Every object carries ``app.kubernetes.io/managed-by: linklab``, ``linklab.io/run`` (one
id per session of a run) and ``linklab.io/cell`` (the cell's index): linklab deletes
exactly what carries its run's label, and nothing else. Pods are bare Pods with
``restartPolicy: Never`` (a probe runs once; a Job would retry it, and a retried probe
is a different measurement), ``activeDeadlineSeconds`` so the cluster itself ends a
pod that outlives the cell, no service account token and no service links.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from linklab.errors import UsageError
from linklab.k8s import procs as P
from linklab.k8s.placement import HOSTNAME_KEY, PodPlan

MANAGED_BY = ("app.kubernetes.io/managed-by", "linklab")
RUN_LABEL = "linklab.io/run"
CELL_LABEL = "linklab.io/cell"
HOST_LABEL = "linklab.io/host"
FLOW_ANNOTATION = "linklab.io/flow"
CELL_ID_ANNOTATION = "linklab.io/cell-id"
RECORDS_VOLUME = "records"
CELL_VOLUME = "cell"
START_ALLOWANCE_S = 120   # scheduling, image pull and start, before a pod's own deadline
GRACE_S = 15              # podrun stops its probes in at most 10 s


def run_selector(run_id: str) -> str:
    return f"{MANAGED_BY[0]}={MANAGED_BY[1]},{RUN_LABEL}={run_id}"


def cell_selector(run_id: str, index: int) -> str:
    return f"{run_selector(run_id)},{CELL_LABEL}={index}"


def labels(run_id: str, index: int, host: str | None = None) -> dict[str, str]:
    out = {MANAGED_BY[0]: MANAGED_BY[1], RUN_LABEL: run_id, CELL_LABEL: str(index)}
    if host is not None:
        out[HOST_LABEL] = host
    return out


def object_name(run_id: str, index: int, suffix: str | None = None) -> str:
    base = f"linklab-{run_id}-{index}" + (f"-{suffix}" if suffix else "")
    name = re.sub(r"[^a-z0-9-]+", "-", base.lower()).strip("-")
    if len(name) > 63:
        raise UsageError(f"object name {name!r} is longer than 63 characters",
                         argument="--run-id")
    return name


def configmap(run_id: str, index: int, cell_id: str, files: dict[str, str]) -> dict[str, Any]:
    for key in files:
        if not re.fullmatch(r"[-._a-zA-Z0-9]+", key):
            raise UsageError(f"profile file name {key!r} cannot be a ConfigMap key "
                             "(letters, digits, - _ . only)", argument="profile")
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": object_name(run_id, index), "labels": labels(run_id, index),
                         "annotations": {CELL_ID_ANNOTATION: cell_id}},
            "data": dict(files)}


def _affinity(pod: PodPlan, run_id: str, index: int) -> dict[str, Any] | None:
    if pod.affinity is None:
        return None
    term = {"labelSelector": {"matchLabels": {RUN_LABEL: run_id, CELL_LABEL: str(index)}},
            "topologyKey": HOSTNAME_KEY}
    kind = "podAffinity" if pod.affinity == "same-node" else "podAntiAffinity"
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def pod(run_id: str, index: int, cell_id: str, flow: str | None, plan: PodPlan,
        containers: list[P.ContainerSpec], *, image: str, pull_policy: str,
        deadline_s: float, memory: str | None = None,
        pull_secret: str | None = None) -> dict[str, Any]:
    names = [c.name for c in containers]
    if len(set(names)) != len(names):
        raise UsageError(f"cell {cell_id}: two endpoints get the same container name "
                         f"({', '.join(names)}); give the topics names that differ in more "
                         "than case", argument="topics")
    specs = []
    for c in containers:
        entry: dict[str, Any] = {
            "name": c.name, "image": image, "imagePullPolicy": pull_policy,
            "command": list(P.PODRUN),
            "env": [{"name": "LINKLAB_POD_SPEC", "value": json.dumps(c.spec)},
                    {"name": "PYTHONUNBUFFERED", "value": "1"}],
            "volumeMounts": [{"name": RECORDS_VOLUME, "mountPath": P.RECORDS_DIR},
                             {"name": CELL_VOLUME, "mountPath": P.CELL_DIR,
                              "readOnly": True}],
        }
        if memory:
            entry["resources"] = {"limits": {"memory": memory},
                                  "requests": {"memory": memory}}
        specs.append(entry)
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "activeDeadlineSeconds": int(deadline_s + START_ALLOWANCE_S),
        "terminationGracePeriodSeconds": GRACE_S,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "containers": specs,
        "volumes": [{"name": RECORDS_VOLUME, "emptyDir": {}},
                    {"name": CELL_VOLUME,
                     "configMap": {"name": object_name(run_id, index)}}],
    }
    if plan.node_selector:
        spec["nodeSelector"] = dict(plan.node_selector)
    affinity = _affinity(plan, run_id, index)
    if affinity:
        spec["affinity"] = affinity
    if pull_secret:
        spec["imagePullSecrets"] = [{"name": pull_secret}]
    annotations = {CELL_ID_ANNOTATION: cell_id}
    if flow:
        annotations[FLOW_ANNOTATION] = flow
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": object_name(run_id, index, plan.key),
                         "labels": labels(run_id, index, plan.key),
                         "annotations": annotations},
            "spec": spec}


def to_yaml(objects: list[dict[str, Any]], namespace: str | None = None) -> str:
    """A multi-document YAML stream for ``kubectl apply -f -``."""
    docs = []
    for obj in objects:
        obj = json.loads(json.dumps(obj))
        if namespace:
            obj["metadata"]["namespace"] = namespace
        docs.append(yaml.safe_dump(obj, sort_keys=False, width=100))
    return "---\n" + "---\n".join(docs)
