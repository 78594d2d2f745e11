"""What one direction of a link should do, as plain data (the settings each impairment
class reads: ``from_direction``), and the value types of those settings."""

from __future__ import annotations

import math
from dataclasses import dataclass

from linklab.units import format_size


@dataclass(frozen=True)
class Outage:
    """100 % loss from ``start_s`` for ``length_s`` seconds after t0, repeating every
    ``period_s`` seconds if set."""

    start_s: float
    length_s: float
    period_s: float | None = None

    def windows(self, until_s: float) -> list[tuple[float, float]]:
        """Outage windows (start, end) in seconds after t0 that begin before ``until_s``."""
        out: list[tuple[float, float]] = []
        begin = self.start_s
        while begin < until_s:
            out.append((begin, begin + self.length_s))
            if self.period_s is None:
                break
            begin += self.period_s
        return out

    def active(self, t_s: float) -> bool:
        if t_s < self.start_s:
            return False
        offset = t_s - self.start_s
        if self.period_s is not None:
            offset = math.fmod(offset, self.period_s)
        return offset < self.length_s

    def text(self) -> str:
        base = f"{_dur(self.start_s)}+{_dur(self.length_s)}"
        return base if self.period_s is None else f"{base}/{_dur(self.period_s)}"


def _dur(seconds: float) -> str:
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{round(seconds * 1000, 3):g}ms"


@dataclass(frozen=True)
class BurstLoss:
    """Gilbert-Elliott loss (two-state Markov chain) -- run by the userspace emulator.

    p: P(good -> bad), r: P(bad -> good), loss_good (1-k) and loss_bad (1-h) per packet.
    """

    p: float
    r: float
    loss_good: float = 0.0
    loss_bad: float = 1.0


@dataclass(frozen=True)
class QueueLimit:
    """The most the bottleneck's queue holds: frames, bytes, or both."""

    packets: int | None = None
    bytes: int | None = None

    def text(self) -> str:
        parts = [f"{self.packets} packets"] if self.packets else []
        if self.bytes:
            parts.append(format_size(self.bytes))
        return ", ".join(parts)



@dataclass(frozen=True)
class DirectionSpec:
    """The impairments of one direction of the impaired link."""

    loss: float = 0.0                 # Bernoulli packet loss (fraction)
    rate_bps: float | None = None     # bottleneck rate (bit/s); None = not limited
    outage: Outage | None = None
    delay_s: float | None = None      # one-way delay     (userspace emulator)
    jitter_s: float | None = None     # delay variation    (userspace emulator)
    jitter_distribution: str | None = None  # uniform | normal | pareto | paretonormal (emu)
    burst_loss: BurstLoss | None = None  # Gilbert-Elliott (userspace emulator)
    trace: str | None = None          # Mahimahi-style delivery trace file (userspace emulator)
    queue: str | None = None          # the bottleneck's queue discipline (userspace emulator)
    queue_limit: QueueLimit | None = None  # and its limit (None: the emulator's default)
