"""Fast DDS XML profile (Fast DDS 2.x schema, as ROS 2 Humble/Jazzy ship it; loads in 2.9.1).

Profile names follow what rmw_fastrtps applies: a participant profile with
is_default_profile="true" (ROS contexts use the default participant QoS), and
data_writer / data_reader profiles with is_default_profile="true" (used for every
topic that has no profile named after it). Every element here is one Fast DDS 2.9
accepts: its XML parser drops the whole file for one unknown element while
load_profiles() still reports success, so the tests create entities from this file
with the real library and read the values back.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from linklab.tune.settings import PACING_SHARE as PACING_COMMENT_SHARE
from linklab.tune.settings import TunedSettings

NAMESPACE = "http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles"
TRANSPORT_ID = "linklab_udpv4"
PARTICIPANT_PROFILE = "linklab_participant"
WRITER_PROFILE = "linklab_writer"
READER_PROFILE = "linklab_reader"


def _text(parent: ET.Element, tag: str, value: object) -> ET.Element:
    child = ET.SubElement(parent, tag)
    child.text = str(value)
    return child


def _topic_qos(entity: ET.Element, s: TunedSettings, max_samples: int) -> None:
    topic = ET.SubElement(entity, "topic")
    history = ET.SubElement(topic, "historyQos")
    _text(history, "kind", s.history_kind)
    _text(history, "depth", s.history_depth)
    limits = ET.SubElement(topic, "resourceLimitsQos")
    _text(limits, "max_samples", max_samples)
    _text(limits, "max_instances", s.max_instances)
    _text(limits, "max_samples_per_instance", max_samples)
    _text(limits, "allocated_samples", s.allocated_samples)


def _duration(parent: ET.Element, tag: str, ns: int) -> None:
    element = ET.SubElement(parent, tag)
    _text(element, "sec", ns // 1_000_000_000)
    _text(element, "nanosec", ns % 1_000_000_000)


def render(s: TunedSettings, header_comment: str = "") -> str:
    root = ET.Element("dds", {"xmlns": NAMESPACE})
    if header_comment:
        root.append(ET.Comment(f" {header_comment} "))
    profiles = ET.SubElement(root, "profiles")

    descriptors = ET.SubElement(profiles, "transport_descriptors")
    descriptor = ET.SubElement(descriptors, "transport_descriptor")
    _text(descriptor, "transport_id", TRANSPORT_ID)
    _text(descriptor, "type", "UDPv4")
    descriptor.append(ET.Comment(" Step 1 (000 IV-C): one RTPS message = one IP packet "))
    _text(descriptor, "maxMessageSize", s.max_message_size)
    _text(descriptor, "sendBufferSize", s.socket_buffer_bytes)
    _text(descriptor, "receiveBufferSize", s.socket_buffer_bytes)

    participant = ET.SubElement(profiles, "participant",
                                {"profile_name": PARTICIPANT_PROFILE, "is_default_profile": "true"})
    rtps = ET.SubElement(participant, "rtps")
    builtin = ET.SubElement(rtps, "builtin")
    discovery = ET.SubElement(builtin, "discovery_config")
    discovery.append(ET.Comment(" The link outage (000 IV-E, V-D): the participant lease "
                                "outlasts it, so the peers keep each other and the writer "
                                "resends its history when the link is back "))
    _duration(discovery, "leaseDuration", s.lease_duration_ns)
    _duration(discovery, "leaseAnnouncement", s.lease_announcement_ns)
    user = ET.SubElement(rtps, "userTransports")
    _text(user, "transport_id", TRANSPORT_ID)
    rtps.append(ET.Comment(" builtin UDP (65500 B messages) and SHM off: only the tuned UDP "))
    _text(rtps, "useBuiltinTransports", "false")

    writer = ET.SubElement(profiles, "data_writer",
                           {"profile_name": WRITER_PROFILE, "is_default_profile": "true"})
    writer.append(ET.Comment(f" Step 3 (000 Eq. 6; the outage, tune/history.py): "
                             f"HistoryCache {s.history_depth} samples "))
    _topic_qos(writer, s, s.max_samples)
    qos = ET.SubElement(writer, "qos")
    _text(ET.SubElement(qos, "reliability"), "kind", s.reliability)
    _text(ET.SubElement(qos, "publishMode"), "kind", s.publish_mode)
    qos.append(ET.Comment(" no HEARTBEAT after every fragment when the history is full: "
                          "only the periodic ones of step 2 (tune/settings.py) "))
    _text(qos, "disable_heartbeat_piggyback", "false" if s.heartbeat_piggyback else "true")
    writer.append(ET.Comment(" Step 2 (000 IV-D): heartbeat rate n = 2r "))
    times = ET.SubElement(writer, "times")
    _duration(times, "heartbeatPeriod", s.heartbeat_period_ns)
    writer.append(ET.Comment(f" never faster than {PACING_COMMENT_SHARE:.0%} of the link: "
                             "bursts stay below what its queue drains (tune/settings.py) "))
    controller = ET.SubElement(writer, "throughputController")
    _text(controller, "bytesPerPeriod", s.pacing_bytes_per_period)
    _text(controller, "periodMillisecs", s.pacing_period_ms)
    _text(writer, "historyMemoryPolicy", s.memory_policy)

    reader = ET.SubElement(profiles, "data_reader",
                           {"profile_name": READER_PROFILE, "is_default_profile": "true"})
    reader.append(ET.Comment(" resource limits 2 N_HC + 1: room for every sample the writer "
                             "may owe after a stall (tune/settings.py) "))
    _topic_qos(reader, s, s.reader_max_samples)
    rqos = ET.SubElement(reader, "qos")
    _text(ET.SubElement(rqos, "reliability"), "kind", s.reliability)
    _text(reader, "historyMemoryPolicy", s.memory_policy)

    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def set_pacing(xml: str, bytes_per_s: float, period_ms: int = 5) -> str:
    """The profile ``xml`` (from ``render``) with its writer paced at ``bytes_per_s`` in
    ``period_ms`` periods instead (the bench's ``optimized-paced``; one controller only:
    Fast DDS 2.9 rejects a file with two)."""
    import re

    per_period = max(1500, int(bytes_per_s * period_ms / 1000))
    new, count = re.subn(
        r"<bytesPerPeriod>\d+</bytesPerPeriod>(\s*)<periodMillisecs>\d+</periodMillisecs>",
        lambda m: (f"<bytesPerPeriod>{per_period}</bytesPerPeriod>{m.group(1)}"
                   f"<periodMillisecs>{period_ms}</periodMillisecs>"), xml)
    if count != 1:
        raise ValueError("the profile has no single throughputController to set")
    return new
