"""What the wire carries for one reliable topic: first copies, repairs of lost packets,
repairs of fragments asked for again while the first copies were still in flight,
heartbeats, AckNacks and every header -- in interface bytes per published payload byte.

Paper 000's Eq. 4 (R_DDS/R_pub = 1/(1 - p^2 (1 - q))) counts a lost message as repaired
only when its round's Heartbeat and AckNack arrive and never again; a strictly reliable
stream repairs every loss, and the measured wire carries more (docs/RESULTS.md). This
model counts, per sample (each term's source in brackets):

* data datagrams: the sample cut into fragments of ``fragment_bytes``, ``fragments_per_
  datagram`` per UDP datagram with ``datagram_overhead`` RTPS bytes [layouts measured
  with tshark on Fast DDS 2.9.1 and Cyclone DDS 0.10.2, see ``Profile``]; each datagram
  of L bytes is one IP packet up to MTU - 28, else fragments of MTU - 20 rounded down
  to 8 B until the rest fits (fragmentation.ip_packets_per_datagram) [000 IV-C, RFC 791]
  carrying IPv4 20 B and the Ethernet header 14 B that interface counters include
  [001 V-A for IPv4/UDP];
* repairs of losses: a datagram of n packets arrives with q = p^n [000 IV-C]; each
  fragment of a lost first copy is resent in repair datagrams until one arrives,
  1/q_repair transmissions on average (geometric; every loss is repaired, as RELIABLE
  with enough history does);
* in-flight repeats (Fast DDS): a Heartbeat that reaches the reader with Q bytes of the
  same burst still queued behind it at the bottleneck makes the reader NackFrag them
  after its heartbeatResponseDelay d; what has not arrived by then, max(0, Q - T d), is
  sent again [StatefulReader::send_acknack lists every missing fragment of a sample;
  ReaderProxy::requested_fragment_set re-marks sent fragments unsent]. Fast DDS 2.9
  inserts a piggyback Heartbeat after every ``piggyback_bytes`` of data
  (StatefulWriter::send_heartbeat_piggyback_nts_); over bursts of W wire bytes at
  uniform offsets that is (W - T d)^2 / (2 B) bytes per sample. Periodic Heartbeats
  queue behind the whole burst (Q = 0), and a writer paced below T keeps the bottleneck
  queue short (Q <= one pacing period), so both add none. Cyclone NACKs only fragments
  below the highest one it has seen (ddsi_acknack.c, last_fragnum): none;
* control: ``heartbeat_hz`` Heartbeat datagrams, each answered (when it arrives) by one
  AckNack datagram carrying a NackFrag per incomplete sample [sizes measured].
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from linklab.model.fragmentation import (
    ETHERNET_HEADER,
    IPV4_HEADER,
    UDP_HEADER,
    ip_packets_per_datagram,
)

# Fast DDS 2.9.1 (Debian, built with statistics): a DATA_FRAG datagram of maxMessageSize M
# carries (M - 176) & ~3 sample bytes (RTPSWriter::getMaxDataSize: RTPS header, INFO_DST,
# INFO_TS, DATA_FRAG, a reserved HEARTBEAT and the statistics submessage); the datagram
# itself is 144 B longer than its fragment (measured: 1296 B fragments in 1468 B IP
# packets for M = 1472).
FASTDDS_FRAGMENT_RESERVE = 176
FASTDDS_DATAGRAM_OVERHEAD = 144
# Cyclone DDS 0.10: RTPS header 20 + INFO_DST 16 + INFO_TS 12 per datagram, DATA_FRAG 36
# per fragment (measured: 1344 B fragments in 1456 B IP packets).
CYCLONE_DATAGRAM_HEADER = 48
CYCLONE_DATAFRAG_HEADER = 36
# Control datagrams (IP bytes, measured): Fast DDS Heartbeat 156, AckNack 152 + 56 per
# NackFrag; Cyclone Heartbeat 88, AckNack with one NackFrag 140.
CONTROL_BYTES = {"fastdds": (156, 152, 56), "cyclonedds": (88, 104, 36)}


@dataclass(frozen=True)
class Profile:
    """How one middleware profile puts a reliable topic on the wire."""

    middleware: str  # fastdds | cyclonedds
    fragment_bytes: int  # sample bytes per fragment
    fragments_per_datagram: int  # first copies: fragments packed in one datagram
    repair_fragments_per_datagram: int  # repairs (Cyclone: MaxRexmitMessageSize)
    heartbeat_hz: float  # periodic Heartbeats while data is unacknowledged
    piggyback_bytes: float | None = None  # Fast DDS: a Heartbeat every B bytes (None: off)
    response_delay_s: float = 0.005  # reader's heartbeatResponseDelay (Fast DDS default)
    paced_bits_per_s: float | None = None  # writer flow control (None: bursts at once)
    # CDR header and the type's fields around the payload: 24 for the probe's Bytes
    # (linklab.probes.types.sample_extra_bytes has every type's; tune.wirecheck sets it)
    serialized_extra: int = 24

    def to_dict(self) -> dict:
        return asdict(self)


def fastdds_profile(max_message_size: int, heartbeat_hz: float, *,
                    piggyback_bytes: float | None, paced_bits_per_s: float | None = None,
                    response_delay_s: float = 0.005) -> Profile:
    fragment = (max_message_size - FASTDDS_FRAGMENT_RESERVE) & ~3
    return Profile("fastdds", fragment, 1, 1, heartbeat_hz, piggyback_bytes,
                   response_delay_s, paced_bits_per_s)


def cyclone_profile(max_message_size: int, fragment_size: int, heartbeat_hz: float,
                    max_rexmit_message_size: int = 1456) -> Profile:
    per_datagram = max(1, (max_message_size - CYCLONE_DATAGRAM_HEADER)
                       // (fragment_size + CYCLONE_DATAFRAG_HEADER))
    repair = max(1, (max_rexmit_message_size - CYCLONE_DATAGRAM_HEADER)
                 // (fragment_size + CYCLONE_DATAFRAG_HEADER))
    return Profile("cyclonedds", fragment_size, per_datagram, repair, heartbeat_hz, None,
                   0.0, None)


def datagram_wire(rtps_bytes: int, mtu: int = 1500) -> tuple[int, int]:
    """(IP packets, interface bytes) of one UDP datagram carrying ``rtps_bytes``."""
    udp = rtps_bytes + UDP_HEADER
    packets = ip_packets_per_datagram(udp, mtu)
    return packets, udp + packets * (IPV4_HEADER + ETHERNET_HEADER)


def datagram_rtps_bytes(profile: Profile, fragments: int, sample_bytes: int) -> int:
    """RTPS bytes of a datagram carrying ``fragments`` fragments, ``sample_bytes`` in all."""
    if profile.middleware == "fastdds":
        return sample_bytes + fragments * FASTDDS_DATAGRAM_OVERHEAD
    return CYCLONE_DATAGRAM_HEADER + sample_bytes + fragments * CYCLONE_DATAFRAG_HEADER


@dataclass(frozen=True)
class WireBreakdown:
    """Interface bytes per sample, by cause, and their sum over the payload."""

    payload_bytes: int
    fragments: int
    data_bytes: float  # first copies
    repair_bytes: float  # repairs of lost packets
    repeat_bytes: float  # fragments sent again while the first copies were in flight
    control_bytes: float  # heartbeats and acknacks (both directions)
    incomplete_samples: float  # samples under repair at a time (NackFrags per AckNack)

    @property
    def total_bytes(self) -> float:
        return self.data_bytes + self.repair_bytes + self.repeat_bytes + self.control_bytes

    @property
    def amplification(self) -> float:
        """Interface bytes (both directions) per published payload byte."""
        return self.total_bytes / self.payload_bytes

    def to_dict(self) -> dict:
        data = asdict(self)
        data.update(total_bytes=self.total_bytes, amplification=self.amplification)
        return data


def in_flight_repeats(burst_wire_bytes: float, link_bytes_per_s: float, profile: Profile) -> float:
    """Bytes per sample sent again because a piggyback Heartbeat inside the burst made the
    reader NackFrag what was still queued: (W - T d)^2 / (2 B), 0 when paced or off."""
    if profile.piggyback_bytes is None or profile.paced_bits_per_s is not None:
        return 0.0
    drained = link_bytes_per_s * profile.response_delay_s
    if burst_wire_bytes <= drained:
        return 0.0
    return (burst_wire_bytes - drained) ** 2 / (2.0 * profile.piggyback_bytes)


def _datagrams(profile: Profile, size: int) -> list[tuple[int, int, int]]:
    """(count, fragments, sample bytes) of the data datagrams of one sample of ``size``."""
    fragments = max(1, math.ceil(size / profile.fragment_bytes))
    per = profile.fragments_per_datagram
    full, rest = divmod(fragments, per)
    last_fragment = size - profile.fragment_bytes * (fragments - 1)
    last_count = rest or per
    out = []
    if full - (0 if rest else 1) > 0:
        out.append((full - (0 if rest else 1), per, per * profile.fragment_bytes))
    out.append((1, last_count, (last_count - 1) * profile.fragment_bytes + last_fragment))
    return out


def sample_ip_packets(profile: Profile, payload_bytes: int, mtu: int = 1500) -> int:
    """IP packets of one sample's first copies: all of them must arrive for the sample to
    arrive without a repair, P(sample) = p^n (000 IV-C, q = p^N_IP over the sample)."""
    size = payload_bytes + profile.serialized_extra
    return sum(count * datagram_wire(datagram_rtps_bytes(profile, frags, sample_bytes), mtu)[0]
               for count, frags, sample_bytes in _datagrams(profile, size))


def repair_datagram_packets(profile: Profile, payload_bytes: int, mtu: int = 1500) -> int:
    """IP packets of one repair datagram (``predict``'s repair term: it arrives with p^n,
    so a lost fragment is sent 1/p^n times on average)."""
    size = payload_bytes + profile.serialized_extra
    per_repair = profile.repair_fragments_per_datagram
    return datagram_wire(datagram_rtps_bytes(
        profile, per_repair, per_repair * min(profile.fragment_bytes, size)), mtu)[0]


def predict(profile: Profile, payload_bytes: int, rate_hz: float, per: float,
            link_bits_per_s: float, mtu: int = 1500,
            repair_rounds: float = 1.0) -> WireBreakdown:
    """Interface bytes per sample of ``payload_bytes`` at ``rate_hz`` over a link of
    ``link_bits_per_s`` losing each IP packet with ``per`` (both directions).

    ``repair_rounds``: mean rounds a sample stays incomplete (model.repair R2), for the
    NackFrags each AckNack carries."""
    if not 0.0 <= per < 1.0:
        raise ValueError(f"PER must lie in [0, 1), got {per}")
    p = 1.0 - per
    size = payload_bytes + profile.serialized_extra
    fragments = max(1, math.ceil(size / profile.fragment_bytes))
    data = 0.0
    lost_fragments = 0.0
    for count, frags, sample_bytes in _datagrams(profile, size):
        packets, wire = datagram_wire(datagram_rtps_bytes(profile, frags, sample_bytes), mtu)
        data += count * wire
        lost_fragments += count * frags * (1.0 - p ** packets)
    per_repair = profile.repair_fragments_per_datagram
    repair_packets, repair_wire = datagram_wire(datagram_rtps_bytes(
        profile, per_repair, per_repair * min(profile.fragment_bytes, size)), mtu)
    repair = lost_fragments / per_repair * repair_wire / p ** repair_packets
    repeats = in_flight_repeats(data, link_bits_per_s / 8.0, profile)
    hb, ack, per_nackfrag = CONTROL_BYTES[profile.middleware]
    incomplete = rate_hz * repair_rounds / max(profile.heartbeat_hz, 1e-9) if per > 0 else 0.0
    heartbeats_per_sample = profile.heartbeat_hz / rate_hz
    if profile.piggyback_bytes is not None:
        heartbeats_per_sample += data / profile.piggyback_bytes
    control = heartbeats_per_sample * (hb + p * (ack + per_nackfrag * min(incomplete, 20.0)))
    return WireBreakdown(payload_bytes, fragments, data, repair, repeats, control, incomplete)
