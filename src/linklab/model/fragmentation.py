"""How one sample becomes RTPS messages and IP packets (paper 000, section IV-C).

Two ways to count IP packets per RTPS message:

* ``"paper"`` (default): N_IP = ceil(M / MTU), exactly as the paper writes it
  (64 KiB / 1500 -> 44). It ignores that each IP fragment also carries a 20-byte IP
  header and that UDP adds 8 bytes.
* ``"ip"``: what the kernel really does. A UDP datagram (message + 8 B) of up to
  MTU - 20 B is one packet; a larger one is cut into fragments whose payload is
  MTU - 20 rounded down to a multiple of 8 (1480 B for MTU 1500, 1424 B for a pod's
  1450), the last one taking the rest (up to MTU - 20). 65500 B messages then need 45
  packets, not 44; a 1472 B message is exactly one 1500 B packet in both counts.

The difference is at most one packet per RTPS message; it matters for q = p^N_IP at
high loss and for exact wire-byte accounting, not for the paper's conclusions.
"""

from __future__ import annotations

import math
from typing import Literal

Fragmentation = Literal["paper", "ip"]
FRAGMENTATION_MODES: tuple[str, ...] = ("paper", "ip")

IPV4_HEADER = 20  # bytes (001_20e21b052d053958.txt, V-A)
UDP_HEADER = 8  # bytes (001, V-A)
# Ethernet header per frame: what Linux interface byte counters include (veth: skb->len
# with L2) and what a rate limiter on a veth counts beyond the IP packet.
ETHERNET_HEADER = 14
DEFAULT_MTU = 1500


def ip_fragment_payload(mtu: int) -> int:
    """Largest IP fragment payload: MTU - 20, rounded down to a multiple of 8 (RFC 791)."""
    return (mtu - IPV4_HEADER) // 8 * 8


def ip_packets_per_datagram(udp_bytes: int, mtu: int = DEFAULT_MTU) -> int:
    """IP packets of one UDP datagram of ``udp_bytes`` (its 8 B header included): one
    while it fits in MTU - 20; beyond, fragments of ``ip_fragment_payload(mtu)`` until
    the rest fits in MTU - 20 (RFC 791 §2.3: every fragment but the last carries a
    multiple of 8 bytes)."""
    room = mtu - IPV4_HEADER
    if udp_bytes <= room:
        return 1
    return 1 + math.ceil((udp_bytes - room) / ip_fragment_payload(mtu))


def rtps_messages_per_sample(payload_bytes: int, max_message_size: int) -> int:
    """N_RT = ceil(u / M)  (000, section IV-C)."""
    return max(1, math.ceil(payload_bytes / max_message_size))


def ip_packets_per_message(
    message_bytes: int, mtu: int = DEFAULT_MTU, mode: Fragmentation = "paper"
) -> int:
    """N_IP for one RTPS message of ``message_bytes`` (000, section IV-C).

    ``paper``: ceil(M / MTU) (the paper's 1500 is the MTU). ``ip``: real IPv4
    fragmentation of the UDP datagram, headers counted (see module docstring).
    """
    if mode == "paper":
        return max(1, math.ceil(message_bytes / mtu))
    if mode == "ip":
        return ip_packets_per_datagram(message_bytes + UDP_HEADER, mtu)
    raise ValueError(f"unknown fragmentation mode {mode!r}")


def message_sizes(payload_bytes: int, max_message_size: int) -> list[int]:
    """Sizes of the RTPS messages one sample is split into (full ones, then the rest)."""
    n_rt = rtps_messages_per_sample(payload_bytes, max_message_size)
    sizes = [max_message_size] * (n_rt - 1)
    sizes.append(payload_bytes - max_message_size * (n_rt - 1))
    return sizes


def n_ip(payload_bytes: int, max_message_size: int, mtu: int = DEFAULT_MTU,
         mode: Fragmentation = "paper") -> int:
    """N_IP of the largest RTPS message of a sample: min(u, M) split into IP packets.

    For u >= M this is the paper's N_IP = ceil(M/1500); a sample smaller than M
    travels in one smaller message.
    """
    return ip_packets_per_message(min(payload_bytes, max_message_size), mtu, mode)


def ip_packets_per_sample(payload_bytes: int, max_message_size: int, mtu: int = DEFAULT_MTU,
                          mode: Fragmentation = "paper") -> int:
    """All IP packets that must arrive for one sample (sum over its RTPS messages)."""
    return sum(ip_packets_per_message(m, mtu, mode)
               for m in message_sizes(payload_bytes, max_message_size))


def message_success_probability(packet_success: float, n_ip_packets: int) -> float:
    """q = p^N_IP: an RTPS message arrives only if all its IP packets do (000, IV-C)."""
    return packet_success ** n_ip_packets


def max_message_size_for_mtu(mtu: int, overlay_overhead: int = 0) -> int:
    """Largest RTPS message that fits one IP packet: MTU - 20 (IPv4) - 8 (UDP) - overlay.

    000 IV-C recommends 1472 B for MTU 1500; 001 V-A adds the overlay's bytes.
    """
    return mtu - IPV4_HEADER - UDP_HEADER - overlay_overhead
