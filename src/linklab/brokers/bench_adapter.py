"""How the benchmark runs the brokered and non-DDS middlewares of seed 004.

The DDS probes need only each other's address. MQTT and Zenoh need more: which probe
to start, where the broker or router runs, and which endpoints each side uses. One
broker/router per cell, on the edge host unless the cell's ``broker_host`` names another
(bench.broker_host: e.g. a third host of its own, as in seed 004's Table 1):

- ``mqtt``: mosquitto on the edge host (seed 004 Fig. 5: "The router or broker is for
  Zenoh and MQTT"), every probe connects to it.
- ``zenoh-peer`` (Table 2 "Zenoh-TCP"): each subscriber listens on its own host's
  address, the publisher connects to each of its subscribers; scouting off.
- ``zenoh-router`` (Table 2 "Zenoh-broker"): a zenoh router on the edge host, every
  probe is a client of it.
- ``mqtt-bridge`` (§3.1 as the paper ran it): Cyclone DDS probes whose domain stays on
  their own host (interface and only peer 127.0.0.1), mosquitto as for ``mqtt``, and a
  DDS <-> MQTT bridge (linklab.brokers.bridge) on each endpoint host (bench.bridges).

The broker/router's CPU time is measured over the cell (seed 004 Table 3 counts it).

Security on/off is the secured variant of a middleware (linklab.middleware.registry:
``fastdds-secure``, ``cyclonedds-secure``, ``zenoh-peer-tls``, ``zenoh-router-tls``,
``mqtt-tls``). A fresh keystore (``linklab.security``) is made per cell, the publisher
uses enclave /linklab/robot and the subscriber /linklab/edge, and the broker/router
serves TLS with the edge's certificate. Cyclone's secured configuration is checked
before its probes start (security.cyclonedds: every plugin and document it names is
there), so a broken one is a one-line refusal, not an unsecured or failing run. Which
middleware needs what is the registry's (linklab.middleware).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linklab.brokers.mosquitto import MosquittoConfig, mosquitto_tls_config, start_mosquitto
from linklab.brokers.process import BrokerProcess
from linklab.brokers.zenoh_router import (
    ZenohRouterConfig,
    start_zenoh_router,
    zenoh_router_tls_config,
)
from linklab.errors import EnvironmentProblem
from linklab.middleware import MIDDLEWARES, Middleware, middleware
from linklab.probes.zenoh_choice import zenoh_probe_binary

MQTT_PORT = 1883
ZENOH_PORT = 7447
ENCLAVES = {"pub": "/linklab/robot", "sub": "/linklab/edge"}
MQTT_TLS_PORT = 8883
LOCALHOST = "127.0.0.1"  # a bridged middleware's DDS: interface and only peer


@dataclass
class MiddlewareAdapter:
    middleware: str  # as the scenario names it, e.g. mqtt-tls
    keystore: Any = None  # linklab.security.keystore.Keystore of the current cell

    @property
    def entry(self) -> Middleware:
        """The registry's entry: what this middleware needs."""
        return middleware(self.middleware)

    @property
    def secured(self) -> bool:
        return self.entry.secured

    @property
    def probe(self) -> str:
        return self.entry.probe.name

    def binary(self, find_built) -> Path:
        """``find_built(name)`` finds a built C++ probe (the runner's probe_binary); the
        Zenoh probe is the one LINKLAB_ZENOH_PROBE chooses (linklab.probes.zenoh_choice)."""
        return find_built(self.probe) if self.entry.probe.built else zenoh_probe_binary()

    def prepare(self, tls_names: tuple[str, ...], workdir: Path) -> None:
        """Make the cell's keystore (secured variants); TLS certificates name every address
        a peer connects to (the broker's, or each listening subscriber's)."""
        if self.secured:
            from linklab.security.keystore import create_keystore

            self.keystore = create_keystore(workdir / "keystore", tuple(ENCLAVES.values()),
                                            tls_names=tuple(dict.fromkeys(
                                                (*tls_names, "127.0.0.1"))))
            if self.probe == "cyclonedds":
                from linklab.security.cyclonedds import check_security_config

                for enclave in self.keystore.enclaves:
                    check_security_config(enclave.cyclonedds_profile, argument="middleware")

    @property
    def bridged(self) -> bool:
        return self.entry.bridged

    def interface(self, link_interface: str | None) -> str | None:
        """The interface an endpoint's probe uses: its host's link interface, or the
        loopback when DDS stays on the host (a bridged middleware)."""
        return LOCALHOST if self.bridged else link_interface

    @property
    def scheme(self) -> str:
        return "tls" if self.secured else "tcp"

    @property
    def brokered(self) -> bool:
        """A broker or router runs for this middleware (on the cell's broker host)."""
        return self.entry.brokered

    def endpoint_args(self, role: str, *, broker_address: str, listen: str | None = None,
                      connect: tuple[str, ...] = ()) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(peers, extra flags) of one endpoint.

        MQTT and zenoh-router: every endpoint is a client of the broker/router on the
        edge host. zenoh-peer: a subscriber listens on ``listen`` (ADDR:PORT of its own
        host), a publisher connects to each of its subscribers (``connect``).
        """
        broker = self.entry.broker
        if self.bridged:  # DDS on this host only; the bridges cross the link
            return (LOCALHOST,), ()
        if broker == "mosquitto":
            port = MQTT_TLS_PORT if self.secured else MQTT_PORT
            peers: tuple[str, ...] = (f"{broker_address}:{port}",)
            extra: tuple[str, ...] = ()
        elif broker == "zenoh-router":
            peers = (f"{self.scheme}/{broker_address}:{ZENOH_PORT}",)
            extra = ("--mode", "client")
        elif self.entry.listening_subscribers:
            peers = tuple(f"{self.scheme}/{c}" for c in connect) if role == "pub" else ()
            extra = ("--mode", "peer")
            if role == "sub" and listen:
                extra += ("--listen", f"{self.scheme}/{listen}")
        else:  # DDS (secured Fast DDS and Cyclone DDS): the caller's unicast peers
            peers, extra = tuple(connect), ()
        if self.secured:
            enclave = self.keystore.enclave(ENCLAVES[role])
            if self.entry.security == "dds-security" and self.probe == "fastdds":
                profile = self._fastdds_default_with_security(enclave, role)
            else:  # the enclave's profile for this probe (Enclave.cyclonedds_profile,
                # Enclave.mqtt_profile, ...)
                profile = getattr(enclave, f"{self.probe}_profile")
            extra += ("--profile", str(profile))  # after the cell's own: this one wins
        return peers, extra

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
        edge = self.keystore.enclave(ENCLAVES["sub"]) if self.secured else None
        if self.entry.broker == "mosquitto":
            config = (mosquitto_tls_config(edge, edge_address, MQTT_TLS_PORT) if edge
                      else MosquittoConfig(address=edge_address, port=MQTT_PORT))
            return start_mosquitto(config, workdir, netns=edge_netns)
        if self.entry.broker == "zenoh-router":
            scheme = "tls" if edge else "tcp"
            listen = [f"{scheme}/{edge_address}:{ZENOH_PORT}"]
            config = (zenoh_router_tls_config(edge, listen) if edge
                      else ZenohRouterConfig(listen=listen))
            return start_zenoh_router(config, workdir, netns=edge_netns)
        return None


def adapter_for(name: str) -> MiddlewareAdapter | None:
    """The adapter of a non-DDS or secured middleware, None for plain DDS."""
    entry = MIDDLEWARES.get(name)
    return MiddlewareAdapter(name) if entry is not None and entry.adapted else None


def host_of(bed: Any, name: str) -> tuple[str, str]:
    """(netns, address) of host ``name`` in a runner Bed (LinkBed): the broker runs there
    (the cell's broker_host, edge by default)."""
    host = bed.host(name)
    if not host.address:
        raise EnvironmentProblem(f"the {name} host has no address for the broker")
    return host.netns, host.address
