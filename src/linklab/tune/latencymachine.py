"""What the latency replay (model/latency.py) takes from the machine a stream runs on: how
fast a middleware's threads send and receive, how late a sleeping thread wakes, idle and
beside CPU-bound competitors. Pure data and its stored values.

These are properties of one machine on one day, not of DDS: the same 2-core VM measured
the tuned Fast DDS 64 KiB stream's loss-free latency at 1.48 ms on 2026-11-28 and 0.76 ms on
2026-11-29 (docs/RESULTS.md, "the latency model"). So ``linklab model-check --latency``
fits them on the run's own loss-free cells when it has them (tune/latencyfit.py) and
predicts every lossy cell from that; ``STORED`` is what ``linklab tune`` uses, with no run
to fit on.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Machine:
    """What a middleware's threads do on a machine, idle: interface bytes a second the
    writer hands to the socket and the reader takes in, the reader's fixed handling of a
    complete sample, and of one Heartbeat, AckNack or repair request."""

    send_bytes_per_s: float
    receive_bytes_per_s: float
    receive_s: float
    control_s: float


@dataclass(frozen=True)
class Calibration:
    """The machine under the replay: each middleware's threads, a timer's wake-up (mean
    lateness idle, and its growth per CPU-bound competitor per core: model/cpu.py), the
    reader's wake-up idle, and what a competitor does to the reader: with probability
    ``busy_wake_share`` its thread, woken by a packet, finds the competitor on its core
    and waits up to ``busy_slice_s`` per competitor per core (uniform) before it runs."""

    fastdds: Machine
    cyclonedds: Machine
    idle_lateness_s: float
    lateness_per_competitor_s: float
    reader_wake_s: float
    busy_wake_share: float
    busy_slice_s: float
    source: str = "stored"

    def machine(self, middleware: str) -> Machine:
        return getattr(self, middleware)

    def lateness_s(self, competitors_per_core: float) -> float:
        """A timer's mean wake-up lateness beside that many competitors per core."""
        return self.idle_lateness_s + self.lateness_per_competitor_s * max(
            0.0, competitors_per_core)

    def with_machine(self, middleware: str, machine: Machine) -> Calibration:
        return replace(self, **{middleware: machine})

    def describe(self) -> str:
        """One line: every value, and where they come from."""
        def one(name: str, m: Machine) -> str:
            return (f"{name} sends {m.send_bytes_per_s / 1e6:g} MB/s, receives "
                    f"{m.receive_bytes_per_s / 1e6:g} MB/s, hands a sample over in "
                    f"{m.receive_s * 1e3:g} ms")
        return (f"machine ({self.source}): {one('Fast DDS', self.fastdds)}; "
                f"{one('Cyclone DDS', self.cyclonedds)}; a timer wakes "
                f"{self.idle_lateness_s * 1e3:g} ms late idle + "
                f"{self.lateness_per_competitor_s * 1e3:g} ms per competitor per core, a "
                f"reader {self.reader_wake_s * 1e3:g} ms; beside a competitor "
                f"{self.busy_wake_share:.0%} of a reader's wake-ups wait up to "
                f"{self.busy_slice_s * 1e3:g} ms per competitor per core")


# Fitted (tune/latencyfit.py) on the 2-core VM of 2026-11-29, on the 20 loss-free cells of
# ``linklab bench scenarios/model-latency-grid.yaml`` (run model-latency-grid-20261129-175513;
# docs/RESULTS.md, "the latency model"). linklab tune's pacing uses model/cpu.py's wake-up
# lateness, measured from the writer's bursts on the wire, not these.
STORED = Calibration(
    fastdds=Machine(150e6, 160e6, 0.0002, 0.0002),
    cyclonedds=Machine(150e6, 160e6, 0.0, 0.0002),
    idle_lateness_s=0.0001,
    lateness_per_competitor_s=0.00075,
    reader_wake_s=0.0001,
    busy_wake_share=0.15,
    busy_slice_s=0.006,
    source="stored, fitted on 2026-11-29's machine")
