"""Bytes on the wire for one sample: headers, overlays, fragments (paper 001, section V-A).

001_20e21b052d053958.txt V-A: "the ROS 2 RMW adds DDS/RTPS headers, ranging from 56 B
to 116 B depending on QoS. UDP (8 B) and IPv4 (20 B) headers are then added. When
using an overlay network in K8s, such as VXLAN, 50 B is introduced. Using WireGuard
encryption adds an additional 32 B."

Overlay bytes per IP packet used here:
* vxlan 50 B: outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet 14 (001's 50 B).
* wireguard 60 B: 001's 32 B (WireGuard data header 16 + authentication tag 16) plus
  the tunnel's own outer IPv4 20 + UDP 8, which 001 does not list separately but every
  packet carries. (wg-quick's default interface MTU 1420 reserves 80 B, for an IPv6
  underlay; if your wg0 says mtu 1420, model it as --mtu 1420 --overlay none.)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from linklab.model.fragmentation import (
    ETHERNET_HEADER,
    IPV4_HEADER,
    UDP_HEADER,
    Fragmentation,
    ip_fragment_payload,
    ip_packets_per_message,
    rtps_messages_per_sample,
)

# RTPS bytes per message: 56 B (best effort) to 116 B (reliable)  (001, V-A).
RTPS_HEADER_BYTES = {"best_effort": 56, "reliable": 116}
VXLAN_OVERHEAD = 50  # 001, V-A
WIREGUARD_HEADER = 32  # 001, V-A (header + tag only)
OVERLAY_OVERHEAD_BYTES = {
    "none": 0,
    "vxlan": VXLAN_OVERHEAD,
    "wireguard": WIREGUARD_HEADER + IPV4_HEADER + UDP_HEADER,
}
OVERLAYS: tuple[str, ...] = tuple(OVERLAY_OVERHEAD_BYTES)


@dataclass(frozen=True)
class WireCost:
    """What one sample costs on the wire."""

    payload_bytes: int
    rtps_messages: int
    ip_packets: int
    rtps_header_bytes: int
    udp_ip_header_bytes: int
    overlay_bytes: int
    wire_bytes: int
    efficiency: float  # payload / wire bytes

    def to_dict(self) -> dict:
        return asdict(self)


def wire_cost(payload_bytes: int, max_message_size: int, *, mtu: int = 1500,
              qos: str = "reliable", overlay: str = "none",
              mode: Fragmentation = "ip") -> WireCost:
    """Headers and packets for one sample of ``payload_bytes`` (001, V-A; 000, IV-C).

    ``max_message_size`` is the RTPS message limit (Fast DDS maxMessageSize, the UDP
    payload), so each message carries at most M - rtps_header bytes of the sample.
    Each IP packet (fragment) carries IPv4 20 B and the overlay's bytes; each RTPS
    message (UDP datagram) carries UDP 8 B once.
    """
    rtps_header = RTPS_HEADER_BYTES[qos]
    overlay_bytes = OVERLAY_OVERHEAD_BYTES[overlay]
    room = max_message_size - rtps_header
    if room <= 0:
        raise ValueError(f"max message size {max_message_size} B leaves no room after the "
                         f"{rtps_header} B RTPS header")
    n_rt = rtps_messages_per_sample(payload_bytes, room)
    packets = 0
    remaining = payload_bytes
    for _ in range(n_rt):
        data = min(room, remaining)
        remaining -= data
        packets += ip_packets_per_message(data + rtps_header, mtu, mode)
    rtps_bytes = n_rt * rtps_header
    udp_ip = n_rt * UDP_HEADER + packets * IPV4_HEADER
    overlay_total = packets * overlay_bytes
    wire = payload_bytes + rtps_bytes + udp_ip + overlay_total
    return WireCost(payload_bytes, n_rt, packets, rtps_bytes, udp_ip, overlay_total, wire,
                    payload_bytes / wire)


# --- a cluster's path, packet by packet (001 §IV-B, §V-A) -------------------------------
#
# What the byte counters of each device on a cluster path see for one sample: the pod's
# IP packets (RTPS messages cut at the pod MTU), plus VXLAN's 50 B on the overlay, plus
# WireGuard's 32 B, its padding and its own IPv4/UDP headers on the underlay, plus the
# 14 B Ethernet header an Ethernet device counts per frame.

# RTPS 2.3 §10.2: a SerializedPayload starts with a 4 B encapsulation header
# (representation identifier and options); the sample's CDR follows it.
CDR_ENCAPSULATION = 4
# WireGuard whitepaper §5.4.6: the plaintext "is padded to a multiple of 16 bytes" before
# encryption (not beyond the device MTU); header 16 B + Poly1305 tag 16 B = 001's 32 B.
WIREGUARD_PAD = 16
WIREGUARD_TUNNEL = OVERLAY_OVERHEAD_BYTES["wireguard"]


def ip_packet_sizes(serialized_bytes: int, max_message_size: int, *, mtu: int = 1500,
                    qos: str = "best_effort") -> list[int]:
    """IPv4 packet sizes (header included) of one sample of ``serialized_bytes``: RTPS
    messages of at most ``max_message_size`` B (001 V-A header per message), each a UDP
    datagram cut into IP fragments at ``mtu`` (RFC 791: fragment data a multiple of 8)."""
    rtps_header = RTPS_HEADER_BYTES[qos]
    room = max_message_size - rtps_header
    if room <= 0:
        raise ValueError(f"max message size {max_message_size} B leaves no room after the "
                         f"{rtps_header} B RTPS header")
    fragment = ip_fragment_payload(mtu)
    sizes: list[int] = []
    remaining = serialized_bytes
    while True:
        data = min(room, remaining)
        remaining -= data
        datagram = data + rtps_header + UDP_HEADER
        while datagram > mtu - IPV4_HEADER:
            sizes.append(fragment + IPV4_HEADER)
            datagram -= fragment
        sizes.append(datagram + IPV4_HEADER)
        if remaining <= 0:
            return sizes


def wireguard_packet(inner_bytes: int, device_mtu: int) -> int:
    """An IP packet of ``inner_bytes`` after WireGuard: padded to 16 B (at most to the
    WireGuard device's MTU), plus 32 B, plus the outer IPv4 and UDP headers."""
    padded = min(-(-inner_bytes // WIREGUARD_PAD) * WIREGUARD_PAD, max(device_mtu, inner_bytes))
    return padded + WIREGUARD_TUNNEL


@dataclass(frozen=True)
class WirePath:
    """How one sample's packets reach a rate-limited link (001 §IV-B, §V-A): IP packets
    cut at ``mtu`` (the sender's interface: a pod's MTU on a cluster), VXLAN's 50 B on
    each (``vxlan``), WireGuard around each (``wireguard_mtu``: its device's MTU; None:
    no WireGuard). ``bounded``: the path crosses the link, so its rate bounds the
    samples per second (False: both ends on one cluster node, the underlay not on the
    way)."""

    mtu: int = 1500
    vxlan: bool = False
    wireguard_mtu: int | None = None
    bounded: bool = True

    def label(self) -> str:
        layers = ["RTPS", "UDP", "IPv4"]
        if self.vxlan:
            layers.append("VXLAN")
        if self.wireguard_mtu is not None:
            layers.append("WireGuard")
        return f"{'+'.join(layers)} at MTU {self.mtu}"


def path_bytes(serialized_bytes: int, max_message_size: int, *, pod_mtu: int,
               qos: str = "best_effort", vxlan: bool = False, wireguard_mtu: int | None = None,
               ethernet: bool = True) -> tuple[int, int]:
    """(bytes, frames) one sample puts on a cluster's underlay (or, with neither vxlan
    nor wireguard, on any Ethernet device of its path): pod packets, + VXLAN 50 B each,
    then WireGuard (``wireguard_mtu``: its device MTU; None: no WireGuard), + Ethernet."""
    total = 0
    packets = ip_packet_sizes(serialized_bytes, max_message_size, mtu=pod_mtu, qos=qos)
    for size in packets:
        if vxlan:
            size += VXLAN_OVERHEAD
        if wireguard_mtu is not None:
            size = wireguard_packet(size, wireguard_mtu)
        total += size + (ETHERNET_HEADER if ethernet else 0)
    return total, len(packets)
