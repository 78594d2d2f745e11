"""All model quantities for one topic over one link: the input of ``linklab model``.

``evaluate(ModelInput) -> ModelResult`` strings the per-equation functions of this
package together; every field names the equation it comes from
(000_10b8b18b6f5db8a8.txt unless stated).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from linklab.middleware.families import FASTDDS_DEFAULT_MAX_MESSAGE_SIZE
from linklab.model.completion import completion
from linklab.model.delivery import best_effort_delivery
from linklab.model.fanout import fanout_time
from linklab.model.fragmentation import (
    DEFAULT_MTU,
    Fragmentation,
    ip_packets_per_sample,
    message_success_probability,
    n_ip,
    rtps_messages_per_sample,
)
from linklab.model.history import history_cache_size
from linklab.model.overhead import wire_cost
from linklab.model.rates import bits_to_bytes, dds_budget, max_throughput, publish_rate_bytes
from linklab.model.reassembly import (
    LINUX_IPFRAG_HIGH_THRESH,
    held_reassembly_bytes,
    reassembly_overflows,
)
from linklab.model.repair import expected_rounds
from linklab.model.retransmission import (
    amplification,
    burst_bytes,
    staircase,
    steady_backlog,
    steady_dds_rate,
)
from linklab.model.wire_traffic import (
    fastdds_profile,
    predict,
    repair_datagram_packets,
    sample_ip_packets,
)

FASTDDS_DEFAULT_HEARTBEAT_HZ = 1.0 / 3.0  # Fast DDS heartbeatPeriod 3 s (000, IV-D, Fig. 5)
PAPER_LINK_BITS = 433e6  # 802.11ac, the paper's T_OS->Link (000, V-A)
DEFAULT_UTILIZATION = 0.65  # omega: 0.6-0.7 for an exclusive link (000, IV-E)


@dataclass(frozen=True)
class ModelInput:
    rate_hz: float
    payload_bytes: int
    link_bits_per_s: float = PAPER_LINK_BITS
    per: float = 0.0
    max_message_size: int = FASTDDS_DEFAULT_MAX_MESSAGE_SIZE
    heartbeat_hz: float = FASTDDS_DEFAULT_HEARTBEAT_HZ
    mtu: int = DEFAULT_MTU
    fragmentation: Fragmentation = "paper"
    utilization: float = DEFAULT_UTILIZATION
    subscribers: int = 1
    overlay: str = "none"

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ModelResult:
    inputs: ModelInput
    r_pub_bytes_per_s: float  # Eq. 1
    t_max_bytes_per_s: float  # Eq. 2 (= T_OS->Link)
    dds_budget_bytes_per_s: float  # T * omega (Eq. 6)
    n_rt: int  # IV-C
    n_ip: int  # IV-C
    ip_packets_per_sample: int
    p: float  # 1 - PER
    q: float  # p^N_IP
    staircase: list[int]  # Delta S_1..6
    backlog_bytes_per_round: float  # X, Eq. 3
    r_dds_bytes_per_s: float  # Eq. 4
    amplification: float  # R_DDS / R_pub
    burst_bytes: float  # B_DDS, Eq. 5
    n_hc: int  # Eq. 6
    best_effort_delivery: float  # Table I model
    wire_bytes_per_sample: int  # 001 V-A
    wire_efficiency: float
    wire_rate_bits_per_s: float  # R_DDS scaled by header overhead and subscribers
    link_load: float  # wire rate / T_OS->Link
    fanout_time_s: float  # 002 Table III model
    repair_delay_s: float  # mean time to repair one lost message (derived, see below)
    burst_drain_s: float  # B_DDS / (T * omega)
    reassembly_held_bytes: float  # incomplete IP datagrams the kernel holds (reassembly.py)
    # wire / payload when every loss is repaired (model/wire_traffic.py, Fast DDS datagrams of M),
    # math.inf when the link cannot carry it, and why (model/completion.py, C1)
    wire_amplification: float = float("nan")
    wire_note: str | None = None
    verdict: str = field(default="")
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["inputs"] = self.inputs.to_dict()
        return data


# Table II of 000 marks a run failed when mean latency exceeds 100 publish intervals.
FAILURE_INTERVALS = 100


def repair_delay(heartbeat_hz: float, p: float, q: float) -> float:
    """Mean time until a lost RTPS message is repaired: 1 / (n p^2 q) seconds.

    Derived from the assumptions of Eq. 3 (000, IV-C): a retransmission round repairs
    the message only if Heartbeat and AckNack arrive (p^2) and the resent message
    does (q), so the number of rounds is geometric with mean 1 / (p^2 q), each 1/n s.
    """
    success = p * p * q
    return float("inf") if success <= 0 else 1.0 / (heartbeat_hz * success)


def repairing_wire(m: ModelInput) -> tuple[float, str | None]:
    """Wire bytes per payload byte of a strictly reliable stream (every loss repaired,
    model/wire_traffic.py) sending Fast DDS datagrams of M with heartbeat n, k copies; math.inf
    and "cannot complete: ..." when the link cannot carry it (model/completion.py, C1).
    Piggyback Heartbeats are left out (they add in-flight repeats of a few % for the
    shipped default; tune/predict.py has the measured spacing)."""
    profile = fastdds_profile(m.max_message_size, m.heartbeat_hz, piggyback_bytes=None)
    fragments = max(1, -(-(m.payload_bytes + profile.serialized_extra)
                         // profile.fragment_bytes))
    rounds = expected_rounds(fragments, m.per) if m.per > 0 else 0.0
    wire = predict(profile, m.payload_bytes, m.rate_hz, m.per, m.link_bits_per_s, m.mtu,
                   repair_rounds=rounds)
    verdict = completion(m.subscribers * wire.amplification, m.payload_bytes, m.rate_hz,
                         m.link_bits_per_s, m.per,
                         sample_ip_packets(profile, m.payload_bytes, m.mtu),
                         repair_datagram_packets(profile, m.payload_bytes, m.mtu))
    return verdict.amplification, verdict.reason


def judge(m: ModelInput, r_pub: float, budget: float, wire_rate_bits: float,
          repair_s: float, drain_s: float, held_bytes: float = 0.0,
          wire_note: str | None = None) -> tuple[str, list[str]]:
    """Verdict: infeasible (R_pub > T*omega), fails, marginal or feasible, with reasons.
    ``wire_note``: why a strictly reliable stream cannot complete (``repairing_wire``)."""
    reasons: list[str] = []
    interval = 1.0 / m.rate_hz
    if r_pub * m.subscribers > budget:
        reasons.append("R_pub exceeds the DDS share of the link T*omega (Eq. 1 vs Eq. 6)")
        return "infeasible", reasons
    if m.per > 0 and repair_s > FAILURE_INTERVALS * interval:
        reasons.append(f"a lost message takes {repair_s:.3g} s to repair, more than "
                       f"{FAILURE_INTERVALS} publish intervals (Table II's failure mark)")
    if reassembly_overflows(held_bytes):
        reasons.append(f"incomplete IP datagrams ({held_bytes / 2**20:.3g} MiB held for "
                       f"reassembly) overflow the kernel's {LINUX_IPFRAG_HIGH_THRESH >> 20} MiB "
                       "net.ipv4.ipfrag_high_thresh: fragmented messages are dropped wholesale")
    if wire_note:
        reasons.append(f"{wire_note} (strictly reliable: model/wire_traffic.py repairs every loss)")
    if reasons:
        return "fails", reasons
    if wire_rate_bits / 8.0 > budget:
        reasons.append("R_DDS with headers exceeds T*omega: retransmissions overrun the budget")
    if drain_s > interval:
        reasons.append(f"one burst B_DDS needs {drain_s * 1e3:.3g} ms of the DDS share, longer "
                       f"than the {interval * 1e3:.3g} ms publish interval")
    return ("marginal" if reasons else "feasible"), reasons


def evaluate(m: ModelInput) -> ModelResult:
    r_pub = publish_rate_bytes(m.rate_hz, m.payload_bytes)  # Eq. 1
    link = bits_to_bytes(m.link_bits_per_s)
    t_max = max_throughput(os_to_link=link)  # Eq. 2
    budget = dds_budget(link, m.utilization)
    n_rt = rtps_messages_per_sample(m.payload_bytes, m.max_message_size)
    nip = n_ip(m.payload_bytes, m.max_message_size, m.mtu, m.fragmentation)
    p = 1.0 - m.per
    q = message_success_probability(p, nip)
    x = steady_backlog(r_pub, m.heartbeat_hz, p, q)  # Eq. 3
    r_dds = steady_dds_rate(r_pub, p, q)  # Eq. 4
    amp = amplification(p, q)
    burst = burst_bytes(m.payload_bytes, m.rate_hz, m.heartbeat_hz, p, q)  # Eq. 5
    n_hc = history_cache_size(link, m.utilization, m.payload_bytes, m.subscribers)  # Eq. 6
    cost = wire_cost(m.payload_bytes, m.max_message_size, mtu=m.mtu, qos="reliable",
                     overlay=m.overlay, mode=m.fragmentation)
    wire_rate = r_dds / cost.efficiency * m.subscribers * 8.0
    load = wire_rate / m.link_bits_per_s
    repair = repair_delay(m.heartbeat_hz, p, q)
    drain = burst / budget
    # every RTPS message of every sample is one UDP datagram of up to min(u, M) bytes
    held = held_reassembly_bytes(m.rate_hz * n_rt, min(m.payload_bytes, m.max_message_size),
                                 nip, p)
    wire_amp, wire_note = repairing_wire(m)
    verdict, reasons = judge(m, r_pub, budget, wire_rate, repair, drain, held, wire_note)
    return ModelResult(
        inputs=m,
        r_pub_bytes_per_s=r_pub,
        t_max_bytes_per_s=t_max,
        dds_budget_bytes_per_s=budget,
        n_rt=n_rt,
        n_ip=nip,
        ip_packets_per_sample=ip_packets_per_sample(m.payload_bytes, m.max_message_size,
                                                    m.mtu, m.fragmentation),
        p=p,
        q=q,
        staircase=staircase(m.rate_hz, m.heartbeat_hz, 6),
        backlog_bytes_per_round=x,
        r_dds_bytes_per_s=r_dds,
        amplification=amp,
        burst_bytes=burst,
        n_hc=n_hc,
        best_effort_delivery=best_effort_delivery(m.payload_bytes, m.per, m.max_message_size,
                                                  mtu=m.mtu),
        wire_bytes_per_sample=cost.wire_bytes,
        wire_efficiency=cost.efficiency,
        wire_rate_bits_per_s=wire_rate,
        link_load=load,
        fanout_time_s=fanout_time(m.subscribers, cost.wire_bytes, m.link_bits_per_s),
        repair_delay_s=repair,
        burst_drain_s=drain,
        reassembly_held_bytes=held,
        wire_amplification=wire_amp,
        wire_note=wire_note,
        verdict=verdict,
        reasons=reasons,
    )
