"""What the tuned (and the default) profiles will put on the wire: model.wire_traffic applied to
the settings the tuner writes. Pure; used by the explanation, ``--verify`` and
``linklab model check``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from linklab.model.repair import expected_rounds
from linklab.model.wire_traffic import (
    Profile,
    WireBreakdown,
    cyclone_profile,
    fastdds_profile,
    predict,
)

# Fast DDS as the shipped default profile runs it (profiles/default.xml): 65500 B UDP
# messages, heartbeat every 3 s, SYNCHRONOUS, piggyback Heartbeats every send-buffer's
# worth of data (StatefulWriter::send_heartbeat_piggyback_nts_). The spacing is fitted:
# 2 x net.core.wmem_default (212992 B on Debian 12; the kernel doubles socket buffer
# sizes, socket(7)) reproduces the measured 512 KiB default cell (wire 1.32-1.33, two
# trials, wifi-ideal; the SYNCHRONOUS writer). Below ~256 KiB at 300 Mbit/s no Heartbeat
# finds enough of its sample still queued to matter, whatever the spacing.
FASTDDS_DEFAULT_MESSAGE = 65500
FASTDDS_DEFAULT_HEARTBEAT_HZ = 1.0 / 3.0
KERNEL_WMEM_DEFAULT = 212_992
DEFAULT_PIGGYBACK_BYTES = 2 * KERNEL_WMEM_DEFAULT
# Cyclone DDS 0.10 defaults (ddsi defconfig.c): MaxMessageSize 14720 B, FragmentSize
# 1344 B, MaxRexmitMessageSize 1456 B, HeartbeatInterval 100 ms.
CYCLONE_DEFAULT_MESSAGE = 14720
CYCLONE_DEFAULT_FRAGMENT = 1344
CYCLONE_DEFAULT_REXMIT = 1456
CYCLONE_DEFAULT_HEARTBEAT_HZ = 10.0


@dataclass(frozen=True)
class Prediction:
    middleware: str
    profile: str  # default | optimized
    per: float
    wire: WireBreakdown
    repair_rounds: float  # mean rounds until a sample is complete (model.repair R2)

    @property
    def amplification(self) -> float:
        return self.wire.amplification

    def to_dict(self) -> dict:
        return {"middleware": self.middleware, "profile": self.profile, "per": self.per,
                "amplification": self.amplification, "repair_rounds": self.repair_rounds,
                "wire": self.wire.to_dict()}


def tuned_profile(middleware: str, settings) -> Profile:
    """model.wire_traffic's view of a tuned profile (``settings``: tune.settings.TunedSettings)."""
    if middleware == "fastdds":
        return fastdds_profile(settings.max_message_size, settings.heartbeat_hz,
                               piggyback_bytes=None if not settings.heartbeat_piggyback
                               else settings.socket_buffer_bytes,
                               paced_bits_per_s=settings.pacing_bytes_per_s * 8)
    if middleware == "cyclonedds":
        return cyclone_profile(settings.max_message_size, settings.cyclone_fragment_size,
                               1e9 / settings.cyclone_heartbeat_ns, settings.max_message_size)
    raise ValueError(f"no wire model for {middleware!r}")


def default_profile(middleware: str) -> Profile:
    if middleware == "fastdds":
        return fastdds_profile(FASTDDS_DEFAULT_MESSAGE, FASTDDS_DEFAULT_HEARTBEAT_HZ,
                               piggyback_bytes=DEFAULT_PIGGYBACK_BYTES)
    if middleware == "cyclonedds":
        return cyclone_profile(CYCLONE_DEFAULT_MESSAGE, CYCLONE_DEFAULT_FRAGMENT,
                               CYCLONE_DEFAULT_HEARTBEAT_HZ, CYCLONE_DEFAULT_REXMIT)
    raise ValueError(f"no wire model for {middleware!r}")


def predict_wire(profile: Profile, profile_name: str, payload_bytes: int, rate_hz: float,
                 per: float, link_bits_per_s: float, mtu: int = 1500) -> Prediction:
    fragments = max(1, math.ceil((payload_bytes + profile.serialized_extra)
                                 / profile.fragment_bytes))
    rounds = expected_rounds(fragments, per) if per > 0 else 0.0
    wire = predict(profile, payload_bytes, rate_hz, per, link_bits_per_s, mtu,
                   repair_rounds=rounds)
    return Prediction(profile.middleware, profile_name, per, wire, rounds)
