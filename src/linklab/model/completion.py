"""Whether a strictly reliable stream reaches the steady state model/wire_traffic.py describes.

model/wire_traffic.py counts what the wire carries per sample when every lost fragment is sent
again until it arrives: a datagram of n IP packets arrives with p^n (000_10b8b18b6f5db8a8
.txt IV-C, q = p^N_IP), so a lost fragment goes 1/p^n times on average. That is a steady
state only if the link can carry it. By Eq. 2 (000 IV-A) no rate is sustained above
T_max = T_OS->Link, and "if the transmission rate R persistently exceeds any of these
throughput limits T, it leads to back-pressure toward the upper layers or buffer
overflows": the backlog X_k of Eq. 3 (new samples plus the repairs still owed) then grows
every round instead of converging, a KEEP_ALL writer blocks, a KEEP_LAST one drops
samples. Hence

    a cell cannot complete when  A * R_pub > T_OS->Link                         (C1)

with A the wire bytes per published payload byte (model/wire_traffic.py: first copies, repairs,
repeats, control, headers, k subscribers' copies) and R_pub = r u (Eq. 1). Its figure A
is then no steady state, and ``completion`` returns infinity and the reason instead.
A counts the control datagrams of both directions against the forward link (under 1 % of
A for every profile linklab models), so C1 can only err within that 1 % of the link.

Paper 000's own Eq. 4 (R_DDS/R_pub = 1/(1 - p^2 (1 - q))) stays finite for every q > 0:
it repairs a lost message at most once per round and never again, so it cannot tell a
stream that completes from one that does not (Eq. 3 converges whenever p^2 (1 - q) < 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from linklab.model.rates import publish_rate_bytes
from linklab.units import format_bitrate, format_percent

CANNOT_COMPLETE = "cannot complete"


@dataclass(frozen=True)
class Completion:
    amplification: float  # A, or math.inf when the cell cannot complete (C1)
    reason: str | None  # why it cannot complete ("cannot complete: ..."); None if it can
    wire_bits_per_s: float  # A * R_pub * 8, what the steady state would put on the link
    link_bits_per_s: float  # T_OS->Link

    @property
    def completes(self) -> bool:
        return self.reason is None


def wire_bits_per_s(amplification: float, payload_bytes: float, rate_hz: float) -> float:
    """A * R_pub in bit/s (Eq. 1 times the wire model's bytes per payload byte)."""
    return amplification * publish_rate_bytes(rate_hz, payload_bytes) * 8.0


def steady(amplification: float, payload_bytes: float, rate_hz: float,
           link_bits_per_s: float) -> bool:
    """C1 does not hold: the link carries the figure's wire rate (or there is no figure)."""
    if not math.isfinite(amplification):
        return math.isnan(amplification)
    return wire_bits_per_s(amplification, payload_bytes, rate_hz) <= link_bits_per_s


def completion(amplification: float, payload_bytes: int, rate_hz: float,
               link_bits_per_s: float, per: float, sample_packets: int,
               repair_packets: int) -> Completion:
    """The wire figure A of a cell, or infinity and the reason when C1 holds.

    ``sample_packets``: IP packets of a sample's first copies (P(sample) = p^n without a
    repair); ``repair_packets``: IP packets of one repair datagram (model/wire_traffic.py)."""
    wire = wire_bits_per_s(amplification, payload_bytes, rate_hz) \
        if math.isfinite(amplification) else amplification
    if steady(amplification, payload_bytes, rate_hz, link_bits_per_s):
        return Completion(amplification, None, wire, link_bits_per_s)
    return Completion(math.inf, reason(per, sample_packets, repair_packets, wire,
                                       link_bits_per_s), wire, link_bits_per_s)


def reason(per: float, sample_packets: int, repair_packets: int, wire_bits: float,
           link_bits_per_s: float) -> str:
    """"cannot complete: P(sample) = 3e-18 at PER 20 % with 181 IP packets; ..." (C1)."""
    p = 1.0 - per
    needs = (f"needs {format_bitrate(wire_bits)} on a {format_bitrate(link_bits_per_s)} "
             "link (000 Eq. 2)")
    if per <= 0:
        return f"{CANNOT_COMPLETE}: the stream with its headers {needs}"
    text = (f"{CANNOT_COMPLETE}: P(sample) = {p ** sample_packets:.1g} at PER "
            f"{format_percent(per)} with {sample_packets} IP packets")
    if 1 < repair_packets != sample_packets:
        text += (f"; a lost fragment is resent as {repair_packets} packets, all arriving "
                 f"with P = {p ** repair_packets:.2g}")
    return f"{text}: repairing every loss {needs}"
