"""A bridge process in a host namespace: start it, wait until it is ready, its CPU, stop
it and read what it forwarded.

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

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from linklab.brokers.process import BrokerProcess, in_namespace
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


class Bridge(BrokerProcess):
    """A running bridge: a broker-like process (CPU, stop) with a summary at its end."""

    summary_path: Path

    def forwarded(self) -> dict:
        """Its summary line after ``stop()`` (forwarded, forwarded_bytes, dropped); {} when
        it printed none."""
        try:
            return json.loads(self.summary_path.read_text().strip().splitlines()[-1])
        except (OSError, ValueError, IndexError):
            return {}


def start_bridge(spec: BridgeSpec, binary: Path, workdir: Path) -> Bridge:
    """Start ``spec``'s bridge and wait until it has its DDS endpoint and the broker's
    acknowledgement; a bridge that ends or stays unready is an EnvironmentProblem."""
    workdir.mkdir(parents=True, exist_ok=True)
    ready = workdir / f"bridge-{spec.name}.ready"
    ready.unlink(missing_ok=True)
    log_path = workdir / f"bridge-{spec.name}.log"
    summary = workdir / f"bridge-{spec.name}.json"
    with open(log_path, "wb") as log, open(summary, "wb") as out:
        try:
            popen = subprocess.Popen(in_namespace(spec.netns, spec.argv(binary, ready)),
                                     stdout=out, stderr=log, stdin=subprocess.DEVNULL,
                                     env=dict(os.environ))
        except FileNotFoundError as error:
            raise EnvironmentProblem(f"bridge {spec.name}: {error.filename} not found "
                                     "(run scripts/setup.sh)") from None
    bridge = Bridge(name=f"bridge {spec.name}", popen=popen, port=0, log_path=log_path)
    bridge.summary_path = summary
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not ready.exists():
        if popen.poll() is not None:
            raise EnvironmentProblem(f"bridge {spec.name} exited with status "
                                     f"{popen.returncode}: {bridge.log_tail()}")
        if time.monotonic() > deadline:
            bridge.stop()
            raise EnvironmentProblem(f"bridge {spec.name} was not ready within "
                                     f"{READY_TIMEOUT_S:.0f} s: {bridge.log_tail()}")
        time.sleep(0.02)
    ready.unlink()
    return bridge
