"""The Zenoh probe's command line (``linklab-probe-zenoh``; zenoh_probe.py runs it).

The common probe command line (``linklab.probes`` docstring) plus ``--mode``,
``--listen``. QoS: ``--qos`` and ``--durability volatile`` are taken;
``--durability transient_local`` and ``--history`` are refused (zenoh pub/sub keeps no
history; the reasons are ``linklab.probes.qos``'s); ``--system-default`` leaves
reliability and congestion control to zenoh's own defaults when ``--qos`` is not given.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linklab.probes.qos import DURABILITY, refusal
from linklab.probes.ros_types import size_refusal
from linklab.probes.types import ANY_SIZE_TYPES, FIXED_TYPE_BYTES, TYPES

DEFAULT_PORT = 7447


class ProbeUsageError(Exception):
    pass


@dataclass
class ProbeOptions:
    role: str
    topic: str = ""
    type: str = ""
    size: int = 0
    rate_hz: float = 0.0
    count: int = 0
    duration_s: float = 0.0
    warmup_s: float = 0.0
    reliable: bool | None = None  # None: ROS 2's reliable, or zenoh's own with system_default
    durability: str | None = None  # only "volatile" is accepted
    system_default: bool = False
    profile: str | None = None
    peers: list[str] = field(default_factory=list)
    listen: list[str] = field(default_factory=list)
    mode: str = "peer"
    domain: int = 0
    interface: str | None = None
    records: str = ""
    match_timeout_s: float = 30.0
    idle_timeout_s: float = 30.0
    linger_s: float = 5.0
    subscribers: int = 1

    @property
    def key(self) -> str:
        return f"rt/{self.topic}"


def _seconds(flag: str, text: str) -> float:
    match = re.fullmatch(r"([0-9.]+(?:[eE][-+]?\d+)?)(ms|s|min)?", text)
    if not match:
        raise ProbeUsageError(f"{flag}: expected a non-negative duration in seconds "
                              f"(e.g. 20, 20s, 500ms), got '{text}'")
    value = float(match.group(1))
    return value * {"ms": 1e-3, "s": 1.0, "min": 60.0, None: 1.0}[match.group(2)]


def _size(text: str) -> int:
    match = re.fullmatch(r"([0-9.]+)(B|KB|MB|KiB|MiB)?", text)
    if not match:
        raise ProbeUsageError(f"--size: expected a payload size in bytes (e.g. 262144 or "
                              f"256KiB), got '{text}'")
    factor = {"B": 1, "KB": 1e3, "MB": 1e6, "KiB": 1024, "MiB": 1048576, None: 1}
    value = float(match.group(1)) * factor[match.group(2)]
    if value != int(value):
        raise ProbeUsageError(f"--size: expected a whole number of bytes, got '{text}'")
    return int(value)


def _count(flag: str, text: str) -> int:
    if not text.isdigit():
        raise ProbeUsageError(f"{flag}: expected a non-negative integer, got '{text}'")
    return int(text)


def _endpoint(text: str) -> str:
    """'10.0.0.2' / '10.0.0.2:7447' / 'tcp/10.0.0.2:7447' -> a zenoh endpoint."""
    if "/" in text:
        return text
    return f"tcp/{text}" if ":" in text else f"tcp/{text}:{DEFAULT_PORT}"


def _topic(_flag: str, value: str) -> str:
    if not value or re.search(r"[ /\t]", value):
        raise ProbeUsageError("--topic: expected a ROS 2 topic name without slashes "
                              f"(e.g. chatter), got '{value}'")
    return value


def _type(_flag: str, value: str) -> str:
    if value not in TYPES:
        raise ProbeUsageError(f"--type: unknown type '{value}'; expected one of "
                              + ", ".join(TYPES))
    return value


def _rate(_flag: str, value: str) -> float:
    match = re.fullmatch(r"([0-9.]+)(Hz)?", value)
    if not match or float(match.group(1)) <= 0:
        raise ProbeUsageError("--rate: expected a publish rate in Hz above 0 (e.g. 30 "
                              f"or 30Hz), got '{value}'")
    return float(match.group(1))


def _reliable(_flag: str, value: str) -> bool:
    if value not in ("reliable", "best_effort"):
        raise ProbeUsageError(f"--qos: expected 'reliable' or 'best_effort', got '{value}'")
    return value == "reliable"


def _history(_flag: str, value: str) -> None:
    if not re.fullmatch(r"keep_all|keep_last:[1-9]\d*", value):
        raise ProbeUsageError("--history: expected keep_all or keep_last:N (e.g. "
                              f"keep_last:10), got '{value}'")
    raise ProbeUsageError(f"--history: {refusal('zenoh', 'history', 'keep_all')}; "
                          "omit --history")


def _durability(_flag: str, value: str) -> str:
    if value not in DURABILITY:
        raise ProbeUsageError("--durability: expected 'volatile' or 'transient_local', "
                              f"got '{value}'")
    why = refusal("zenoh", "durability", value)
    if why:
        raise ProbeUsageError(f"--durability {value}: {why}")
    return value


def _profile(_flag: str, value: str) -> str:
    if not Path(value).is_file():
        raise ProbeUsageError(f"--profile: cannot read '{value}'")
    return value


def _mode(_flag: str, value: str) -> str:
    if value not in ("peer", "client"):
        raise ProbeUsageError(f"--mode: expected 'peer' or 'client', got '{value}'")
    return value


def _text(_flag: str, value: str) -> str:
    return value


# flag -> (the ProbeOptions attribute it sets, its value checked and converted)
SETTERS: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "--topic": ("topic", _topic), "--type": ("type", _type), "--rate": ("rate_hz", _rate),
    "--count": ("count", _count), "--duration": ("duration_s", _seconds),
    "--warmup": ("warmup_s", _seconds), "--qos": ("reliable", _reliable),
    "--durability": ("durability", _durability), "--profile": ("profile", _profile),
    "--mode": ("mode", _mode), "--domain": ("domain", _count),
    "--interface": ("interface", _text), "--records": ("records", _text),
    "--match-timeout": ("match_timeout_s", _seconds),
    "--idle-timeout": ("idle_timeout_s", _seconds), "--linger": ("linger_s", _seconds),
    "--subscribers": ("subscribers", _count),
}
# flag -> the ProbeOptions list its comma-separated endpoints join
ENDPOINT_LISTS = {"--peer": "peers", "--listen": "listen"}
# every flag that takes a value: those above and the three read on their own
VALUE_FLAGS = {*SETTERS, *ENDPOINT_LISTS, "--size", "--history", "--profile-name"}


def _flag_values(argv: list[str], o: ProbeOptions) -> Iterator[tuple[str, str]]:
    """(flag, value) of each option after the role; --verbose is skipped and
    --system-default set on O (they take no value)."""
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg in ("-v", "--verbose"):
            i += 1
            continue
        if arg == "--system-default":
            o.system_default = True
            i += 1
            continue
        if arg.startswith("--system-default="):
            raise ProbeUsageError("--system-default takes no value")
        value = None
        if arg.startswith("--") and "=" in arg:
            arg, value = arg.split("=", 1)
        if arg not in VALUE_FLAGS:
            raise ProbeUsageError(f"unknown argument '{arg}' (see --help)")
        if value is None:
            if i + 1 >= len(argv):
                raise ProbeUsageError(f"{arg}: missing value")
            i += 1
            value = argv[i]
        i += 1
        yield arg, value


def _take(o: ProbeOptions, arg: str, value: str) -> None:
    """Sets what the flag says on O (--size is the caller's: it depends on the type)."""
    if arg in SETTERS:
        attribute, convert = SETTERS[arg]
        setattr(o, attribute, convert(arg, value))
    elif arg in ENDPOINT_LISTS:
        getattr(o, ENDPOINT_LISTS[arg]).extend(_endpoint(p) for p in value.split(",") if p)
    elif arg == "--history":
        _history(arg, value)
    # --profile-name: accepted for the common command line, no meaning for zenoh


def _set_size(o: ProbeOptions, size: int | None) -> None:
    """The payload size: --size for a type of any size (required to publish), the type's
    own for a fixed one (--size may only repeat it)."""
    if o.type in ANY_SIZE_TYPES:
        if o.role == "pub" and size is None:
            raise ProbeUsageError(f"--size is required with --type {o.type} (e.g. --size "
                                  "262144)")
        o.size = size or 0
        why = size_refusal(o.type, o.size) if size is not None else ""
        if why:
            raise ProbeUsageError(f"--size: {why}")
    else:
        fixed = FIXED_TYPE_BYTES[o.type]
        if size is not None and size != fixed:
            raise ProbeUsageError(f"--size: {o.type} carries exactly {fixed} bytes; omit --size "
                                  "or use --type Bytes")
        o.size = fixed


def parse_options(argv: list[str]) -> ProbeOptions:
    if not argv:
        raise ProbeUsageError("missing role: expected 'pub' or 'sub' (see --help)")
    if argv[0] not in ("pub", "sub"):
        raise ProbeUsageError(f"role: expected 'pub' or 'sub', got '{argv[0]}'")
    o = ProbeOptions(role=argv[0])
    size: int | None = None
    rate_given = False
    for arg, value in _flag_values(argv, o):
        if arg == "--size":
            size = _size(value)
        else:
            _take(o, arg, value)
            rate_given = rate_given or arg == "--rate"
    if not o.topic:
        raise ProbeUsageError("--topic is required (e.g. --topic chatter)")
    if not o.type:
        raise ProbeUsageError("--type is required (e.g. --type Bytes or --type Array64k)")
    _set_size(o, size)
    if o.role == "pub":
        if not rate_given:
            raise ProbeUsageError("--rate is required for pub (e.g. --rate 30)")
        if not o.count and not o.duration_s:
            raise ProbeUsageError("pub needs --count N or --duration S")
    if not o.records:
        raise ProbeUsageError("--records FILE.bin is required")
    if o.mode == "client" and not o.peers:
        raise ProbeUsageError("--peer: client mode needs the router's endpoint")
    return o
