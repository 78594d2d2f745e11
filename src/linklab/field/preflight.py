"""Preflight of a field run: what each host's kernel and network give the profiles asked.

Checked on every host, before any cell runs, and printed with what to change:
- socket buffers: ``net.core.rmem_max`` / ``wmem_max`` against the largest buffer a
  cell's profile asks for (Fast DDS ``receiveBufferSize``/``sendBufferSize``, Cyclone
  ``SocketReceiveBufferSize``/``SocketSendBufferSize``): above the maximum the kernel
  clamps silently;
- IP reassembly: a profile whose messages exceed the path MTU is fragmented; under loss
  the kernel holds incomplete datagrams ``net.ipv4.ipfrag_time`` seconds in
  ``net.ipv4.ipfrag_high_thresh`` bytes, and when that fills every fragmented message is
  lost (linklab.model.reassembly, docs/RESULTS.md);
- the interface towards the other hosts: its MTU (and the path MTU of a measured preset);
- multicast: whether a datagram to 239.255.0.1 from each host reaches the others (DDS
  discovers by multicast by default; the bench itself gives unicast peers).
Nothing is changed on a host: each finding carries the command that would fix it.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any

from linklab.field.hosts import HostSet
from linklab.middleware import DDS_FAMILIES, FAMILIES, family_of
from linklab.model.fragmentation import ip_packets_per_datagram
from linklab.model.reassembly import (
    LINUX_IPFRAG_HIGH_THRESH,
    held_reassembly_bytes,
)

SYSCTLS = ("net.core.rmem_max", "net.core.wmem_max", "net.core.rmem_default",
           "net.ipv4.ipfrag_high_thresh", "net.ipv4.ipfrag_time")
DEFAULT_MAX_MESSAGE = {name: FAMILIES[name].max_message_bytes for name in DDS_FAMILIES}
MCAST_GROUP, MCAST_PORT = "239.255.0.1", 17400
IP_UDP = 28
RTPS_HEADERS = 116   # the most RTPS adds to a sample's message (paper 001 V-A)


@dataclass(frozen=True)
class Finding:
    host: str
    item: str
    value: str
    ok: bool
    detail: str
    fix: str = ""

    def line(self) -> str:
        mark = "ok  " if self.ok else "WARN"
        fix = f"  fix: {self.fix}" if self.fix and not self.ok else ""
        return f"preflight {mark} {self.host}: {self.item} = {self.value}: {self.detail}{fix}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Need:
    """What one cell asks of the hosts its endpoints run on."""

    hosts: tuple[str, ...]
    profile: str
    buffer_bytes: int | None       # the largest socket buffer its profile asks for
    max_message: int               # the largest UDP datagram its middleware sends
    rate_hz: float
    payload_bytes: int
    loss: float | None             # of its link (a measured preset), None if unknown
    path_mtu: int | None


def profile_numbers(xml: str | None, middleware: str) -> tuple[int | None, int]:
    """(largest socket buffer asked, max message size) of a profile (None: defaults)."""
    # a DDS family's own limit (linklab.middleware); the others are read as Fast DDS's
    limit = family_of(middleware).max_message_bytes or DEFAULT_MAX_MESSAGE["fastdds"]
    if not xml:
        return None, limit
    buffers = [int(v) for v in re.findall(
        r"<(?:receiveBufferSize|sendBufferSize)>\s*(\d+)\s*<", xml)]
    buffers += [_size(v) for v in re.findall(
        r"<Socket(?:Receive|Send)BufferSize[^>]*?(?:min|max)=\"([^\"]+)\"", xml)]
    messages = [int(v) for v in re.findall(r"<maxMessageSize>\s*(\d+)\s*<", xml)]
    messages += [_size(v) for v in re.findall(r"<MaxMessageSize>\s*([^<]+)<", xml)]
    buffers = [b for b in buffers if b]
    messages = [m for m in messages if m]
    return (max(buffers) if buffers else None,
            max(messages) if messages else limit)


def _size(text: str) -> int:
    match = re.fullmatch(r"\s*(\d+)\s*([kKmM]i?B|B)?\s*", text)
    if not match:
        return 0
    scale = {None: 1, "B": 1, "kB": 1000, "KB": 1000, "KiB": 1024, "kiB": 1024, "MB": 10**6,
             "MiB": 2**20}.get(match[2], 1)
    return int(match[1]) * scale


def check(hosts: HostSet, needs: list[Need]) -> list[Finding]:
    findings: list[Finding] = []
    for name, item in hosts.hosts.items():
        if name.startswith("_"):
            continue
        mine = [n for n in needs if name in n.hosts]
        values = item.agent.call("sysctl", names=list(SYSCTLS))["values"]
        findings += _buffers(name, values, mine)
        findings += _reassembly(name, values, mine, item.route.get("mtu"))
        mtu = item.route.get("mtu")
        paths = sorted({n.path_mtu for n in mine if n.path_mtu})
        detail = f"interface {item.route.get('device')} towards the other hosts"
        ok = True
        if paths and mtu and min(paths) < mtu:
            detail += (f"; the measured path MTU is {min(paths)} (the preset's mtu: the "
                       "tuned profile is made for it)")
        findings.append(Finding(name, "interface MTU", str(mtu), ok, detail))
    findings += multicast(hosts)
    return findings


def _buffers(name: str, values: dict[str, Any], needs: list[Need]) -> list[Finding]:
    asked = [(n.buffer_bytes, n.profile) for n in needs if n.buffer_bytes]
    out = []
    for key in ("net.core.rmem_max", "net.core.wmem_max"):
        have = _int(values.get(key))
        if not asked:
            out.append(Finding(name, key, str(have), True, "no profile asks for a socket buffer"))
            continue
        want, profile = max(asked)
        ok = have is not None and have >= want
        out.append(Finding(name, key, str(have), ok,
                           f"profile {profile} asks for {want} B socket buffers" +
                           ("" if ok else "; the kernel clamps them to this maximum"),
                           f"sysctl -w {key}={want}"))
    return out


def _reassembly(name: str, values: dict[str, Any], needs: list[Need],
                mtu: int | None) -> list[Finding]:
    thresh = _int(values.get("net.ipv4.ipfrag_high_thresh")) or LINUX_IPFRAG_HIGH_THRESH
    timeout = _int(values.get("net.ipv4.ipfrag_time")) or 30
    fragmenting = [n for n in needs if min(n.max_message, n.payload_bytes + RTPS_HEADERS)
                   + IP_UDP > (n.path_mtu or mtu or 1500)]
    if not fragmenting:
        return [Finding(name, "net.ipv4.ipfrag_high_thresh", str(thresh), True,
                        "no profile's messages exceed the path MTU (no IP fragments)")]
    worst, held_worst, size = None, -1.0, 0
    for n in fragmenting:
        link_mtu = n.path_mtu or mtu or 1500
        datagram = min(n.max_message, n.payload_bytes + RTPS_HEADERS)
        per_datagram = ip_packets_per_datagram(datagram + 8, link_mtu)
        datagrams = n.rate_hz * max(1, math.ceil(n.payload_bytes / n.max_message))
        if n.loss is None:
            held = math.inf
        else:
            held = held_reassembly_bytes(datagrams, datagram, per_datagram, 1.0 - n.loss,
                                         timeout)
        if held > held_worst:
            worst, held_worst, size = n, held, datagram
    assert worst is not None
    if math.isinf(held_worst):
        detail = (f"profile {worst.profile} sends {size} B datagrams, fragmented "
                  f"on this path; the path's loss is not known (name a measured preset as the "
                  f"link), so how much the kernel holds for reassembly ({timeout} s, up to "
                  f"{thresh} B) cannot be told")
        return [Finding(name, "net.ipv4.ipfrag_high_thresh", str(thresh), False, detail,
                        "sysctl -w net.ipv4.ipfrag_time=3  (or a profile whose messages fit "
                        "the MTU: optimized)")]
    ok = held_worst < thresh
    detail = (f"profile {worst.profile}: {size} B datagrams are fragmented; at "
              f"{100 * (worst.loss or 0):.2f} % loss the kernel holds about "
              f"{held_worst / 2**20:.2f} MiB of incomplete datagrams for {timeout} s"
              + ("" if ok else "; above the threshold every fragmented message is dropped"))
    return [Finding(name, "net.ipv4.ipfrag_high_thresh", str(thresh), ok, detail,
                    "sysctl -w net.ipv4.ipfrag_time=3  (held bytes scale with it; or the "
                    "optimized profile: no fragments)")]


def multicast(hosts: HostSet) -> list[Finding]:
    """From each host, 5 datagrams to 239.255.0.1 (TTL 1): did each other host get any?"""
    names = [n for n in hosts.hosts if not n.startswith("_")]
    out = []
    for sender in names:
        receivers = [n for n in names if n != sender]
        if not receivers:
            continue
        for r in receivers:
            hosts[r].agent.call("multicast", listen=True, group=MCAST_GROUP, port=MCAST_PORT,
                                source=hosts[r].address)
        hosts[sender].agent.call("multicast", group=MCAST_GROUP, port=MCAST_PORT,
                                 source=hosts[sender].address, count=5)
        for r in receivers:
            got = hosts[r].agent.call("multicast", collect=True, group=MCAST_GROUP,
                                      port=MCAST_PORT)["received"]
            device = hosts[sender].route.get("device")
            out.append(Finding(
                sender, f"multicast to {r}", f"{got}/5", got > 0,
                "DDS multicast discovery works between them" if got else
                "DDS discovery by multicast will not find the peers (the bench gives unicast "
                "peers, so its runs are not affected; ROS 2 nodes are)",
                f"ip route add 224.0.0.0/4 dev {device} on both hosts, and allow multicast on "
                "the network between them (access point, switch IGMP snooping)"))
    return out


def _int(value: Any) -> int | None:
    try:
        return int(str(value).split()[0])
    except (ValueError, IndexError, TypeError):
        return None
