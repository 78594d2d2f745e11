"""Settings of a :class:`LinkSpec` that parse one by one but cannot all be applied.

``build_spec`` checks each value alone. Some combinations would leave a setting without
effect, and linklab applies a setting or refuses it, never drops it: these are refused
(by ``design()`` for the command line and the Python API, and by the preset loader with
the file and line of the field). ``check_traces`` reads the trace files; the rest is
pure, but for ``check_tcp_congestion``, which asks this kernel.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from linklab.errors import UsageError
from linklab.link.spec import DIRECTIONS, LinkSpec


def conflicts(spec: LinkSpec) -> list[tuple[str, str]]:
    """(field, one-line message) for every combination the testbed cannot apply."""
    out: list[tuple[str, str]] = []
    lonely = [d for d in DIRECTIONS if spec.direction(d).jitter_distribution is not None
              and spec.direction(d).jitter_s is None]
    if lonely:
        out.append(("jitter_distribution",
                    f"set for {' and '.join(lonely)} without a jitter there, so it would "
                    "shape nothing; give a jitter too (e.g. 5ms) or leave the distribution "
                    "out"))
    up, down = spec.up.outage, spec.down.outage
    if up is not None and down is not None and up != down:
        # The scheduler switches every outage stage of a run on one schedule
        # (lifecycle._build, outage.py).
        out.append(("outage",
                    f"up ({up.text()}) and down ({down.text()}) differ, but a run has one "
                    "outage schedule; give one schedule for both directions, or an outage "
                    "in one direction only"))
    return out


def check_spec(spec: LinkSpec, overrides: Mapping[str, Any]) -> None:
    """The first conflict as a UsageError naming the option (or the preset's field)."""
    for key, message in conflicts(spec):
        from_preset = spec.preset and overrides.get(key) is None
        raise UsageError(message, argument=f"preset {spec.preset!r}: {key}" if from_preset
                         else f"--{key.replace('_', '-')}")


def check_traces(spec: LinkSpec) -> None:
    """Every trace file of the spec can be read (checked before anything is made)."""
    traces = sorted({t for t in (spec.up.trace, spec.down.trace) if t is not None})
    if traces:
        from linklab.emu.models import read_trace

        for trace in traces:
            read_trace(Path(trace))


AVAILABLE_CONGESTION = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
# A child namespace may default only to an algorithm in this host-wide list (the kernel
# refuses any other with EPERM; the host's own default is always in it).
ALLOWED_CONGESTION = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")


def _names(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def check_tcp_congestion(spec: LinkSpec, argument: str = "--tcp-congestion",
                         available: list[str] | None = None,
                         allowed: list[str] | None = None) -> None:
    """A pinned congestion control this kernel has and lets a child namespace take, or a
    one-line error (before anything is made) that says how to allow it: the host's
    allowed list is not linklab's to change."""
    wanted = spec.tcp_congestion
    if wanted is None:
        return
    have = _names(AVAILABLE_CONGESTION) if available is None else available
    if wanted not in have:
        raise UsageError(f"{wanted!r} is not available in this kernel; available: "
                         f"{', '.join(have) or 'none listed'} "
                         f"({AVAILABLE_CONGESTION})", argument=argument)
    permitted = _names(ALLOWED_CONGESTION) if allowed is None else allowed
    if wanted not in permitted:
        listed = " ".join(permitted)
        raise UsageError(f"{wanted!r} is available but a network namespace may only use "
                         f"the host's allowed ones ({listed or 'none listed'}); allow it on "
                         f"the host first: sysctl -w net.ipv4.tcp_allowed_congestion_control="
                         f"'{' '.join([*permitted, wanted])}'", argument=argument)
