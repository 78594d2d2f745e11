"""Two hosts for the probe tests, from linklab's link testbed (``linklab.link.testbed``):
a "pair" topology (robot, edge: network namespaces joined by a veth link), optionally
with an impairment preset or overrides such as ``loss="20%"``. The testbed's names
carry the run name given here (tests use their pid); it removes what it built.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from linklab.link import Testbed, testbed


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=check, capture_output=True, text=True)


@dataclass(frozen=True)
class Host:
    name: str  # robot | edge
    netns: str
    ifname: str
    address: str


@dataclass(frozen=True)
class Pair:
    robot: Host
    edge: Host
    bed: Testbed

    def prefix(self, host: Host) -> list[str]:
        """What runs a command inside ``host``."""
        return self.bed.argv(host.name, [])

    def rx_bytes(self, host: Host) -> int:
        return int(self.bed.counters()["interfaces"][host.name][host.ifname]["rx_bytes"])

    def run(self, host: Host, *argv: str) -> subprocess.CompletedProcess:
        return self.bed.run(host.name, list(argv))


@contextlib.contextmanager
def link_pair(name: str, preset: str | None = None, **overrides: Any) -> Iterator[Pair]:
    with testbed(preset, topology="pair", name=name, **overrides) as bed:
        hosts = {key: Host(key, h.netns, h.interface, h.address) for key, h in bed.hosts.items()}
        yield Pair(hosts["robot"], hosts["edge"], bed)
