"""The tuner's input from text as a user types it (``linklab tune``'s options): rates,
sizes, shares of a core, peers; every error is a UsageError naming the option."""

from __future__ import annotations

import ipaddress
import math
import os
import re

from linklab.errors import UsageError
from linklab.model.sweep import parse_count_bytes
from linklab.tune.inputs import DEFAULT_OUTAGE_TOLERANCE_S, TuningInput
from linklab.units import (
    parse_bitrate,
    parse_duration,
    parse_fraction,
    parse_frequency,
    parse_size,
)


def parse_tuning_input(rate: str, payload: str, link: str, utilization: str, mtu: str, overlay: str,
                subscribers: int, ros: str, per: str | None, peers: list[str],
                outage_tolerance: str = f"{DEFAULT_OUTAGE_TOLERANCE_S:g}s",
                delay: str = "0s", history_memory: str = "256MiB",
                history_depth: int | None = None, cpu_load: str | None = None,
                cpu_share: str | None = None, cpu_cores: str | None = None,
                middlewares: list[str] | None = None) -> TuningInput:
    """The options of ``linklab tune`` as a TuningInput, every one parsed and checked (a
    UsageError names the option) before anything is computed."""
    omega = parse_fraction(utilization, "--utilization")
    if omega <= 0:
        raise UsageError(f"{utilization!r} is outside (0, 1]; e.g. 0.65 or 65%",
                         argument="--utilization")
    if cpu_load is not None and cpu_share is not None:
        raise UsageError("give --cpu-load or --cpu-share, not both", argument="--cpu-share")
    cores = None if cpu_cores is None else parse_cores(cpu_cores, "--cpu-cores")
    if cpu_load is not None and cores is None:
        cores = float(os.cpu_count() or 1)  # the writer runs here
    return TuningInput(
        rate_hz=parse_frequency(rate, "--rate"),
        payload_bytes=parse_size(payload, "--payload"),
        link_bits_per_s=parse_bitrate(link, "--link"),
        utilization=omega,
        mtu=parse_count_bytes(mtu, "--mtu"),
        overlay=overlay,
        subscribers=subscribers,
        ros=ros,
        per=None if per is None else parse_fraction(per, "--per"),
        peers=tuple(parse_peer(p) for p in peers or ()),
        outage_tolerance_s=parse_duration(outage_tolerance, "--outage-tolerance"),
        delay_s=parse_delay(delay),
        history_memory_bytes=parse_size(history_memory, "--history-memory"),
        history_depth=history_depth,
        cpu_competitors=None if cpu_load is None else parse_cpu_load(cpu_load, cores or 1.0),
        cpu_cores=cores,
        cpu_share=None if cpu_share is None else parse_cpu_share(cpu_share),
        middlewares=tuple(dict.fromkeys(middlewares)) if middlewares else
        ("fastdds", "cyclonedds"),
    )


CPU_LOAD_ACCEPTED = "N/core (CPU-bound tasks per core, e.g. 2/core) or a count N, e.g. 4"
CPU_SHARE_ACCEPTED = "a share of one core (e.g. 50%) or cores (e.g. 1.5cores)"


def parse_cores(text: str, argument: str) -> float:
    try:
        value = float(str(text).strip().removesuffix("cores").removesuffix("core"))
    except ValueError:
        raise UsageError(f"{text!r} is not a number of cores; e.g. 4", argument=argument) \
            from None
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{text!r} is not a positive number of cores; e.g. 4",
                         argument=argument)
    return value


def parse_cpu_load(text: str, cores: float) -> float:
    """--cpu-load: the CPU-bound tasks beside the middleware on the writer's machine."""
    value = str(text).strip()
    per_core = value.endswith("/core")
    try:
        number = float(value.removesuffix("/core"))
    except ValueError:
        raise UsageError(f"{text!r}: expected {CPU_LOAD_ACCEPTED}", argument="--cpu-load") \
            from None
    if not math.isfinite(number) or number < 0:
        raise UsageError(f"{text!r}: expected {CPU_LOAD_ACCEPTED}", argument="--cpu-load")
    return number * cores if per_core else number


def parse_cpu_share(text: str) -> float:
    """--cpu-share: the cores the middleware can count on (50% = half of one core)."""
    value = str(text).strip()
    if value.endswith("%"):
        share = parse_fraction(value, "--cpu-share")
    elif value.endswith(("cores", "core")):
        share = parse_cores(value, "--cpu-share")
    else:
        raise UsageError(f"{text!r}: expected {CPU_SHARE_ACCEPTED}", argument="--cpu-share")
    if share <= 0:
        raise UsageError(f"{text!r}: expected {CPU_SHARE_ACCEPTED}", argument="--cpu-share")
    return share


_LABEL = r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)"
_HOST_NAME = re.compile(rf"{_LABEL}(\.{_LABEL})*\.?")


def parse_peer(text: str) -> str:
    """A --peer as Cyclone DDS takes it (Discovery/Peers/Peer@Address): an IP address or a
    host name (RFC 1123 labels), optionally with :port, an IPv6 address with a port in
    brackets; anything else is refused, not written into the profile."""
    host, port = text, None
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else (rest or None)
        bracketed = rest == "" or rest.startswith(":")
    else:
        bracketed = True
        if text.count(":") == 1:
            host, port = text.split(":")
    ok = bracketed and (port is None or (port.isascii() and port.isdigit()
                                         and 1 <= int(port) <= 65535))
    if ok:
        try:
            address = ipaddress.ip_address(host)
            ok = not text.startswith("[") or address.version == 6
        except ValueError:
            ok = not text.startswith("[") and len(host) <= 253 and \
                _HOST_NAME.fullmatch(host) is not None
    if not ok:
        raise UsageError(f"{text!r} is not an address; expected an IP address or host name, "
                         "optionally with :port, e.g. 10.0.0.2, robot.local:7410, "
                         "[fe80::1]:7400", argument="--peer")
    return text


def parse_delay(text: str) -> float:
    if str(text).strip() in ("0", "0s"):
        return 0.0
    return parse_duration(text, "--delay")
