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

Security on/off (seed 004 Table 4, seed 002 §IV-B) is the secured variant of a
middleware, as a value of the same ``middleware`` axis: ``fastdds-secure`` (DDS-Security:
PKI-DH, Permissions, AES-GCM-GMAC), ``zenoh-peer-tls``, ``zenoh-router-tls`` and
``mqtt-tls`` (mutual TLS). A fresh keystore (``linklab.security``) is made per cell, the
publisher uses enclave /linklab/robot and the subscriber /linklab/edge, and the
broker/router serves TLS with the edge's certificate.
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
SECURED = {"fastdds-secure": "fastdds", "mqtt-tls": "mqtt", "zenoh-peer-tls": "zenoh-peer",
           "zenoh-router-tls": "zenoh-router"}
ENCLAVES = {"pub": "/linklab/robot", "sub": "/linklab/edge"}
MQTT_TLS_PORT = 8883


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


@dataclass
class MiddlewareAdapter:
    middleware: str  # as the scenario names it, e.g. mqtt-tls
    keystore: Any = None  # linklab.security.keystore.Keystore of the current cell

    @property
    def base(self) -> str:
        """The middleware without its security variant (mqtt-tls -> mqtt)."""
        return SECURED.get(self.middleware, self.middleware)

    @property
    def secured(self) -> bool:
        return self.middleware in SECURED

    @property
    def probe(self) -> str:
        return "zenoh" if self.base.startswith("zenoh") else self.base

    def binary(self, find_built) -> Path:
        """``find_built(name)`` finds a built C++ probe (the runner's probe_binary)."""
        return zenoh_probe_binary() if self.probe == "zenoh" else find_built(self.probe)

    def prepare(self, edge_address: str, workdir: Path) -> None:
        """Make the cell's keystore (secured variants); TLS certificates name the edge."""
        if self.secured:
            from linklab.security.keystore import create_keystore

            self.keystore = create_keystore(workdir / "keystore", tuple(ENCLAVES.values()),
                                            tls_names=(edge_address, "127.0.0.1"))

    def peers(self, role: str, edge_address: str, bed_peers: tuple[str, ...]) -> tuple[str, ...]:
        scheme = "tls" if self.secured else "tcp"
        if self.base == "mqtt":
            return (f"{edge_address}:{MQTT_TLS_PORT if self.secured else MQTT_PORT}",)
        if self.base == "zenoh-router" or (self.base == "zenoh-peer" and role == "pub"):
            return (f"{scheme}/{edge_address}:{ZENOH_PORT}",)
        if self.base == "zenoh-peer":
            return ()
        return bed_peers  # DDS

    def extra_args(self, role: str, edge_address: str) -> tuple[str, ...]:
        args: tuple[str, ...] = ()
        if self.base == "zenoh-peer":
            scheme = "tls" if self.secured else "tcp"
            listen = ("--listen", f"{scheme}/{edge_address}:{ZENOH_PORT}") if role == "sub" \
                else ()
            args = ("--mode", "peer", *listen)
        elif self.base == "zenoh-router":
            args = ("--mode", "client")
        if self.secured:
            enclave = self.keystore.enclave(ENCLAVES[role])
            if self.probe == "fastdds":
                profile = self._fastdds_default_with_security(enclave, role)
            else:
                profile = {"mqtt": enclave.mqtt_profile, "zenoh": enclave.zenoh_profile}[
                    self.probe]
            args += ("--profile", str(profile))  # after the cell's own: this one wins
        return args

    def _fastdds_default_with_security(self, enclave: Any, role: str) -> Path:
        """linklab's default Fast DDS profile plus DDS-Security: the plain ``fastdds``
        cells' settings with security the only difference."""
        from importlib import resources

        from linklab.security.profiles import with_fastdds_security

        default = resources.files("linklab.profiles").joinpath("default.xml").read_text()
        path = self.keystore.root / f"fastdds-default-secure-{role}.xml"
        path.write_text(with_fastdds_security(default, enclave))
        return path

    def start_broker(self, edge_netns: str, edge_address: str,
                     workdir: Path) -> BrokerProcess | None:
        from linklab.security import profiles

        edge = self.keystore.enclave(ENCLAVES["sub"]) if self.secured else None
        if self.base == "mqtt":
            config = (profiles.mosquitto_tls_config(edge, edge_address, MQTT_TLS_PORT) if edge
                      else MosquittoConfig(address=edge_address, port=MQTT_PORT))
            return start_mosquitto(config, workdir, netns=edge_netns)
        if self.base == "zenoh-router":
            scheme = "tls" if edge else "tcp"
            listen = [f"{scheme}/{edge_address}:{ZENOH_PORT}"]
            config = (profiles.zenoh_router_tls_config(edge, listen) if edge
                      else ZenohRouterConfig(listen=listen))
            return start_zenoh_router(config, workdir, netns=edge_netns)
        return None


def adapter_for(middleware: str) -> MiddlewareAdapter | None:
    """The adapter of a non-DDS or secured middleware, None for plain DDS."""
    if middleware in MIDDLEWARES or middleware in SECURED:
        return MiddlewareAdapter(middleware)
    return None


def edge_of(bed: Any) -> tuple[str, str]:
    """(netns, address) of the subscriber's host in a runner Bed (LinkBed)."""
    host = bed.host("sub")
    if not host.address:
        raise EnvironmentProblem("the edge host has no address for the broker")
    return host.netns, host.address
