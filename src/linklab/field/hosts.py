"""A set of open hosts with their agents, and the addresses they reach each other at.

Used by ``linklab link measure`` (two hosts) and by the field bench environment (the
hosts of a scenario). ``open_hosts`` connects to every host, copies the agent, starts it
and binds its UDP socket; ``close`` ends agents, keepers and SSH connections.
"""

from __future__ import annotations

import random
import socket
import subprocess
from dataclasses import dataclass, field

from linklab.bench.host_address import HostSpec
from linklab.errors import LinklabError, UsageError
from linklab.field import leftovers
from linklab.field.agent_session import AgentSession
from linklab.field.clock import Offset, from_exchange, same_kernel
from linklab.field.shell import Host, host_for, ssh_options

CLOCK_EXCHANGES = 48
CLOCK_INTERVAL_S = 0.004


@dataclass
class OpenHost:
    spec: HostSpec
    host: Host
    agent: AgentSession
    address: str = ""
    route: dict = field(default_factory=dict)   # towards the other hosts: source, device, mtu

    @property
    def name(self) -> str:
        return self.spec.name

    def peer(self) -> list:
        return [self.address, self.agent.port]


class HostSet:
    """Open hosts by name. Use as a context manager: closing cleans every host."""

    def __init__(self, specs: dict[str, HostSpec]):
        self.specs = dict(specs)
        self.hosts: dict[str, OpenHost] = {}
        self.session = random.randrange(1, 2**31)

    def __enter__(self) -> HostSet:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def open(self) -> None:
        leftovers.sweep()   # what a field session killed with SIGKILL left here
        for name, spec in self.specs.items():
            host = host_for(spec)
            try:
                host.open()
                agent = AgentSession(host)
                self.hosts[name] = OpenHost(spec, host, agent)
                agent.start(self.session)
            except BaseException:
                if name not in self.hosts:
                    host.close()
                raise
        self._addresses()

    def __getitem__(self, name: str) -> OpenHost:
        return self.hosts[name]

    def _addresses(self) -> None:
        """Every host's data-plane address (address.py says where each comes from)."""
        for item in self.hosts.values():
            if item.spec.address:
                item.address = item.spec.address
            elif item.spec.kind == "ssh":
                item.address = resolve_ssh(item.spec)
            elif item.spec.kind == "netns":
                item.address = namespace_address(item.host)
        known = [h.address for h in self.hosts.values() if h.address]
        for item in self.hosts.values():
            if item.address:
                continue
            if not known:
                raise UsageError(f"cannot tell which address the other hosts reach {item.name} "
                                 "at; give it: {at: local, address: IPv4}",
                                 argument=f"hosts.{item.name}")
            item.address = item.agent.call("route", to=known[0])["source"]
        for item in self.hosts.values():
            others = [h.address for h in self.hosts.values() if h is not item]
            if others:
                item.route = item.agent.call("route", to=others[0])

    def offset(self, a: str, b: str, count: int = CLOCK_EXCHANGES) -> Offset:
        """clock(b) - clock(a), measured from a over the data path (clock.py)."""
        reply = self.hosts[a].agent.call("clock", peer=self.hosts[b].peer(), count=count,
                                         interval_s=CLOCK_INTERVAL_S, wait_s=1.5)
        if not reply["samples"]:
            raise LinklabError(f"{a} got no answer from {b} at {self.hosts[b].address} over UDP "
                               f"({count} tries): the hosts cannot reach each other there "
                               f"(give hosts.{b}.address, or check a firewall)")
        exchange = from_exchange(reply["samples"])
        boot_a = self.hosts[a].agent.hello.get("boot_id")
        forced = "exchange" in (self.hosts[a].spec.clock, self.hosts[b].spec.clock)
        if boot_a and boot_a == self.hosts[b].agent.hello.get("boot_id") \
                and exchange.contains(0.0) and not forced:
            return same_kernel(exchange)
        return exchange

    def close(self) -> None:
        for item in self.hosts.values():
            try:
                item.agent.close()
            finally:
                item.host.close()
        self.hosts = {}


def resolve_ssh(spec: HostSpec) -> str:
    """The IPv4 address an ssh destination resolves to, as ssh itself would (``ssh -G``)."""
    port = ["-p", str(spec.port)] if spec.port else []
    result = subprocess.run(["ssh", *ssh_options(), *port, "-G", spec.target],
                            capture_output=True, text=True, timeout=10)
    hostname = spec.target.rsplit("@", 1)[-1]
    for line in result.stdout.splitlines():
        if line.startswith("hostname "):
            hostname = line.split(None, 1)[1].strip()
    try:
        infos = socket.getaddrinfo(hostname, None, socket.AF_INET, socket.SOCK_DGRAM)
    except socket.gaierror:
        raise UsageError(f"{hostname!r} (from {spec.text}) does not resolve to an IPv4 address "
                         "here; give the host's address: {at: " + spec.text + ", address: IPv4}",
                         argument=f"hosts.{spec.name}") from None
    return infos[0][4][0]


def namespace_address(host: Host) -> str:
    result = host.run(["ip", "-4", "-o", "addr", "show", "scope", "global"])
    for line in result.stdout.decode().splitlines():
        parts = line.split()
        if "inet" in parts:
            return parts[parts.index("inet") + 1].split("/")[0]
    raise UsageError(f"namespace {host.spec.target} has no global IPv4 address",
                     argument=host.name)
