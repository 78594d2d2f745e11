"""A distance-based Wi-Fi medium as link fields (paper 002), pure data and parsing.

Paper 002 (Thulasiraman et al., SYSCON 2020) joins ROS 2 nodes in network namespaces by
an ns-3 802.11a ad-hoc channel (§III-A): the publisher in the middle, subscribers at a
distance d around it (Fig. 3), log-distance propagation loss (exponent 3), constant rate
OFDM 54 Mbit/s. linklab makes that a link: the fields below, on any preset or inline link.

``distance``  how far each robot is from the edge host (the publisher, at the centre), e.g.
              ``25m`` or ``25.5m``; robots are spread evenly on that circle (Fig. 3: four
              subscribers at 0, 90, 180, 270 degrees).
``positions`` a mapping host -> [x, y] in metres (``{robot2: [0m, 30m]}``) for hosts that
              are not on the circle (the edge may move too; default (0, 0)).
``tx_power``  transmit power of every station, e.g. ``16.0206dBm`` (ns-3's default).
``motion``    a moving node, e.g. ``30m over 60s``: every robot ``distance`` puts on the
              circle moves straight away from the edge, at constant speed, from
              ``distance`` to 30 m over 60 s counted from when the medium comes up (a
              bench cell brings its link up just before its endpoints start, so they
              discover each other near ``distance``), then stays at 30 m. ns-3 moves it
              (ConstantVelocityMobilityModel: linklab-ns3 --move). Robots placed by
              ``positions`` stay put. ns3 mode only (the fast mode's loss is one fixed
              value per link: refused there).
``radio``     ``ns3`` (the default): the ns-3 simulation itself (wires/ns3.py), realtime;
              ``curve``: the fast mode -- no simulator; each robot's link gets the loss
              the ns-3 medium measured at that distance for 60-byte packets
              (radio_curve.py, ``radio-curve.json``), applied by the kernel loss stage;
              beyond the curve's range (100 %) every packet is dropped, labelled "out
              of range" (radio_curve.CurveLossStage says why: applied, not refused).

The calibration (why these defaults) is in CALIBRATION below and in radio-curve.json.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from linklab.errors import UsageError
from linklab.model.wifi_channel import DEFAULT_TX_POWER_DBM, NOISE_FIGURE_DB
from linklab.units import parse_duration

RADIO_MODES = ("ns3", "curve")
RADIO_FIELDS = ("radio", "distance", "positions", "tx_power", "motion")
# Fields of a LinkSpec that a radio link cannot take: its loss, rate and delay come from
# the medium (ns3) or from the measured curve (curve); nothing would be applied otherwise.
EXCLUSIVE_OF_RADIO = ("loss", "rate", "outage", "delay", "jitter", "jitter_distribution",
                      "burst_loss", "trace")
MAX_DISTANCE_M = 10_000.0
MIN_TX_POWER_DBM, MAX_TX_POWER_DBM = -30.0, 40.0
# 802.11's largest MSDU (IEEE 802.11-2016 §9.2.4.7): the medium carries no larger frame.
MAX_RADIO_MTU = 2304

# ns-3 3.37 defaults, kept: with them the 60-byte loss begins at 25.1 m (radio-curve.json),
# the paper's "packet loss begins to increase at the 25 meter mark" (§IV, Fig. 4). The
# paper leaves transmit power and receiver thresholds at ns-3's defaults ("We use the
# default log distance propagation loss model"); moving the onset to exactly 25.0 m would
# need -0.1 dB, within the accuracy of reading the figure, so nothing is changed.
# DEFAULT_TX_POWER_DBM: YansWifiPhy TxPowerStart/End (40 mW; linklab.model.wifi_channel)
CALIBRATION = {
    "standard": "802.11a, ad hoc (AdhocWifiMac)",
    "rate": "ConstantRateWifiManager, DataMode OfdmRate54Mbps (control frames: ns-3's "
            "choice, the highest basic rate not above the data rate)",
    "propagation": "YansWifiChannelHelper::Default(): LogDistancePropagationLossModel, "
                   "exponent 3, reference loss 46.6777 dB at 1 m; ConstantSpeed delay",
    "error_model": "NistErrorRateModel (YansWifiPhyHelper::Default() in ns-3.29, the "
                   "paper's version; ns-3.37 defaults to the table-based model)",
    "tx_power_dbm": DEFAULT_TX_POWER_DBM,
    "rx_noise_figure_db": NOISE_FIGURE_DB,
    "retries": "ns-3 defaults (7 for frames below the RTS threshold; no RTS/CTS)",
    "why": "ns-3's defaults put the first 60-byte loss at 25.1 m (1 in 2000), the paper's "
           "onset at 25 m (Fig. 4); no setting is moved away from ns-3's defaults",
}

_METRES = re.compile(r"^\s*(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*(?P<unit>m|cm|km)\s*$")
_DBM = re.compile(r"^\s*(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*dBm\s*$")
DISTANCE_FORMS = "a distance with a unit, e.g. 25m, 25.5m, 2500cm"
MOTION_FORMS = "DISTANCE over DURATION, e.g. 30m over 60s (the robots' distance at the end)"
_MOTION = re.compile(r"^\s*(?P<to>\S+)\s+over\s+(?P<over>\S+)\s*$")


@dataclass(frozen=True)
class Motion:
    """The robots on the distance circle move from ``distance`` to ``to_m`` over
    ``over_s`` seconds from the medium's start, then stay (module docstring: motion)."""

    to_m: float
    over_s: float

    def text(self) -> str:
        return f"{format_metres(self.to_m)} over {self.over_s:g}s"


@dataclass(frozen=True)
class RadioSpec:
    """The medium of a radio link: mode, robots' distance, explicit positions, power."""

    mode: str = "ns3"
    distance_m: float | None = None
    positions: tuple[tuple[str, float, float], ...] = ()     # (host, x, y) in metres
    tx_power_dbm: float = DEFAULT_TX_POWER_DBM
    motion: Motion | None = None
    fields: tuple[str, ...] = field(default=(), compare=False)  # as written, for messages

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode, "tx_power": f"{self.tx_power_dbm:g}dBm"}
        if self.distance_m is not None:
            out["distance"] = format_metres(self.distance_m)
        if self.positions:
            out["positions"] = {h: [format_metres(x), format_metres(y)]
                                for h, x, y in self.positions}
        if self.motion is not None:
            out["motion"] = self.motion.text()
        return out

    def position(self, host: str) -> tuple[float, float] | None:
        for name, x, y in self.positions:
            if name == host:
                return x, y
        return None


def format_metres(value: float) -> str:
    return f"{round(value, 3):g}m"


def parse_metres(value: Any, argument: str | None, *, allow_negative: bool = False) -> float:
    """``25m`` / ``2500cm`` / ``0.025km`` -> metres; a bare number has no unit."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise UsageError(f"expected {DISTANCE_FORMS}, got {value!r}", argument=argument)
    match = _METRES.match(str(value)) if isinstance(value, str) else None
    if match is None:
        hint = " (no unit)" if isinstance(value, (int, float)) or re.fullmatch(
            r"\s*[+-]?[\d.]+\s*", str(value)) else ""
        raise UsageError(f"expected {DISTANCE_FORMS}, got {value!r}{hint}", argument=argument)
    metres = float(match["num"]) * {"m": 1.0, "cm": 0.01, "km": 1000.0}[match["unit"]]
    if not math.isfinite(metres) or abs(metres) > MAX_DISTANCE_M:
        raise UsageError(f"{value!r} is beyond {MAX_DISTANCE_M:g} m", argument=argument)
    if metres < 0 and not allow_negative:
        raise UsageError(f"{value!r} is negative; expected {DISTANCE_FORMS}",
                         argument=argument)
    return metres


def parse_distance(value: Any, argument: str | None) -> float:
    metres = parse_metres(value, argument)
    if metres <= 0:
        raise UsageError(f"{value!r}: a robot needs a distance above 0 m from the edge",
                         argument=argument)
    return metres


def dbm_of(value: Any) -> float | None:
    """``-66dBm`` / ``16.0206dBm`` -> the number of dBm; None for anything else."""
    match = _DBM.match(value) if isinstance(value, str) else None
    return None if match is None else float(match["num"])


def parse_tx_power(value: Any, argument: str | None) -> float:
    dbm = dbm_of(value)
    if dbm is None:
        raise UsageError(f"expected a power in dBm, e.g. 16.0206dBm (ns-3's default), "
                         f"got {value!r}", argument=argument)
    if not MIN_TX_POWER_DBM <= dbm <= MAX_TX_POWER_DBM:
        raise UsageError(f"{value!r} is outside {MIN_TX_POWER_DBM:g}..{MAX_TX_POWER_DBM:g} "
                         "dBm", argument=argument)
    return dbm


def parse_mode(value: Any, argument: str | None) -> str:
    if value not in RADIO_MODES:
        raise UsageError(f"expected ns3 (the ns-3 simulation) or curve (the fast mode: "
                         f"its measured loss-vs-distance curve), got {value!r}",
                         argument=argument)
    return str(value)


def parse_motion(value: Any, argument: str | None) -> Motion:
    """``30m over 60s`` -> Motion(30.0, 60.0)."""
    match = _MOTION.match(value) if isinstance(value, str) else None
    if match is None:
        raise UsageError(f"expected {MOTION_FORMS}, got {value!r}", argument=argument)
    return Motion(parse_distance(match["to"], argument),
                  parse_duration(match["over"], argument))


HOST = re.compile(r"^(robot\d*|edge)$")


def parse_positions(value: Any, argument: str | None) -> tuple[tuple[str, float, float], ...]:
    """``{robot1: [25m, 0m], edge: [0m, 0m]}`` -> ((host, x, y), ...), sorted by host."""
    if not isinstance(value, Mapping) or not value:
        raise UsageError("expected a mapping host -> [x, y] with units, e.g. "
                         "{robot1: [25m, 0m], robot2: [0m, 30m]}", argument=argument)
    out = []
    for host, xy in value.items():
        where = f"{argument}.{host}" if argument else str(host)
        if not isinstance(host, str) or not HOST.match(host):
            raise UsageError(f"{host!r} is not a host of a radio link; expected edge, robot "
                             "or robot1..N", argument=argument)
        if isinstance(xy, str) or not isinstance(xy, (list, tuple)) or len(xy) != 2:
            raise UsageError(f"expected [x, y] with units, e.g. [25m, 0m], got {xy!r}",
                             argument=where)
        x, y = (parse_metres(v, where, allow_negative=True) for v in xy)
        out.append((host, x, y))
    return tuple(sorted(out))


_PARSERS = {"radio": ("mode", parse_mode), "distance": ("distance_m", parse_distance),
            "positions": ("positions", parse_positions),
            "tx_power": ("tx_power_dbm", parse_tx_power),
            "motion": ("motion", parse_motion)}


def apply_field(radio: RadioSpec | None, key: str, value: Any,
                argument: str | None) -> RadioSpec:
    """One radio field written over ``radio`` (None: a new ns3 medium)."""
    attr, parse = _PARSERS[key]
    base = radio or RadioSpec()
    return replace(base, **{attr: parse(value, argument)},
                   fields=tuple(dict.fromkeys((*base.fields, key))))


def station_positions(radio: RadioSpec, robots: list[str]) -> dict[str, tuple[float, float]]:
    """Where each host is (metres): the edge at (0, 0) unless placed; robots not placed
    by ``positions`` at ``distance`` from the edge, evenly spread (002 Fig. 3: robot k of N
    at angle 2*pi*(k-1)/N, so four robots sit at 0, 90, 180 and 270 degrees)."""
    edge = radio.position("edge") or (0.0, 0.0)
    out = {"edge": edge}
    free = [r for r in robots if radio.position(r) is None]
    for r in robots:
        placed = radio.position(r)
        if placed is not None:
            out[r] = placed
            continue
        if radio.distance_m is None:
            raise UsageError(f"{r} has no position: give distance (e.g. 25m) or positions "
                             f"for every robot", argument="distance")
        k = free.index(r)
        angle = 2 * math.pi * k / len(free)
        out[r] = (round(edge[0] + radio.distance_m * math.cos(angle), 6),
                  round(edge[1] + radio.distance_m * math.sin(angle), 6))
    return out


def motion_targets(radio: RadioSpec, robots: list[str],
                   positions: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
    """Where each moving robot ends (metres): the robots on the distance circle (not
    placed by ``positions``), on the same ray from the edge at ``motion``'s distance.
    Empty without motion; refused when no robot is on the circle (nothing would move)."""
    if radio.motion is None:
        return {}
    edge = positions["edge"]
    free = [r for r in robots if radio.position(r) is None]
    if not free or radio.distance_m is None:
        raise UsageError("motion moves the robots that distance puts on its circle; "
                         + ("give distance too (e.g. 24m)" if radio.distance_m is None else
                            "every robot here is placed by positions, so none would move"),
                         argument="motion")
    scale = radio.motion.to_m / radio.distance_m
    return {r: (round(edge[0] + (positions[r][0] - edge[0]) * scale, 6),
                round(edge[1] + (positions[r][1] - edge[1]) * scale, 6)) for r in free}


def separation_m(a: tuple[float, float], b: tuple[float, float]) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


def conflicts(radio: RadioSpec | None, stage_fields: set[str], mtu: int) -> list[tuple[str, str]]:
    """(field, message) for settings a radio link cannot apply (refused, never dropped)."""
    if radio is None:
        return []
    out = []
    for name in EXCLUSIVE_OF_RADIO:
        if name in stage_fields:
            out.append((name, f"a radio link ({radio.mode}) makes its own loss, rate and "
                              f"delay from the distance; {name} cannot be applied on top of "
                              "it: leave it out, or use a link without distance"))
    if radio.motion is not None and radio.mode != "ns3":
        out.append(("motion", "the fast mode (radio: curve) applies one fixed loss per link; "
                              "a moving node needs the ns-3 medium (radio: ns3)"))
    if radio.mode == "ns3" and mtu > MAX_RADIO_MTU:
        out.append(("mtu", f"{mtu} B is above 802.11's largest frame body ({MAX_RADIO_MTU} B)"))
    return out


def radio_overrides(**flags: str | None) -> dict[str, str]:
    """``linklab link up --radio/--distance/--tx-power`` -> overrides for ``up``: the
    flags given (None left out), validated where the spec is built (named --distance ...)."""
    unknown = set(flags) - set(RADIO_FIELDS)
    if unknown:
        raise ValueError(f"not radio fields: {sorted(unknown)}")
    return {key: value for key, value in flags.items() if value is not None}
