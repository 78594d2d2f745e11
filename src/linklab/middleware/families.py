"""The probe families: one per probe program, as probes/common/probe.hpp has one
``Middleware`` per C++ probe (fastdds, cyclonedds, mqtt); the Zenoh probe is native
(probes/zenoh, Rust, built on first need) with a Python twin as its reference
(linklab.probes.zenoh_choice). What a family is decides what every scenario middleware
run on it can take: its QoS (which policies it has no such thing as, which values it
refuses), the tuner and the wire model (DDS over UDP only), the discovery gate, the
model's message limit.

Pure data: the registry (linklab.middleware.registry) puts a family
under each middleware a scenario names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

# Fast DDS UDPv4 default maxMessageSize: the paper's "64 KB" RTPS messages (000 IV-C);
# model.fragmentation takes it from here (the registry sits below the model).
FASTDDS_DEFAULT_MAX_MESSAGE_SIZE = 65500

_EMPTY: Mapping = MappingProxyType({})


@dataclass(frozen=True)
class ProbeFamily:
    name: str          # the probe's name: fastdds | cyclonedds | mqtt | zenoh
    label: str         # as a person says it: "Fast DDS"
    built: bool        # a C++ probe built into build/probes/<name>/linklab-probe-<name>
    #                    by setup (False: Zenoh's, chosen and built on first need by
    #                    linklab.probes.zenoh_choice)
    dds: bool          # RTPS over UDP: a DDS writer history cache, the tuner's profiles,
    #                    the wire model, multicast discovery, shared memory
    discovery_gate: bool  # takes --ready-file / --start-file (bench.discovery_gate)
    # the largest RTPS message its UDP transport sends by default (model limit; None: TCP)
    max_message_bytes: int | None = None
    # QoS policies it has no such thing as: policy -> one sentence why (either end), and
    # what only its subscriber lacks; the probe's summary says the same under
    # applied.ros_qos.unsupported (probes/mqtt/probe_mqtt.cpp kUnsupported: a test compares)
    unsupported: Mapping[str, str] = field(default_factory=lambda: _EMPTY, hash=False)
    unsupported_sub: Mapping[str, str] = field(default_factory=lambda: _EMPTY, hash=False)
    # (policy, value) -> why it cannot take it (the usage error's reason)
    refused: Mapping[tuple[str, str], str] = field(default_factory=lambda: _EMPTY, hash=False)
    # a delivery rule set by the reliability alone (no history cache): the rule's label
    # when reliable and when best effort (bench.verdict); None: DDS, its history decides
    reliability_labels: tuple[str, str] | None = None

    @property
    def binary(self) -> str:
        return f"linklab-probe-{self.name}"

    @property
    def history_cache(self) -> bool:
        """A writer history cache (N_HC): the tuner's ``history: tuned`` / ``profile``."""
        return self.dds


def _no_history_cache(history: str, depth: str, refused: str,
                      transient_local: str) -> dict[str, Mapping]:
    """A family without a history cache: history and depth are no policies of it (why,
    as the probe's summary says it), a history value is refused (``refused``), and so is
    durability transient_local (nothing is kept for a late joiner)."""
    return {"unsupported": MappingProxyType({"history": history, "depth": depth}),
            "refused": MappingProxyType({("history", "keep_last"): refused,
                                         ("history", "keep_all"): refused,
                                         ("durability", "transient_local"): transient_local})}


# Fast DDS's UDP transport sends an RTPS message up to 65500 B (the default and ROS 2's
# profile); Cyclone DDS 0.10 up to General/MaxMessageSize = 14720 B.
FASTDDS = ProbeFamily("fastdds", "Fast DDS", built=True, dds=True, discovery_gate=True,
                      max_message_bytes=FASTDDS_DEFAULT_MAX_MESSAGE_SIZE)
CYCLONEDDS = ProbeFamily("cyclonedds", "Cyclone DDS", built=True, dds=True,
                         discovery_gate=True, max_message_bytes=14720)
MQTT = ProbeFamily(
    "mqtt", "MQTT", built=True, dds=False, discovery_gate=True,
    reliability_labels=("MQTT QoS 1", "MQTT QoS 0"),
    **_no_history_cache(
        "MQTT has no history cache: the broker forwards each message once to the subscribers "
        "connected now and keeps at most one retained message per topic.",
        "MQTT has no history cache whose depth could be set.",
        "MQTT has no history cache (the broker forwards each message once and keeps at most "
        "one retained message per topic)",
        "MQTT cannot keep a history for late-joining subscribers (a broker keeps at most one "
        "retained message per topic); only volatile is possible"))
ZENOH = ProbeFamily(
    "zenoh", "Zenoh", built=False, dds=False, discovery_gate=False,
    reliability_labels=("Zenoh reliable", "Zenoh best effort"),
    unsupported_sub=MappingProxyType({
        "reliability": "A zenoh 1.x subscriber has no reliability setting: each sample "
                       "travels with its publisher's reliability (the publisher's summary "
                       "has it).",
    }),
    **_no_history_cache(
        "Zenoh pub/sub has no history cache: a put goes to the subscribers matched now and "
        "is kept nowhere.",
        "Zenoh pub/sub has no history cache whose depth could be set.",
        "zenoh pub/sub has no history cache (a put goes to the subscribers matched now and is "
        "kept nowhere)",
        "zenoh pub/sub keeps nothing for late-joining subscribers; only volatile is possible"))

FAMILIES: Mapping[str, ProbeFamily] = MappingProxyType(
    {f.name: f for f in (FASTDDS, CYCLONEDDS, MQTT, ZENOH)})
# The DDS families, in this order wherever both are listed (the tuner writes both).
DDS_FAMILIES: tuple[str, ...] = tuple(f.name for f in FAMILIES.values() if f.dds)
# The C++ probes scripts/setup.sh builds (build/probes/<name>/).
BUILT_PROBES: tuple[str, ...] = tuple(f.name for f in FAMILIES.values() if f.built)
