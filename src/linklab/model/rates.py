"""Offered load and the bottleneck throughput (paper 000, section IV-A).

Units: payloads in bytes, rates in Hz, throughputs in bytes per second (the paper's
B/s). Convert link bit rates with ``bits_to_bytes`` before using them here.
"""

from __future__ import annotations


def bits_to_bytes(bits_per_s: float) -> float:
    return bits_per_s / 8.0


def publish_rate_bytes(rate_hz: float, payload_bytes: float) -> float:
    """R_pub = r * u [B/s]  (000_10b8b18b6f5db8a8.txt, Eq. 1)."""
    return rate_hz * payload_bytes


def max_throughput(
    app_to_dds: float = float("inf"),
    dds_to_os: float = float("inf"),
    os_to_link: float = float("inf"),
) -> float:
    """T_max = min(T_App->DDS, T_DDS->OS, T_OS->Link)  (000, Eq. 2).

    The paper observes that the first two are far above any wireless link
    (275-330 MB/s for Fast DDS in UDP mode), so in practice T_max = T_OS->Link.
    """
    return min(app_to_dds, dds_to_os, os_to_link)


def dds_budget(link_bytes_per_s: float, utilization: float) -> float:
    """T_OS->Link * omega: the share of the link allocated to DDS (000, Eq. 6 numerator)."""
    return link_bytes_per_s * utilization
