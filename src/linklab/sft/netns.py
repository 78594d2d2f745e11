"""A star of network namespaces for SFT tests and sft-bench (until linklab.link lands).

One publisher host and N receiver hosts: the publisher namespace holds a bridge
``br0`` (10.<net>.0.1/24); receiver i is a namespace whose ``eth0`` (10.<net>.0.<i+2>)
is a veth whose peer ``rx<i>`` is a port of that bridge.  So the bytes between the
publisher and receiver i are exactly the counters of ``rx<i>`` in the publisher
namespace (per sender–receiver pair, as paper 003 Fig. 8 reports them), and the sum
over ports is the aggregate.  Offloads (GSO/TSO/GRO) are off so counters see wire-size
frames.  Every name carries the run prefix ``linklab-sft<pid>-<tag>``; ``close()``
removes exactly what was created.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field

from linklab.errors import EnvironmentProblem, PrivilegeError


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(args, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise EnvironmentProblem(f"{' '.join(args)} failed: {result.stderr.strip()}")
    return result


@dataclass
class Host:
    namespace: str
    address: str
    port: str  # where this host's bytes are counted: an interface of the publisher
    #            namespace, or "<namespace>/<interface>" elsewhere (see worker._counters)
    interface: str = ""  # the host's own interface (Cyclone binds to it)


@dataclass
class Star:
    prefix: str
    publisher: Host
    receivers: list[Host]
    created: list[str] = field(default_factory=list)

    def counters(self) -> dict[str, int]:
        """Bytes (tx+rx) on every receiver's bridge port, read in the publisher namespace."""
        out = {}
        for host in self.receivers:
            total = 0
            for direction in ("tx_bytes", "rx_bytes"):
                text = _run("ip", "netns", "exec", self.publisher.namespace, "cat",
                            f"/sys/class/net/{host.port}/statistics/{direction}").stdout
                total += int(text.strip())
            out[host.namespace] = total
        return out

    def exec_args(self, host: Host, *command: str) -> list[str]:
        return ["ip", "netns", "exec", host.namespace, *command]

    def close(self) -> None:
        for namespace in reversed(self.created):
            _run("ip", "netns", "del", namespace, check=False)
        self.created.clear()

    def __enter__(self) -> Star:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def star(receivers: int, tag: str = "t", net: int | None = None) -> Star:
    """Create the star (needs root); use as a context manager so it is always removed."""
    if os.geteuid() != 0:
        raise PrivilegeError("network namespaces need root (run as root)")
    prefix = f"linklab-sft{os.getpid()}-{tag}"
    net = net if net is not None else 100 + os.getpid() % 150
    pub_ns = f"{prefix}-pub"
    made = Star(prefix, Host(pub_ns, f"10.{net}.0.1", "br0", "br0"), [])
    try:
        _run("ip", "netns", "add", pub_ns)
        made.created.append(pub_ns)
        in_pub = ("ip", "netns", "exec", pub_ns)
        _run(*in_pub, "ip", "link", "set", "lo", "up")
        _run(*in_pub, "ip", "link", "add", "br0", "type", "bridge")
        _run(*in_pub, "ip", "addr", "add", f"10.{net}.0.1/24", "dev", "br0")
        _run(*in_pub, "ip", "link", "set", "br0", "up")
        _run(*in_pub, "ip", "route", "add", "224.0.0.0/4", "dev", "br0")
        for index in range(receivers):
            namespace = f"{prefix}-rx{index}"
            _run("ip", "netns", "add", namespace)
            made.created.append(namespace)
            port = f"rx{index}"
            _run(*in_pub, "ip", "link", "add", port, "type", "veth", "peer", "name", "eth0",
                 "netns", namespace)
            _run(*in_pub, "ip", "link", "set", port, "master", "br0")
            _run(*in_pub, "ip", "link", "set", port, "up")
            address = f"10.{net}.0.{index + 2}"
            in_rx = ("ip", "netns", "exec", namespace)
            _run(*in_rx, "ip", "link", "set", "lo", "up")
            _run(*in_rx, "ip", "addr", "add", f"{address}/24", "dev", "eth0")
            _run(*in_rx, "ip", "link", "set", "eth0", "up")
            _run(*in_rx, "ip", "route", "add", "224.0.0.0/4", "dev", "eth0")
            for ns, dev in ((pub_ns, port), (namespace, "eth0")):
                _run("ip", "netns", "exec", ns, "ethtool", "-K", dev, "gso", "off", "tso",
                     "off", "gro", "off", check=False)
            made.receivers.append(Host(namespace, address, port, "eth0"))
        return made
    except BaseException:
        made.close()
        raise


def python() -> str:
    """The interpreter running linklab (namespaced processes run the same venv)."""
    return sys.executable
