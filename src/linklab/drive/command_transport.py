"""Move the drive plan's commands through a real middleware between two hosts and return
what the robot received (the command trace). Uses the same probes as the benchmark, so a
middleware is judged by the same code in both: the host publishes one Twist-sized sample
(52 bytes, the CDR size of geometry_msgs/Twist) per command at 10 Hz; sample ``seq`` is
the plan's command ``seq`` (both ends know the plan), and the robot's receive time of each
sample is when that command takes effect.
"""

from __future__ import annotations

import json
import signal
import struct
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from linklab.brokers import MosquittoConfig, ZenohRouterConfig, start_mosquitto, start_zenoh_router
from linklab.brokers.process import BrokerProcess, in_namespace
from linklab.drive.hosts import Hosts
from linklab.drive.kinematics import TWIST_CDR_BYTES, Received, SquarePlan
from linklab.errors import EnvironmentProblem, LinklabError
from linklab.middleware import family_of
from linklab.middleware import middleware as registry_entry
from linklab.probes.qos import ROS2_PROFILES, probe_qos_args
from linklab.probes.zenoh_choice import zenoh_probe_argv

REPO = Path(__file__).resolve().parents[3]
PROBES = REPO / "build" / "probes"
MIDDLEWARES = ("fastdds", "cyclonedds", "zenoh-peer", "zenoh-router", "mqtt")
ZENOH_PORT = 7447
MQTT_PORT = 1883


def probe_command(middleware: str) -> list[str]:
    probe = family_of(middleware)
    if not probe.built:
        return zenoh_probe_argv()  # native or Python: LINKLAB_ZENOH_PROBE
    binary = PROBES / probe.name / probe.binary
    if not binary.exists():
        raise EnvironmentProblem(f"{binary} is not built (run scripts/setup.sh; the DDS probes "
                                 "come from branch probes)")
    return [str(binary)]


@dataclass
class CommandTrace:
    middleware: str
    sent: int
    received: list[Received]
    latencies_s: list[float]
    broker_cpu_percent: float | None = None
    errors: list[str] = field(default_factory=list)


def read_records(path: Path) -> list[tuple[int, int, int, int]]:
    data = path.read_bytes()
    if data[:8] != b"LLREC1\0\0":
        raise EnvironmentProblem(f"{path}: not a linklab record file")
    size = struct.unpack_from("<I", data, 8)[0]
    return [struct.unpack_from("<QqqI", data, 16 + i * size)
            for i in range((len(data) - 16) // size)]


def _endpoints(middleware: str, hosts: Hosts) -> tuple[list[str], list[str]]:
    """Extra probe arguments (publisher on edge, subscriber on robot)."""
    entry = registry_entry(middleware)
    if entry.broker == "mosquitto":
        peer = ["--peer", f"{hosts.edge_addr}:{MQTT_PORT}"]
        return peer, peer
    if entry.listening_subscribers:
        endpoint = f"tcp/{hosts.robot_addr}:{ZENOH_PORT}"
        return ["--mode", "peer", "--peer", endpoint], ["--mode", "peer", "--listen", endpoint]
    if entry.broker == "zenoh-router":
        router = ["--mode", "client", "--peer", f"tcp/{hosts.edge_addr}:{ZENOH_PORT}"]
        return router, router
    # DDS: unicast peers, both directions
    return ["--peer", hosts.robot_addr], ["--peer", hosts.edge_addr]


def _start_broker(middleware: str, hosts: Hosts, workdir: Path) -> BrokerProcess | None:
    broker = registry_entry(middleware).broker
    if broker == "mosquitto":
        return start_mosquitto(MosquittoConfig(address=hosts.edge_addr, port=MQTT_PORT),
                               workdir, netns=hosts.edge)
    if broker == "zenoh-router":
        return start_zenoh_router(
            ZenohRouterConfig(listen=[f"tcp/{hosts.edge_addr}:{ZENOH_PORT}"]), workdir,
            netns=hosts.edge)
    return None


def _summary(process: subprocess.Popen, timeout_s: float) -> dict:
    try:
        out, err = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=15)
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise LinklabError(f"probe exited {process.returncode} without a summary: {err[-500:]}")


def transmit(middleware: str, hosts: Hosts, plan: SquarePlan, workdir: Path) -> CommandTrace:
    """Send every command of ``plan`` from the edge host to the robot host over
    ``middleware``; return what arrived and when."""
    if middleware not in MIDDLEWARES:
        raise LinklabError(f"unknown middleware {middleware!r}")
    workdir.mkdir(parents=True, exist_ok=True)
    probe = probe_command(middleware)
    pub_extra, sub_extra = _endpoints(middleware, hosts)
    # cmd_vel with ROS 2's default QoS (KEEP_LAST 10, RELIABLE, VOLATILE); MQTT and Zenoh
    # take its reliability (they have no history cache)
    qos = probe_qos_args(ROS2_PROFILES["default"], family_of(middleware).name)
    common = ["--topic", "cmd_vel", "--type", "Bytes", "--size", str(TWIST_CDR_BYTES),
              *qos, "--count", str(plan.command_count)]
    sub_records = workdir / f"{middleware}-robot.bin"
    pub_records = workdir / f"{middleware}-host.bin"
    broker = _start_broker(middleware, hosts, workdir)
    try:
        sub = subprocess.Popen(
            in_namespace(hosts.robot, [*probe, "sub", *common, *sub_extra,
                                       "--duration", str(plan.duration_s + 30),
                                       "--records", str(sub_records)]),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
        time.sleep(2.0)  # the subscriber is up before the first command (all probes)
        if broker:
            broker.mark_cpu()
        pub = subprocess.Popen(
            in_namespace(hosts.edge, [*probe, "pub", *common, *pub_extra,
                                      "--rate", str(plan.rate_hz), "--warmup", "1",
                                      "--records", str(pub_records)]),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
        pub_summary = _summary(pub, plan.duration_s + 60)
        sub_summary = _summary(sub, 10)
        broker_cpu = broker.cpu_since_mark().percent_of_one_core if broker else None
    finally:
        if broker:
            broker.stop()
    records = read_records(sub_records)
    return CommandTrace(
        middleware=middleware, sent=len(read_records(pub_records)),
        received=[Received(seq, t_recv / 1e9) for seq, _, t_recv, _ in records],
        latencies_s=[(t_recv - t_send) / 1e9 for _, t_send, t_recv, _ in records],
        broker_cpu_percent=broker_cpu,
        errors=[*pub_summary.get("errors", []), *sub_summary.get("errors", [])])
