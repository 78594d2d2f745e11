"""Why each setting, what it changes, and whether the topic fits the link.

The paper's three failure causes (000_10b8b18b6f5db8a8.txt, section IV):
(1) IP fragmentation, (2) retransmission timing, (3) buffer burst after an outage.
"Before" is Fast DDS's default (65500 B messages, heartbeat every 3 s, the ROS 2
HistoryCache of 400 the paper measured in Fig. 7); "after" is the tuned profile.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from linklab.model.cpu import WRITER_CPU_UTILIZATION
from linklab.model.history import PAPER_DEFAULT_HISTORY, outage_burst_bytes
from linklab.model.overhead import wire_cost
from linklab.model.scenario import ModelInput, ModelResult, evaluate
from linklab.tune.cpu import CpuPlan
from linklab.tune.cpu import plan as cpu_plan
from linklab.tune.cpu import summary as cpu_summary
from linklab.tune.inputs import PAPER_CONDITIONS, TuningInput
from linklab.tune.predict import Prediction, default_profile, predict_wire, tuned_profile
from linklab.tune.settings import (
    PACING_SHARE,
    TunedSettings,
    competitors_per_core,
    tolerated_lateness_s,
)
from linklab.units import format_bitrate, format_duration, format_percent, format_size

CAUSES = {
    1: "cause 1, IP fragmentation (000 IV-C)",
    2: "cause 2, retransmission timing (000 IV-D)",
    3: "cause 3, buffer burst after an outage (000 IV-E)",
    4: "the link outage itself: participants drop each other (000 IV-E, V-D)",
    5: "recovery after a stall (measured, docs/RESULTS.md: the 512 KiB collapse)",
}
VERDICT_ORDER = ("feasible", "marginal", "fails", "infeasible")


@dataclass(frozen=True)
class SettingReason:
    setting: str
    value: str
    cause: str
    reason: str


@dataclass(frozen=True)
class Condition:
    """One packet error rate, before and after tuning; ``wire``: model.wire_traffic's prediction
    of interface bytes per payload byte for default/tuned Fast DDS and Cyclone DDS."""

    per: float
    before: ModelResult
    after: ModelResult
    wire: dict[str, Prediction] = field(default_factory=dict)

    def to_dict(self) -> dict:
        def pick(r: ModelResult) -> dict:
            return {
                "n_ip": r.n_ip, "q": r.q, "amplification": r.amplification,
                "r_dds_bits_per_s": r.r_dds_bytes_per_s * 8, "burst_bytes": r.burst_bytes,
                "burst_bits": r.burst_bytes * 8, "repair_delay_s": r.repair_delay_s,
                "wire_rate_bits_per_s": r.wire_rate_bits_per_s, "verdict": r.verdict,
                "reasons": r.reasons,
            }
        return {"per": self.per, "before": pick(self.before), "after": pick(self.after),
                "wire": {k: v.to_dict() for k, v in self.wire.items()}}


@dataclass(frozen=True)
class Explanation:
    verdict: str  # feasible | marginal | fails | infeasible
    summary: str
    settings: list[SettingReason]
    conditions: list[Condition]
    outage_burst_before_bytes: float
    outage_burst_after_bytes: float
    max_rate_hz: float  # largest rate with R_pub <= T*omega at this payload
    max_payload_bytes: int  # largest payload with R_pub <= T*omega at this rate
    notes: list[str] = field(default_factory=list)
    cpu: CpuPlan | None = None  # the writer's CPU against a declared share (tune/cpu.py)

    def to_dict(self) -> dict:
        return {
            "verdict": self.verdict,
            "summary": self.summary,
            "settings": [asdict(s) for s in self.settings],
            "conditions": [c.to_dict() for c in self.conditions],
            "outage_burst_before_bytes": self.outage_burst_before_bytes,
            "outage_burst_after_bytes": self.outage_burst_after_bytes,
            "max_rate_hz": self.max_rate_hz,
            "max_payload_bytes": self.max_payload_bytes,
            "notes": self.notes,
            "cpu": None if self.cpu is None else self.cpu.to_dict(),
        }


def model_input(t: TuningInput, per: float, **settings: float) -> ModelInput:
    """The model's input for the topic and link at PER; ``settings``: the Fast DDS values
    that differ from its defaults (none: the defaults)."""
    return ModelInput(rate_hz=t.rate_hz, payload_bytes=t.payload_bytes,
                      link_bits_per_s=t.link_bits_per_s, per=per, mtu=t.mtu,
                      utilization=t.utilization, subscribers=t.subscribers,
                      overlay=t.overlay, **settings)


def model_before(t: TuningInput, per: float) -> ModelResult:
    return evaluate(model_input(t, per))


def model_after(t: TuningInput, s: TunedSettings, per: float) -> ModelResult:
    return evaluate(model_input(t, per, max_message_size=s.max_message_size,
                                heartbeat_hz=s.heartbeat_hz))


def conditions_for(t: TuningInput) -> tuple[float, ...]:
    return (t.per,) if t.per is not None else PAPER_CONDITIONS


WIRE_KEYS = ("fastdds default", "fastdds optimized", "cyclonedds default",
             "cyclonedds optimized")


def wire_predictions(t: TuningInput, s: TunedSettings, per: float) -> dict[str, Prediction]:
    """model.wire_traffic for the defaults and the tuned profiles at one packet error rate."""
    out = {}
    for key in WIRE_KEYS:
        middleware, name = key.split()
        profile = tuned_profile(middleware, s) if name == "optimized" else \
            default_profile(middleware)
        out[key] = predict_wire(profile, name, t.payload_bytes, t.rate_hz, per,
                                t.link_bits_per_s, t.mtu)
    return out


def cyclone_round_s(t: TuningInput, s: TunedSettings) -> float:
    """One Cyclone repair round: the loop, or a repair's round trip and sending time, and
    the scheduler's wake-up of its timer on the CPU declared (model.cpu: an idle one's when
    none is; measured: at 4 CPU-bound competitors per core the 3 ms loop turned every
    ~7.5 ms and 3 of 10 trials of 512 KiB at 30 Hz fell below 29 Hz)."""
    fragments = math.ceil(t.payload_bytes / s.cyclone_fragment_size)
    sending = s.sizing_per * fragments * (s.max_message_size + 42) * 8 / t.link_bits_per_s
    return max(s.cyclone_heartbeat_s, 2 * t.delay_s + sending) + s.wakeup_lateness_s


def cyclone_capacity_hz(t: TuningInput, s: TunedSettings, conditions: list[Condition]) -> float:
    """Samples per second Cyclone's one-sample-per-NACK repair can complete (R3)."""
    rounds = first_wire_rounds(conditions, s)
    if not rounds or math.isnan(rounds) or s.sizing_per == 0:
        return math.inf
    return 1.0 / (rounds * cyclone_round_s(t, s))


def first_wire_rounds(conditions: list[Condition], s: TunedSettings) -> float:
    """E[rounds] of the condition the settings were sized for (Cyclone's tuned layout)."""
    for c in conditions:
        if c.per == s.sizing_per and "cyclonedds optimized" in c.wire:
            return c.wire["cyclonedds optimized"].repair_rounds
    return float("nan")


def live_wire_reasons(t: TuningInput, s: TunedSettings, conditions: list[Condition]) -> list[str]:
    """The conditions at which the tuned stream with repairs and headers (model/wire_traffic.py)
    needs more than T*omega."""
    wire_reasons = []
    for c in conditions:
        tuned_wire = c.wire.get("fastdds optimized")
        if tuned_wire is None:
            continue
        live = s.r_pub_bytes_per_s * t.subscribers * tuned_wire.amplification
        if live > s.budget_bytes_per_s:
            wire_reasons.append(
                f"at PER {format_percent(c.per)} the live stream with repairs and headers "
                f"needs {format_bitrate(live * 8)} (model/wire_traffic.py, x"
                f"{tuned_wire.amplification:.3g}), more than T*omega")
    return wire_reasons


def transport_reasons(t: TuningInput, s: TunedSettings,
                      conditions: list[Condition]) -> list[SettingReason]:
    """Why the message size, the transports and the repair timing (causes 1 and 2)."""
    first = conditions[0]
    return [
        SettingReason(
            "maxMessageSize", f"{s.max_message_size} B", CAUSES[1],
            f"MTU {t.mtu} - IPv4 20 - UDP 8 - overlay {t.overlay}: every RTPS message is one "
            f"IP packet, N_IP {first.before.n_ip} -> {first.after.n_ip}, so q = p^N_IP rises "
            f"from {first.before.q:.3g} to {first.after.q:.3g} at PER {format_percent(first.per)}"
            + (f"; and the kernel no longer holds "
               f"{format_size(first.before.reassembly_held_bytes)} of incomplete datagrams "
               f"(limit 4 MiB, above it all fragmented messages drop)"
               if first.before.reassembly_held_bytes > 0 else "")),
        SettingReason(
            "useBuiltinTransports", "false", CAUSES[1],
            "the builtin UDP transport (65500 B messages) and shared memory are off, so all "
            "traffic takes the tuned transport (nodes on one host then also talk over UDP)"),
        SettingReason(
            "heartbeatPeriod", format_duration(s.heartbeat_period_s), CAUSES[2],
            f"n = 2r = {s.heartbeat_hz:g} Hz instead of 1/3 Hz: lost fragments are repaired "
            f"within a publish interval and the per-round burst B_DDS shrinks (Eq. 5); Cyclone: "
            f"see the next line"),
        SettingReason(
            "Cyclone HeartbeatInterval / NackDelay",
            f"{format_duration(s.cyclone_heartbeat_s)} / "
            f"{format_duration(s.cyclone_nack_delay_ns / 1e9)}", CAUSES[2],
            f"Cyclone NACKs the fragments of one sample per AckNack, so its loop must turn "
            f"r x E[rounds] times a second: a {format_size(t.payload_bytes)} sample needs "
            f"{first_wire_rounds(conditions, s):.3g} rounds at PER "
            f"{format_percent(s.sizing_per)} (model/repair.py R3, x2 margin; at most 1/(2r)); "
            "NackDelay also covers a repair's round trip"),
    ]


def buffer_reasons(t: TuningInput, s: TunedSettings) -> list[SettingReason]:
    """Why the history, the reader's limits, no piggybacked heartbeats and the pacing
    (causes 3 and 5: bursts and the recovery after a stall)."""
    k = t.subscribers
    tolerated = tolerated_lateness_s(s.pacing_bytes_per_s, s.pacing_demand_bytes_per_s,
                                     s.pacing_period_ms / 1000)
    return [
        SettingReason(
            "history KEEP_LAST depth / writer resource limits", f"{s.history_depth} samples",
            CAUSES[3],
            f"Eq. 6: N_HC = ceil(T*omega/u) = ceil({format_bitrate(t.link_bits_per_s)} x "
            f"{t.utilization:g} / {format_size(t.payload_bytes)}"
            + (f" / {k} subscribers" if k > 1 else "") +
            f") = {s.history.eq6_depth}; {s.history.reason}. After an outage at most "
            f"{format_size(s.history.burst_bytes)} leave at once; Cyclone WhcHigh = "
            f"{format_size(s.cyclone_whc_high_bytes)}"),
        SettingReason(
            "reader resource limits (Fast DDS max_samples; Cyclone DefragReliableMaxSamples, "
            "MaxQueuedRexmitBytes/Messages)", f"{s.reader_max_samples} samples", CAUSES[5],
            "2 N_HC + 1: after a stall (an outage, or a reader that discovers the writer late) "
            "the writer owes its whole history; with the reader's limit at N_HC, Fast DDS "
            "rejects completed samples (held + missing >= max_samples) and the stream never "
            "recovers; Cyclone's defaults (16 samples in defragmentation, 512 kB of "
            "retransmits) stall it the same way"),
        SettingReason(
            "disable_heartbeat_piggyback", "true", CAUSES[5],
            "Fast DDS appends a HEARTBEAT to every fragment once the writer's history is full "
            "(tens of thousands a second); each makes the reader ask again for every missing "
            "fragment, including those still queued: only the periodic n = 2r stay"),
        SettingReason(
            "throughputController", f"{format_bitrate(s.pacing_bytes_per_s * 8)} "
            f"({s.pacing_bytes_per_period} B / {s.pacing_period_ms} ms)", CAUSES[5],
            f"{PACING_SHARE:.0%} of --link: a burst (a sample's fragments, a stall's "
            "backlog) never leaves faster than the link drains, so the link's queue does not "
            "overflow and repairs are not repeated while queued; give --link the throughput "
            "you measure, not the PHY rate. The period: each starts late by the scheduler's "
            f"wake-up ({format_duration(s.wakeup_lateness_s)} on average for "
            f"{competitors_text(t)}, model/cpu.py), so it is long enough that the late ceiling "
            f"still carries the stream's {format_bitrate(s.pacing_demand_bytes_per_s * 8)} "
            f"with 10 % to spare (it tolerates {format_duration(tolerated)} per period)"),
    ]


def session_reasons(t: TuningInput, s: TunedSettings) -> list[SettingReason]:
    """Why the lease, the reliability, the publish mode and the socket buffers."""
    messages_per_sample = wire_cost(t.payload_bytes, s.max_message_size, mtu=t.mtu,
                                    qos="reliable", overlay=t.overlay, mode="ip").rtps_messages
    return [
        SettingReason(
            "participant lease / announcements",
            f"{format_duration(s.lease_duration_s)} / {format_duration(s.lease_announcement_s)}",
            CAUSES[4],
            f"outages up to {format_duration(t.outage_tolerance_s)} (--outage-tolerance) "
            "keep the session: lease = outage + 2 announcement periods (the last announcement "
            "before the cut may be a period old, the first after it may be lost), announcements "
            "every lease/6. Fast DDS's default 20 s lease (Cyclone: 10 s) ends with a 20 s "
            "outage: the peers forget each other, the reader comes back as a new VOLATILE "
            "reader and the N_HC samples kept during the outage are never resent. Cost: a "
            "crashed peer is noticed only after the lease; Cyclone: LeaseDuration, "
            "SPDPInterval"),
        SettingReason(
            "reliability", s.reliability, "strict delivery (000 IV-A)",
            "every sample is repaired by retransmission while the link is up"),
        SettingReason(
            "publishMode", s.publish_mode, CAUSES[2],
            "publish() returns at once; a background thread sends the "
            f"{messages_per_sample} RTPS messages of each sample and their repairs"),
        SettingReason(
            "socket buffers", format_size(s.socket_buffer_bytes), CAUSES[3],
            "room for two worst-case bursts after tuning; the kernel clamps larger requests to "
            "net.core.rmem_max / wmem_max"),
    ]


def summary_text(t: TuningInput, s: TunedSettings, conditions: list[Condition], verdict: str,
                 reasons: list[str]) -> str:
    """The verdict's one paragraph: R_pub against T*omega, and why (REASONS)."""
    k = t.subscribers
    budget = s.budget_bytes_per_s
    if verdict == "infeasible":
        return (
            f"INFEASIBLE: R_pub = {format_bitrate(s.r_pub_bytes_per_s * 8 * k)} "
            f"({t.rate_hz:g} Hz x {format_size(t.payload_bytes)}"
            + (f" x {k} subscribers" if k > 1 else "") +
            f") exceeds the DDS share of the link T*omega = {format_bitrate(budget * 8)}. "
            "No DDS setting fixes that. "
            f"At {format_size(t.payload_bytes)} the largest rate that fits is "
            f"{math.floor(budget / (t.payload_bytes * k) * 10) / 10:g} Hz; at {t.rate_hz:g} Hz "
            f"the largest payload is {format_size(int(budget / (t.rate_hz * k)))}.")
    worst_wire = max((c.wire["fastdds optimized"].amplification for c in conditions
                      if "fastdds optimized" in c.wire), default=1.0)
    return (
        f"{verdict.upper()}: R_pub = {format_bitrate(s.r_pub_bytes_per_s * 8 * k)} uses "
        f"{s.r_pub_bytes_per_s * k / budget:.0%} of T*omega = {format_bitrate(budget * 8)}"
        f", {s.r_pub_bytes_per_s * k * worst_wire / budget:.0%} with repairs and headers "
        f"(model/wire_traffic.py, PER {format_percent(max(c.per for c in conditions))})"
        + (f"; {'; '.join(reasons)}" if reasons else "") + ".")


def topic_notes(t: TuningInput, s: TunedSettings, worst: ModelResult) -> list[str]:
    """Notes on the fan-out to several subscribers, the overlay and a history of one."""
    k = t.subscribers
    notes: list[str] = []
    if k > 1:
        notes.append(
            f"{k} unicast subscribers: each sample is sent {k} times in turn (002 Table III); "
            f"the last copy leaves {format_duration(worst.fanout_time_s)} after the first "
            f"starts (publish interval {format_duration(1 / t.rate_hz)}).")
    if t.overlay == "wireguard":
        notes.append("wireguard counts 60 B per packet (32 B header+tag, 001 V-A, plus outer "
                     "IPv4+UDP); if your wg interface has MTU 1420, use --mtu 1420 --overlay none.")
    if s.history_depth == 1:
        notes.append("N_HC = 1: one sample is already about a second of the DDS share; "
                     "outage recovery will lose samples.")
    return notes


def cpu_note(cpu: CpuPlan) -> str:
    """What the writer and the reader need of the CPU (tune/cpu.py)."""
    return (
        f"CPU ({cpu.how}): the writer needs "
        + ", ".join(f"{name} {cpu.writer_cores[m]:.3g} cores ({cpu.per_sample_ms[m]:.3g} "
                    f"ms per sample)" for m, name in (("fastdds", "Fast DDS"),
                                                      ("cyclonedds", "Cyclone DDS")))
        + f" of the {cpu.share_cores:.3g} it gets (it plans on {WRITER_CPU_UTILIZATION:.0%}: "
        + f"{cpu.usable_cores:.3g}); the reader "
        + ", ".join(f"{cpu.reader_cores[m]:.3g}" for m in ("fastdds", "cyclonedds"))
        + " cores on its machine (measured per sample by the probes, model/cpu.py).")


def cyclone_note(t: TuningInput, s: TunedSettings, conditions: list[Condition],
                 cyclone_hz: float) -> str:
    """Why Cyclone DDS cannot keep up with the topic (one sample repaired per NACK)."""
    return (
        f"Cyclone DDS repairs one sample per NACK (model/repair.py R3): with "
        f"{first_wire_rounds(conditions, s):.3g} rounds per sample of at least "
        f"{format_duration(cyclone_round_s(t, s))} (the loop, or a repair's round trip "
        f"2 x {format_duration(t.delay_s)} + sending it) it completes at most "
        f"{cyclone_hz:.3g} samples/s, fewer than {t.rate_hz:g} Hz: use Fast DDS, a smaller "
        "payload or a lower rate for this topic.")


def explain(t: TuningInput, s: TunedSettings, conditions: list[Condition]) -> Explanation:
    k = t.subscribers
    budget = s.budget_bytes_per_s
    worst = max((c.after for c in conditions), key=lambda r: VERDICT_ORDER.index(r.verdict))
    verdict = worst.verdict
    wire_reasons = live_wire_reasons(t, s, conditions)
    if wire_reasons and verdict == "feasible":
        verdict = "marginal"
    settings = transport_reasons(t, s, conditions) + buffer_reasons(t, s) + \
        session_reasons(t, s)
    summary = summary_text(t, s, conditions, verdict, worst.reasons + wire_reasons)
    notes = topic_notes(t, s, worst)
    cpu = cpu_plan(t, {m: c.wire[f"{m} optimized"].amplification for c in conditions
                        if c.per == s.sizing_per for m in ("fastdds", "cyclonedds")},
                   {"fastdds": math.inf, "cyclonedds": cyclone_capacity_hz(t, s, conditions)})
    short = None if cpu is None else cpu_summary(t, cpu)
    if short and not any(cpu.fits(m) for m in t.middlewares):
        verdict = "infeasible"
        summary = f"INFEASIBLE on this CPU: {short}."
    elif short:
        summary += f" CPU: {short}."
    if cpu is not None:
        notes.append(cpu_note(cpu))
    cyclone_hz = cyclone_capacity_hz(t, s, conditions)
    if cyclone_hz < t.rate_hz:
        notes.append(cyclone_note(t, s, conditions, cyclone_hz))
        if cpu is None and "cyclonedds" in t.middlewares:  # else the CPU verdict says it
            summary += (f" Cyclone DDS cannot keep up here ({cyclone_hz:.3g} samples/s at "
                        "most, see the note).")
    return Explanation(
        verdict=verdict,
        summary=summary,
        settings=settings,
        conditions=conditions,
        outage_burst_before_bytes=outage_burst_bytes(PAPER_DEFAULT_HISTORY, t.payload_bytes, k),
        outage_burst_after_bytes=outage_burst_bytes(s.history_depth, t.payload_bytes, k),
        max_rate_hz=budget / (t.payload_bytes * k),
        max_payload_bytes=int(budget / (t.rate_hz * k)),
        notes=notes,
        cpu=cpu,
    )


def competitors_text(t: TuningInput) -> str:
    """The contention the pacing is made for, in words."""
    if t.cpu_competitors is None and t.cpu_share is None:
        return "an idle CPU (none declared: --cpu-load)"
    return f"{competitors_per_core(t):.3g} CPU-bound tasks per core"
