"""The fidelity benchmark's numbers (pure): a receiving interface's byte counter binned
into trace seconds, Pearson's r against the trace, and the table
(linklab.emu.fidelity's docstring defines each quantity)."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from linklab.errors import LinklabError
from linklab.output import markdown_table

RATIO_TARGET = 0.02       # linklab's throughput within 2 % of Mahimahi's (issue 44)
CORRELATION_TARGET = 0.99


@dataclass(frozen=True)
class Sample:
    t_ns: int        # CLOCK_MONOTONIC when the counter was read
    ip_bytes: int    # the interface's received bytes so far, IP headers and payload


def parse_net_dev(text: str, ifname: str) -> tuple[int, int] | None:
    """(rx_bytes, rx_packets) of ``ifname`` in a /proc/<pid>/net/dev text (an interface
    whose name starts with ``ifname`` when it ends with ``-``); None when absent."""
    for line in text.splitlines()[2:]:
        name, _, fields = line.partition(":")
        name = name.strip()
        if name == ifname or (ifname.endswith("-") and name.startswith(ifname)):
            values = fields.split()
            return int(values[0]), int(values[1])
    return None


def counter_at(samples: Sequence[Sample], t_ns: int) -> float:
    """The counter at ``t_ns``, linear between the samples either side."""
    times = [s.t_ns for s in samples]
    i = bisect.bisect_left(times, t_ns)
    if i == 0 or i == len(samples):
        if i < len(samples) and times[i] == t_ns:
            return float(samples[i].ip_bytes)
        raise LinklabError(f"no counter samples around {t_ns} ns (samples from "
                           f"{times[0] if times else None} to {times[-1] if times else None})")
    a, b = samples[i - 1], samples[i]
    return a.ip_bytes + (b.ip_bytes - a.ip_bytes) * (t_ns - a.t_ns) / (b.t_ns - a.t_ns)


def per_second(samples: Sequence[Sample], zero_ns: int, first_s: int,
               count: int) -> list[float]:
    """Bytes received in trace seconds first_s .. first_s + count - 1, second s being
    [zero_ns + s s, zero_ns + (s + 1) s)."""
    edges = [counter_at(samples, zero_ns + s * 1_000_000_000)
             for s in range(first_s, first_s + count + 1)]
    return [b - a for a, b in zip(edges, edges[1:], strict=False)]


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson's product-moment correlation of two equally long series (nan when one is
    constant)."""
    if len(x) != len(y) or len(x) < 2:
        raise ValueError("pearson needs two series of the same length, at least 2")
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return math.nan
    return sxy / math.sqrt(sxx * syy)


@dataclass(frozen=True)
class Side:
    """One emulator's cell: bytes per window second and where its workload started."""

    per_second: tuple[float, ...]
    start_offset_s: float    # the workload's first command after the trace's zero

    def mbit_s(self) -> float:
        return sum(self.per_second) * 8 / len(self.per_second) / 1e6


@dataclass(frozen=True)
class Row:
    trace: str
    direction: str            # up | down
    protocol: str             # tcp | udp
    capacity: tuple[int, ...]  # trace bytes per window second
    linklab: Side
    mahimahi: Side | None

    def capacity_mbit_s(self) -> float:
        return sum(self.capacity) * 8 / len(self.capacity) / 1e6

    def ratio(self) -> float | None:
        if self.mahimahi is None or self.mahimahi.mbit_s() == 0:
            return None
        return self.linklab.mbit_s() / self.mahimahi.mbit_s()

    def r(self, side: Side | None) -> float | None:
        return None if side is None else pearson(side.per_second, self.capacity)

    def holds(self) -> bool | None:
        ratio, r_lk, r_mm = self.ratio(), self.r(self.linklab), self.r(self.mahimahi)
        if ratio is None or r_mm is None:
            return None
        return (abs(ratio - 1) <= RATIO_TARGET and r_lk >= CORRELATION_TARGET
                and r_mm >= CORRELATION_TARGET)


COLUMNS = ("trace", "dir", "proto", "capacity Mbit/s", "linklab Mbit/s", "Mahimahi Mbit/s",
           "linklab / capacity", "Mahimahi / capacity", "linklab / Mahimahi",
           "r linklab", "r Mahimahi", "targets")


def _f(value: float | None, digits: int) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def table(rows: Sequence[Row]) -> list[str]:
    """The benchmark's Markdown table, one line per trace, direction and protocol."""
    out = []
    for row in rows:
        cap, lk = row.capacity_mbit_s(), row.linklab.mbit_s()
        mm = row.mahimahi.mbit_s() if row.mahimahi else None
        holds = row.holds()
        out.append([row.trace, row.direction, row.protocol, _f(cap, 3), _f(lk, 3),
                    _f(mm, 3), _f(lk / cap, 4), _f(mm / cap if mm is not None else None, 4),
                    _f(row.ratio(), 4), _f(row.r(row.linklab), 4),
                    _f(row.r(row.mahimahi), 4),
                    "—" if holds is None else ("hold" if holds else "missed")])
    return markdown_table(COLUMNS, out, right=tuple(range(3, 11)))
