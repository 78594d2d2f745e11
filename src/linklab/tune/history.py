"""How many samples the writer keeps: Eq. 6, a floor for repairs, and the outage.

* Eq. 6 (000 IV-E): N_HC = ceil(T*omega/u) bounds the burst after an outage to about one
  second of the DDS share.
* Floor: a sample must stay in the history until it is repaired, or KEEP_LAST drops it
  while the reader still asks for it. The repair of 99.9 % of samples takes
  model.repair's rounds_quantile rounds of one heartbeat period each; the history keeps
  twice that many publish intervals.
* The outage (issue 15): a history of ceil(r*D) samples (times k subscribers) keeps
  everything written during an outage of D = --outage-tolerance. It is used when the
  link budget allows: the backlog's wire bytes (the live stream's wire amplification
  applied to N*u*k) must drain through what the live stream leaves of T*omega within D
  itself (so catching up takes no longer than the outage did), and N*u must fit the
  writer's history memory cap. Otherwise Eq. 6 stays and the plan says why.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from linklab.model.history import history_cache_size
from linklab.model.repair import rounds_quantile

REPAIR_QUANTILE = 0.999
REPAIR_FLOOR_FACTOR = 2.0


@dataclass(frozen=True)
class HistoryPlan:
    depth: int  # what the profiles get
    eq6_depth: int  # ceil(T*omega/(u*k)), 000 Eq. 6
    floor_depth: int  # samples a repair may take (see module docstring)
    outage_s: float  # D, --outage-tolerance
    outage_depth: int  # ceil(r*D): every sample written during the outage
    covers_outage: bool
    burst_bytes: float  # depth * u * k: what leaves back-to-back after an outage
    spare_bytes_per_s: float  # T*omega minus the live stream's wire rate
    drain_s: float  # burst wire bytes / spare share (inf when there is none)
    memory_bytes: float  # depth * u: the writer's history (and each reader's at most)
    reason: str  # why the depth, in one sentence

    def to_dict(self) -> dict:
        return asdict(self)


def repair_floor(rate_hz: float, fragments: int, per: float, heartbeat_hz: float) -> int:
    """Publish intervals a sample needs to be repaired (99.9 %), times 2, at least 1."""
    if per <= 0:
        return 1
    rounds = rounds_quantile(fragments, per, REPAIR_QUANTILE)
    seconds = (rounds + 1) / heartbeat_hz
    return max(1, math.ceil(REPAIR_FLOOR_FACTOR * seconds * rate_hz))


def plan_history(*, rate_hz: float, payload_bytes: int, subscribers: int,
                 link_bytes_per_s: float, utilization: float, live_wire_amplification: float,
                 outage_tolerance_s: float, memory_cap_bytes: float,
                 floor_depth: int, forced_depth: int | None = None) -> HistoryPlan:
    k = subscribers
    eq6 = history_cache_size(link_bytes_per_s, utilization, payload_bytes, k)
    budget = link_bytes_per_s * utilization
    live = rate_hz * payload_bytes * k * live_wire_amplification
    spare = budget - live
    outage_depth = max(1, math.ceil(rate_hz * outage_tolerance_s))

    def drain(depth: int) -> float:
        wire = depth * payload_bytes * k * live_wire_amplification
        return wire / spare if spare > 0 else math.inf

    base = max(eq6, floor_depth)
    if outage_depth <= base:
        depth, covers = base, True
        reason = (f"Eq. 6 keeps {eq6} samples, already more than the {outage_depth} written "
                  f"during a {outage_tolerance_s:g} s outage")
    elif drain(outage_depth) > outage_tolerance_s:
        depth, covers = base, False
        reason = (f"covering a {outage_tolerance_s:g} s outage needs {outage_depth} samples; "
                  + (f"their {outage_depth * payload_bytes * k * live_wire_amplification / 1e6:.4g}"
                     f" MB on the wire would take {drain(outage_depth):.3g} s to drain through "
                     f"the {spare * 8 / 1e6:.4g} Mbit/s the live stream leaves of T*omega, "
                     "longer than the outage" if spare > 0 else
                     "the live stream with its repairs already fills T*omega, nothing is left "
                     "to repay a backlog"))
    elif outage_depth * payload_bytes > memory_cap_bytes:
        depth, covers = base, False
        reason = (f"covering a {outage_tolerance_s:g} s outage needs {outage_depth} samples "
                  f"= {outage_depth * payload_bytes / 2**20:.4g} MiB of history, more than "
                  f"the {memory_cap_bytes / 2**20:.4g} MiB allowed (--history-memory)")
    else:
        depth, covers = outage_depth, True
        reason = (f"{outage_depth} samples keep everything written during a "
                  f"{outage_tolerance_s:g} s outage; the backlog drains in "
                  f"{drain(outage_depth):.3g} s through the {spare * 8 / 1e6:.4g} Mbit/s the "
                  "live stream leaves of T*omega")
    if depth == floor_depth and floor_depth > eq6 and not (covers and depth == outage_depth):
        reason += (f"; raised from Eq. 6's {eq6} to {floor_depth} so a sample stays until "
                   "it is repaired")
    if forced_depth is not None:
        depth, covers = forced_depth, forced_depth >= outage_depth
        reason = f"set to {forced_depth} (--history-depth); the plan would keep {base}"
    return HistoryPlan(
        depth=depth, eq6_depth=eq6, floor_depth=floor_depth, outage_s=outage_tolerance_s,
        outage_depth=outage_depth, covers_outage=covers,
        burst_bytes=depth * payload_bytes * k, spare_bytes_per_s=spare,
        drain_s=drain(depth), memory_bytes=depth * payload_bytes, reason=reason)
