"""The cluster through the official ``kubernetes`` Python client, as kubectl finds it.

KUBECONFIG (one file or a ``:``-separated list) or ~/.kube/config, ``--context``, and
``--namespace`` (default: the context's namespace, else ``default``); inside a pod, the
in-cluster service account. Every call's failure becomes one line naming what failed
and the API server's own message (Forbidden, NotFound, connection refused, ...).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from linklab.errors import EnvironmentProblem, LinklabError, UsageError
from linklab.k8s import manifests as M

POLL_S = 0.5


class ClusterError(LinklabError):
    """The cluster refused or failed something linklab asked (one line, its reason)."""


def _api_message(error: Exception) -> str:
    body = getattr(error, "body", None)
    if body:
        try:
            import json

            data = json.loads(body)
            return f"{data.get('reason') or getattr(error, 'reason', '')}: {data.get('message')}"
        except ValueError:
            pass
    status = getattr(error, "status", None)
    reason = getattr(error, "reason", None)
    if status or reason:
        return f"{status} {reason}".strip()
    return str(error).splitlines()[0] if str(error) else type(error).__name__


@dataclass
class Cluster:
    core: Any           # kubernetes.client.CoreV1Api
    api: Any            # kubernetes.client.ApiClient
    namespace: str
    context: str | None
    server: str

    # --- calls ----------------------------------------------------------------------

    def _call(self, what: str, fn, *args, **kwargs):
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return fn(*args, **kwargs)
        except ApiException as error:
            raise ClusterError(f"{what}: {_api_message(error)}") from None
        except (HTTPError, OSError) as error:
            raise ClusterError(f"{what}: cannot reach the API server {self.server}: "
                               f"{str(error).splitlines()[0][:200]}") from None

    def version(self) -> dict[str, Any]:
        from kubernetes import client

        info = self._call("version", client.VersionApi(self.api).get_code)
        return {"git_version": info.git_version, "major": info.major, "minor": info.minor}

    def create(self, obj: dict[str, Any], dry_run: bool = False) -> dict[str, Any]:
        kind = obj["kind"]
        kw = {"dry_run": "All"} if dry_run else {}
        name = obj["metadata"]["name"]
        if kind == "Pod":
            out = self._call(f"create pod {name}", self.core.create_namespaced_pod,
                             self.namespace, obj, **kw)
        elif kind == "ConfigMap":
            out = self._call(f"create configmap {name}", self.core.create_namespaced_config_map,
                             self.namespace, obj, **kw)
        else:
            raise UsageError(f"linklab creates Pods and ConfigMaps, not {kind}")
        return self.api.sanitize_for_serialization(out)

    def pods(self, selector: str) -> list[dict[str, Any]]:
        out = self._call("list pods", self.core.list_namespaced_pod, self.namespace,
                         label_selector=selector)
        return [self.api.sanitize_for_serialization(p) for p in out.items]

    def configmaps(self, selector: str) -> list[dict[str, Any]]:
        out = self._call("list configmaps", self.core.list_namespaced_config_map,
                         self.namespace, label_selector=selector)
        return [self.api.sanitize_for_serialization(p) for p in out.items]

    def events(self, name: str) -> list[dict[str, Any]]:
        out = self._call("list events", self.core.list_namespaced_event, self.namespace,
                         field_selector=f"involvedObject.name={name}")
        return [self.api.sanitize_for_serialization(e) for e in out.items]

    def log(self, pod: str, container: str) -> str:
        return self._call(f"log of pod {pod} container {container}",
                          self.core.read_namespaced_pod_log, pod, self.namespace,
                          container=container, _preload_content=True)

    def nodes(self) -> list[dict[str, Any]]:
        out = self._call("list nodes", self.core.list_node)
        return [self.api.sanitize_for_serialization(n) for n in out.items]

    # --- deleting by labels -------------------------------------------------------------

    def delete_labelled(self, selector: str, *, wait_s: float = 60.0,
                        grace_s: int | None = None) -> list[str]:
        """Delete every Pod and ConfigMap carrying ``selector`` (it always includes the
        managed-by label), wait until they are gone; returns the names still there."""
        if "app.kubernetes.io/managed-by=linklab" not in selector:
            raise UsageError("refusing to delete without linklab's managed-by label",
                             argument="selector")
        kw = {} if grace_s is None else {"grace_period_seconds": grace_s}
        self._call("delete pods", self.core.delete_collection_namespaced_pod, self.namespace,
                   label_selector=selector, **kw)
        self._call("delete configmaps", self.core.delete_collection_namespaced_config_map,
                   self.namespace, label_selector=selector)
        end = time.monotonic() + wait_s
        while True:
            left = [f"pod/{p['metadata']['name']}" for p in self.pods(selector)] + \
                [f"configmap/{c['metadata']['name']}" for c in self.configmaps(selector)]
            if not left or time.monotonic() >= end:
                return left
            time.sleep(POLL_S)

    def leftovers(self, selector: str) -> list[str]:
        return [f"pod/{p['metadata']['name']}" for p in self.pods(selector)] + \
            [f"configmap/{c['metadata']['name']}" for c in self.configmaps(selector)]


def connect(kubeconfig: str | None = None, context: str | None = None,
            namespace: str | None = None) -> Cluster:
    """A Cluster as kubectl would reach it (see module doc)."""
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    loaded_context = None
    try:
        if kubeconfig or os.environ.get("KUBECONFIG") or os.path.exists(
                os.path.expanduser("~/.kube/config")) or context:
            contexts, active = config.list_kube_config_contexts(config_file=kubeconfig)
            chosen = active
            if context is not None:
                chosen = next((c for c in contexts if c["name"] == context), None)
                if chosen is None:
                    names = ", ".join(c["name"] for c in contexts) or "none"
                    raise UsageError(f"no context {context!r} in the kubeconfig (contexts: "
                                     f"{names})", argument="--context")
            api = config.new_client_from_config(config_file=kubeconfig,
                                                context=chosen["name"] if chosen else None)
            loaded_context = chosen["name"] if chosen else None
            ns = namespace or ((chosen or {}).get("context") or {}).get("namespace") \
                or "default"
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config()
            api = client.ApiClient()
            ns = namespace or _incluster_namespace()
        else:
            raise EnvironmentProblem("no kubeconfig: set KUBECONFIG, pass --kubeconfig, or "
                                     "create ~/.kube/config")
    except ConfigException as error:
        raise UsageError(f"kubeconfig: {str(error).splitlines()[0]}",
                         argument="--kubeconfig") from None
    except OSError as error:
        raise UsageError(f"kubeconfig: {error.strerror or error} ({error.filename})",
                         argument="--kubeconfig") from None
    return Cluster(client.CoreV1Api(api), api, ns, loaded_context, api.configuration.host)


def _incluster_namespace() -> str:
    path = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
    try:
        with open(path) as handle:
            return handle.read().strip() or "default"
    except OSError:
        return "default"


def cleanup(cluster: Cluster, run_id: str, wait_s: float = 60.0) -> list[str]:
    return cluster.delete_labelled(M.run_selector(run_id), wait_s=wait_s)
