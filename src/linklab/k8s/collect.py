"""From the pods' log bundles (podrun.py) to what the bench's cell code reads.

Each container's bundle holds its probes' record files, stdout, stderr, exit/CPU/RSS and
the pod's counters and clock. They are written into the cell's records directory under
the same names as an emulated run (``pub.bin``, ``sub.out``, ...), the probes become
:class:`linklab.bench.probe_driver.ProbeProcess` objects carrying what podrun measured,
and the counters become the two snapshots ``cellrun`` turns into the row's columns.

Clocks: the probes stamp CLOCK_MONOTONIC, which only means something within one kernel.
When the endpoints of a topic ran on different nodes (different boot ids), every time
stamp is moved onto the first pod's time line through each node's CLOCK_REALTIME
(realtime - monotonic, read by podrun at start): a latency across nodes is then as good
as the nodes' clock synchronisation (NTP/PTP), and the row says so. The files as the
probes wrote them are kept as ``NAME.node-clock.bin``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from linklab.bench import metrics as M
from linklab.bench.namespace_environment import parse_udp_counters
from linklab.bench.probe_driver import ProbeProcess


@dataclass
class ContainerResult:
    pod: str             # the pod's key (host or "all")
    pod_name: str
    container: str
    node: str | None
    files: dict[str, bytes]
    info: dict[str, Any]  # pod-<container>.json


def write_files(results: list[ContainerResult], out_dir: Path) -> None:
    pods_dir = out_dir / "pods"
    pods_dir.mkdir(parents=True, exist_ok=True)
    for result in results:
        for name, data in result.files.items():
            if name.startswith("pod-"):
                (pods_dir / f"{result.pod_name}-{name[4:]}").write_bytes(data)
            elif name.endswith((".bin", ".out", ".log")):
                (out_dir / name).write_bytes(data)


def probe_objects(results: list[ContainerResult], out_dir: Path,
                  names: list[str]) -> dict[str, ProbeProcess]:
    """ProbeProcess objects with podrun's exit status, CPU seconds and peak RSS."""
    out: dict[str, ProbeProcess] = {}
    for result in results:
        for name, report in (result.info.get("processes") or {}).items():
            if name not in names:
                continue
            probe = ProbeProcess(role=report.get("role") or "", popen=None,  # type: ignore
                                 stdout_path=out_dir / f"{name}.out", started=0.0)
            probe.exit_code = report.get("exit_code")
            probe.cpu_s = report.get("cpu_s")
            probe.rss_peak_bytes = report.get("rss_peak_bytes")
            probe.signalled_by_runner = bool(report.get("signalled_by_runner"))
            probe.ended = float(report.get("wall_s") or 0.0)
            out[name] = probe
    return out


def broker_cpu(results: list[ContainerResult]) -> float:
    for result in results:
        report = (result.info.get("processes") or {}).get("broker")
        if report and report.get("cpu_s") is not None:
            return float(report["cpu_s"])
    return math.nan


def _offset(info: dict[str, Any]) -> int:
    clock = info.get("clock") or {}
    return int(clock.get("realtime_ns", 0)) - int(clock.get("monotonic_ns", 0))


def kernel_of(results: list[ContainerResult]) -> dict[str, tuple[str | None, int]]:
    """endpoint name -> (boot id, realtime - monotonic ns) of the container it ran in."""
    out = {}
    for result in results:
        clock = result.info.get("clock") or {}
        for name in result.info.get("processes") or {}:
            out[name] = (clock.get("boot_id"), _offset(result.info))
    return out


def align_clocks(plan: list[Any], results: list[ContainerResult], out_dir: Path) -> str | None:
    """Put every record of the cell on the first container's CLOCK_MONOTONIC when its
    endpoints ran on different kernels; returns a note for the row, or None."""
    kernels = kernel_of(results)
    if not results or len({k[0] for k in kernels.values()}) <= 1:
        return None
    ref = _offset(results[0].info)
    pub_of = {ep.topic.name: ep.name for ep in plan if ep.role == "pub"}
    for ep in plan:
        path = out_dir / f"{ep.name}.bin"
        if ep.name not in kernels or not path.exists():
            continue
        try:
            role, records = M.read_records(path)
        except M.RecordFileError:
            continue
        sender = pub_of.get(ep.topic.name, ep.name)
        send_shift = kernels.get(sender, kernels[ep.name])[1] - ref
        records = records.copy()
        records["t_send_ns"] = records["t_send_ns"] + np.int64(send_shift)
        if ep.role == "sub":
            nonzero = records["t_recv_ns"] != 0
            records["t_recv_ns"] = np.where(
                nonzero, records["t_recv_ns"] + np.int64(kernels[ep.name][1] - ref),
                records["t_recv_ns"])
        path.rename(out_dir / f"{ep.name}.node-clock.bin")
        M.write_records(path, role, records)
    return ("endpoints ran on different nodes: latencies use the nodes' CLOCK_REALTIME "
            "(as good as their clock synchronisation)")


def ended_ns(results: list[ContainerResult]) -> int:
    """When the last container ended, on the first container's CLOCK_MONOTONIC."""
    if not results:
        return 0
    ref = _offset(results[0].info)
    ends = [int((r.info.get("clock_end") or {}).get("realtime_ns", 0)) - ref
            for r in results if r.info.get("clock_end")]
    return max(ends) if ends else 0


def snapshots(results: list[ContainerResult], hosts_of_pod: dict[str, tuple[str, ...]],
              one_pod: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Bed.snapshot-shaped (before, after): each pod's interface counters (not lo; none
    when the whole cell ran in one pod: its traffic never leaves it) and UDP counters
    (under the pod's first host)."""
    by_pod: dict[str, list[ContainerResult]] = {}
    for result in results:
        by_pod.setdefault(result.pod, []).append(result)
    before: dict[str, Any] = {"link": {"interfaces": {}}, "udp": {}}
    after: dict[str, Any] = {"link": {"interfaces": {}}, "udp": {}}
    for pod, group in by_pod.items():
        first = min(group, key=lambda r: (r.info.get("clock") or {}).get("realtime_ns", 0))
        last = max(group, key=lambda r: (r.info.get("clock_end") or {}).get("realtime_ns", 0))
        host = hosts_of_pod.get(pod, (pod,))[0]
        for snap, info in ((before, first.info.get("before") or {}),
                           (after, last.info.get("after") or {})):
            snap["udp"][host] = parse_udp_counters(info.get("snmp") or "")
            if not one_pod:
                snap["link"]["interfaces"][host] = {
                    name: stats for name, stats in (info.get("interfaces") or {}).items()
                    if name != "lo"}
    return before, after


def pod_mtus(results: list[ContainerResult]) -> dict[str, int]:
    out = {}
    for result in results:
        for name, stats in ((result.info.get("before") or {}).get("interfaces") or {}).items():
            if name != "lo" and stats.get("mtu"):
                out[f"{result.pod_name}/{name}"] = int(stats["mtu"])
    return out


def info_of(files: dict[str, bytes], container: str) -> dict[str, Any]:
    raw = files.get(f"pod-{container}.json")
    if raw is None:
        candidates = [v for k, v in files.items() if k.startswith("pod-")]
        raw = candidates[0] if candidates else b"{}"
    try:
        return json.loads(raw)
    except ValueError:
        return {}
