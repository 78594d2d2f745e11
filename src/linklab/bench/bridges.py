"""The bridges of a bridged middleware's cell (``mqtt-bridge``, ``zenoh-bridge``,
``zenoh-router-bridge``: seed 004 §3.1, "the communication within one host used DDS, and
communication between two hosts used Zenoh or MQTT"): which bridge runs where, the
refusals before a run, and starting them.

Per topic: an outgoing bridge (``dds-to-mqtt`` / ``dds-to-zenoh``) on the publisher's host
and one incoming bridge on each host with subscribers of it; each carries the topic's
samples between its host's DDS domain (127.0.0.1 only) and the far side: the cell's
broker (mosquitto) or router (zenoh), on bench.broker_host; for ``zenoh-bridge`` each
incoming bridge listens on its host's address and the outgoing one connects to them (the
native ``zenoh-peer``'s arrangement). The bridge's DDS entity takes the topic's
reliability and history (so a reliable stream stays reliable from writer to bridge and
from bridge to reader); its CPU is the cell's ``bridge_cpu_s`` (every bridge, over the
measured part of the cell).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from linklab.bench.matrix import Cell
from linklab.bench.topics import Topic
from linklab.brokers.bench_adapter import LOCALHOST, MQTT_PORT, ZENOH_PORT
from linklab.brokers.bridge import BridgeSpec, start_bridge
from linklab.brokers.process import BrokerProcess
from linklab.errors import UsageError
from linklab.middleware import middleware
from linklab.probes.binaries import bridge_path
from linklab.probes.zenoh_choice import native_zenoh_bridge


def check_cell(cell: Cell, *, remote: bool) -> None:
    """Refuse, in one line naming ``middleware``, a bridged cell linklab cannot bridge:
    on real hosts or a cluster (their beds start no bridges), or a topic with a
    subscriber on its publisher's host (DDS would reach it directly, and the host's two
    bridges would feed each other)."""
    entry = middleware(cell.middleware)
    if not entry.bridged:
        return
    if remote or cell.topology == "cluster":
        where = "real hosts (hosts:)" if remote else "a cluster"
        raise UsageError(f"{cell.middleware}: its bridges run on linklab's namespace testbeds "
                         f"only, not on {where}; use mqtt there", argument="middleware")
    for topic in cell.topics:
        if topic.publisher in topic.subscribers:
            raise UsageError(
                f"{cell.middleware}: topic {topic.name!r} has a subscriber on its "
                f"publisher's host {topic.publisher}; a bridged middleware carries DDS "
                "between hosts only (use cyclonedds for a topic within one host)",
                argument="middleware")


def check_cells(cells: Sequence[Cell], *, remote: bool, about: Any) -> None:
    for cell in cells:
        with about(cell):
            check_cell(cell, remote=remote)


def history_of(qos: Sequence[str]) -> tuple[bool, int]:
    """(reliable, depth: 0 keep all) of a probe's QoS flags (probes.probe_qos_args):
    what the bridge's own DDS endpoint takes. Unset: ROS 2's RELIABLE, KEEP_LAST 10, or
    with --system-default Cyclone's own (a writer's RELIABLE, KEEP_LAST 1)."""
    flags = {flag: value for flag, value in zip(qos, qos[1:], strict=False)
             if flag.startswith("--")}
    reliable = flags.get("--qos", "reliable") == "reliable"
    history = flags.get("--history")
    if history == "keep_all":
        return reliable, 0
    if history and history.startswith("keep_last:"):
        return reliable, int(history.split(":", 1)[1])
    return reliable, 1 if "--system-default" in qos else 10


def specs(cell: Cell, qos_of: Callable[[Topic], Sequence[str]],
          topic_of: Callable[[Topic], str], netns_of: Callable[[str], str | None],
          address_of: Callable[[str], str], broker_address: str) -> list[BridgeSpec]:
    """Every bridge of ``cell``: per topic, one at its publisher and one per host of its
    subscribers (``topic_of``: the probes' topic name; ``netns_of`` and ``address_of``: a
    host's namespace and link address; ``broker_address``: the broker's or router's)."""
    entry = middleware(cell.middleware)
    far = entry.bridge or ""
    out: list[BridgeSpec] = []
    next_port: dict[str, int] = {}
    for topic in cell.topics:
        reliable, depth = history_of(qos_of(topic))
        incoming: list[tuple[str, tuple[str, ...]]] = []
        listens: list[str] = []
        for host in dict.fromkeys(topic.subscribers):
            if far == "mqtt":
                args: tuple[str, ...] = ("--broker", f"{broker_address}:{MQTT_PORT}")
            elif entry.brokered:  # every bridge a client of the router
                args = ("--mode", "client", "--connect", f"tcp/{broker_address}:{ZENOH_PORT}")
            else:  # each incoming bridge listens on its host, the outgoing one connects
                port = ZENOH_PORT + next_port.get(host, 0)
                next_port[host] = next_port.get(host, 0) + 1
                listens.append(f"tcp/{address_of(host)}:{port}")
                args = ("--mode", "peer", "--listen", listens[-1])
            incoming.append((host, args))
        outgoing = (("--broker", f"{broker_address}:{MQTT_PORT}") if far == "mqtt" else
                    ("--mode", "client", "--connect", f"tcp/{broker_address}:{ZENOH_PORT}")
                    if entry.brokered else
                    ("--mode", "peer", *(a for listen in listens for a in ("--connect", listen))))
        for is_out, host, args in [(True, topic.publisher, outgoing)] + [
                (False, host, args) for host, args in incoming]:
            out.append(BridgeSpec(
                outgoing=is_out, netns=netns_of(host), topic=topic_of(topic), type=topic.type,
                reliable=reliable, depth=depth, interface=LOCALHOST, far=far, far_args=args,
                name=f"{far}-{topic.name}-{host}-{'out' if is_out else 'in'}"))
    return out


def binary(far: str) -> Path:
    """The bridge program: the MQTT one is built with the C++ probes, the Zenoh one with
    the native Zenoh probe (built on first need, linklab.probes.zenoh_choice)."""
    return native_zenoh_bridge() if far == "zenoh" else bridge_path(far)


def start(bridge: str, bridge_specs: Sequence[BridgeSpec], out_dir: Path,
          started: list) -> list[BrokerProcess]:
    """Start every bridge (receiving ends first: they subscribe before anything is
    published); each joins ``started`` at once, so the caller stops it if a later one
    fails."""
    bridges: list[BrokerProcess] = []
    program = binary(bridge)
    for spec in sorted(bridge_specs, key=lambda s: s.outgoing):
        process = start_bridge(spec, program, out_dir)
        started.append(process)
        bridges.append(process)
    return bridges
