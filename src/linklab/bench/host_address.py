"""Where a host of a field run is: ``ssh://[user@]host[:port]``, ``local`` or ``netns:NAME``.

A scenario's top-level ``hosts:`` and ``linklab link measure`` take these::

    hosts:
      robot: ssh://ubuntu@robot.local        # OpenSSH: your ~/.ssh/config applies
      edge: local                            # the machine running linklab
      base: {at: ssh://base, address: 192.168.8.2}   # the address peers use (data plane)

- ``ssh://DEST`` runs commands with the ``ssh`` binary (key authentication, BatchMode: no
  password prompts); DEST may be an alias of your ssh configuration (``Host robot``),
  ``$LINKLAB_SSH_CONFIG`` names another configuration file (``ssh -F``).
- ``local``: this machine, in the network namespace linklab runs in.
- ``netns:NAME``: a network namespace of this machine (``ip netns``); ``link:RUN/HOST`` is
  the host HOST of the ``linklab link up --name RUN`` run (``netns:linklab-RUN-HOST``, as
  root) -- the lab side of a replay.
- ``clock: exchange``: measure this host's clock offset by the exchange even when it
  shares a kernel with the reference (namespaces of one machine): a check of the exchange
  against a known truth (offset 0); the default ``auto`` takes one kernel as one clock.
- ``address``: the IPv4 address the other hosts reach this one at. Without it: the
  address the ssh destination resolves to (``ssh -G``), and for ``local``/``netns:`` the
  source address of the route towards the other hosts.

Pure parsing: no connection is made here (linklab.field.shell does that).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from linklab.errors import UsageError

FORMS = ("ssh://[user@]host[:port], local, netns:NAME, link:RUN/HOST, or a mapping "
         "{at: ..., address: IPv4}")
_SSH = re.compile(r"^ssh://(?:(?P<user>[A-Za-z0-9._][A-Za-z0-9._-]*)@)?"
                  r"(?P<host>[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(?::(?P<port>\d{1,5}))?/?$")
_NETNS = re.compile(r"^netns:(?P<name>[A-Za-z0-9_.-]{1,64})$")
_LINK = re.compile(r"^link:(?P<run>[A-Za-z0-9_.-]{1,40})/(?P<host>[A-Za-z0-9_-]{1,20})$")
HOST_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")


@dataclass(frozen=True)
class HostSpec:
    """One host of a field run, as the user wrote it, validated."""

    name: str                  # the scenario's name for it (robot, edge, ...)
    kind: str                  # "ssh" | "local" | "netns"
    target: str = ""           # ssh destination ([user@]host), or the namespace's name
    port: int | None = None    # ssh port (None: ssh's own, from its configuration)
    address: str | None = None  # the data-plane address, when given
    text: str = ""             # the location as written
    clock: str = "auto"        # "auto" | "exchange" (measure the offset even on one kernel)

    @property
    def remote(self) -> bool:
        return self.kind == "ssh"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"at": self.text}
        if self.address:
            out["address"] = self.address
        if self.clock != "auto":
            out["clock"] = self.clock
        return out

    def describe(self) -> str:
        return self.text + (f" (address {self.address})" if self.address else "")


def parse_location(text: Any, argument: str) -> tuple[str, str, int | None]:
    """``ssh://u@h:22`` -> ("ssh", "u@h", 22); ``local`` -> ("local", "", None)."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError(f"expected {FORMS}, got {text!r}", argument=argument)
    text = text.strip()
    if text == "local":
        return "local", "", None
    match = _NETNS.match(text)
    if match:
        return "netns", match["name"], None
    match = _LINK.match(text)
    if match:  # a host of a linklab link run (root's runs: ip netns)
        return "netns", f"linklab-{match['run']}-{match['host']}", None
    match = _SSH.match(text)
    if match:
        port = int(match["port"]) if match["port"] else None
        if port is not None and not 1 <= port <= 65535:
            raise UsageError(f"port {port} is outside 1..65535", argument=argument)
        target = match["host"].strip("[]")
        if match["user"]:
            target = f"{match['user']}@{target}"
        return "ssh", target, port
    if "://" in text:
        raise UsageError(f"{text!r}: only ssh:// is supported; expected {FORMS}",
                         argument=argument)
    raise UsageError(f"{text!r} is not a host location; expected {FORMS}", argument=argument)


def parse_address(value: Any, argument: str) -> str:
    try:
        address = ipaddress.IPv4Address(str(value).strip())
    except ValueError:
        raise UsageError(f"{value!r} is not an IPv4 address (e.g. 192.168.1.20)",
                         argument=argument) from None
    if address.is_multicast or address.is_unspecified:
        raise UsageError(f"{value} cannot be a host's address (a unicast IPv4 address, e.g. "
                         "192.168.1.20)", argument=argument)
    return str(address)


def parse_host(name: str, value: Any, argument: str | None = None) -> HostSpec:
    """One entry of ``hosts:`` (``argument`` names it in errors, default ``hosts.NAME``)."""
    where = argument or f"hosts.{name}"
    if not isinstance(name, str) or not HOST_NAME.match(name):
        raise UsageError(f"{name!r} is not a host name; use a letter, then letters, digits, "
                         "_ or - (e.g. robot, edge)", argument=where)
    address, clock = None, "auto"
    if isinstance(value, Mapping):
        unknown = sorted(set(map(str, value)) - {"at", "address", "clock"})
        if unknown:
            raise UsageError(f"unknown key {unknown[0]!r}; expected at, address and clock",
                             argument=where)
        clock = str(value.get("clock", "auto"))
        if clock not in ("auto", "exchange"):
            raise UsageError(f"{clock!r}: expected auto (namespaces of one kernel share its "
                             "clock) or exchange (measure the offset anyway)",
                             argument=f"{where}.clock")
        if "at" not in value:
            raise UsageError(f"missing at: (where the host is: {FORMS})", argument=where)
        if value.get("address") is not None:
            address = parse_address(value["address"], f"{where}.address")
        value = value["at"]
        where = f"{where}.at"
    kind, target, port = parse_location(value, where)
    return HostSpec(name=name, kind=kind, target=target, port=port, address=address,
                    text=str(value).strip(), clock=clock)


def parse_hosts(value: Any, argument: str = "hosts") -> dict[str, HostSpec]:
    """The ``hosts:`` mapping -> {name: HostSpec}; at most one ``local``."""
    if not isinstance(value, Mapping) or not value:
        raise UsageError("expected a mapping of host names to locations, e.g. "
                         "{robot: ssh://ubuntu@robot.local, edge: local} (the star's robot "
                         "count is fixed: {hosts: N})", argument=argument)
    hosts = {str(k): parse_host(str(k), v, f"{argument}.{k}") for k, v in value.items()}
    local = [h.name for h in hosts.values() if h.kind == "local"]
    if len(local) > 1:
        raise UsageError(f"{' and '.join(local)} are both local; two endpoints on this machine "
                         "share its network stack: name one host local", argument=argument)
    return hosts
