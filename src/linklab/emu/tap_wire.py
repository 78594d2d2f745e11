"""A link between two network namespaces carried by the relay (the "TAP relay"
wire): start ``linklab-emu`` with one TAP per namespace, then give each TAP its
address and bring it up. Stopping the relay removes both TAPs."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from linklab.emu.config import RelayConfig
from linklab.emu.relay import Relay
from linklab.errors import LinklabError


def _ip(*args: str) -> None:
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise LinklabError(f"ip {' '.join(args)}: {result.stderr.strip()}")


@dataclass(frozen=True)
class TapEnd:
    netns: str
    ifname: str
    address: str  # CIDR, e.g. 10.77.0.1/24


def configure_tap(end: TapEnd, mtu: int) -> None:
    _ip("-n", end.netns, "link", "set", "dev", end.ifname, "mtu", str(mtu))
    _ip("-n", end.netns, "addr", "add", end.address, "dev", end.ifname)
    _ip("-n", end.netns, "link", "set", "dev", end.ifname, "up")
    _ip("-n", end.netns, "link", "set", "dev", "lo", "up")


class RelayWire:
    """Relay-carried link between ``a`` and ``b`` (both namespaces must exist)."""

    def __init__(self, a: TapEnd, b: TapEnd, config: RelayConfig, workdir: Path):
        config = replace(config, tap_a=a.ifname, tap_b=b.ifname,
                         netns_a=a.netns, netns_b=b.netns)
        self.a, self.b = a, b
        self.relay = Relay(config, workdir)

    def up(self, cpu: int | None = None) -> None:
        self.relay.start(cpu=cpu)
        try:
            for end in (self.a, self.b):
                configure_tap(end, self.relay.config.mtu)
        except LinklabError:
            self.relay.stop()
            raise

    def down(self) -> int | None:
        return self.relay.stop()


@contextlib.contextmanager
def scratch_namespaces(names: tuple[str, ...], lo_up: bool = False,
                       ) -> Iterator[list[RelayWire]]:
    """Namespaces made for a measurement (``lo_up``: with loopback up), and a list to put
    the relay wires started in them in; on leaving, whatever happened, the wires are
    taken down and the namespaces made are deleted."""
    made: list[str] = []
    wires: list[RelayWire] = []
    try:
        for ns in names:
            subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=lo_up)
            made.append(ns)
            if lo_up:
                subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True,
                               capture_output=True)
        yield wires
    finally:
        for wire in wires:
            wire.down()
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], check=False)
