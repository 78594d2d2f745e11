"""Whether the tuned stream fits the CPU the user declares (--cpu-load, --cpu-share).

The CPU a writer and a reader need per sample grows with the wire bytes of the sample
(model.cpu, measured by the probes); the share a busy machine leaves one more task is
C / (N + 1) cores for N CPU-bound tasks on C cores, and the writer plans on at most
WRITER_CPU_UTILIZATION (half) of it. A writer that needs more falls behind: its repairs
come late and are asked for again, its need grows past its share, and the stream stops
(docs/RESULTS.md "A busy robot": the tuned Fast DDS writer at 4 competitors per core).
The tuner then says so, with what would fit: a lower rate, a smaller payload, the other
middleware.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from linklab.middleware import DDS_FAMILIES, FAMILIES
from linklab.model.cpu import (
    CPU_COST,
    WRITER_CPU_UTILIZATION,
    cores_needed,
    fair_share_cores,
)
from linklab.tune.inputs import TuningInput
from linklab.units import format_size


@dataclass(frozen=True)
class CpuPlan:
    """The writer's CPU against the share it gets, per middleware."""

    share_cores: float               # what the declared contention leaves the writer
    usable_cores: float              # the part of it the writer may plan on
    how: str                         # how the share was declared, in words
    writer_cores: dict[str, float]   # middleware -> cores its writer needs
    reader_cores: dict[str, float]   # middleware -> cores its reader needs (its machine)
    per_sample_ms: dict[str, float]  # middleware -> the writer's CPU per sample (ms)
    max_rate_hz: dict[str, float]    # middleware -> the rate the share carries at u
    max_payload_bytes: dict[str, int]  # middleware -> the payload it carries at r
    # middleware -> samples/s its repair keeps up with on this CPU (Cyclone's serial loop,
    # explain.cyclone_capacity_hz; inf where the repair is not serial)
    capacity_hz: dict[str, float]
    rate_hz: float

    def cpu_fits(self, middleware: str) -> bool:
        return self.writer_cores[middleware] <= self.usable_cores

    def fits(self, middleware: str) -> bool:
        return self.cpu_fits(middleware) and self.capacity_hz[middleware] >= self.rate_hz

    @property
    def fitting(self) -> list[str]:
        return [m for m in self.writer_cores if self.fits(m)]

    def to_dict(self) -> dict:
        return dict(asdict(self), fitting=self.fitting)


def declared_share(t: TuningInput) -> tuple[float, str] | None:
    """(cores the writer can count on, how it was said), or None when not declared."""
    if t.cpu_share is not None:
        return t.cpu_share, f"--cpu-share {t.cpu_share:g} cores"
    if t.cpu_competitors is not None:
        cores = t.cpu_cores or 1.0
        return (fair_share_cores(cores, t.cpu_competitors),
                f"{t.cpu_competitors:g} CPU-bound tasks on {cores:g} cores, --cpu-load: "
                f"{cores:g} / ({t.cpu_competitors:g} + 1)")
    return None


def plan(t: TuningInput, wire_amplification: dict[str, float],
         capacity_hz: dict[str, float]) -> CpuPlan | None:
    """The CPU plan for the tuned profiles (``wire_amplification``: middleware -> the
    model's wire bytes per payload byte at the sizing PER; ``capacity_hz``: the samples
    per second each one's repair keeps up with on this CPU); None: no CPU declared."""
    declared = declared_share(t)
    if declared is None:
        return None
    share, how = declared
    usable = share * WRITER_CPU_UTILIZATION
    writer, reader, per_sample, max_rate, max_payload = {}, {}, {}, {}, {}
    for middleware, amp in wire_amplification.items():
        wire = t.payload_bytes * amp
        writer[middleware] = cores_needed(middleware, "pub", t.rate_hz, wire)
        reader[middleware] = cores_needed(middleware, "sub", t.rate_hz, wire)
        cost = CPU_COST[(middleware, "pub")]
        per_sample[middleware] = cost.per_sample_s(wire) * 1000
        max_rate[middleware] = usable / cost.per_sample_s(wire)
        room = usable / t.rate_hz - cost.fixed_s  # CPU seconds per sample usable
        max_payload[middleware] = max(0, int(room / (cost.per_kb_s * amp) * 1000))
    return CpuPlan(share, usable, how, writer, reader, per_sample, max_rate, max_payload,
                   dict(capacity_hz), t.rate_hz)


NAMES = {name: FAMILIES[name].label for name in DDS_FAMILIES}


def why_not(t: TuningInput, cpu: CpuPlan, middleware: str) -> str | None:
    """Why ``middleware``'s tuned stream does not hold on the declared CPU, or None."""
    name = NAMES[middleware]
    if not cpu.cpu_fits(middleware):
        return (f"{name}'s writer needs {cpu.writer_cores[middleware]:.3g} cores "
                f"({cpu.per_sample_ms[middleware]:.3g} ms per sample), more than "
                f"{cpu.usable_cores:.3g}: {WRITER_CPU_UTILIZATION:.0%} of the "
                f"{cpu.share_cores:.3g} the CPU leaves it ({cpu.how})")
    if cpu.capacity_hz[middleware] < t.rate_hz:
        return loop_reason(t, cpu, middleware)
    return None


def loop_reason(t: TuningInput, cpu: CpuPlan, middleware: str) -> str:
    """Why ``middleware``'s serial repair loop does not keep up on the declared CPU."""
    return (f"{NAMES[middleware]} repairs one sample per NACK and its loop's timer wakes "
            f"late on this CPU: it completes at most {cpu.capacity_hz[middleware]:.3g} "
            f"samples/s, fewer than {t.rate_hz:g} Hz ({cpu.how})")


def summary(t: TuningInput, cpu: CpuPlan) -> str | None:
    """One sentence when a chosen middleware's writer does not hold on the declared CPU
    (None when every one of ``t.middlewares`` does)."""
    names = NAMES
    short = [m for m in t.middlewares if not cpu.fits(m)]
    if not short:
        return None
    fitting = [m for m in cpu.fitting if m in t.middlewares]
    if all(cpu.cpu_fits(m) for m in short):  # only a repair loop that cannot keep up
        return "; ".join(filter(None, (why_not(t, cpu, m) for m in short))) + (
            f"; use {', '.join(names[m] for m in fitting)}" if fitting else "")
    need = "; ".join(f"{names[m]} {cpu.writer_cores[m]:.3g} cores "
                     f"({cpu.per_sample_ms[m]:.3g} ms per sample)" for m in t.middlewares)
    text = (f"the CPU leaves the writer {cpu.share_cores:.3g} cores ({cpu.how}), of which "
            f"it may plan on {WRITER_CPU_UTILIZATION:.0%} = {cpu.usable_cores:.3g}, less than "
            f"it needs: {need}")
    slow = [m for m in t.middlewares if cpu.capacity_hz[m] < t.rate_hz]
    if slow:  # a repair loop that cannot keep up even with the CPU it needs
        text += "; " + "; ".join(loop_reason(t, cpu, m) for m in slow)
    if fitting:
        return text + f"; use {', '.join(names[m] for m in fitting)}"
    # the rate each one carries: its CPU's, and no more than its repair loop completes
    carried = {m: min(cpu.max_rate_hz[m], cpu.capacity_hz[m]) for m in t.middlewares}
    best = max(t.middlewares, key=lambda m: carried[m])
    rate = math.floor(carried[best] * 10) / 10
    # the payload at the asked rate: the CPU's answer, for a middleware whose repair is not
    # serial (a serial loop's capacity at another payload is another tuning)
    open_loop = [m for m in t.middlewares if math.isinf(cpu.capacity_hz[m])] or [best]
    size = max(open_loop, key=lambda m: cpu.max_payload_bytes[m])
    return (text + f". On that share at {format_size(t.payload_bytes)} the largest rate is "
            f"{rate:g} Hz ({names[best]}); at {t.rate_hz:g} Hz the largest payload is "
            f"{format_size(cpu.max_payload_bytes[size])} ({names[size]})")
