"""What users type for the emulator's stages -> stage dataclasses.

Per direction: a value applies to both directions of a link, or ``UP/DOWN`` gives
the uplink (a -> b, e.g. robot -> server) and downlink (b -> a) separately, as in
``--delay 30ms/20ms``. Traces are given as ``up.trace,down.trace`` (Mahimahi's
order) or one file for both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from linklab.emu.models import read_trace
from linklab.emu.stages import (
    DISTRIBUTIONS,
    Delay,
    FourStateLoss,
    GilbertElliott,
    Loss,
    OnOff,
    Outage,
    Stage,
    Trace,
)
from linklab.errors import UsageError
from linklab.units import parse_duration, parse_fraction

LOSS_MODEL_FORMS = ("bernoulli:P, gemodel:p[,r[,1-h[,1-k]]] or "
                    "state:p13[,p31[,p32[,p23[,p14]]]] (fractions such as 1% or 0.01)")


def per_direction(text: str, argument: str) -> tuple[str, str]:
    """``X`` -> (X, X); ``UP/DOWN`` -> (UP, DOWN)."""
    parts = str(text).split("/")
    if len(parts) == 1:
        return parts[0], parts[0]
    if len(parts) == 2 and all(p.strip() for p in parts):
        return parts[0].strip(), parts[1].strip()
    raise UsageError(f"expected one value for both directions or UP/DOWN, got {text!r}",
                     argument=argument)


def parse_distribution(text: str, argument: str = "--jitter-distribution") -> str:
    if text not in DISTRIBUTIONS:
        raise UsageError(f"expected one of {', '.join(DISTRIBUTIONS)}, got {text!r}",
                         argument=argument)
    return text


def parse_loss_model(text: str, argument: str = "--loss-model") -> Stage:
    """``gemodel:1%,30%,100%,0%`` -> GilbertElliott(p=0.01, r=0.3, 1-h=1, 1-k=0).

    Defaults follow netem: gemodel r = 1 - p, 1-h = 100 %, 1-k = 0 %; state
    p31 = 1 - p13, p32 = 0, p23 = 1, p14 = 0."""
    name, _, rest = str(text).partition(":")
    values = [parse_fraction(v.strip(), argument) for v in rest.split(",") if v.strip()]
    if name == "bernoulli" and len(values) == 1:
        return Loss(values[0])
    if name == "gemodel" and 1 <= len(values) <= 4:
        p = values[0]
        r = values[1] if len(values) > 1 else 1 - p
        one_minus_h = values[2] if len(values) > 2 else 1.0
        one_minus_k = values[3] if len(values) > 3 else 0.0
        if p + r == 0:
            raise UsageError("gemodel: p and r cannot both be 0", argument=argument)
        return GilbertElliott(p, r, one_minus_h, one_minus_k)
    if name == "state" and 1 <= len(values) <= 5:
        defaults = [None, 1 - values[0], 0.0, 1.0, 0.0]
        p13, p31, p32, p23, p14 = values + defaults[len(values):]
        if p13 + p14 > 1 or p31 + p32 > 1:
            raise UsageError("state: p13 + p14 and p31 + p32 must each be at most 1",
                             argument=argument)
        return FourStateLoss(p13, p31, p32, p23, p14)
    raise UsageError(f"expected {LOSS_MODEL_FORMS}, got {text!r}", argument=argument)


def parse_trace_pair(text: str, argument: str = "--trace") -> tuple[Path, Path]:
    """``up.trace,down.trace`` (or one file for both); each file is validated."""
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) == 1:
        parts = parts * 2
    if len(parts) != 2 or not all(parts):
        raise UsageError(f"expected UP.trace,DOWN.trace or one trace file, got {text!r}",
                         argument=argument)
    paths = (Path(parts[0]), Path(parts[1]))
    for path in paths:
        read_trace(path)
    return paths


def parse_outage_windows(text: str, argument: str = "--outage") -> tuple[tuple[float, float], ...]:
    """``10s+5s,30s+2s`` -> ((10, 5), (30, 2)): start after the link comes up, length."""
    windows = []
    for item in str(text).split(","):
        start, plus, length = item.partition("+")
        if not plus:
            raise UsageError(f"expected START+LENGTH[,START+LENGTH...] such as 10s+5s, "
                             f"got {text!r}", argument=argument)
        windows.append((parse_duration(start.strip(), argument, allow_zero=True),
                        parse_duration(length.strip(), argument)))
    return tuple(sorted(windows))


def parse_on_off(text: str, argument: str = "--on-off") -> OnOff:
    """``5s,500ms`` -> OnOff(mean on 5 s, mean off 0.5 s) (Mahimahi mm-onoff)."""
    parts = str(text).split(",")
    if len(parts) != 2:
        raise UsageError(f"expected MEAN_ON,MEAN_OFF such as 5s,500ms, got {text!r}",
                         argument=argument)
    return OnOff(parse_duration(parts[0].strip(), argument),
                 parse_duration(parts[1].strip(), argument))


@dataclass(frozen=True)
class EmuOptions:
    """The emulator options of ``linklab link`` / presets, as typed (strings)."""

    delay: str | None = None
    jitter: str | None = None
    jitter_distribution: str = "normal"
    reorder: bool = False
    loss_model: str | None = None
    trace: str | None = None
    outage: str | None = None
    on_off: str | None = None


def stages_for(options: EmuOptions) -> tuple[tuple[Stage, ...], tuple[Stage, ...]]:
    """(uplink stages, downlink stages) for the options, in pipeline order:
    outage/on-off -> loss -> trace -> delay (a frame lost on the radio never
    queues; delay is the propagation after the bottleneck)."""
    up: list[Stage] = []
    down: list[Stage] = []
    if options.outage:
        windows = parse_outage_windows(options.outage)
        up.append(Outage(windows))
        down.append(Outage(windows))
    if options.on_off:
        up.append(parse_on_off(options.on_off))
        down.append(parse_on_off(options.on_off))
    if options.loss_model:
        u, d = per_direction(options.loss_model, "--loss-model")
        up.append(parse_loss_model(u))
        down.append(parse_loss_model(d))
    if options.trace:
        up_path, down_path = parse_trace_pair(options.trace)
        up.append(Trace(up_path))
        down.append(Trace(down_path))
    if options.delay or options.jitter:
        dist = parse_distribution(options.jitter_distribution)
        du, dd = per_direction(options.delay or "0ms", "--delay")
        ju, jd = per_direction(options.jitter or "0ms", "--jitter")
        up.append(Delay(parse_duration(du, "--delay", allow_zero=True),
                        parse_duration(ju, "--jitter", allow_zero=True), dist, options.reorder))
        down.append(Delay(parse_duration(dd, "--delay", allow_zero=True),
                          parse_duration(jd, "--jitter", allow_zero=True), dist,
                          options.reorder))
    return tuple(up), tuple(down)
