"""Quantities with units: the only way sizes, rates and durations enter linklab.

Every parser returns a plain SI number (bytes, bit/s, Hz, seconds, or a fraction
0..1) and rejects a bare number where a unit is required, naming the accepted forms.

Sizes: ``B``, decimal ``KB MB GB`` (1000^n) and binary ``KiB MiB GiB`` (1024^n).
Bit rates: ``bit/s kbit/s Mbit/s Gbit/s`` or ``bps kbps Mbps Gbps`` (1000^n bit/s).
Frequencies: ``Hz kHz``. Durations: ``ns us ms s min h``. Fractions: ``1%`` or ``0.01``.
Values must be finite and at most MAX_SIZE / MAX_BITRATE / MAX_FREQUENCY / MAX_DURATION
after scaling (``1e300GiB``, ``1e308h``, ``inf``, ``nan`` are one-line errors).
"""

from __future__ import annotations

import math
import re

from linklab.errors import UsageError

_NUMBER = r"(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
_PATTERN = re.compile(rf"^\s*{_NUMBER}\s*(?P<unit>[A-Za-z/%]*)\s*$")

SIZE_UNITS: dict[str, int] = {
    "B": 1,
    "KB": 1000, "MB": 1000**2, "GB": 1000**3,
    "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3,
}
BITRATE_UNITS: dict[str, float] = {
    "bit/s": 1.0, "kbit/s": 1e3, "Mbit/s": 1e6, "Gbit/s": 1e9,
    "bps": 1.0, "kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9,
}
FREQUENCY_UNITS: dict[str, float] = {"Hz": 1.0, "kHz": 1e3}
DURATION_UNITS: dict[str, float] = {
    "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0,
}

SIZE_FORMS = "a size with a unit, e.g. 256KiB, 64KB, 1500B, 2MiB (KB=1000 B, KiB=1024 B)"
BITRATE_FORMS = "a bit rate with a unit, e.g. 433Mbit/s, 433Mbps, 1Gbit/s, 100kbit/s"
FREQUENCY_FORMS = "a frequency with a unit, e.g. 30Hz, 0.33Hz, 1kHz"
DURATION_FORMS = "a duration with a unit, e.g. 20s, 100ms, 1.5min"
FRACTION_FORMS = "a fraction, e.g. 1% or 0.01 (between 0 and 1)"
# Largest values accepted: far beyond any real one, small enough that later arithmetic
# stays finite and exact (2^53 B = 8 PiB), and that a duration still fits the timeouts
# of time.sleep and threading (at most ~9.2e9 s on Linux).
MAX_SIZE = 2**53
MAX_BITRATE = 1e15
MAX_FREQUENCY = 1e9
MAX_DURATION = 1e9


def _split(text: str | float | int, argument: str | None, forms: str) -> tuple[float, str]:
    if isinstance(text, bool):
        raise UsageError(f"expected {forms}, got {text!r}", argument=argument)
    if isinstance(text, (int, float)):
        try:
            value = float(text)
        except OverflowError:
            value = math.inf
        unit = ""
    elif isinstance(text, str):
        match = _PATTERN.match(text)
        if not match:
            raise UsageError(f"expected {forms}, got {_show(text)}", argument=argument)
        value, unit = float(match["num"]), match["unit"]
    else:
        raise UsageError(f"expected {forms}, got {_show(text)}", argument=argument)
    if not math.isfinite(value):
        raise UsageError(f"expected {forms}, got {_show(text)} (not a finite number)",
                         argument=argument)
    return value, unit


def _show(text: object) -> str:
    """The input as shown in a one-line message (repr: no raw newlines; shortened)."""
    shown = repr(text)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _with_unit(
    text: str | float | int,
    units: dict[str, float] | dict[str, int],
    argument: str | None,
    forms: str,
    *,
    allow_zero: bool,
    limit: float,
) -> float:
    value, unit = _split(text, argument, forms)
    if unit == "":
        raise UsageError(f"{_show(text)} has no unit; expected {forms}", argument=argument)
    factor = units.get(unit)
    if factor is None:
        raise UsageError(f"unknown unit {unit!r} in {_show(text)}; expected {forms}",
                         argument=argument)
    result = value * factor
    if not math.isfinite(result) or result > limit:
        raise UsageError(f"{_show(text)} is too large (at most {limit:g} in SI units); "
                         f"expected {forms}", argument=argument)
    if result < 0 or (result == 0 and not allow_zero):
        need = "zero or more" if allow_zero else "more than zero"
        raise UsageError(f"{_show(text)} must be {need}; expected {forms}", argument=argument)
    return result


def parse_size(text: str, argument: str | None = None, *, allow_zero: bool = False) -> int:
    """``"256KiB"`` -> 262144 (bytes). Fractions of a byte are rejected."""
    value = _with_unit(text, SIZE_UNITS, argument, SIZE_FORMS, allow_zero=allow_zero,
                      limit=MAX_SIZE)
    if abs(value - round(value)) > 1e-9:
        raise UsageError(f"{_show(text)} is not a whole number of bytes", argument=argument)
    return int(round(value))


def parse_bitrate(text: str, argument: str | None = None, *, allow_zero: bool = False) -> float:
    """``"433Mbit/s"`` -> 433e6 (bit/s)."""
    return _with_unit(text, BITRATE_UNITS, argument, BITRATE_FORMS, allow_zero=allow_zero,
                      limit=MAX_BITRATE)


def parse_frequency(text: str, argument: str | None = None, *, allow_zero: bool = False) -> float:
    """``"30Hz"`` -> 30.0 (Hz)."""
    return _with_unit(text, FREQUENCY_UNITS, argument, FREQUENCY_FORMS, allow_zero=allow_zero,
                      limit=MAX_FREQUENCY)


def parse_duration(text: str, argument: str | None = None, *, allow_zero: bool = False) -> float:
    """``"20s"`` -> 20.0, ``"100ms"`` -> 0.1 (seconds)."""
    return _with_unit(text, DURATION_UNITS, argument, DURATION_FORMS, allow_zero=allow_zero,
                      limit=MAX_DURATION)


def parse_fraction(text: str | float, argument: str | None = None) -> float:
    """``"1%"`` -> 0.01, ``"0.01"`` -> 0.01. Must lie in [0, 1]."""
    value, unit = _split(text, argument, FRACTION_FORMS)
    if unit == "%":
        value /= 100.0
    elif unit != "":
        raise UsageError(f"unknown unit {unit!r} in {_show(text)}; expected {FRACTION_FORMS}",
                         argument=argument)
    elif value > 1:
        raise UsageError(f"{_show(text)} is more than 1; write a percentage with %, "
                         f"e.g. {_show(str(text).strip() + '%')}", argument=argument)
    if not 0.0 <= value <= 1.0:
        raise UsageError(f"{_show(text)} is outside 0..100%; expected {FRACTION_FORMS}",
                         argument=argument)
    return value


# --- formatting (for tables and explanations) ----------------------------------------

def format_size(n_bytes: float) -> str:
    """Binary units for sizes: 262144 -> '256 KiB'."""
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(n_bytes) >= factor:
            return f"{n_bytes / factor:.4g} {unit}"
    return f"{n_bytes:.4g} B"


def size_label(n_bytes: int) -> str:
    """Exact, short (cell ids, table headers): 262144 -> '256KiB', 231000 -> '231KB',
    1500 -> '1500B'."""
    for unit, factor in (("MiB", 1024**2), ("KiB", 1024), ("MB", 1000**2), ("KB", 1000)):
        if n_bytes >= factor and n_bytes % factor == 0:
            return f"{n_bytes // factor}{unit}"
    return f"{n_bytes}B"


def format_bitrate(bits_per_s: float) -> str:
    """433e6 -> '433 Mbit/s'."""
    for unit, factor in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if abs(bits_per_s) >= factor:
            return f"{bits_per_s / factor:.4g} {unit}"
    return f"{bits_per_s:.4g} bit/s"


def format_duration(seconds: float) -> str:
    """0.0167 -> '16.7 ms'."""
    if seconds == 0:
        return "0 s"
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= factor:
            return f"{seconds / factor:.4g} {unit}"
    return f"{seconds / 1e-9:.4g} ns"


def format_percent(fraction: float) -> str:
    return f"{fraction * 100:.4g} %"


def format_fixed(value: float, unit: str, *, scale: float = 1.0, digits: int = 2) -> str:
    """``value * scale`` with ``digits`` decimals, then the unit: (0.5, "%", scale=100) ->
    "50.00 %"."""
    return f"{value * scale:.{digits}f} {unit}"
