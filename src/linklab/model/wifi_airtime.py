"""How long one 802.11a frame exchange holds the medium (pure arithmetic, no state).

The OFDM PHY of IEEE Std 802.11-2016 clause 17 (802.11a, 20 MHz): a PPDU is a 16 us
preamble, a 4 us SIGNAL symbol, then DATA symbols of 4 us, each carrying N_DBPS bits of
the 16-bit SERVICE field, the PSDU and the 6 tail bits (17.3.5.4, Eq. 17-11/17-12:
N_SYM = ceil((16 + 8 * LENGTH + 6) / N_DBPS), TXTIME = T_PREAMBLE + T_SIGNAL + T_SYM *
N_SYM). A data frame's PSDU is the MAC header (24 B), the payload (an LLC/SNAP header of
8 B and the IP packet) and the FCS (4 B); the ACK's is 14 B, sent after SIFS at the
highest basic rate not above the data rate (9.7.6.5.2). Slot 9 us, SIFS 16 us, DIFS =
SIFS + 2 * slot = 34 us, CWmin 15, CWmax 1023 (Table 17-21). The medium model that uses
these is model/dcf.py (Bianchi's saturation throughput); issue 43's radio medium.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from linklab.model import wifi_phy as phy

T_PREAMBLE_US = 16.0
T_SIGNAL_US = 4.0
T_SYMBOL_US = 4.0
SERVICE_BITS = 16
TAIL_BITS = 6
SLOT_US = 9.0
SIFS_US = 16.0
DIFS_US = SIFS_US + 2 * SLOT_US
CW_MIN = 15
CW_MAX = 1023
MAC_HEADER_BYTES = 24
LLC_SNAP_BYTES = 8
FCS_BYTES = 4
ACK_BYTES = 14
# data bits per OFDM symbol at each 802.11a rate (Mbit/s): 17.3.2.3, Table 17-4 -- 48 data
# subcarriers x coded bits x code rate, from wifi_phy's one table of the rates
N_DBPS = {rate: int(phy.DATA_SUBCARRIERS["a"][20] * bits * code)
          for rate, (bits, code) in zip(phy.OFDM_RATES_MBPS, phy.OFDM_MCS, strict=True)}
BASIC_RATES = (6, 12, 24)  # the mandatory rates: control frames go at one of these


@dataclass(frozen=True)
class Exchange:
    """One successful data frame + ACK, and what a collision costs (microseconds)."""

    data_us: float        # the data PPDU
    ack_us: float         # the ACK PPDU
    success_us: float     # T_s: data + SIFS + ACK + DIFS (Bianchi §IV, basic access)
    collision_us: float   # T_c: data + DIFS (Bianchi §IV: the colliding frames, then
    #                       DIFS; propagation delay 0, no EIFS)
    # T_c when the colliding senders wait out their ACK timeout before DIFS: data + SIFS
    # + ACK + slot + DIFS (802.11-2016 §10.3.2.9: a sender that gets no ACK counts the
    # transmission failed ACKTimeout = aSIFSTime + aSlotTime + aRxPHYStartDelay after its
    # PPDU; the relay's medium holds the channel for SIFS + the ACK's duration + a slot,
    # emu/src/medium/contention.rs)
    collision_ack_timeout_us: float = 0.0


def txtime_us(psdu_bytes: int, rate_mbps: int) -> float:
    """A PPDU's duration (802.11-2016 Eq. 17-11, 17-12)."""
    if rate_mbps not in N_DBPS:
        raise ValueError(f"{rate_mbps} Mbit/s is not an 802.11a rate; expected one of "
                         f"{', '.join(str(r) for r in N_DBPS)}")
    if psdu_bytes < 0:
        raise ValueError(f"a PSDU of {psdu_bytes} bytes")
    symbols = math.ceil((SERVICE_BITS + 8 * psdu_bytes + TAIL_BITS) / N_DBPS[rate_mbps])
    return T_PREAMBLE_US + T_SIGNAL_US + T_SYMBOL_US * symbols


def ack_rate(rate_mbps: int) -> int:
    """The highest basic rate not above the data rate (9.7.6.5.2)."""
    return max(r for r in BASIC_RATES if r <= rate_mbps)


def exchange(ip_bytes: int, rate_mbps: int) -> Exchange:
    """The airtime of one IP packet of ``ip_bytes`` sent as a unicast data frame."""
    psdu = MAC_HEADER_BYTES + LLC_SNAP_BYTES + ip_bytes + FCS_BYTES
    data = txtime_us(psdu, rate_mbps)
    ack = txtime_us(ACK_BYTES, ack_rate(rate_mbps))
    return Exchange(data_us=data, ack_us=ack,
                    success_us=data + SIFS_US + ack + DIFS_US,
                    collision_us=data + DIFS_US,
                    collision_ack_timeout_us=data + SIFS_US + ack + SLOT_US + DIFS_US)


def single_station_mbps(ip_bytes: int, rate_mbps: int) -> float:
    """IP throughput (Mbit/s) of one saturated station alone on the medium: a mean backoff
    of CWmin/2 slots, the exchange, DIFS (no collisions, no errors)."""
    return 8 * ip_bytes / (SLOT_US * CW_MIN / 2 + exchange(ip_bytes, rate_mbps).success_us)
