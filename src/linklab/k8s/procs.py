"""What each container of a cell's pods runs: podrun specs built from the bench's plan.

The endpoints, their peers and QoS flags come from linklab.bench.endpoints.plan and the
probe command line from linklab.bench.probe_driver.ProbeArgs -- the same code the
emulated bench runs -- with the pod's addresses (placement.address_for) and the paths
inside the probe image: records under /records (an emptyDir), the profile and broker
configuration under /etc/linklab/cell (the cell's ConfigMap), binaries in
/opt/linklab/bin. The timeouts are cellrun's, plus START_SKEW_S: pods start one after
another, so a subscriber may wait that much longer for its publisher's pod.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linklab.bench import endpoints as E
from linklab.bench.cellrun import MATCH_ALLOWANCE_S, MATCH_TIMEOUT_S, SETTLE_S
from linklab.bench.matrix import Cell, deadline_s
from linklab.bench.probe_driver import ProbeArgs
from linklab.brokers.bench_adapter import MQTT_PORT, ZENOH_PORT, adapter_for
from linklab.brokers.mosquitto import MosquittoConfig, render_mosquitto_conf
from linklab.brokers.zenoh_router import ZenohRouterConfig, render_router_config
from linklab.k8s.placement import LOOPBACK, Placement, PodPlan, address_for

IMAGE_BIN = "/opt/linklab/bin"
RECORDS_DIR = "/records"
CELL_DIR = "/etc/linklab/cell"
PODRUN = ["python3", "/opt/linklab/podrun.py"]
START_SKEW_S = 20.0      # later pods of a cell start after the earlier ones run
PUB_DELAY_S = 0.3        # as cellrun: subscribers' participants exist before publishers look
BROKER_LINGER_S = 3.0
MOSQUITTO_CONF = "mosquitto.conf"
ZENOH_ROUTER_CONF = "zenoh-router.json5"


@dataclass(frozen=True)
class ContainerSpec:
    name: str
    processes: tuple[dict[str, Any], ...]
    spec: dict[str, Any]          # LINKLAB_POD_SPEC


def supervisor_deadline_s(cell: Cell) -> float:
    """How long podrun lets its processes run before stopping them."""
    return START_SKEW_S + MATCH_ALLOWANCE_S + cell.warmup_s + deadline_s(cell, 0.0) + 10.0


def cell_files(cell: Cell, profile: Any) -> dict[str, str]:
    """The ConfigMap's files: the cell's profile and its broker's configuration."""
    files: dict[str, str] = {}
    if profile is not None and profile.xml is not None and profile.file_name:
        files[profile.file_name] = profile.xml
    adapter = adapter_for(cell.middleware)
    if adapter is not None and adapter.brokered:
        if adapter.entry.broker == "mosquitto":
            files[MOSQUITTO_CONF] = render_mosquitto_conf(
                MosquittoConfig(address="0.0.0.0", port=MQTT_PORT))
        else:
            files[ZENOH_ROUTER_CONF] = json.dumps(render_router_config(
                ZenohRouterConfig(listen=[f"tcp/0.0.0.0:{ZENOH_PORT}"])), indent=2)
    return files


def probe_path(middleware: str) -> str:
    adapter = adapter_for(middleware)
    probe = adapter.probe if adapter is not None else middleware
    return f"{IMAGE_BIN}/linklab-probe-{probe}"


def broker_argv(middleware: str) -> list[str]:
    adapter = adapter_for(middleware)
    if adapter is None or not adapter.brokered:
        return []
    if adapter.entry.broker == "mosquitto":
        return ["mosquitto", "-c", f"{CELL_DIR}/{MOSQUITTO_CONF}"]
    return ["python3", "-m", "linklab.brokers.zenoh_router", "--config",
            f"{CELL_DIR}/{ZENOH_ROUTER_CONF}"]


def broker_port(middleware: str) -> int:
    adapter = adapter_for(middleware)
    return MQTT_PORT if adapter is not None and adapter.entry.broker == "mosquitto" \
        else ZENOH_PORT


def pod_processes(cell: Cell, placement: Placement, pod: PodPlan, known: dict[str, str],
                  profile: Any, history_of: Callable, tag: str) -> list[dict[str, Any]]:
    """The processes of one pod: broker first, subscribers, then publishers."""
    adapter = adapter_for(cell.middleware)
    address = address_for(placement, pod, known)
    plan = E.plan(cell, address, adapter, history_of)
    separate = len(placement.pods) > 1
    profile_path = (Path(CELL_DIR) / profile.file_name
                    if profile is not None and profile.xml is not None and profile.file_name
                    else None)
    binary = Path(probe_path(cell.middleware))
    grace = deadline_s(cell, 0.0) - cell.publish_s
    procs: list[dict[str, Any]] = []
    brokered = adapter is not None and adapter.brokered
    broker_at = None
    if brokered:
        edge = address(E.BROKER_HOST)
        broker_at = f"{edge}:{broker_port(cell.middleware)}" if edge else None
        if E.BROKER_HOST in pod.hosts:
            procs.append({"name": "broker", "role": "broker", "host": E.BROKER_HOST,
                          "argv": broker_argv(cell.middleware), "wait_tcp": None,
                          "delay_s": 0.0})
    dds = adapter is None  # plain Fast DDS / Cyclone DDS: peers by unicast
    for ep in [e for e in plan if e.host in pod.hosts]:
        topic = ep.topic
        extra = tuple(ep.extra)
        peers = ep.peers
        if dds and not peers:
            # its counterparts' pods start later: unicast discovery all the same (multicast
            # rarely crosses pods), on the participant's well-known ports, so their
            # announcements reach it and it answers them (Cyclone: ParticipantIndex auto)
            peers = (LOOPBACK,)
        if separate:  # a listener must be reachable from the other pods
            extra = tuple(x.replace(f"/{LOOPBACK}:", "/0.0.0.0:") for x in extra)
        common = dict(role=ep.role, topic=f"{tag}_{topic.name}", type=topic.type,
                      size=topic.payload_bytes, rate_hz=topic.rate_hz, count=topic.messages,
                      duration_s=None, qos_flags=ep.qos, profile=profile_path,
                      records=Path(RECORDS_DIR) / f"{ep.name}.bin", peers=peers,
                      interface=None, match_timeout_s=MATCH_TIMEOUT_S + START_SKEW_S,
                      extra=extra)
        if ep.role == "sub":
            args = ProbeArgs(warmup_s=0.0, idle_timeout_s=MATCH_ALLOWANCE_S + START_SKEW_S
                             + cell.warmup_s + deadline_s(cell, 0.0), **common)
        else:
            args = ProbeArgs(warmup_s=cell.warmup_s, linger_s=grace,
                             subscribers=len(topic.subscribers), **common)
        procs.append({"name": ep.name, "role": ep.role, "host": ep.host,
                      "argv": args.argv(binary), "wait_tcp": broker_at if brokered else None,
                      "delay_s": PUB_DELAY_S if ep.role == "pub" else 0.0,
                      "topic": topic.name, "peers": list(peers), "qos": list(ep.qos)})
    return procs


def containers(cell: Cell, pod: PodPlan, procs: list[dict[str, Any]]) -> list[ContainerSpec]:
    """intra-container: one container runs them all; otherwise one container each."""
    deadline = supervisor_deadline_s(cell)
    groups = [("probes", procs)] if pod.one_container else [(p["name"], [p]) for p in procs]
    out = []
    for name, group in groups:
        spec = {"version": 1, "container": container_name(name), "deadline_s": deadline,
                "settle_s": SETTLE_S, "broker_linger_s": BROKER_LINGER_S,
                "records_dir": RECORDS_DIR,
                "processes": [{k: p[k] for k in ("name", "role", "argv", "wait_tcp",
                                                 "delay_s")} for p in group]}
        if len(groups) > 1:
            spec["peer_containers"] = [container_name(n) for n, _ in groups if n != name]
        if all(p["role"] == "broker" for p in group) and len(groups) > 1:
            spec["await_containers"] = [container_name(n) for n, _ in groups if n != name]
        out.append(ContainerSpec(container_name(name), tuple(group), spec))
    return out


def container_name(name: str) -> str:
    """A DNS-1123 label from an endpoint name (sub-imu-edge-2 stays as it is)."""
    import re

    text = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "probe"
    return text[:63].rstrip("-")
