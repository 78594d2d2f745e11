"""A minimal two-host testbed for the probe tests: two network namespaces joined by a
veth pair (until linklab.link.testbed is available on this branch).

Names carry this process's id (``linklab-pr<pid>-robot`` / ``-edge``, veth
``llpr<pid>r`` / ``llpr<pid>e``); ``veth_pair()`` removes exactly what it created.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=check, capture_output=True, text=True)


@dataclass(frozen=True)
class Host:
    netns: str
    ifname: str
    address: str


@dataclass(frozen=True)
class Pair:
    robot: Host
    edge: Host
    tag: str

    def set_ingress_loss(self, host: Host, fraction: float) -> None:
        """Bernoulli loss on ``host``'s ingress (nftables numgen, as linklab's link stage)."""
        table = f"llpr{self.tag}"
        sh("ip", "netns", "exec", host.netns, "nft", "delete", "table", "netdev", table,
           check=False)
        if fraction <= 0:
            return
        n = round(fraction * 10000)
        script = (f"table netdev {table} {{\n chain ingress {{\n"
                  f"  type filter hook ingress device {host.ifname} priority 0;\n"
                  f"  numgen random mod 10000 < {n} counter drop\n }}\n}}\n")
        subprocess.run(["ip", "netns", "exec", host.netns, "nft", "-f", "-"], input=script,
                       text=True, check=True, capture_output=True)

    def rx_bytes(self, host: Host) -> int:
        out = sh("ip", "netns", "exec", host.netns, "cat",
                 f"/sys/class/net/{host.ifname}/statistics/rx_bytes").stdout
        return int(out.strip())


@contextlib.contextmanager
def veth_pair(tag: str | None = None) -> Iterator[Pair]:
    tag = tag or str(os.getpid())
    robot = Host(f"linklab-pr{tag}-robot", f"llpr{tag}r", "10.77.0.1")
    edge = Host(f"linklab-pr{tag}-edge", f"llpr{tag}e", "10.77.0.2")
    created: list[str] = []
    try:
        for host in (robot, edge):
            sh("ip", "netns", "add", host.netns)
            created.append(host.netns)
        sh("ip", "link", "add", robot.ifname, "netns", robot.netns, "type", "veth",
           "peer", "name", edge.ifname, "netns", edge.netns)
        for host in (robot, edge):
            ns = ("ip", "-n", host.netns)
            sh(*ns, "link", "set", "lo", "up")
            sh(*ns, "addr", "add", f"{host.address}/24", "dev", host.ifname)
            sh(*ns, "link", "set", host.ifname, "up")
            sh(*ns, "route", "add", "224.0.0.0/4", "dev", host.ifname)
            sh("ip", "netns", "exec", host.netns, "ethtool", "-K", host.ifname, "gso", "off",
               "tso", "off", "gro", "off", check=False)
        yield Pair(robot, edge, tag)
    finally:
        for netns in created:  # deleting a namespace removes its veth end and nft tables
            sh("ip", "netns", "delete", netns, check=False)
