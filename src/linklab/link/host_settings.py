"""Settings of each host namespace of a run, installed once per host (not per link):
socket buffer sizes and the TCP congestion control. A link's own impairments, per
direction, are classes of ``linklab.link.impairments``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from linklab.errors import EnvironmentProblem
from linklab.link.netops import NetOps

# Socket buffers. The kernel default (rmem_default 212992 B) is smaller than one 256 KiB
# sample, so one burst of a large sample overflows a socket that did not ask for more.
# linklab asks for 64 MiB maxima (room for 32 samples of 2 MiB, or one second of a
# 433 Mbit/s link) and 8 MiB defaults (four of the largest samples the papers publish,
# PointCloud2m). On kernels that keep net.core.* read-only in a child namespace (6.18
# does) those four keep the host's values; status reports the effective value of each.
SOCKET_BUFFER_SYSCTLS: dict[str, str] = {
    "net.core.rmem_max": str(64 * 1024**2),
    "net.core.wmem_max": str(64 * 1024**2),
    "net.core.rmem_default": str(8 * 1024**2),
    "net.core.wmem_default": str(8 * 1024**2),
    "net.ipv4.tcp_rmem": f"4096 131072 {64 * 1024**2}",
    "net.ipv4.tcp_wmem": f"4096 16384 {64 * 1024**2}",
}


@dataclass
class SocketBufferStage:
    """Per-host socket buffer sysctls (see SOCKET_BUFFER_SYSCTLS for values and why)."""

    kind: ClassVar[str] = "socket_buffers"

    def install(self, net: NetOps, netns: str) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in SOCKET_BUFFER_SYSCTLS.items():
            applied = net.sysctl(netns, key, value)
            result[key] = {"wanted": value, "effective": net.read_sysctl(netns, key),
                           "applied": applied}
            if not applied:
                result[key]["why"] = "read-only in a child network namespace on this kernel"
        return result


TCP_CONGESTION_SYSCTL = "net.ipv4.tcp_congestion_control"


@dataclass
class TcpCongestionStage:
    """The TCP congestion control of one host namespace: set when the link pins one
    (LinkSpec.tcp_congestion), else the host's default; either way recorded, since TCP's
    throughput under loss depends on it (cubic backs off on every loss, bbr does not)."""

    wanted: str | None
    kind: ClassVar[str] = "tcp_congestion"

    def install(self, net: NetOps, netns: str) -> dict[str, Any]:
        if self.wanted is None:
            effective = net.read_sysctl(netns, TCP_CONGESTION_SYSCTL)
        elif net.sysctl(netns, TCP_CONGESTION_SYSCTL, self.wanted):
            effective = self.wanted
        else:  # read-only there, or refused (spec_checks.check_tcp_congestion runs first)
            raise EnvironmentProblem(f"the kernel did not let {netns} set "
                                     f"{TCP_CONGESTION_SYSCTL}={self.wanted}")
        return {"wanted": self.wanted, "effective": effective,
                "source": "pinned by the link" if self.wanted else "the host's default"}
