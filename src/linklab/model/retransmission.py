"""Retransmission rounds, steady-state load and bursts (paper 000, section IV-C/D).

Notation of 000_10b8b18b6f5db8a8.txt: r publish rate [Hz], u payload [B], n
retransmission (heartbeat) rate [Hz], p probability one IP packet arrives
(1 - PER), q = p^N_IP probability an RTPS message arrives. Byte quantities are per
round (X, B_DDS) or per second (R_pub, R_DDS).
"""

from __future__ import annotations

import math


def _check_probability(p: float, name: str) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1], got {p}")


def new_samples_in_round(rate_hz: float, heartbeat_hz: float, k: int) -> int:
    """Staircase Delta S_k = floor(r/n * k) - floor(r/n * (k-1))  (000, IV-C)."""
    ratio = rate_hz / heartbeat_hz
    # A tiny epsilon keeps exact ratios such as 30 / (1/3) = 90 from flooring to 89.
    eps = 1e-9
    return math.floor(ratio * k + eps) - math.floor(ratio * (k - 1) + eps)


def staircase(rate_hz: float, heartbeat_hz: float, rounds: int) -> list[int]:
    """Delta S_1 .. Delta S_rounds (000, IV-C); their mean tends to r/n."""
    return [new_samples_in_round(rate_hz, heartbeat_hz, k) for k in range(1, rounds + 1)]


def retransmitted_fraction(p: float, q: float) -> float:
    """p^2 (1 - q): share of a round's traffic sent again next round (000, IV-C).

    Retransmission needs Heartbeat and AckNack to arrive (p^2) and the message to
    have been lost (1 - q).
    """
    _check_probability(p, "p")
    _check_probability(q, "q")
    return p * p * (1.0 - q)


def backlog_rounds(rate_hz: float, payload_bytes: float, heartbeat_hz: float,
                   p: float, q: float, rounds: int) -> list[float]:
    """X_k = Delta S_k * u + p^2 (1 - q) X_{k-1}, X_0 = 0  (000, IV-C)."""
    carry = retransmitted_fraction(p, q)
    x_prev = 0.0
    out: list[float] = []
    for k in range(1, rounds + 1):
        x_prev = new_samples_in_round(rate_hz, heartbeat_hz, k) * payload_bytes + carry * x_prev
        out.append(x_prev)
    return out


def steady_backlog(r_pub: float, heartbeat_hz: float, p: float, q: float) -> float:
    """X = R_pub / (n (1 - p^2 + p^2 q))  [B per round]  (000, Eq. 3)."""
    return r_pub / (heartbeat_hz * (1.0 - retransmitted_fraction(p, q)))


def amplification(p: float, q: float) -> float:
    """R_DDS / R_pub = 1 / (1 - p^2 (1 - p^N_IP))  (000, Eq. 4); independent of n."""
    return 1.0 / (1.0 - retransmitted_fraction(p, q))


def steady_dds_rate(r_pub: float, p: float, q: float) -> float:
    """R_DDS = n X = R_pub / (1 - p^2 (1 - q))  [B/s]  (000, Eq. 4)."""
    return r_pub * amplification(p, q)


def burst_bytes(payload_bytes: float, rate_hz: float, heartbeat_hz: float,
                p: float, q: float) -> float:
    """B_DDS = u + p^2 (1 - q) X = u + r u (p^2 - p^2 q) / (n (1 - p^2 + p^2 q))  (000, Eq. 5).

    The bytes that leave back-to-back when a fresh sample coincides with the
    retransmission of the previous round's backlog.
    """
    x = steady_backlog(rate_hz * payload_bytes, heartbeat_hz, p, q)
    return payload_bytes + retransmitted_fraction(p, q) * x


def optimal_heartbeat_rate(rate_hz: float) -> float:
    """n = 2r, the local optimum the paper adopts from Lee et al. [17] (000, IV-D, Step 2)."""
    return 2.0 * rate_hz
