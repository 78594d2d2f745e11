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
    IPV4_HEADER,
    UDP_HEADER,
    Fragmentation,
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
