"""PHY data rates of 802.11a/n/ac/ax and the MCS combinations each standard allows (pure).

A data rate is the data bits of one OFDM symbol over the symbol's duration:

  rate = N_SD x N_BPSCS x R x N_SS / T_SYM

N_SD the data subcarriers of the channel width, N_BPSCS the coded bits per subcarrier and
R the code rate of the MCS, N_SS the spatial streams, T_SYM the symbol with its guard
interval. The terms, by standard:

* 802.11a (OFDM, IEEE 802.11-2016 §17.3.2.3, Table 17-4): N_SD 48, T_SYM 4 us; its eight
  rates 6..54 Mbit/s are "MCS" 0..7 here (BPSK 1/2, 3/4; QPSK 1/2, 3/4; 16-QAM 1/2, 3/4;
  64-QAM 2/3, 3/4).
* 802.11n (HT, 802.11-2016 §19.3.2 and the MCS tables of §19.5): N_SD 52 (20 MHz), 108
  (40 MHz); T_SYM 4 us (800 ns GI) or 3.6 us (400 ns, short GI); MCS 0..7 per stream.
* 802.11ac (VHT, 802.11-2016 §21.3.2 and the MCS tables of §21.5): N_SD 52, 108, 234, 468
  (20, 40, 80, 160 MHz); T_SYM as HT; MCS 0..9. §21.5 marks some combinations not valid
  (N_DBPS not a whole number of bits per encoder): VHT_INVALID below.
* 802.11ax (HE, IEEE 802.11ax-2021 §27.3 and the HE-MCS tables of §27.5): N_SD 234, 468,
  980, 1960 (20..160 MHz, 242/484/996/2x996-tone RUs); T_SYM 12.8 us + GI (0.8, 1.6 or
  3.2 us); MCS 0..11 (1024-QAM at 10 and 11).

The modulation and code rate of MCS k (HT, VHT and HE share the first ten rows): BPSK 1/2,
QPSK 1/2, QPSK 3/4, 16-QAM 1/2, 16-QAM 3/4, 64-QAM 2/3, 64-QAM 3/4, 64-QAM 5/6, 256-QAM
3/4, 256-QAM 5/6, 1024-QAM 3/4, 1024-QAM 5/6. Check: VHT 80 MHz, 1 stream, MCS 9, 400 ns
GI = 234 x 8 x 5/6 / 3.6 us = 433.3 Mbit/s (paper 000's link); HE 160 MHz, 2 streams,
MCS 11, 800 ns = 1960 x 10 x 5/6 x 2 / 13.6 us = 2402 Mbit/s.
"""

from __future__ import annotations

from fractions import Fraction

STANDARDS = ("a", "n", "ac", "ax")

# (coded bits per subcarrier, code rate) of HT/VHT/HE MCS k (the tables cited above)
HT_MCS: tuple[tuple[int, Fraction], ...] = (
    (1, Fraction(1, 2)), (2, Fraction(1, 2)), (2, Fraction(3, 4)), (4, Fraction(1, 2)),
    (4, Fraction(3, 4)), (6, Fraction(2, 3)), (6, Fraction(3, 4)), (6, Fraction(5, 6)),
    (8, Fraction(3, 4)), (8, Fraction(5, 6)), (10, Fraction(3, 4)), (10, Fraction(5, 6)))
# 802.11a's eight rates (Table 17-4), in rate order: 6, 9, 12, 18, 24, 36, 48, 54 Mbit/s
OFDM_MCS: tuple[tuple[int, Fraction], ...] = (
    (1, Fraction(1, 2)), (1, Fraction(3, 4)), (2, Fraction(1, 2)), (2, Fraction(3, 4)),
    (4, Fraction(1, 2)), (4, Fraction(3, 4)), (6, Fraction(2, 3)), (6, Fraction(3, 4)))

# data subcarriers per channel width (MHz)
DATA_SUBCARRIERS: dict[str, dict[int, int]] = {
    "a": {20: 48},
    "n": {20: 52, 40: 108},
    "ac": {20: 52, 40: 108, 80: 234, 160: 468},
    "ax": {20: 234, 40: 468, 80: 980, 160: 1960},
}
# guard intervals (ns) each standard has; the first is the default (the long one)
GUARDS_NS: dict[str, tuple[int, ...]] = {
    "a": (800,), "n": (800, 400), "ac": (800, 400), "ax": (800, 1600, 3200)}
MCS_COUNT = {"a": 8, "n": 8, "ac": 10, "ax": 12}
MAX_STREAMS = {"a": 1, "n": 4, "ac": 4, "ax": 4}   # 1..4: what linklab's medium models
# (width MHz, MCS, streams) that 802.11-2016 §21.5's VHT-MCS tables mark "not valid"
# (for 1..4 streams): 20 MHz MCS 9 with 1, 2 or 4 streams; 80 MHz MCS 6 with 3;
# 160 MHz MCS 9 with 3.
VHT_INVALID = frozenset({(20, 9, 1), (20, 9, 2), (20, 9, 4), (80, 6, 3), (160, 9, 3)})
# the 802.11a rate (Mbit/s) of each of its "MCS" 0..7
OFDM_RATES_MBPS = (6, 9, 12, 18, 24, 36, 48, 54)


def symbol_ns(standard: str, guard_ns: int) -> int:
    """T_SYM with its guard interval: 3.2 us of data + GI (a/n/ac: 4 us or 3.6 us with the
    400 ns short GI, §19.3.6 / §21.3.7), 12.8 us + GI for HE (802.11ax-2021 §27.3.8)."""
    return 12_800 + guard_ns if standard == "ax" else 3_200 + guard_ns


def phy_rate_bps(standard: str, width_mhz: int, streams: int, mcs: int, guard_ns: int) -> float:
    """The PHY data rate (bit/s) of one combination (module docstring: the formula).
    The combination must be valid (linklab.link.medium checks it first)."""
    bits, rate = (OFDM_MCS if standard == "a" else HT_MCS)[mcs]
    data_bits = DATA_SUBCARRIERS[standard][width_mhz] * bits * rate * streams
    return float(data_bits / Fraction(symbol_ns(standard, guard_ns), 10**9))
