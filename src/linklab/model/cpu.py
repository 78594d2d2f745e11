"""The CPU a DDS stream needs, and what a busy machine leaves it.

Measured on this project's machine (2-core x86, Debian 12, Fast DDS 2.9.1, Cyclone DDS
0.10.2; docs/RESULTS.md "A busy robot"), with the tuned profiles over PER 20 %:

* CPU per sample (CPU_COST): the probes' user + system seconds at two counts, their
  difference over the samples between (the fixed cost of a probe's life cancels),
  against the wire bytes per sample: a line ``a + b x wire kB`` per middleware and role
  (``linklab bench scenarios/cpu-cost-tuned.yaml``, ``python3 scripts/cpu_cost.py RUN``).
  The writer's send thread carries most of it (a syscall per RTPS message).
* The share a busy machine leaves (fair_share_cores): with N CPU-bound tasks beside it on
  C cores, the Linux scheduler gives a runnable task about C / (N + 1) cores.
* How much of that share a writer may plan on (WRITER_CPU_UTILIZATION): a writer that
  falls behind repairs more (each late repair is asked for again), so its need grows as
  its share runs out and the stream stops. Measured with the tuned 512 KiB / 30 Hz writer
  over PER 20 % (it needs ~0.18 core; scenarios/busy-robot-tuned.yaml): every sample in
  10 of 10 trials at 1 and 2 competitors per core (share 0.67 and 0.40: 27 % and 45 %
  used), 6 of 10 at 3 (0.29: 63 %, with the pacing made for that load; 1 of 10 with 5 ms
  periods), and with no pacing period from 5 to 50 ms at 4 (0.22: 81 %;
  scenarios/busy-robot-pacing.yaml)
  -- the writer plans on at most half its share.
* The lateness of a sleeping thread's wake-up (sched_lateness_s; it stretches Cyclone's
  repair loop, tune/explain.cyclone_round_s): Fast DDS's throughputController sleeps to
  the next period after each period's bytes, and the period starts late by the
  scheduler's delay, a timer any thread can be seen by. Measured from the writer's bursts
  (scripts/rtps_capture.py, periods that sent a full period's bytes): mean 0.35 ms idle,
  0.90 / 2.0 / 2.9 / 4.2 / 8.6 ms at 1 / 2 / 3 / 4 / 8 CPU-bound competitors per core:
  0.35 ms + 1.05 ms per competitor per core.
"""

from __future__ import annotations

from dataclasses import dataclass

LATENESS_PER_COMPETITOR_S = 0.00105  # per CPU-bound competitor per core (see above)
IDLE_LATENESS_S = 0.00035            # an idle machine still wakes a thread this late
WRITER_CPU_UTILIZATION = 0.5         # the most of its fair share a writer plans on (above)


@dataclass(frozen=True)
class CpuCost:
    """CPU seconds per sample = fixed_s + per_kb_s x wire kB per sample."""

    fixed_s: float
    per_kb_s: float

    def per_sample_s(self, wire_bytes_per_sample: float) -> float:
        return self.fixed_s + self.per_kb_s * wire_bytes_per_sample / 1000


# (middleware, role) -> cost: scripts/cpu_cost.py on scenarios/cpu-cost-tuned.yaml
CPU_COST: dict[tuple[str, str], CpuCost] = {
    ("fastdds", "pub"): CpuCost(0.000500, 7.33e-6),
    ("fastdds", "sub"): CpuCost(0.000203, 2.96e-6),
    ("cyclonedds", "pub"): CpuCost(0.000428, 6.21e-6),
    ("cyclonedds", "sub"): CpuCost(0.000204, 3.19e-6),
}


def cores_needed(middleware: str, role: str, rate_hz: float,
                 wire_bytes_per_sample: float) -> float:
    """The cores a writer ("pub") or reader ("sub") keeps busy at ``rate_hz``."""
    return rate_hz * CPU_COST[(middleware, role)].per_sample_s(wire_bytes_per_sample)


def fair_share_cores(cores: float, competitors: float) -> float:
    """What ``competitors`` CPU-bound tasks on ``cores`` leave one more runnable task."""
    if cores <= 0:
        raise ValueError(f"cores must be positive, got {cores}")
    return min(1.0, cores / (max(0.0, competitors) + 1))


def competitors_per_core_for_share(share_cores: float) -> float:
    """The CPU-bound competitors per core that leave a task ``share_cores`` (the inverse of
    fair_share_cores on one core)."""
    return max(0.0, 1.0 / share_cores - 1.0)


def sched_lateness_s(competitors_per_core: float) -> float:
    """How late a sleeping thread's wake-up comes, on average, with that many CPU-bound
    competitors per core (measured; see the module docstring)."""
    return IDLE_LATENESS_S + LATENESS_PER_COMPETITOR_S * max(0.0, competitors_per_core)
