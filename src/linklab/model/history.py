"""HistoryCache sizing against buffer bursts after an outage (paper 000, section IV-E)."""

from __future__ import annotations

import math

# The ROS 2 default HistoryCache the paper measures in Fig. 7 ("the ROS 2 default
# setting of 400"): after an outage up to 400 samples leave back-to-back.
PAPER_DEFAULT_HISTORY = 400


def history_cache_size(link_bytes_per_s: float, utilization: float, payload_bytes: float,
                       subscribers: int = 1) -> int:
    """N_HC = ceil(T_OS->Link * omega / u)  (000_10b8b18b6f5db8a8.txt, Eq. 6).

    T in bytes per second, omega the link share allocated to DDS (the paper
    recommends 0.6-0.7 for an exclusive link). With k unicast subscribers the writer
    repeats every retransmitted sample k times, so the same byte budget holds
    ceil(T*omega / (k*u)) samples; k = 1 is Eq. 6 exactly.
    """
    if not 0.0 < utilization <= 1.0:
        raise ValueError(f"utilization must lie in (0, 1], got {utilization}")
    if payload_bytes <= 0 or link_bytes_per_s <= 0 or subscribers < 1:
        raise ValueError("link, payload and subscribers must be positive")
    return max(1, math.ceil(link_bytes_per_s * utilization / (payload_bytes * subscribers)))


def outage_burst_bytes(history_samples: int, payload_bytes: float, subscribers: int = 1) -> float:
    """Bytes flushed at once when the link returns: N_HC * u per subscriber (000, IV-E)."""
    return history_samples * payload_bytes * subscribers
