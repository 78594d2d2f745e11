"""A shared 802.11 medium as a link field (issue 43): ``medium:``, pure data and parsing.

Both directions of a pair link share one channel: the robot is one station, the edge side
the AP; ``stations`` adds background stations that contend but are never delivered. The
relay (emu/src/medium/) simulates DCF/EDCA in virtual time kept in step with the wall
clock, so throughput, delay and loss follow from airtime and contention. The field is a
mapping of these keys (each optional; defaults per standard in DEFAULTS)::

    medium: {standard: ac, band: 5GHz, width: 80MHz, streams: 1, mcs: 7, guard: 800ns,
             per: 0%, multicast_per: 0%, retry_limit: 7, aggregation: 64,
             aggregation_bytes: 1048575B, queue: 1000, queue_bytes: 0B,
             stations: 0, station_load: saturated, station_frame: 1500B,
             distance: 20m, tx_power: 16.0206dBm, rate_control: best,
             motion: 60m over 30s}

``distance`` makes the channel's errors come from how far the robot is from the AP
(linklab.model.wifi_channel: ns-3's log-distance loss, noise and frame error tables), in
place of ``per`` and ``multicast_per``; ``rssi`` (e.g. -66dBm, a measured received
power, as paper 001 reports) does the same from the received power itself.
``rate_control: best`` (the default with either) then takes the MCS of the highest
expected goodput up to ``mcs``, ``fixed`` keeps ``mcs``. ``motion`` (with ``distance``),
e.g. ``60m over 30s``: the robot moves straight away from (or towards) the AP at constant
speed, from ``distance`` to 60 m over 30 s counted from when the medium comes up, then
stays; the channel (SNR, losses, and with ``best`` the MCS) follows it every 100 ms
(wifi_channel.along: the relay's ``medium_step`` lines). The background stations keep the
starting channel, and the model's link rate (phy_rate_bps) is the starting MCS's.

On ``linklab link up`` it is ``--medium standard=ac,mcs=9`` (written over a preset's
medium key by key). What each key becomes is the relay's ``medium`` directive
(linklab.emu.directives.Medium, every value in base units). Every value and combination
the relay would refuse is refused here first, in one line naming the key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from linklab.emu.directives import Medium, MediumStep
from linklab.errors import UsageError
from linklab.link.radio import (
    Motion,
    dbm_of,
    parse_distance,
    parse_motion,
    parse_tx_power,
)
from linklab.model import wifi_channel
from linklab.model import wifi_phy as phy
from linklab.units import format_bitrate, parse_bitrate, parse_duration, parse_fraction, parse_size

KEYS = ("standard", "band", "width", "streams", "mcs", "guard", "per", "multicast_per",
        "retry_limit", "aggregation", "aggregation_bytes", "queue", "queue_bytes",
        "stations", "station_load", "station_frame",
        "distance", "tx_power", "rssi", "rate_control", "motion")
# One example value per key (messages, the preset format's docs).
EXAMPLES = {"standard": "ac", "band": "5GHz", "width": "80MHz", "streams": "2", "mcs": "9",
            "guard": "400ns", "per": "1%", "multicast_per": "10%", "retry_limit": "7",
            "aggregation": "64", "aggregation_bytes": "65535B", "queue": "1000",
            "queue_bytes": "1MiB", "stations": "8", "station_load": "20Mbit/s or saturated",
            "station_frame": "1500B", "distance": "20m", "tx_power": "16.0206dBm",
            "rssi": "-60dBm",
            "rate_control": "best or fixed", "motion": "60m over 30s"}

BANDS_GHZ = (2.4, 5.0, 6.0)
WIDTHS_MHZ = (20, 40, 80, 160)
MAX_RETRY_LIMIT = 1000
MAX_QUEUE_PACKETS = 1_000_000
MAX_STATIONS = 256          # what the relay keeps (emu/src/medium/spec.rs)
# 802.11's largest MSDU (IEEE 802.11-2016 §9.2.4.7): a background station's IP packet.
MIN_STATION_FRAME, MAX_STATION_FRAME = 20, 2304
# The longest A-MPDU (octets) each standard allows: IEEE 802.11-2020 Table 9-34 "Maximum
# data unit sizes": HT 65 535, VHT 1 048 575, HE 6 500 631; the shortest a station may
# advertise is 8191 (Maximum A-MPDU Length Exponent 0: 2^13 - 1). 802.11a sends one MPDU
# of at most 4095 octets (its PSDU limit, §17.3.4: the SIGNAL field's 12-bit LENGTH).
MAX_AMPDU_BYTES = {"a": 4_095, "n": 65_535, "ac": 1_048_575, "ax": 6_500_631}
MIN_AMPDU_BYTES = 8_191
# The most MPDUs one BlockAck acknowledges: 64 (HT/VHT compressed BlockAck bitmap,
# 802.11-2016 §9.3.1.9); 256 for HE (802.11ax-2021, the 256-bit bitmap).
MAX_AMPDU_FRAMES = {"a": 1, "n": 64, "ac": 64, "ax": 256}
# aPPDUMaxTime: 5.484 ms for VHT and HE, and for HT mixed format (its L-SIG LENGTH
# limit, 802.11-2016 §19.3.9.4), which 2.4 GHz devices use (802.11-2020 Table 9-34).
PPDU_MAX_NS = 5_484_000
# EDCA AC_BE (802.11-2016 §10.22.2 and the default EDCA Parameter Set, §9.4.2.29: CWmin
# 15, CWmax 1023, AIFSN 3); 802.11a without QoS is DCF: DIFS = SIFS + 2 x aSlotTime, i.e.
# AIFSN 2 (§10.3.2.3).
CW_MIN, CW_MAX = 15, 1023
AIFSN = {"a": 2, "n": 3, "ac": 3, "ax": 3}

# The defaults of each standard (as parsed values): ac 5 GHz 80 MHz; n 2.4 GHz 20 MHz;
# ax 5 GHz 80 MHz; a 54 Mbit/s (its "MCS" 7). One stream, MCS 7, the long GI, retry 7
# (dot11ShortRetryLimit's default, which counts frames sent without RTS/CTS: 802.11-2016
# Annex C; one counter here), a queue of 1000 frames per station (Linux's default
# txqueuelen), the most MPDUs and bytes per A-MPDU the standard allows.
DEFAULTS: dict[str, dict[str, Any]] = {
    std: {"band": band, "width": width, "streams": 1, "mcs": 7, "guard": 800, "per": 0.0,
          "multicast_per": 0.0, "retry_limit": 7, "aggregation": MAX_AMPDU_FRAMES[std],
          "aggregation_bytes": MAX_AMPDU_BYTES[std], "queue": 1000,
          "queue_bytes": 0, "stations": 0, "station_load": math.inf, "station_frame": 1500}
    for std, band, width in (("a", 5.0, 20), ("n", 2.4, 20), ("ac", 5.0, 80),
                             ("ax", 5.0, 80))}
DEFAULT_STANDARD = "ac"

# a received power a Wi-Fi receiver could report (RSSI)
MIN_RSSI_DBM, MAX_RSSI_DBM = -110.0, -10.0
_GHZ = re.compile(r"^\s*(?P<num>\d+(?:\.\d+)?)\s*GHz\s*$", re.IGNORECASE)
_MHZ = re.compile(r"^\s*(?P<num>\d+)\s*MHz\s*$", re.IGNORECASE)


def _where(argument: str | None, key: str) -> str:
    """``--medium mcs`` on the command line, ``preset 'x': medium.mcs`` in a preset."""
    base = argument or "medium"
    return f"{base} {key}" if base.startswith("--") else f"{base}.{key}"


def _integer(value: Any, argument: str, low: int, high: int, what: str) -> int:
    text = str(value).strip() if isinstance(value, (str, int)) and not isinstance(
        value, bool) else None
    if text is None or not re.fullmatch(r"\d+", text) or not low <= int(text) <= high:
        raise UsageError(f"expected {what}, a whole number {low}..{high}, got {value!r}",
                         argument=argument)
    return int(text)


def _standard(value: Any, argument: str) -> str:
    text = str(value).strip().lower().removeprefix("802.11")
    if text not in phy.STANDARDS:
        raise UsageError(f"expected a, n, ac or ax (802.11a/n/ac/ax), got {value!r}",
                         argument=argument)
    return text


def _band(value: Any, argument: str) -> float:
    match = _GHZ.match(value) if isinstance(value, str) else None
    if match is None or float(match["num"]) not in BANDS_GHZ:
        raise UsageError(f"expected 2.4GHz, 5GHz or 6GHz, got {value!r}", argument=argument)
    return float(match["num"])


def _width(value: Any, argument: str) -> int:
    match = _MHZ.match(value) if isinstance(value, str) else None
    if match is None or int(match["num"]) not in WIDTHS_MHZ:
        raise UsageError(f"expected 20MHz, 40MHz, 80MHz or 160MHz, got {value!r}",
                         argument=argument)
    return int(match["num"])


def _guard(value: Any, argument: str) -> int:
    forms = "a guard interval: 800ns, 400ns (n, ac), 1600ns or 3200ns (ax)"
    try:
        ns = round(parse_duration(value, argument) * 1e9)
    except UsageError:
        raise UsageError(f"expected {forms}, got {value!r}", argument=argument) from None
    if ns not in (400, 800, 1600, 3200):
        raise UsageError(f"expected {forms}, got {value!r}", argument=argument)
    return ns


def _load(value: Any, argument: str) -> float:
    if isinstance(value, str) and value.strip().lower() in ("saturated", "inf"):
        return math.inf
    try:
        return parse_bitrate(value, argument)
    except UsageError:
        raise UsageError(f"expected a bit rate above 0 (e.g. 20Mbit/s) or saturated (always "
                         f"a frame queued), got {value!r}", argument=argument) from None


def _bytes(value: Any, argument: str, allow_zero: bool = False) -> int:
    return parse_size(value, argument, allow_zero=allow_zero)


_PARSERS = {
    "standard": _standard, "band": _band, "width": _width,
    "streams": lambda v, a: _integer(v, a, 1, 4, "spatial streams"),
    "mcs": lambda v, a: _integer(v, a, 0, 11, "an MCS index"),
    "guard": _guard,
    "per": lambda v, a: parse_fraction(v, a),
    "multicast_per": lambda v, a: parse_fraction(v, a),
    "retry_limit": lambda v, a: _integer(v, a, 0, MAX_RETRY_LIMIT, "retransmissions"),
    "aggregation": lambda v, a: _integer(v, a, 1, 256, "MPDUs per A-MPDU"),
    "aggregation_bytes": lambda v, a: _bytes(v, a),
    "queue": lambda v, a: _integer(v, a, 1, MAX_QUEUE_PACKETS, "frames per station queue"),
    "queue_bytes": lambda v, a: _bytes(v, a, allow_zero=True),
    "stations": lambda v, a: _integer(v, a, 0, MAX_STATIONS, "background stations"),
    "station_load": _load,
    "station_frame": lambda v, a: _bytes(v, a),
    "distance": lambda v, a: parse_distance(v, a),
    "tx_power": lambda v, a: parse_tx_power(v, a),
    "rssi": lambda v, a: _rssi(v, a),
    "rate_control": lambda v, a: _rate_control(v, a),
    "motion": lambda v, a: parse_motion(v, a),
}


def _rssi(value: Any, argument: str) -> float:
    dbm = dbm_of(value)
    if dbm is None or not MIN_RSSI_DBM <= dbm <= MAX_RSSI_DBM:
        raise UsageError(f"expected a received power from {MIN_RSSI_DBM:g} to {MAX_RSSI_DBM:g} "
                         f"dBm, e.g. -66dBm, got {value!r}", argument=argument)
    return dbm


def _rate_control(value: Any, argument: str) -> str:
    if value not in wifi_channel.RATE_CONTROLS:
        raise UsageError(f"expected one of {', '.join(wifi_channel.RATE_CONTROLS)}, got "
                         f"{value!r}", argument=argument)
    return str(value)


def parse_given(value: Any, argument: str | None = "--medium") -> dict[str, Any]:
    """``{mcs: 9}`` or ``"standard=ac,mcs=9"`` -> {key: value as written}, each key known
    and each value well formed (combinations: :func:`resolve`); ``{}``: every default."""
    if isinstance(value, str) and not value.strip():
        value = None
    elif isinstance(value, str):
        items: dict[str, Any] = {}
        for part in (p for p in value.split(",") if p.strip()):
            key, equals, text = part.partition("=")
            if not equals or not key.strip() or not text.strip():
                raise UsageError(f"expected KEY=VALUE[,KEY=VALUE...] (keys: "
                                 f"{', '.join(KEYS)}), got {value!r}", argument=argument)
            items[key.strip()] = text.strip()
        value = items
    if not isinstance(value, Mapping):
        raise UsageError(f"expected a mapping of medium keys ({', '.join(KEYS)}), e.g. "
                         "{standard: ac, mcs: 9}", argument=argument)
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key not in _PARSERS:
            raise UsageError(f"unknown key {key!r}; known: {', '.join(KEYS)}",
                             argument=argument)
        _PARSERS[key](item, _where(argument, key))
        out[str(key)] = item
    return out


@dataclass(frozen=True)
class MediumSpec:
    """The medium of a link: the keys as written (``given``) and what they resolve to."""

    given: tuple[tuple[str, Any], ...]
    standard: str
    band_ghz: float
    width_mhz: int
    streams: int
    mcs: int
    guard_ns: int
    per: float
    multicast_per: float
    retry_limit: int
    aggregation: int
    aggregation_bytes: int
    queue_packets: int
    queue_bytes: int
    stations: int
    station_load_bps: float
    station_frame_bytes: int
    # the channel from distance (None: per and multicast_per as given); per_bytes: the
    # MPDU size per is for (0: every MPDU alike)
    channel: wifi_channel.Channel | None = None
    distance_m: float | None = None
    tx_power_dbm: float | None = None
    rssi_dbm: float | None = None
    rate_control: str | None = None
    per_bytes: int = 0
    # a moving robot: the channel from each step's time on (the first is at 0 s: the
    # starting channel, as above; the others are the relay's medium_step lines, which
    # describe() counts as "steps"), wifi_channel.along
    motion: Motion | None = None
    steps: tuple[tuple[float, wifi_channel.Channel], ...] = ()

    @property
    def phy_rate_bps(self) -> float:
        return phy.phy_rate_bps(self.standard, self.width_mhz, self.streams, self.mcs,
                                self.guard_ns)

    def text(self) -> str:
        """One line: ``802.11ac 5GHz 80MHz 1x MCS 7 800ns (292.5Mbit/s)``."""
        bg = ""
        if self.stations:
            load = ("saturated" if math.isinf(self.station_load_bps)
                    else format_bitrate(self.station_load_bps))
            bg = f", {self.stations} stations {load}"
        where = ""
        if self.channel is not None:
            at = (f"at {self.distance_m:g}m" if self.distance_m is not None
                  else f"at {self.rssi_dbm:g}dBm")
            where = (f" {at} (SNR {self.channel.snr_db:.1f}dB, "
                     f"PER {self.per:.2%}, rate control {self.rate_control})")
            if self.motion is not None:
                end = self.steps[-1][1]
                where += (f", moving to {self.motion.text()} (then SNR {end.snr_db:.1f}dB, "
                          f"MCS {end.mcs}, PER {end.per:.2%})")
        return (f"802.11{self.standard} {self.band_ghz:g}GHz {self.width_mhz}MHz "
                f"{self.streams}x MCS {self.mcs} {self.guard_ns}ns "
                f"({format_bitrate(self.phy_rate_bps)}){where}{bg}")

    def describe(self) -> dict[str, Any]:
        """Every key (the resolved value, in the field's units) and the PHY rate."""
        load = self.station_load_bps
        return {"standard": self.standard, "band": f"{self.band_ghz:g}GHz",
                "width": f"{self.width_mhz}MHz", "streams": self.streams, "mcs": self.mcs,
                "guard": f"{self.guard_ns}ns", "phy_rate": format_bitrate(self.phy_rate_bps),
                "per": self.per, "multicast_per": self.multicast_per,
                "retry_limit": self.retry_limit, "aggregation": self.aggregation,
                "aggregation_bytes": self.aggregation_bytes, "queue": self.queue_packets,
                "queue_bytes": self.queue_bytes, "stations": self.stations,
                **({"station_load": "saturated" if math.isinf(load) else format_bitrate(load),
                    "station_frame": self.station_frame_bytes} if self.stations else {}),
                "access": f"{'DCF' if self.standard == 'a' else 'EDCA AC_BE'} CWmin {CW_MIN} "
                          f"CWmax {CW_MAX} AIFSN {AIFSN[self.standard]}",
                **(self._channel_figures() if self.channel is not None else {}),
                "given": dict(self.given)}

    def _channel_figures(self) -> dict[str, Any]:
        assert self.channel is not None
        source = ({"distance": f"{self.distance_m:g}m", "tx_power": f"{self.tx_power_dbm:g}dBm"}
                  if self.distance_m is not None else {"rssi": f"{self.rssi_dbm:g}dBm"})
        moving = {}
        if self.motion is not None:
            end = self.steps[-1][1]
            moving = {"motion": self.motion.text(), "steps": len(self.steps) - 1,
                      "at_end": {"snr": f"{end.snr_db:.1f}dB", "mcs": end.mcs,
                                 "per": end.per, "multicast_per": end.multicast_per}}
        return {**source, "rate_control": self.rate_control,
                "snr": f"{self.channel.snr_db:.1f}dB", "per_for": f"{self.per_bytes}B MPDUs",
                **moving}

    def directive(self, log_path: str = "") -> Medium:
        """The relay's ``medium`` line (linklab.emu.directives.Medium, base units)."""
        return Medium(standard=self.standard, band_ghz=self.band_ghz, width_mhz=self.width_mhz,
                      nss=self.streams, mcs=self.mcs, gi_ns=self.guard_ns, per=self.per,
                      multicast_per=self.multicast_per, retry_limit=self.retry_limit,
                      cw_min=CW_MIN, cw_max=CW_MAX, aifsn=AIFSN[self.standard],
                      ampdu_frames=self.aggregation,
                      ampdu_bytes=self.aggregation_bytes,
                      ppdu_max_ns=PPDU_MAX_NS, queue_packets=self.queue_packets,
                      queue_bytes=self.queue_bytes, bg_stations=self.stations,
                      bg_load_bps=self.station_load_bps if self.stations else 0.0,
                      bg_frame_bytes=self.station_frame_bytes, per_bytes=self.per_bytes,
                      log=log_path,
                      steps=tuple(MediumStep(at_s=t, mcs=c.mcs, per=c.per,
                                             multicast_per=c.multicast_per)
                                  for t, c in self.steps[1:]))


def merge(medium: MediumSpec | None, value: Any, argument: str | None) -> MediumSpec:
    """``value``'s keys written over ``medium``'s (None: a new medium), resolved."""
    given = dict(medium.given) if medium is not None else {}
    given.update(parse_given(value, argument))
    return resolve(given, argument)


def resolve(given: Mapping[str, Any], argument: str | None = "--medium") -> MediumSpec:
    """The keys given, over the defaults of their standard; every combination the relay
    would refuse is refused here, naming the key."""
    parsed = {k: _PARSERS[k](v, _where(argument, k)) for k, v in given.items()}
    std = parsed.get("standard", DEFAULT_STANDARD)
    values = {**DEFAULTS[std], **parsed}

    def refuse(key: str, message: str) -> UsageError:
        return UsageError(message, argument=_where(argument, key))

    name = f"802.11{std}"
    band, width = values["band"], values["width"]
    if band == 2.4 and std != "n":
        raise refuse("band", f"{name} is not on 2.4GHz here; 2.4GHz takes standard n")
    if band == 6.0 and std != "ax":
        raise refuse("band", f"{name} is not on 6GHz; 6GHz takes standard ax")
    if width not in phy.DATA_SUBCARRIERS[std]:
        widths = ", ".join(f"{w}MHz" for w in phy.DATA_SUBCARRIERS[std])
        raise refuse("width", f"{name} has {widths}, not {width}MHz")
    streams, mcs, guard = values["streams"], values["mcs"], values["guard"]
    if streams > phy.MAX_STREAMS[std]:
        raise refuse("streams", f"{name} has {phy.MAX_STREAMS[std]} stream, not {streams}")
    if mcs >= phy.MCS_COUNT[std]:
        top = phy.MCS_COUNT[std] - 1
        what = (" (6..54 Mbit/s: 7 is 54 Mbit/s)" if std == "a" else "")
        raise refuse("mcs", f"{name} has MCS 0..{top}{what}, not {mcs}")
    if std == "ac" and (width, mcs, streams) in phy.VHT_INVALID:
        raise refuse("mcs", f"VHT MCS {mcs} at {width}MHz with {streams} stream(s) is not a "
                     "valid combination (802.11-2016 §21.5); take another MCS or width")
    if guard not in phy.GUARDS_NS[std]:
        guards = ", ".join(f"{g}ns" for g in phy.GUARDS_NS[std])
        raise refuse("guard", f"{name} has a guard interval of {guards}, not {guard}ns")
    frames, limit = values["aggregation"], MAX_AMPDU_FRAMES[std]
    if frames > limit:
        raise refuse("aggregation", "802.11a has no aggregation: 1 frame per exchange"
                     if std == "a" else f"{name} aggregates at most {limit} MPDUs, not {frames}")
    if "aggregation_bytes" in parsed:
        size = parsed["aggregation_bytes"]
        if std == "a":
            raise refuse("aggregation_bytes", "802.11a has no aggregation; leave it out")
        if not MIN_AMPDU_BYTES <= size <= MAX_AMPDU_BYTES[std]:
            raise refuse("aggregation_bytes", f"{name} allows A-MPDUs of {MIN_AMPDU_BYTES}.."
                         f"{MAX_AMPDU_BYTES[std]} B, not {size} B")
    channel, steps = _channel_from_distance(std, values, parsed, refuse)
    stations = values["stations"]
    for key in ("station_load", "station_frame"):
        if key in parsed and stations == 0:
            raise refuse(key, "applies to background stations; give stations too (e.g. 4)")
    if not MIN_STATION_FRAME <= values["station_frame"] <= MAX_STATION_FRAME:
        raise refuse("station_frame", f"expected {MIN_STATION_FRAME}..{MAX_STATION_FRAME} B "
                     f"(an IP packet in one MSDU), not {values['station_frame']} B")
    per, multicast_per = values["per"], values["multicast_per"]
    extra: dict[str, Any] = {}
    if channel is not None:
        mcs, per, multicast_per = channel.mcs, channel.per, channel.multicast_per
        extra = {"channel": channel, "distance_m": values.get("distance"),
                 "rate_control": values["rate_control"], "per_bytes": wifi_channel.TABLE_BYTES,
                 "motion": values.get("motion"), "steps": steps,
                 **({"rssi_dbm": values["rssi"]} if "rssi" in values
                    else {"tx_power_dbm": values["tx_power"]})}
    return MediumSpec(
        given=tuple(given.items()), standard=std, band_ghz=band, width_mhz=width,
        streams=streams, mcs=mcs, guard_ns=guard, per=per,
        multicast_per=multicast_per, retry_limit=values["retry_limit"],
        aggregation=frames, aggregation_bytes=values["aggregation_bytes"],
        queue_packets=values["queue"], queue_bytes=values["queue_bytes"], stations=stations,
        station_load_bps=values["station_load"], station_frame_bytes=values["station_frame"],
        **extra)


def _channel_from_distance(std: str, values: dict[str, Any], parsed: dict[str, Any],
                           refuse: Any) -> tuple[wifi_channel.Channel | None,
                                                 tuple[tuple[float, wifi_channel.Channel], ...]]:
    """The channel at ``distance``, or at a received power ``rssi`` (None without either),
    and along ``motion`` (wifi_channel.along; () without it); ``values`` gains the defaults
    of ``tx_power`` and ``rate_control``. A key that needs one of them, or that one
    replaces, is refused."""
    if "motion" in parsed and "distance" not in parsed:
        raise refuse("motion", "moves the robot from its distance to the AP; give distance "
                               "(e.g. 20m) too" + (", not rssi" if "rssi" in parsed else ""))
    source = next((k for k in ("distance", "rssi") if k in parsed), None)
    if source is None:
        for key in ("tx_power", "rate_control"):
            if key in parsed:
                raise refuse(key, "applies to a channel from distance or rssi; give "
                                  "distance (e.g. 20m) or rssi (e.g. -60dBm) too")
        return None, ()
    if "distance" in parsed and "rssi" in parsed:
        raise refuse("rssi", "is what a distance gives; give distance or rssi, not both")
    if "rssi" in parsed and "tx_power" in parsed:
        raise refuse("tx_power", "is in rssi already; give rssi or distance and tx_power")
    if std == "a":
        raise refuse(source, "802.11a's channel from distance is the radio field "
                             "(paper 002's ns-3 medium); here standard n, ac or ax")
    for key in ("per", "multicast_per"):
        if key in parsed:
            raise refuse(key, f"comes from {source} (ns-3's error tables); give per or "
                              f"{source}, not both")
    values.setdefault("tx_power", wifi_channel.DEFAULT_TX_POWER_DBM)
    values.setdefault("rate_control", "best")
    width, streams, guard, top = (values["width"], values["streams"], values["guard"],
                                  values["mcs"])
    valid = tuple(m for m in range(top + 1)
                  if not (std == "ac" and (width, m, streams) in phy.VHT_INVALID))

    def channel_of(received: float) -> wifi_channel.Channel:
        return wifi_channel.channel(std, width, streams, guard, received,
                                    values["rate_control"], top, valid)

    def at_distance(metres: float) -> wifi_channel.Channel:
        return channel_of(wifi_channel.received_dbm(metres, values["band"], values["tx_power"]))

    if source == "rssi":
        return channel_of(values["rssi"]), ()
    motion = values.get("motion")
    if motion is None:
        return at_distance(values["distance"]), ()
    steps = wifi_channel.along(values["distance"], motion.to_m, motion.over_s, at_distance)
    return steps[0][1], tuple(steps)
