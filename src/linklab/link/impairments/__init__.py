"""The impairments of a link direction, one class each (base.py says what a class has).

===============  ===========================  =======  ==============================
class            fields                       runs in  module
===============  ===========================  =======  ==============================
LossStage        loss                         kernel   loss.py (nft)
RateStage        rate                         kernel   rate.py (tbf)
QueuedRateStage  rate, with queue fields      relay    rate.py
OutageStage      outage                       kernel   outage_window.py (nft)
DelayStage       delay                        relay    delay.py
JitterStage      jitter, jitter_distribution  relay    delay.py
BurstLossStage   burst_loss                   relay    burst_loss.py
TraceStage       trace (and trace_start)      relay    trace.py
Queue            queue, queue_limit           relay    queue.py (a rate's or trace's)
MediumStage      (the link's medium field)    relay    medium.py (one per direction)
===============  ===========================  =======  ==============================

``FIELDS`` (every per-direction field, in the order presets, errors and ``status`` list
them) and ``direction_stages`` (a direction's pipeline) are built from these classes;
the relay wire writes the relay stages with ``relay_directives``.
"""

from __future__ import annotations

from typing import Any

from linklab.link.direction_spec import BurstLoss, DirectionSpec, Outage, QueueLimit
from linklab.link.impairments.base import DIRECTIONS, Field, Impairment, StageCounters
from linklab.link.impairments.burst_loss import BurstLossStage
from linklab.link.impairments.delay import DelayStage, JitterStage, relay_directives
from linklab.link.impairments.loss import LossStage
from linklab.link.impairments.medium import MediumStage
from linklab.link.impairments.outage_window import OutageStage
from linklab.link.impairments.queue import Queue
from linklab.link.impairments.rate import QueuedRateStage, RateStage
from linklab.link.impairments.trace import TraceStage

# In the order the fields are listed (presets, errors, status).
FIELD_ORDER: tuple[type[Impairment], ...] = (
    LossStage, RateStage, OutageStage, DelayStage, JitterStage, BurstLossStage, TraceStage,
    Queue)
FIELDS: dict[str, Field] = {name: f for cls in FIELD_ORDER for name, f in cls.FIELDS.items()}
# In the order packets meet them; the rate then goes first (direction_stages).
PIPELINE: tuple[type[Impairment], ...] = (
    OutageStage, LossStage, BurstLossStage, TraceStage, DelayStage, JitterStage, RateStage)
# What the relay runs: an impairment's kind -> the relay stage that runs and counts it
# (the emu wire's ``executes`` and counters). The medium is the link's, not a direction's
# field: blueprint.design adds its stages (impairments.medium).
RELAY_KINDS: dict[str, str] = {cls.kind: cls.relay_kind
                               for cls in (*PIPELINE, QueuedRateStage, MediumStage)
                               if cls.relay_kind}


def emulator_overrides(*, delay: str | None = None, jitter: str | None = None,
                       jitter_distribution: str | None = None, loss_model: str | None = None,
                       trace: str | None = None) -> dict[str, Any]:
    """``linklab link up``'s emulator flags -> validated overrides (delay, jitter,
    jitter_distribution, burst_loss, trace); flags not given are left out."""
    given = (("delay", DelayStage, delay, "--delay"), ("jitter", JitterStage, jitter, "--jitter"),
             ("jitter_distribution", JitterStage, jitter_distribution, "--jitter-distribution"),
             ("burst_loss", BurstLossStage, loss_model, "--loss-model"),
             ("trace", TraceStage, trace, "--trace"))
    return {field: cls.from_flag(text, flag) for field, cls, text, flag in given
            if text is not None}


def describe_direction(spec: DirectionSpec) -> dict[str, Any]:
    """Each field of a direction that holds a setting (loss always), as its impairment
    shows it."""
    out: dict[str, Any] = {}
    for name, field_ in FIELDS.items():
        value = getattr(spec, field_.attr)
        if value is not None:
            out[name] = field_.show(value)
    return out


def direction_stages(spec: DirectionSpec, carries: frozenset[str],
                     trace_start: str | None = None) -> list[Impairment]:
    """The pipeline of one direction of one link, in the order packets meet the kernel
    stages: the rate (sender's egress, or the ifb at the receiver's ingress, which runs
    before any nft hook), then outage and loss at the receiver. Relay stages run in
    between, inside the wire. Only the kinds this link carries (topology.py) are kept.
    """
    stages = [stage for cls in PIPELINE for stage in cls.from_direction(spec, trace_start)]
    stages.sort(key=lambda stage: stage.kind != "rate")  # the rate first (stable sort)
    return [stage for stage in stages if stage.kind in carries]


__all__ = [
    "DIRECTIONS", "FIELDS", "FIELD_ORDER", "PIPELINE", "RELAY_KINDS", "BurstLoss",
    "BurstLossStage", "DelayStage", "DirectionSpec", "Field", "Impairment", "JitterStage",
    "LossStage", "MediumStage", "Outage", "OutageStage", "Queue", "QueueLimit",
    "QueuedRateStage", "RateStage", "StageCounters", "TraceStage", "describe_direction",
    "direction_stages", "emulator_overrides", "relay_directives",
]
