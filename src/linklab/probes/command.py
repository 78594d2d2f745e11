"""A probe's command line, built from typed fields (the contract in ``__init__``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from linklab.errors import UsageError
from linklab.probes.binaries import binary_path
from linklab.probes.types import ANY_SIZE_TYPES, payload_bytes


@dataclass(frozen=True)
class ProbeCommand:
    middleware: str  # fastdds | cyclonedds | mqtt
    role: str  # pub | sub
    topic: str
    records: Path
    type: str = "Bytes"
    size: int | None = None  # bytes; required for publishers of an any-size type
    rate_hz: float | None = None  # required for publishers
    count: int | None = None
    duration_s: float | None = None
    warmup_s: float | None = None
    reliable: bool | None = None  # None: profile / default
    history: str | None = None  # keep_all | keep_last:N
    profile: Path | None = None
    profile_name: str | None = None
    peers: tuple[str, ...] = ()
    domain: int | None = None
    interface: str | None = None
    match_timeout_s: float | None = None
    idle_timeout_s: float | None = None
    linger_s: float | None = None
    subscribers: int | None = None
    durability: str | None = None  # volatile | transient_local; None: profile / default
    system_default: bool = False  # unset policies: the middleware's defaults, not ROS 2's
    extra: tuple[str, ...] = field(default=())

    def argv(self, binary: Path | None = None) -> list[str]:
        if self.role not in ("pub", "sub"):
            raise UsageError(f"expected pub or sub, got {self.role!r}", argument="role")
        exe = binary or binary_path(self.middleware)
        argv = [str(exe), self.role, "--topic", self.topic, "--type", self.type,
                "--records", str(self.records)]
        if self.role == "pub" or self.size is not None:
            if self.type in ANY_SIZE_TYPES or self.size is not None:
                argv += ["--size", str(payload_bytes(self.type, self.size))]
        if self.rate_hz is not None:
            argv += ["--rate", f"{self.rate_hz:g}"]
        elif self.role == "pub":
            raise UsageError("a publisher needs a rate in Hz", argument="--rate")
        if self.count is not None:
            argv += ["--count", str(self.count)]
        for flag, value in (("--duration", self.duration_s), ("--warmup", self.warmup_s),
                            ("--match-timeout", self.match_timeout_s),
                            ("--idle-timeout", self.idle_timeout_s), ("--linger", self.linger_s)):
            if value is not None:
                argv += [flag, f"{value:g}"]
        if self.reliable is not None:
            argv += ["--qos", "reliable" if self.reliable else "best_effort"]
        if self.history is not None:
            argv += ["--history", self.history]
        if self.durability is not None:
            argv += ["--durability", self.durability]
        if self.system_default:
            argv.append("--system-default")
        if self.profile is not None:
            argv += ["--profile", str(self.profile)]
        if self.profile_name is not None:
            argv += ["--profile-name", self.profile_name]
        for peer in self.peers:
            argv += ["--peer", peer]
        if self.domain is not None:
            argv += ["--domain", str(self.domain)]
        if self.interface is not None:
            argv += ["--interface", self.interface]
        if self.subscribers is not None:
            argv += ["--subscribers", str(self.subscribers)]
        return argv + list(self.extra)
