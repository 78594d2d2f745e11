"""The cluster as a place where the bench runs cells: bench.runner's Environment and Bed.

:class:`KubeEnvironment` gives the runner what LinklabEnvironment gives it (profiles,
histories, the model) with a cluster instead of an emulated link, and its
:class:`KubeBed` runs a cell whole (``Bed.run_cell``, the runner's hook for beds that
place endpoints themselves): the cell's ConfigMap, its pods one after another (each
told the addresses of the pods before it), a wait with deadlines that stops at the
cluster's first reason to give up (unschedulable, image pull, a container that cannot
start), the bundles from the pod logs, and the bench's own cellrun.collect_cell for the
row -- the same metrics, failure rules and files as an emulated cell. Leaving the bed
(success, failure, Ctrl-C) deletes the cell's objects by their labels.

The link: a cluster's network is what it is. A link that asks for something linklab
would have to emulate (loss, outage, delay, jitter, burst loss, a trace) is refused
before anything runs; a preset's rate and MTU are kept as the description of the
cluster's network that the tuner and the model use, and preflight checks the MTU.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linklab.bench.links import LinkChoice
from linklab.bench.matrix import Cell
from linklab.bench.namespace_environment import LinklabEnvironment, Links
from linklab.brokers.bench_adapter import adapter_for
from linklab.errors import EnvironmentProblem, LinklabError, UsageError
from linklab.k8s import collect as C
from linklab.k8s import manifests as M
from linklab.k8s import placement as PL
from linklab.k8s import procs as P
from linklab.k8s import reasons as R
from linklab.k8s.cluster import Cluster, ClusterError
from linklab.k8s.podrun import BundleError, read_bundle
from linklab.middleware import MIDDLEWARES

SUPPORTED = tuple(name for name, m in MIDDLEWARES.items() if not m.secured and not m.bridged)
EMULATED_FIELDS = ("loss", "outage", "delay_s", "jitter_s", "burst_loss", "trace")
POLL_S = 0.5


@dataclass
class K8sOptions:
    run_id: str
    image: str
    pull_policy: str = "IfNotPresent"
    roles: dict[str, str] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    memory: str | None = None
    pull_secret: str | None = None
    start_timeout_s: float = float(M.START_ALLOWANCE_S)


def check_cell(cell: Cell, links: Links, options: K8sOptions) -> PL.Placement:
    """Refuse, before anything runs, what a cluster cannot do for this cell."""
    if cell.middleware not in SUPPORTED:
        needs = "its bridges" if MIDDLEWARES[cell.middleware].bridged else "its keystore"
        raise UsageError(f"cell {cell.cell_id}: {cell.middleware} needs {needs} in "
                         f"the pods; linklab k8s runs {', '.join(SUPPORTED)}",
                         argument="middleware")
    if cell.search or cell.rate_fraction is not None:
        raise UsageError(f"cell {cell.cell_id}: rate {cell.rate} searches with many short "
                         "trials; linklab k8s runs cells at a known rate", argument="rate")
    spec = links.spec(cell.link_choice or LinkChoice(cell.link))
    for direction, side in (("up", spec.up), ("down", spec.down)):
        for name in EMULATED_FIELDS:
            value = getattr(side, name)
            if value not in (None, 0, 0.0):
                label = name.removesuffix("_s").replace("_", " ")
                raise UsageError(
                    f"cell {cell.cell_id}: link {cell.link}: {label} ({direction}) would "
                    "have to be emulated; linklab k8s measures the cluster's own network: "
                    "use a link without impairments (e.g. ethernet-1g, lan-2.5g, "
                    "wifi-ideal), or linklab bench", argument="link")
    adapter = adapter_for(cell.middleware)
    placement = PL.place(cell, brokered=bool(adapter and adapter.brokered),
                         roles=options.roles, node_selector=options.node_selector)
    PL.check_order(cell, placement, bool(adapter and adapter.entry.listening_subscribers))
    return placement


def cell_tag(run_id: str, cell: Cell) -> str:
    return f"linklab_{run_id}_{cell.index}"


def cell_objects(cell: Cell, placement: PL.Placement, profile: Any, history_of,
                 options: K8sOptions, known: dict[str, str] | None = None
                 ) -> tuple[dict[str, Any], list[tuple[PL.PodPlan, list[P.ContainerSpec],
                                                       dict[str, Any]]]]:
    """(ConfigMap, [(pod plan, containers, Pod)]) with the addresses in ``known``; for a
    dry run, later pods see earlier ones' addresses as ``<HOST pod IP>``."""
    cm = M.configmap(options.run_id, cell.index, cell.cell_id, P.cell_files(cell, profile))
    pods = []
    seen: dict[str, str] = {}
    for plan in placement.pods:
        addresses = dict(seen) if known is None else known
        processes = P.pod_processes(cell, placement, plan, addresses, profile, history_of,
                                    cell_tag(options.run_id, cell))
        specs = P.containers(cell, plan, processes)
        manifest = M.pod(options.run_id, cell.index, cell.cell_id, placement.flow, plan,
                         specs, image=options.image, pull_policy=options.pull_policy,
                         deadline_s=P.supervisor_deadline_s(cell), memory=options.memory,
                         pull_secret=options.pull_secret)
        pods.append((plan, specs, manifest))
        for host in plan.hosts:
            seen[host] = f"<{host} pod IP>"
    return cm, pods


class KubeBed:
    """One cell on the cluster (bench.protocols.Bed; the runner calls run_cell)."""

    outage_s = 0.0
    shares_local_clock = False  # probes in pods: ends are reported by podrun, not seen here
    gate_files = None     # no discovery gate: pods start when the scheduler places them
    applies_cpu = False   # a Kubernetes cell's CPU is the cluster's (bench/cpu.py refuses)
    runs_cells_whole = True

    def row_fields(self) -> dict[str, Any]:
        return {}

    def __init__(self, env: KubeEnvironment, cell: Cell):
        self.env = env
        self.cell = cell
        self.cluster: Cluster = env.cluster
        self.placed: dict[str, Any] = {}

    # bench.protocols.Bed, for a bed whose endpoints are not local processes
    def spawn(self, host, argv, stdout, stderr):  # noqa: ARG002
        raise EnvironmentProblem("a cluster bed runs whole cells (run_cell), not processes")

    def address(self, host: str) -> str | None:  # noqa: ARG002
        return None

    def host(self, name: str) -> Any:  # noqa: ARG002
        return None

    def interface(self, host: str) -> str | None:  # noqa: ARG002
        return None

    def snapshot(self, hosts: tuple[str, ...] = ()) -> dict[str, Any]:  # noqa: ARG002
        return {}

    def start_traffic(self, first_sample_in_s: float) -> None:
        pass

    def outage_on_ns(self) -> int | None:
        return None

    def dark_windows_ns(self) -> list[tuple[int, int | None]]:
        return []  # no declared outage: the real network is what it is

    def stages(self) -> dict[str, Any]:
        spec = self.env.links.spec(self.cell.link_choice or LinkChoice(self.cell.link))
        return {"preset": self.cell.link, "emulated": False,
                "applied": "none: the cluster's own network carries the traffic",
                "described_rate_bit_s": spec.up.rate_bps, "mtu_assumed": spec.mtu,
                "cluster": {"server": self.cluster.server, "context": self.cluster.context,
                            "namespace": self.cluster.namespace}}

    # --- the cell ------------------------------------------------------------------------

    def run_cell(self, cell: Cell, profile: Any, profile_path: Path | None, out_dir: Path,
                 probes: list, history_of, model_fanout) -> tuple[dict[str, Any], list]:
        from linklab.bench import endpoints as E
        from linklab.bench.cellrun import collect_cell

        opts = self.env.options
        placement = check_cell(cell, self.env.links, opts)
        cm, _ = cell_objects(cell, placement, profile, history_of, opts, known={})
        self.cluster.create(cm)
        known: dict[str, str] = {}
        created: list[tuple[PL.PodPlan, list[P.ContainerSpec], dict[str, Any]]] = []
        all_processes: list[dict[str, Any]] = []
        for plan in placement.pods:
            processes = P.pod_processes(cell, placement, plan, known, profile, history_of,
                                        cell_tag(opts.run_id, cell))
            all_processes += processes
            specs = P.containers(cell, plan, processes)
            manifest = M.pod(opts.run_id, cell.index, cell.cell_id, placement.flow, plan,
                             specs, image=opts.image, pull_policy=opts.pull_policy,
                             deadline_s=P.supervisor_deadline_s(cell), memory=opts.memory,
                             pull_secret=opts.pull_secret)
            self.cluster.create(manifest)
            created.append((plan, specs, manifest))
            if plan is not placement.pods[-1]:
                ip = self._wait_ip(manifest["metadata"]["name"])
                for host in plan.hosts:
                    known[host] = ip
        pods = self._wait_end([m["metadata"]["name"] for _, _, m in created],
                              P.supervisor_deadline_s(cell) + opts.start_timeout_s + 30)
        self.placed = {p["metadata"]["name"]: {"node": (p.get("spec") or {}).get("nodeName"),
                                               "ip": (p.get("status") or {}).get("podIP")}
                       for p in pods.values()}
        results, cluster_notes = self._bundles(created, pods)
        C.write_files(results, out_dir)
        plan_eps = E.plan(cell, lambda h: h, adapter_for(cell.middleware), history_of)
        names = [ep.name for ep in plan_eps]
        started = C.probe_objects(results, out_dir, names)
        missing = [n for n in names if n not in started]
        if missing:
            raise ClusterError(f"cell {cell.cell_id}: no report from {', '.join(missing)}"
                               + (f" ({'; '.join(cluster_notes)})" if cluster_notes else ""))
        clock_note = C.align_clocks(plan_eps, results, out_dir)
        hosts_of_pod = {plan.key: plan.hosts for plan in placement.pods}
        before, after = C.snapshots(results, hosts_of_pod, len(placement.pods) == 1)
        row, streams = collect_cell(cell, plan_eps, started, before, after, out_dir,
                                C.ended_ns(results), C.broker_cpu(results), 0.0, self,
                                profile, model_fanout)
        self._endpoints_file(out_dir, all_processes, placement)
        notes = [n for n in (clock_note, *cluster_notes) if n]
        if notes:
            row["exit_note"] = "; ".join(filter(None, [row.get("exit_note"), *notes]))
        if cluster_notes and row.get("failure_reason"):
            row["failure_reason"] = f"{row['failure_reason']} ({'; '.join(cluster_notes)})"
        return row, streams

    def _endpoints_file(self, out_dir: Path, processes: list[dict[str, Any]],
                        placement: PL.Placement) -> None:
        (out_dir / "endpoints.json").write_text(json.dumps(
            [{"role": p["role"], "topic": p.get("topic"), "host": p["host"], "name": p["name"],
              "peers": p.get("peers", []), "qos": p.get("qos", []),
              "pod": M.object_name(self.env.options.run_id, self.cell.index,
                                   placement.pod_of(p["host"]).key),
              "argv": p["argv"]} for p in processes], indent=1) + "\n")
        (out_dir / "k8s.json").write_text(json.dumps(
            {"flow": placement.flow, "pods": PL.describe(placement), "placed": self.placed,
             "namespace": self.cluster.namespace, "run_id": self.env.options.run_id},
            indent=1) + "\n")

    def _pod(self, name: str) -> dict[str, Any]:
        found = self.cluster.pods(f"{M.cell_selector(self.env.options.run_id, self.cell.index)}")
        for pod in found:
            if pod["metadata"]["name"] == name:
                return pod
        raise ClusterError(f"pod {name} is gone (deleted by someone else?)")

    def _wait_ip(self, name: str) -> str:
        end = time.monotonic() + self.env.options.start_timeout_s
        while True:
            pod = self._pod(name)
            reason = R.stuck(pod)
            if reason:
                raise ClusterError(reason)
            ip = (pod.get("status") or {}).get("podIP")
            if ip:
                return ip
            if time.monotonic() >= end:
                raise ClusterError(f"pod {name} has no address after "
                                   f"{self.env.options.start_timeout_s:g} s (phase "
                                   f"{(pod.get('status') or {}).get('phase')})"
                                   + self._last_warning(name))
            time.sleep(POLL_S)

    def _last_warning(self, name: str) -> str:
        """': <reason>: <message>' of the pod's latest Warning event (e.g. the kubelet's
        FailedCreatePodSandBox), or ''."""
        try:
            events = [e for e in self.cluster.events(name) if e.get("type") == "Warning"]
        except ClusterError:
            return ""
        if not events:
            return ""
        last = max(events, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
        message = (last.get("message") or "").strip().splitlines()
        return f": {last.get('reason')}: {message[0][:300] if message else ''}"

    def _wait_end(self, names: list[str], timeout_s: float) -> dict[str, dict[str, Any]]:
        end = time.monotonic() + timeout_s
        started = time.monotonic()
        selector = M.cell_selector(self.env.options.run_id, self.cell.index)
        while True:
            pods = {p["metadata"]["name"]: p for p in self.cluster.pods(selector)}
            for name in names:
                if name not in pods:
                    raise ClusterError(f"pod {name} is gone (deleted by someone else?)")
                reason = R.stuck(pods[name])
                if reason:
                    raise ClusterError(reason)
                deadline = R.pod_deadline(pods[name])
                if deadline:
                    raise ClusterError(deadline)
                phase = (pods[name].get("status") or {}).get("phase")
                if phase == "Pending" and time.monotonic() - started > \
                        self.env.options.start_timeout_s:
                    raise ClusterError(f"pod {name} did not start in "
                                       f"{self.env.options.start_timeout_s:g} s"
                                       + self._last_warning(name))
            if all(R.ended(pods[n]) for n in names):
                return pods
            if time.monotonic() >= end:
                running = [n for n in names if not R.ended(pods[n])]
                raise ClusterError(f"pods {', '.join(running)} did not end within "
                                   f"{timeout_s:.0f} s")
            time.sleep(POLL_S)

    def _bundles(self, created, pods) -> tuple[list[C.ContainerResult], list[str]]:
        results: list[C.ContainerResult] = []
        notes: list[str] = []
        for plan, specs, manifest in created:
            name = manifest["metadata"]["name"]
            pod = pods[name]
            for spec in specs:
                line = R.exit_line(pod, spec.name)
                if line:
                    notes.append(line)
                try:
                    files = read_bundle(self.cluster.log(name, spec.name))
                except (BundleError, ClusterError) as error:
                    raise ClusterError(f"pod {name} container {spec.name}: {error}"
                                       + (f" ({line})" if line else "")) from None
                results.append(C.ContainerResult(
                    plan.key, name, spec.name, (pod.get("spec") or {}).get("nodeName"),
                    files, C.info_of(files, spec.name)))
        return results, notes


class KubeEnvironment(LinklabEnvironment):
    """bench.protocols.Environment on a cluster (see module doc): the emulated environment's
    links and profiles (profile, history_for, model_amplification, link_mtu), cells in pods."""

    def __init__(self, cluster: Cluster, options: K8sOptions,
                 user_presets: dict[str, dict[str, Any]] | None = None):
        super().__init__(user_presets)
        self.cluster = cluster
        self.options = options

    @contextlib.contextmanager
    def link(self, cell: Cell, run_tag: str) -> Iterator[KubeBed]:  # noqa: ARG002
        try:
            yield KubeBed(self, cell)
        finally:
            left = self.cluster.delete_labelled(
                M.cell_selector(self.options.run_id, cell.index), wait_s=60)
            if left:
                raise LinklabError(f"cell {cell.cell_id}: still in the cluster after 60 s: "
                                   f"{', '.join(left)}")

    def outage_s(self, cell: Cell) -> float:  # noqa: ARG002
        return 0.0

    def link_rate_bits(self, cell: Cell) -> float | None:
        rate = self.links.spec(cell.link_choice or LinkChoice(cell.link)).up.rate_bps
        return float(rate) if rate else None

    def check_ready(self, cells: list[Cell]) -> None:
        from linklab.bench.checks import about
        from linklab.bench.cpu import CPU_NONE
        from linklab.bench.endpoints import qos_args

        for cell in cells:
            for key in ("cpu_load", "cpu_quota"):  # pods: no competitors, no cgroups
                if getattr(cell, key) != CPU_NONE:
                    with about(cell):
                        raise UsageError(f"{getattr(cell, key)}: linklab k8s runs pods, it "
                                         "starts no CPU competitors and makes no cgroups; "
                                         f"remove {key} (or run the scenario with linklab "
                                         "bench)", argument=key)
            if cell.broker_host not in (None, "edge"):  # bench.broker_host
                with about(cell):
                    raise UsageError(f"{cell.broker_host}: linklab k8s runs the broker in "
                                     "the edge host's pod; remove broker_host (or run the "
                                     "scenario with linklab bench)", argument="broker_host")
            check_cell(cell, self.links, self.options)
            self.profiles.check(cell)
            for topic in cell.topics:
                qos_args(cell.middleware, topic, self.history_for(cell, topic))
