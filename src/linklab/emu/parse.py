"""What users type for the emulator's stages -> stage dataclasses.

Per direction (as everywhere in ``linklab link``): a value applies to both
directions, or ``up=VALUE,down=VALUE`` gives the uplink (robot -> edge, the relay's
a -> b) and the downlink separately; values may contain commas
(``up=gemodel:1%,30%,down=gemodel:2%,20%``). Traces are ``up.trace,down.trace``
(Mahimahi's order) or one file for both.
"""

from __future__ import annotations

import re
from pathlib import Path

from linklab.emu.directives import (
    DISTRIBUTIONS,
    FourStateLoss,
    GilbertElliott,
    Loss,
    OnOff,
    Stage,
)
from linklab.errors import UsageError
from linklab.units import parse_duration, parse_fraction

LOSS_MODEL_FORMS = ("bernoulli:P, gemodel:p[,r[,1-h[,1-k]]] or "
                    "state:p13[,p31[,p32[,p23[,p14]]]] (fractions such as 1% or 0.01)")


_DIRECTION_ITEM = re.compile(r"(?:^|,)\s*(up|down)\s*=")


def split_directions(text: str, argument: str) -> dict[str, str] | str:
    """``up=A,down=B`` -> {"up": "A", "down": "B"} (A and B may hold commas);
    anything else is returned unchanged (one value for both directions)."""
    text = str(text)
    marks = list(_DIRECTION_ITEM.finditer(text))
    if not marks:
        return text
    if marks[0].start() != 0:
        raise UsageError(f"expected VALUE or up=VALUE,down=VALUE, got {text!r}",
                         argument=argument)
    out: dict[str, str] = {}
    for mark, following in zip(marks, [*marks[1:], None], strict=True):
        value = text[mark.end():following.start() if following else len(text)].strip()
        if not value or mark.group(1) in out:
            raise UsageError(f"expected VALUE or up=VALUE,down=VALUE, got {text!r}",
                             argument=argument)
        out[mark.group(1)] = value
    return out


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


def gemodel_fields(text: str, argument: str = "--loss-model") -> dict[str, float]:
    """``gemodel:p,r,1-h,1-k`` -> {p, r, loss_bad (1-h), loss_good (1-k)} (linklab.link's
    BurstLoss fields)."""
    model = parse_loss_model(text, argument)
    if not isinstance(model, GilbertElliott):
        raise UsageError(f"expected gemodel:p[,r[,1-h[,1-k]]] here (use --loss for "
                         f"independent loss), got {text!r}", argument=argument)
    return {"p": model.p, "r": model.r, "loss_bad": model.one_minus_h,
            "loss_good": model.one_minus_k}


def parse_trace_pair(text: str, argument: str = "--trace") -> tuple[Path, Path]:
    """``up.trace,down.trace`` (or one file for both); each file is validated."""
    from linklab.emu.models import read_trace  # numpy: loaded only to read a trace

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
