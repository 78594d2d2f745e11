"""Saturation throughput of n stations sharing one 802.11 DCF channel: Bianchi's model.

G. Bianchi, "Performance Analysis of the IEEE 802.11 Distributed Coordination Function",
IEEE JSAC 18(3), 2000. Every station always has a frame queued; a transmission collides
with the constant, independent probability p that another station transmits in the same
slot. With W = CWmin + 1 and m backoff stages (CWmax + 1 = 2^m W):

  tau = 2 (1 - 2p) / ((1 - 2p)(W + 1) + p W (1 - (2p)^m))      (Eq. 7)
  p   = 1 - (1 - tau)^(n - 1)                                  (Eq. 9)

solved together for tau (a fixed point: tau falls as p rises, so bisection on p finds
the one root). Then (Eq. 13):

  P_tr = 1 - (1 - tau)^n,  P_s = n tau (1 - tau)^(n - 1) / P_tr
  S    = P_s P_tr E[P] / ((1 - P_tr) sigma + P_tr P_s T_s + P_tr (1 - P_s) T_c)

sigma the slot, T_s / T_c the durations of a success and of a collision (basic access:
model/wifi_airtime.py), E[P] the payload bits of a frame. T_c is Bianchi's (the colliding
PPDUs, then DIFS), or with ``ack_timeout`` the colliding senders' ACK timeout before DIFS
(wifi_airtime.Exchange.collision_ack_timeout_us: what the relay's medium does). Pure
functions; the radio medium of issue 43 is checked against these numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from linklab.model import wifi_airtime as A


@dataclass(frozen=True)
class Saturation:
    stations: int
    tau: float             # a station's probability of transmitting in a slot
    collision_p: float     # p: a transmission collides
    throughput_mbps: float  # S x the bit rate: payload bits per microsecond, all stations


def backoff_stages(cw_min: int = A.CW_MIN, cw_max: int = A.CW_MAX) -> int:
    """m with CWmax + 1 = 2^m (CWmin + 1) (802.11a: 15 and 1023 -> 6)."""
    m = math.log2((cw_max + 1) / (cw_min + 1))
    if abs(m - round(m)) > 1e-9:
        raise ValueError(f"CWmax + 1 = {cw_max + 1} is not a power-of-two multiple of "
                         f"CWmin + 1 = {cw_min + 1}")
    return round(m)


def tau_of(p: float, w: int, m: int) -> float:
    """Bianchi Eq. 7; at p = 1/2 (0/0 there) its limit, 2 / (W + 1 + m W / 2), since
    1 - (2p)^m ~ m (1 - 2p)."""
    if abs(1 - 2 * p) < 1e-9:
        return 2 / (w + 1 + m * w / 2)
    return 2 * (1 - 2 * p) / ((1 - 2 * p) * (w + 1) + p * w * (1 - (2 * p) ** m))


def saturation(stations: int, ip_bytes: int, rate_mbps: int, *, cw_min: int = A.CW_MIN,
               cw_max: int = A.CW_MAX, ack_timeout: bool = False) -> Saturation:
    """Bianchi's saturation throughput (Eq. 7, 9, 13) for ``stations`` stations sending
    IP packets of ``ip_bytes`` at ``rate_mbps`` (802.11a timing, basic access); with
    ``ack_timeout`` a collision also costs the senders' ACK timeout (module docstring)."""
    if stations < 1:
        raise ValueError(f"{stations} stations: at least one")
    w, m = cw_min + 1, backoff_stages(cw_min, cw_max)
    if stations == 1:
        p = 0.0
    else:  # f(p) = 1 - (1 - tau(p))^(n-1) - p falls from > 0 at p = 0 to < 0 at p = 1
        low, high = 0.0, 1.0
        for _ in range(200):
            p = (low + high) / 2
            if 1 - (1 - tau_of(p, w, m)) ** (stations - 1) - p > 0:
                low = p
            else:
                high = p
        p = (low + high) / 2
    tau = tau_of(p, w, m)
    cost = A.exchange(ip_bytes, rate_mbps)
    p_tr = 1 - (1 - tau) ** stations
    p_s = stations * tau * (1 - tau) ** (stations - 1) / p_tr
    slot_us = ((1 - p_tr) * A.SLOT_US + p_tr * p_s * cost.success_us
               + p_tr * (1 - p_s) * (cost.collision_ack_timeout_us if ack_timeout
                                     else cost.collision_us))
    return Saturation(stations, tau, p, p_s * p_tr * 8 * ip_bytes / slot_us)
