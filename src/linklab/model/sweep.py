"""``--sweep NAME=LO..HI[:STEP]`` or ``NAME=V1,V2,...``: the values one model column varies over."""

from __future__ import annotations

from dataclasses import dataclass

from linklab.errors import UsageError
from linklab.units import parse_bitrate, parse_fraction, parse_frequency, parse_size

SWEEP_FORMS = ("NAME=LO..HI[:STEP] or NAME=V1,V2,... with NAME one of payload, per, rate, link, "
               "max-message-size; e.g. payload=32KiB..512KiB (doubling), per=0..20% "
               "(11 steps), per=0..20%:5%, rate=10Hz..60Hz:10Hz")


def parse_count_bytes(text: str, argument: str) -> int:
    """A byte count given bare (``1500``) or with a size unit (``1500B``, ``64KiB``)."""
    stripped = str(text).strip()
    if stripped.isdigit():
        value = int(stripped)
        if value <= 0:
            raise UsageError(f"{text!r} must be more than zero; e.g. 1500 or 1500B",
                             argument=argument)
        return value
    return parse_size(stripped, argument)


# name -> (field of ModelInput, parser, geometric by default)
_FIELDS = {
    "payload": ("payload_bytes", lambda v: parse_size(v, "--sweep"), True),
    "per": ("per", lambda v: parse_fraction(v, "--sweep"), False),
    "rate": ("rate_hz", lambda v: parse_frequency(v, "--sweep"), True),
    "link": ("link_bits_per_s", lambda v: parse_bitrate(v, "--sweep"), True),
    "max-message-size": ("max_message_size", lambda v: parse_count_bytes(v, "--sweep"), True),
}
MAX_POINTS = 200


@dataclass(frozen=True)
class Sweep:
    name: str
    field: str
    values: list[float]


def _range(name: str, lo_text: str, hi_text: str, step_text: str | None) -> list[float]:
    _, parse, geometric = _FIELDS[name]
    lo, hi = parse(lo_text), parse(hi_text)
    if hi < lo:
        raise UsageError(f"range {lo_text}..{hi_text} runs backwards; expected {SWEEP_FORMS}",
                         argument="--sweep")
    values: list[float] = []
    if step_text is None and not geometric:
        values = [lo + (hi - lo) * i / 10 for i in range(11)] if hi > lo else [lo]
    elif step_text is None or step_text.startswith("x"):
        factor = 2.0 if step_text is None else float(step_text[1:] or "nan")
        if not factor > 1.0:
            raise UsageError(f"step {step_text!r} must be x<factor> above 1, e.g. x2",
                             argument="--sweep")
        if lo <= 0:
            raise UsageError("a doubling sweep needs a start above zero", argument="--sweep")
        v = lo
        while v <= hi * (1 + 1e-9) and len(values) <= MAX_POINTS:
            values.append(v)
            v *= factor
        if values[-1] < hi * (1 - 1e-9):
            values.append(hi)
    else:
        step = parse(step_text)
        if step <= 0:
            raise UsageError(f"step {step_text!r} must be above zero", argument="--sweep")
        i = 0
        while lo + i * step <= hi * (1 + 1e-9) + 1e-12 and len(values) <= MAX_POINTS:
            values.append(lo + i * step)
            i += 1
    if len(values) > MAX_POINTS:
        raise UsageError(f"the sweep has more than {MAX_POINTS} points; use a larger step",
                         argument="--sweep")
    return values


def parse_sweep(text: str) -> Sweep:
    name, sep, spec = str(text).partition("=")
    name = name.strip()
    if not sep or name not in _FIELDS or not spec.strip():
        raise UsageError(f"{text!r} is not a sweep; expected {SWEEP_FORMS}", argument="--sweep")
    field = _FIELDS[name][0]
    spec = spec.strip()
    if ".." in spec:
        lo_text, _, rest = spec.partition("..")
        hi_text, _, step_text = rest.partition(":")
        values = _range(name, lo_text, hi_text, step_text or None)
    else:
        parse = _FIELDS[name][1]
        values = [parse(v) for v in spec.split(",") if v.strip()]
    if field in ("payload_bytes", "max_message_size"):
        values = [float(round(v)) for v in values]
    return Sweep(name, field, values)
