"""The optimization framework of 000 (section IV-F) as numbers: TuningInput -> TunedSettings."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from linklab.model.fragmentation import max_message_size_for_mtu
from linklab.model.history import history_cache_size
from linklab.model.overhead import OVERLAY_OVERHEAD_BYTES
from linklab.model.rates import bits_to_bytes, dds_budget, publish_rate_bytes
from linklab.model.retransmission import optimal_heartbeat_rate
from linklab.tune.inputs import TuningInput

MIB = 1024 * 1024
# Cyclone DDS: RTPS header, INFO_TS, INFO_DST and DATA_FRAG header fit in 128 B, so its
# default FragmentSize 1344 B = 1472 B - 128 B. Keep that margin for any message size.
CYCLONE_FRAGMENT_MARGIN = 128


@dataclass(frozen=True)
class TunedSettings:
    """Every value written into the profiles, in the units the profiles use."""

    max_message_size: int  # Step 1: RTPS maxMessageSize = MTU - 20 - 8 - overlay [B]
    heartbeat_hz: float  # Step 2: n = 2r
    heartbeat_period_ns: int  # 1 / n, rounded to a nanosecond
    history_depth: int  # Step 3: N_HC = ceil(T * omega / u) (Eq. 6)
    max_samples: int
    max_instances: int
    max_samples_per_instance: int
    allocated_samples: int
    reliability: str
    history_kind: str
    publish_mode: str
    memory_policy: str
    socket_buffer_bytes: int
    cyclone_fragment_size: int
    cyclone_whc_high_bytes: int  # N_HC * u
    r_pub_bytes_per_s: float
    budget_bytes_per_s: float  # T * omega

    @property
    def heartbeat_period_s(self) -> float:
        return self.heartbeat_period_ns / 1e9

    def to_dict(self) -> dict:
        data = asdict(self)
        data["heartbeat_period_s"] = self.heartbeat_period_s
        return data


def socket_buffer_size(largest_burst_bytes: float) -> int:
    """Room for two back-to-back bursts, in whole MiB, between 4 MiB and 64 MiB."""
    need = math.ceil(2 * largest_burst_bytes / MIB) * MIB
    return int(min(max(need, 4 * MIB), 64 * MIB))


def compute_settings(t: TuningInput, largest_burst_bytes: float) -> TunedSettings:
    link = bits_to_bytes(t.link_bits_per_s)  # T in bytes per second, as Eq. 6 needs
    m = max_message_size_for_mtu(t.mtu, OVERLAY_OVERHEAD_BYTES[t.overlay])
    n = optimal_heartbeat_rate(t.rate_hz)
    n_hc = history_cache_size(link, t.utilization, t.payload_bytes, t.subscribers)
    return TunedSettings(
        max_message_size=m,
        heartbeat_hz=n,
        heartbeat_period_ns=max(1, round(1e9 / n)),
        history_depth=n_hc,
        max_samples=n_hc,
        max_instances=1,  # ROS 2 topics are keyless: one instance
        max_samples_per_instance=n_hc,
        allocated_samples=min(n_hc, 100),
        reliability="RELIABLE",
        history_kind="KEEP_LAST",
        publish_mode="ASYNCHRONOUS",
        memory_policy="PREALLOCATED_WITH_REALLOC",
        socket_buffer_bytes=socket_buffer_size(max(largest_burst_bytes, t.payload_bytes)),
        cyclone_fragment_size=m - CYCLONE_FRAGMENT_MARGIN,
        cyclone_whc_high_bytes=n_hc * t.payload_bytes,
        r_pub_bytes_per_s=publish_rate_bytes(t.rate_hz, t.payload_bytes),
        budget_bytes_per_s=dds_budget(link, t.utilization),
    )
