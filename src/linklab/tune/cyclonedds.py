"""Cyclone DDS configuration (CYCLONEDDS_URI; schema of Cyclone 0.10 as ROS 2 Humble/Jazzy
ship it, also accepted by the 11.x library of the cyclonedds Python package).

Nearest equivalents of the paper's three steps (000 IV-F):
* Step 1: General/MaxMessageSize (and MaxRexmitMessageSize) = the same one-packet
  size, FragmentSize = that minus 128 B of RTPS submessage headers (Cyclone's own
  default pair is 1472 B / 1344 B).
* Step 2: Internal/HeartbeatInterval = 1/(2r), or shorter: Cyclone NACKs the fragments
  of one sample per AckNack (ddsi_acknack.c), so the loop must turn r*E[rounds] times a
  second (model/repair.py R3; 512 KiB at 30 Hz over PER 20 %: 3.0 ms; measured,
  docs/RESULTS.md "Cyclone's repair loop": 8.0-8.9 Hz with 16.7 ms, 30 Hz with 3 ms).
  minsched is lowered to the same value to allow it. The reader side of the same loop,
  Internal/NackDelay (default 100 ms between a heartbeat that shows a gap and the NACK,
  and between two NACKs of the same fragments), is the same loop or a repair's round
  trip (2 x delay + sending one round's fragments).
  Measured (docs/RESULTS.md): 256 KiB at 30 Hz over PER 20 % went from 10.6 Hz to 30 Hz
  with NackDelay alone (ddsperf).
* Internal/DefragReliableMaxSamples (default 16), MaxQueuedRexmitBytes (512 kB: less than
  one 512 KiB sample) and MaxQueuedRexmitMessages (200): room for every sample the writer
  may owe after a stall (2 N_HC + 1 samples, N_HC * u bytes). Measured: with Cyclone's
  defaults the stream did not recover from a 2 s outage at 512 KiB, with these it did.
* Step 3: Internal/Watermarks/WhcHigh = N_HC * u bytes. Cyclone bounds the writer
  history by bytes here; the sample count (history depth N_HC) is a QoS set in code.
Plus Discovery/LeaseDuration and SPDPInterval (the link outage, 000 IV-E / V-D: default
lease 10 s), the socket receive buffer, and optional unicast peers with multicast off.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from linklab.tune.settings import TunedSettings

NAMESPACE = "https://cdds.io/config"
MAX_AUTO_PARTICIPANT_INDEX = 32


def _text(parent: ET.Element, tag: str, value: object, attrs: dict | None = None) -> ET.Element:
    child = ET.SubElement(parent, tag, attrs or {})
    child.text = str(value)
    return child


def _duration(ns: int) -> str:
    """Cyclone duration text in whole microseconds (it also takes ns, ms, s)."""
    return f"{max(1, round(ns / 1000))}us"


def render(s: TunedSettings, peers: tuple[str, ...] = (), header_comment: str = "") -> str:
    root = ET.Element("CycloneDDS", {"xmlns": NAMESPACE})
    if header_comment:
        root.append(ET.Comment(f" {header_comment} "))
    domain = ET.SubElement(root, "Domain", {"Id": "any"})

    general = ET.SubElement(domain, "General")
    if peers:
        _text(general, "AllowMulticast", "false")
    general.append(ET.Comment(" Step 1 (000 IV-C): one RTPS message = one IP packet "))
    _text(general, "MaxMessageSize", f"{s.max_message_size}B")
    _text(general, "MaxRexmitMessageSize", f"{s.max_message_size}B")
    _text(general, "FragmentSize", f"{s.cyclone_fragment_size}B")

    discovery = ET.SubElement(domain, "Discovery")
    discovery.append(ET.Comment(" The link outage (000 IV-E, V-D): the lease outlasts it "))
    _text(discovery, "LeaseDuration", _duration(s.lease_duration_ns))
    _text(discovery, "SPDPInterval", _duration(s.lease_announcement_ns))
    if peers:
        _text(discovery, "ParticipantIndex", "auto")
        _text(discovery, "MaxAutoParticipantIndex", MAX_AUTO_PARTICIPANT_INDEX)
        peers_el = ET.SubElement(discovery, "Peers")
        for peer in peers:
            ET.SubElement(peers_el, "Peer", {"Address": peer})

    internal = ET.SubElement(domain, "Internal")
    internal.append(ET.Comment(" Step 2 (000 IV-D): heartbeat at least n = 2r; faster when "
                               "one repaired sample per NACK needs it (model/repair.py R3) "))
    period = _duration(s.cyclone_heartbeat_ns)
    min_period = _duration(min(s.cyclone_heartbeat_ns, 5_000_000))
    _text(internal, "HeartbeatInterval", period,
          {"min": min_period, "minsched": period, "max": "8s"})
    _text(internal, "NackDelay", _duration(s.cyclone_nack_delay_ns))
    internal.append(ET.Comment(" room for every sample the writer may owe after a stall "
                               "(tune/settings.py) "))
    _text(internal, "DefragReliableMaxSamples", s.cyclone_defrag_max_samples)
    _text(internal, "MaxQueuedRexmitBytes", f"{s.cyclone_rexmit_bytes}B")
    _text(internal, "MaxQueuedRexmitMessages", s.cyclone_rexmit_messages)
    ET.SubElement(internal, "SocketReceiveBufferSize", {"max": f"{s.socket_buffer_bytes}B"})
    watermarks = ET.SubElement(internal, "Watermarks")
    watermarks.append(ET.Comment(" Step 3 (000 Eq. 6): N_HC * u bytes of writer history "))
    _text(watermarks, "WhcHigh", f"{s.cyclone_whc_high_bytes}B")

    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
