"""One clock for a field run: the offset between two hosts' CLOCK_MONOTONIC, with a bound.

The probes stamp samples with CLOCK_MONOTONIC of their own host (README, "Probes");
across machines these clocks differ by an arbitrary offset (each counts from its boot).
An NTP-style exchange measures it (RFC 5905 §8, "On-wire protocol"): A sends at t1 (A's
clock), B receives at t2 and answers at t3 (B's clock), A receives at t4. With
theta = B - A:

    offset  theta_i = ((t2 - t1) + (t3 - t4)) / 2
    delay   delta_i = (t4 - t1) - (t3 - t2)

and, since neither one-way delay is negative, the true offset lies in
[theta_i - delta_i / 2, theta_i + delta_i / 2] for every exchange i (RFC 5905 calls
delta/2 + dispersion the root distance; it bounds the error). The intersection of these
intervals over a short burst (no drift within it) is the tightest statement the
exchange supports; its half-width is the uncertainty. It cannot be smaller than half
the smallest round trip: the split of a round trip between the two directions is not
observable from the two hosts alone.

Hosts that share a kernel (namespaces of one machine: the same boot_id) share the
clock: offset 0, no uncertainty -- if the exchange agrees (its interval contains 0).

A one-way latency corrected with an offset known to +-U is reported as one-way when U
is at most ONE_WAY_SHARE of the median one-way latency; otherwise the run says so and
gives the path's round-trip time beside it (``basis: round-trip``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

ONE_WAY_SHARE = 0.10


@dataclass(frozen=True)
class Offset:
    """theta = clock(B) - clock(A) in ns, known within +-uncertainty_ns."""

    offset_ns: float
    uncertainty_ns: float
    rtt_min_ns: float          # smallest round trip of the exchange (delta)
    rtt_median_ns: float
    samples: int               # exchanges answered
    method: str                # "exchange" | "exchange (min delay)" | "same kernel"

    def to_dict(self) -> dict:
        return asdict(self)

    def contains(self, value_ns: float) -> bool:
        return abs(value_ns - self.offset_ns) <= self.uncertainty_ns


def from_exchange(samples: Sequence[Sequence[int]]) -> Offset:
    """Offset from [t1, t2, t3, t4] exchanges (A: t1, t4; B: t2, t3)."""
    rows = [(int(a), int(b), int(c), int(d)) for a, b, c, d in samples]
    if not rows:
        raise ValueError("no exchange was answered")
    thetas = [((t2 - t1) + (t3 - t4)) / 2 for t1, t2, t3, t4 in rows]
    deltas = [max(0, (t4 - t1) - (t3 - t2)) for t1, t2, t3, t4 in rows]
    low = max(t - d / 2 for t, d in zip(thetas, deltas, strict=True))
    high = min(t + d / 2 for t, d in zip(thetas, deltas, strict=True))
    ordered = sorted(deltas)
    median = ordered[len(ordered) // 2]
    if low <= high:
        return Offset((low + high) / 2, (high - low) / 2, ordered[0], median, len(rows),
                      "exchange")
    # the intervals do not meet (a clock stepped, or drift within the burst): fall back to
    # NTP's choice, the exchange with the smallest delay
    best = min(range(len(rows)), key=lambda i: deltas[i])
    return Offset(thetas[best], deltas[best] / 2, ordered[0], median, len(rows),
                  "exchange (min delay)")


def same_kernel(exchange: Offset) -> Offset:
    """Two namespaces of one kernel: one clock (the exchange must agree: 0 inside it)."""
    return Offset(0.0, 0.0, exchange.rtt_min_ns, exchange.rtt_median_ns, exchange.samples,
                  "same kernel")


@dataclass(frozen=True)
class Drift:
    """Offsets before and after a cell; linear in between (clock rates differ by ppm)."""

    t0_ns: int                 # reference clock time of the first measurement
    offset0_ns: float
    t1_ns: int
    offset1_ns: float
    uncertainty_ns: float

    def at(self, t_ns):
        """Offset at reference time(s) ``t_ns`` (numbers or a numpy array)."""
        if self.t1_ns == self.t0_ns:
            return self.offset0_ns + 0 * t_ns
        slope = (self.offset1_ns - self.offset0_ns) / (self.t1_ns - self.t0_ns)
        return self.offset0_ns + slope * (t_ns - self.t0_ns)

    @property
    def ppm(self) -> float:
        span = self.t1_ns - self.t0_ns
        return (self.offset1_ns - self.offset0_ns) / span * 1e6 if span else 0.0


def drift(t0_ns: int, before: Offset, t1_ns: int, after: Offset | None) -> Drift:
    if after is None:
        return Drift(t0_ns, before.offset_ns, t0_ns, before.offset_ns, before.uncertainty_ns)
    return Drift(t0_ns, before.offset_ns, t1_ns, after.offset_ns,
                 max(before.uncertainty_ns, after.uncertainty_ns))


def basis(uncertainty_ns: float, median_latency_ns: float) -> str:
    """"one-way" when the clock is known well enough for the latency measured, else
    "round-trip" (see the module docstring)."""
    if uncertainty_ns == 0:
        return "one-way"
    if math.isnan(median_latency_ns) or median_latency_ns <= 0:
        return "round-trip"
    return "one-way" if uncertainty_ns <= ONE_WAY_SHARE * median_latency_ns else "round-trip"
