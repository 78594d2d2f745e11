"""A bridge process in a host namespace: start it and wait until it is ready (its CPU and
its stop are a broker's: linklab.brokers.process).

Seed 004 §3.1: "the communication within one host used DDS, and communication between two
hosts used Zenoh or MQTT". Two bridges, one DDS side (probes/cyclonedds/bridge_dds.c):
``linklab-bridge-mqtt`` (probes/cyclonedds/bridge_mqtt.cpp, libmosquitto: reliable topics
at MQTT QoS 1, best effort at 0, as the MQTT probe) and ``linklab-bridge-zenoh``
(probes/zenoh/src/bridge, the zenoh crate: Reliable/Block or BestEffort/Drop, as the Zenoh
probe). One bridge per topic and endpoint host: ``dds-to-<far>`` beside the publisher (a
DDS reader on this host's domain, each sample's CDR sent on), ``<far>-to-dds`` beside the
subscribers of a host (each message written as a serialized DDS sample).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from linklab.brokers.process import BrokerProcess, launch
from linklab.errors import EnvironmentProblem

READY_TIMEOUT_S = 20.0  # beyond the zenoh bridge's 15 s wait for a matching subscriber


@dataclass(frozen=True)
class BridgeSpec:
    """One bridge: a topic's samples between ``netns``'s DDS domain and the broker."""

    outgoing: bool        # dds-to-<far> (beside a publisher), else <far>-to-dds
    netns: str | None     # the endpoint host's namespace (None: here)
    topic: str            # the probes' topic (DDS rt/<topic>; MQTT <topic>; zenoh rt/<topic>)
    type: str             # the probes' --type
    reliable: bool
    depth: int            # the DDS history: 0 keep all, else keep last ``depth``
    interface: str        # the DDS domain's interface and only peer (127.0.0.1)
    far: str              # "mqtt" | "zenoh"
    far_args: tuple[str, ...]  # mqtt: --broker ADDR:PORT; zenoh: --mode, --connect/--listen
    name: str             # for its files: bridge-<name>.log / .json

    @property
    def direction(self) -> str:
        return f"dds-to-{self.far}" if self.outgoing else f"{self.far}-to-dds"

    def argv(self, binary: Path, ready: Path) -> list[str]:
        return [str(binary), "--direction", self.direction, "--topic", self.topic,
                "--type", self.type, "--qos", "reliable" if self.reliable else "best_effort",
                "--depth", str(self.depth), "--interface", self.interface,
                "--peer", self.interface, *self.far_args, "--ready-file", str(ready)]


def start_bridge(spec: BridgeSpec, binary: Path, workdir: Path) -> BrokerProcess:
    """Start ``spec``'s bridge and wait until it has its DDS endpoint and the broker's
    acknowledgement; a bridge that ends or stays unready is an EnvironmentProblem. Its
    summary line (forwarded, forwarded_bytes, dropped) goes to bridge-<name>.json at its
    end, its messages to bridge-<name>.log."""
    ready = workdir / f"bridge-{spec.name}.ready"
    ready.unlink(missing_ok=True)
    bridge = launch(f"bridge {spec.name}", spec.argv(binary, ready), spec.netns,
                    workdir / f"bridge-{spec.name}.log",
                    stdout=workdir / f"bridge-{spec.name}.json")
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not ready.exists():
        if bridge.popen.poll() is not None:
            raise EnvironmentProblem(f"{bridge.name} exited with status "
                                     f"{bridge.popen.returncode}: {bridge.log_tail()}")
        if time.monotonic() > deadline:
            bridge.stop()
            raise EnvironmentProblem(f"{bridge.name} was not ready within "
                                     f"{READY_TIMEOUT_S:.0f} s: {bridge.log_tail()}")
        time.sleep(0.02)
    ready.unlink()
    return bridge
