"""The profile tuner: the optimization framework of 000_10b8b18b6f5db8a8.txt (IV-F).

Stable Python API (the bench calls it)::

    from linklab.tune import TuningInput, tune, write_profiles

    result = tune(TuningInput(rate_hz=30, payload_bytes=256 * 1024,
                              link_bits_per_s=433e6, utilization=0.65))
    result.fastdds_xml        # str: Fast DDS 2.x XML (default participant/writer/reader)
    result.cyclonedds_xml     # str: Cyclone DDS configuration for CYCLONEDDS_URI
    result.settings           # TunedSettings: max_message_size, heartbeat_period_ns,
                              #   history_depth (N_HC), socket_buffer_bytes, ...
    result.explanation        # Explanation: verdict, summary, per-setting reasons,
                              #   before/after R_DDS and B_DDS per packet error rate
    result.verdict            # "feasible" | "marginal" | "fails" | "infeasible"
    paths = write_profiles(result, "out")   # {"fastdds": Path, "cyclonedds": Path}

``tune`` is pure (no I/O) and raises ``linklab.errors.UsageError`` naming the
argument for unusable input; ``write_profiles`` is the only function that touches
the file system. TuningInput fields: rate_hz, payload_bytes, link_bits_per_s,
utilization (omega, default 0.65), mtu (1500), overlay ("none" | "vxlan" |
"wireguard"), subscribers (1), ros ("humble" | "jazzy"), per (None: explain for
the paper's 1 % and 20 %), peers (Cyclone unicast peers; multicast off when given),
outage_tolerance_s (60: participant lease 1.5x that, announcements every lease/6).

Steps (000 IV-F): maxMessageSize = MTU - 20 - 8 - overlay (1472 for 1500);
heartbeat period 1/(2r); history depth and resource limits N_HC = ceil(T*omega/u),
T in bytes per second (omega used as Eq. 6 says).
"""

from __future__ import annotations

from linklab.tune import cyclonedds, fastdds
from linklab.tune.explain import (
    Condition,
    Explanation,
    conditions_for,
    explain,
    model_after,
    model_before,
    wire_predictions,
)
from linklab.tune.inputs import TuningInput, validate
from linklab.tune.render import render_markdown, render_text, usage_lines
from linklab.tune.result import TuningResult
from linklab.tune.settings import TunedSettings, compute_settings
from linklab.tune.writer import write_profiles

__all__ = ["TuningInput", "TuningResult", "TunedSettings", "Explanation", "tune",
           "write_profiles", "render_text", "render_markdown", "usage_lines"]


def tune(t: TuningInput) -> TuningResult:
    """TuningInput -> profiles and explanation. Pure; raises UsageError for bad input."""
    validate(t)
    # Settings first with a provisional buffer, then model the tuned traffic, then size
    # the socket buffers from the largest tuned burst.
    provisional = compute_settings(t, largest_burst_bytes=t.payload_bytes)
    conditions = [Condition(per, model_before(t, per), model_after(t, provisional, per))
                  for per in conditions_for(t)]
    largest_burst = max(c.after.burst_bytes for c in conditions)
    settings = compute_settings(t, largest_burst_bytes=largest_burst)
    conditions = [Condition(c.per, c.before, model_after(t, settings, c.per),
                            wire_predictions(t, settings, c.per)) for c in conditions]
    explanation = explain(t, settings, conditions)
    comment = (f"linklab tune: {t.payload_bytes} B at {t.rate_hz:g} Hz over "
               f"{t.link_bits_per_s:g} bit/s, omega {t.utilization:g}, MTU {t.mtu}, "
               f"overlay {t.overlay}, {t.subscribers} subscriber(s), ROS 2 {t.ros}. "
               f"Verdict: {explanation.verdict}")
    return TuningResult(
        inputs=t,
        settings=settings,
        explanation=explanation,
        fastdds_xml=fastdds.render(settings, comment),
        cyclonedds_xml=cyclonedds.render(settings, t.peers, comment),
    )
