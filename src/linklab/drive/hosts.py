"""Two host namespaces joined by a veth pair, for ``linklab drive`` until the link
package's testbed (branch ``link``) provides hosts with presets.

Every name carries the run's prefix (``linklab-<run>-robot`` / ``-edge``, interfaces
``<run>r`` / ``<run>e``); leaving the context removes exactly what it created.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from linklab.errors import EnvironmentProblem, PrivilegeError


@dataclass(frozen=True)
class Hosts:
    robot: str  # namespace of the robot model (the far host)
    edge: str  # namespace of the commanding host (and broker/router)
    robot_addr: str
    edge_addr: str
    robot_if: str
    edge_if: str


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        message = done.stderr.strip()
        if "Operation not permitted" in message:
            raise PrivilegeError(f"ip {' '.join(args)}: needs root (CAP_NET_ADMIN)")
        raise EnvironmentProblem(f"ip {' '.join(args)}: {message}")


@contextmanager
def veth_hosts(run: str, rate: str | None = None) -> Iterator[Hosts]:
    """Robot and edge namespaces on one veth link; ``rate`` (tc syntax, e.g. ``1gbit``)
    shapes both directions with tbf."""
    short = run.replace("linklab-", "")[:12]
    hosts = Hosts(robot=f"linklab-{short}-robot", edge=f"linklab-{short}-edge",
                  robot_addr="10.78.0.1", edge_addr="10.78.0.2",
                  robot_if=f"{short}r"[:15], edge_if=f"{short}e"[:15])
    created: list[str] = []
    try:
        for ns in (hosts.robot, hosts.edge):
            _ip("netns", "add", ns)
            created.append(ns)
            _ip("-n", ns, "link", "set", "lo", "up")
        _ip("link", "add", hosts.robot_if, "netns", hosts.robot, "type", "veth",
            "peer", "name", hosts.edge_if, "netns", hosts.edge)
        for ns, dev, addr in ((hosts.robot, hosts.robot_if, hosts.robot_addr),
                              (hosts.edge, hosts.edge_if, hosts.edge_addr)):
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "route", "add", "224.0.0.0/4", "dev", dev)
            subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-K", dev, "gso", "off",
                            "tso", "off", "gro", "off"], capture_output=True)
            if rate:
                subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev,
                                "root", "tbf", "rate", rate, "burst", "256kb", "latency", "50ms"],
                               check=True, capture_output=True)
        yield hosts
    finally:
        for ns in created:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
