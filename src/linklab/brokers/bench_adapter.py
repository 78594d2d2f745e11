"""How the benchmark runs the brokered and non-DDS middlewares of seed 004.

The DDS probes need only each other's address. MQTT and Zenoh need more: which probe
to start, where the broker or router runs, and which endpoints each side uses. With the
runner's pair topology (publisher on ``robot``, subscriber on ``edge``):

- ``mqtt``: mosquitto on the edge host (seed 004 Fig. 5: "The router or broker is for
  Zenoh and MQTT"), both probes connect to it.
- ``zenoh-peer`` (Table 2 "Zenoh-TCP"): the subscriber listens on the edge address, the
  publisher connects to it; scouting off.
- ``zenoh-router`` (Table 2 "Zenoh-broker"): a zenoh router on the edge host, both
  probes are clients of it.

The broker/router's CPU time is measured over the cell (seed 004 Table 3 counts it).
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linklab.brokers.mosquitto import MosquittoConfig, start_mosquitto
from linklab.brokers.process import BrokerProcess
from linklab.brokers.zenoh_router import ZenohRouterConfig, start_zenoh_router
from linklab.errors import EnvironmentProblem

MQTT_PORT = 1883
ZENOH_PORT = 7447
HOSTS = {"pub": "robot", "sub": "edge"}  # as the runner's LinkBed places the probes
MIDDLEWARES = ("mqtt", "zenoh-peer", "zenoh-router")


def zenoh_probe_binary() -> Path:
    """The ``linklab-probe-zenoh`` entry point installed next to this Python."""
    candidate = Path(sys.executable).parent / "linklab-probe-zenoh"
    if candidate.exists():
        return candidate
    found = shutil.which("linklab-probe-zenoh")
    if found:
        return Path(found)
    raise EnvironmentProblem("linklab-probe-zenoh is not installed (run scripts/setup.sh: "
                             "pip install -e . provides it)")


@dataclass(frozen=True)
class MiddlewareAdapter:
    middleware: str

    @property
    def probe(self) -> str:
        return "zenoh" if self.middleware.startswith("zenoh") else self.middleware

    def binary(self, find_built) -> Path:
        """``find_built(name)`` finds a built C++ probe (the runner's probe_binary)."""
        return zenoh_probe_binary() if self.probe == "zenoh" else find_built(self.probe)

    def peers(self, role: str, edge_address: str) -> tuple[str, ...]:
        if self.middleware == "mqtt":
            return (f"{edge_address}:{MQTT_PORT}",)
        if self.middleware == "zenoh-router" or role == "pub":
            return (f"tcp/{edge_address}:{ZENOH_PORT}",)
        return ()

    def extra_args(self, role: str, edge_address: str) -> tuple[str, ...]:
        if self.middleware == "zenoh-peer":
            listen = ("--listen", f"tcp/{edge_address}:{ZENOH_PORT}") if role == "sub" else ()
            return ("--mode", "peer", *listen)
        if self.middleware == "zenoh-router":
            return ("--mode", "client")
        return ()

    def start_broker(self, edge_netns: str, edge_address: str,
                     workdir: Path) -> BrokerProcess | None:
        if self.middleware == "mqtt":
            return start_mosquitto(MosquittoConfig(address=edge_address, port=MQTT_PORT),
                                   workdir, netns=edge_netns)
        if self.middleware == "zenoh-router":
            return start_zenoh_router(
                ZenohRouterConfig(listen=[f"tcp/{edge_address}:{ZENOH_PORT}"]), workdir,
                netns=edge_netns)
        return None


def adapter_for(middleware: str) -> MiddlewareAdapter | None:
    """The adapter of a non-DDS middleware, None for the DDS ones."""
    return MiddlewareAdapter(middleware) if middleware in MIDDLEWARES else None


def edge_of(bed: Any) -> tuple[str, str]:
    """(netns, address) of the subscriber's host in a runner Bed (LinkBed)."""
    host = bed.host("sub")
    if not host.address:
        raise EnvironmentProblem("the edge host has no address for the broker")
    return host.netns, host.address
