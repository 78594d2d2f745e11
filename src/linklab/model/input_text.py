"""The model's input from text as a user types it (``linklab model``'s options), and the
points of a ``--sweep``; every error is a UsageError naming the option."""

from __future__ import annotations

from dataclasses import replace

from linklab.errors import UsageError
from linklab.model.fragmentation import FRAGMENTATION_MODES
from linklab.model.overhead import OVERLAYS
from linklab.model.scenario import (
    FASTDDS_DEFAULT_HEARTBEAT_HZ,
    ModelInput,
    ModelResult,
    evaluate,
)
from linklab.model.sweep import Sweep, parse_count_bytes
from linklab.units import (
    parse_bitrate,
    parse_fraction,
    parse_frequency,
    parse_size,
)


def parse_model_input(rate: str, payload: str, link: str, per: str, max_message_size: str,
                heartbeat_rate: str | None, mtu: str, fragmentation: str, utilization: str,
                subscribers: int, overlay: str) -> ModelInput:
    """The options of ``linklab model`` as a ModelInput: every one parsed and checked (a
    UsageError names the option) before anything is computed."""
    if fragmentation not in FRAGMENTATION_MODES:
        raise UsageError(f"{fragmentation!r} is not one of {', '.join(FRAGMENTATION_MODES)}",
                         argument="--fragmentation")
    if overlay not in OVERLAYS:
        raise UsageError(f"{overlay!r} is not one of {', '.join(OVERLAYS)}", argument="--overlay")
    per_value = parse_fraction(per, "--per")
    if per_value >= 1.0:
        raise UsageError("100% loss delivers nothing; expected a fraction below 1, e.g. 1% or 0.2",
                         argument="--per")
    omega = parse_fraction(utilization, "--utilization")
    if omega <= 0:
        raise UsageError("must be in (0, 1], e.g. 0.65 or 65%", argument="--utilization")
    if not 1 <= subscribers <= 1000:
        raise UsageError(f"{subscribers} is outside 1..1000", argument="--subscribers")
    mtu_value = parse_count_bytes(mtu, "--mtu")
    if not 576 <= mtu_value <= 65535:
        raise UsageError(f"{mtu_value} is outside 576..65535 bytes; e.g. 1500", argument="--mtu")
    mms = parse_count_bytes(max_message_size, "--max-message-size")
    if not 200 <= mms <= 65507:
        raise UsageError(f"{mms} B is outside 200..65507 B (the largest UDP payload); "
                         "e.g. 65500 or 1472", argument="--max-message-size")
    rate_hz = parse_frequency(rate, "--rate")
    if rate_hz > 100_000:
        raise UsageError(f"{rate} is above 100kHz; e.g. 30Hz", argument="--rate")
    payload_bytes = parse_size(payload, "--payload")
    if payload_bytes > 1024**3:
        raise UsageError(f"{payload} is above 1GiB; e.g. 256KiB", argument="--payload")
    link_bits = parse_bitrate(link, "--link")
    if not 10e3 <= link_bits <= 1e12:
        raise UsageError(f"{link} is outside 10kbit/s..1000Gbit/s; e.g. 433Mbit/s",
                         argument="--link")
    hb = FASTDDS_DEFAULT_HEARTBEAT_HZ if heartbeat_rate is None else \
        parse_frequency(heartbeat_rate, "--heartbeat-rate")
    if hb > 100_000:
        raise UsageError(f"{heartbeat_rate} is above 100kHz; e.g. 60Hz",
                         argument="--heartbeat-rate")
    return ModelInput(rate_hz=rate_hz, payload_bytes=payload_bytes, link_bits_per_s=link_bits,
                      per=per_value, max_message_size=mms, heartbeat_hz=hb, mtu=mtu_value,
                      fragmentation=fragmentation, utilization=omega, subscribers=subscribers,
                      overlay=overlay)


def evaluate_sweep(base: ModelInput, spec: Sweep) -> list[tuple[float, ModelResult]]:
    """(value, result) for each value of the swept input, the others as in ``base``; a
    point at 100 % loss is refused (it delivers nothing)."""
    results = []
    for value in spec.values:
        cast = int(value) if spec.field in ("payload_bytes", "max_message_size") else value
        point = replace(base, **{spec.field: cast})
        if point.per >= 1.0:
            raise UsageError("a PER of 100% delivers nothing; end the sweep below 100%",
                             argument="--sweep")
        results.append((value, evaluate(point)))
    return results
