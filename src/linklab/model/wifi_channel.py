"""A Wi-Fi channel from distance: SNR, frame error rate per MCS, and the MCS a rate
controller settles on (pure; issue 43's channel errors for the relay's medium).

The chain is ns-3 3.37's, so the medium and ns-3 agree on what a distance does:

* **Path loss**: log-distance (ns-3 LogDistancePropagationLossModel, its defaults):
  L(d) = L0 + 10 n log10(d / 1 m), exponent n = 3, and L0 the free-space (Friis) loss at
  1 m at the band's reference frequency, 20 log10(4 pi f / c): 46.6777 dB at 5.15 GHz
  (ns-3's ReferenceLoss), 40.09 dB at 2.412 GHz, 47.94 dB at 5.955 GHz (each band's
  first channel).
* **Noise**: thermal noise over the channel width times the receiver's noise figure
  (ns-3 YansWifiPhy / InterferenceHelper): N = -174 dBm/Hz + 10 log10(W) + NF, NF 7 dB.
* **SNR** = P_rx - N, the received power P_rx = P_tx - L(d) (or given: a measured RSSI,
  as paper 001 reports its links'); with S spatial streams the power is shared, so each
  stream gets 10 log10(S) dB less (no array or diversity gain: a stated simplification).
* **Frame error rate** per MCS and SNR: ns-3's TableBasedErrorRateModel (the IEEE
  802.11ax evaluation methodology's AWGN tables, BCC), tabulated offline for an MPDU of
  1500 bytes by ``linklab-ns3 per-table`` (ns3/run_per_table.cc) into wifi-per-ns3.json
  beside this module; between points linear in SNR. The relay scales it to an MPDU of M
  bytes (an IP packet of L bytes and 38 of MAC: M = L + 38) as 1 - (1 - PER)^(M/1500)
  (emu/src/medium/spec.rs ``per_bytes``).
* **Rate control** ``best``: the MCS with the highest expected goodput, PHY rate x (1 -
  PER), at the link's SNR -- where Minstrel (ns-3's MinstrelHtWifiManager, Linux's
  minstrel_ht) settles on a steady channel; ``fixed``: the MCS given. For a fixed
  distance the choice is made once, at link-up; for a robot that moves (``along``) it is
  made again every STEP_S, as if rate control followed the channel at once (Minstrel
  needs a few of its 100 ms update intervals to settle: a stated simplification).
* **Multicast** goes at 6 Mbit/s (BPSK 1/2) over 20 MHz: MCS 0's curve at the 20 MHz
  SNR, for a 1500-byte MPDU and sized by the relay like the unicast loss.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources

from linklab.model import wifi_phy as phy

PATH_LOSS_EXPONENT = 3.0                 # ns-3 LogDistancePropagationLossModel Exponent
NOISE_FIGURE_DB = 7.0                    # ns-3 YansWifiPhy RxNoiseFigure
THERMAL_DBM_PER_HZ = -174.0              # kT at 290 K
DEFAULT_TX_POWER_DBM = 16.0206           # ns-3 YansWifiPhy TxPowerStart/End (40 mW)
# c as ns-3's ReferenceLoss default (46.6777 dB at 5.15 GHz) was computed with
SPEED_OF_LIGHT = 3e8
# each band's reference frequency for L0 (5 GHz: ns-3's own ReferenceLoss, 46.6777 dB)
REFERENCE_HZ = {2.4: 2.412e9, 5.0: 5.15e9, 6.0: 5.955e9}
TABLE_BYTES = 1500                       # the MPDU size wifi-per-ns3.json is for
RATE_CONTROLS = ("fixed", "best")
MULTICAST_WIDTH_MHZ = 20
# Along a motion the channel is evaluated every 100 ms: the interval ns-3's Minstrel
# updates its statistics at (MinstrelHtWifiManager UpdateStatistics, 100 ms); at most
# MAX_STEPS evaluations (a longer motion takes them further apart).
STEP_S = 0.1
MAX_STEPS = 50_000


def reference_loss_db(band_ghz: float) -> float:
    """Free-space loss at 1 m (Friis) at the band's reference frequency."""
    return 20 * math.log10(4 * math.pi * REFERENCE_HZ[band_ghz] / SPEED_OF_LIGHT)


def path_loss_db(distance_m: float, band_ghz: float) -> float:
    """Log-distance loss (ns-3's model; none below its 1 m reference distance)."""
    return reference_loss_db(band_ghz) + 10 * PATH_LOSS_EXPONENT * math.log10(max(distance_m, 1.0))


def noise_dbm(width_mhz: int) -> float:
    return THERMAL_DBM_PER_HZ + 10 * math.log10(width_mhz * 1e6) + NOISE_FIGURE_DB


def received_dbm(distance_m: float, band_ghz: float,
                 tx_power_dbm: float = DEFAULT_TX_POWER_DBM) -> float:
    """The power at the receiver ``distance_m`` away (log-distance)."""
    return tx_power_dbm - path_loss_db(distance_m, band_ghz)


def snr_of(received: float, width_mhz: int, streams: int = 1) -> float:
    """Each spatial stream's SNR for a received power of ``received`` dBm (module
    comment)."""
    return received - noise_dbm(width_mhz) - 10 * math.log10(streams)


@cache
def _table() -> dict[str, list[tuple[list[float], list[float]]]]:
    """standard -> [(snr_db grid, per) for MCS 0, 1, ...] (wifi-per-ns3.json)."""
    raw = json.loads(resources.files("linklab.model").joinpath("wifi-per-ns3.json").read_text())
    out: dict[str, list[tuple[list[float], list[float]]]] = {}
    for row in sorted(raw["rows"], key=lambda r: (r["standard"], r["mcs"])):
        out.setdefault(row["standard"], []).append((row["snr_db"], row["per"]))
    return out


def per_at(standard: str, mcs: int, snr: float) -> float:
    """The loss of a 1500-byte MPDU at MCS ``mcs`` and ``snr`` dB (ns-3's table,
    linear between its points; its ends beyond the grid)."""
    grid, per = _table()[standard][mcs]
    if snr <= grid[0]:
        return per[0]
    if snr >= grid[-1]:
        return per[-1]
    i = bisect.bisect_right(grid, snr)
    x0, x1, y0, y1 = grid[i - 1], grid[i], per[i - 1], per[i]
    return min(1.0, max(0.0, y0 + (y1 - y0) * (snr - x0) / (x1 - x0)))


@dataclass(frozen=True)
class Channel:
    """What a distance gives a link: its SNR, the MCS, and the losses the relay takes."""

    snr_db: float
    mcs: int
    per: float              # of a 1500-byte MPDU at that MCS
    multicast_per: float    # of a 1500-byte frame at 6 Mbit/s over 20 MHz
    goodput_bps: float      # PHY rate x (1 - per): what rate control maximises


def channel(standard: str, width_mhz: int, streams: int, guard_ns: int, received: float,
            rate_control: str, mcs: int, valid_mcs: tuple[int, ...]) -> Channel:
    """The channel for a received power of ``received`` dBm (received_dbm of a distance,
    or a measured RSSI): with rate control ``best`` the MCS among ``valid_mcs`` of the
    highest expected goodput (``mcs`` ignored), else ``mcs``."""
    if rate_control not in RATE_CONTROLS:
        raise ValueError(f"rate control {rate_control!r}: one of {RATE_CONTROLS}")
    snr = snr_of(received, width_mhz, streams)

    def goodput(m: int) -> float:
        rate = phy.phy_rate_bps(standard, width_mhz, streams, m, guard_ns)
        return rate * (1 - per_at(standard, m, snr))

    chosen = max(valid_mcs, key=lambda m: (goodput(m), -m)) if rate_control == "best" else mcs
    snr_20 = snr_of(received, MULTICAST_WIDTH_MHZ)
    return Channel(snr_db=snr, mcs=chosen, per=per_at(standard, chosen, snr),
                   multicast_per=per_at(standard, 0, snr_20), goodput_bps=goodput(chosen))


def along(start_m: float, end_m: float, over_s: float,
          channel_at: Callable[[float], Channel]) -> list[tuple[float, Channel]]:
    """The channel as the distance goes from ``start_m`` to ``end_m`` at constant speed
    over ``over_s`` seconds (then stays): ``(seconds from the start, channel_at(distance))``
    every STEP_S (or over_s / MAX_STEPS if longer), each where MCS or a loss differs from
    the one before; the first at 0 s, the last at or before the motion's end (where the
    channel stops changing)."""
    if over_s <= 0:
        raise ValueError(f"a motion takes a positive time, not {over_s} s")
    interval = max(STEP_S, over_s / MAX_STEPS)
    count = math.ceil(over_s / interval - 1e-9)
    out: list[tuple[float, Channel]] = []
    for k in range(count + 1):
        t = min(k * interval, over_s)
        found = channel_at(start_m + (end_m - start_m) * t / over_s)
        last = out[-1][1] if out else None
        if last is None or (found.mcs, found.per, found.multicast_per) != (
                last.mcs, last.per, last.multicast_per):
            out.append((t, found))
    return out
