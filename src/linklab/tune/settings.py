"""The optimization framework of 000 (section IV-F) as numbers: TuningInput -> TunedSettings.

Beyond the paper's three steps, measured on this bed (docs/RESULTS.md, "512 KiB at 30 Hz
over PER 20 %: the collapse"), each with the mechanism it removes:

* reader resource limits 2*N_HC + 1 (Fast DDS data_reader max_samples; Cyclone
  Internal/DefragReliableMaxSamples, MaxQueuedRexmitBytes/Messages): after a stall (an
  outage, or a reader that discovers the writer seconds after the writer discovered it)
  the writer owes up to N_HC samples. With the reader's limit equal to N_HC, Fast DDS 2.9
  rejects a completed sample when the samples it holds plus the missing ones before it
  reach max_samples (DataReaderHistory::received_change, REJECTED_BY_SAMPLES_LIMIT); the
  writer sends it again, whole, and the stream never recovers (measured: 47 and 32 owed
  samples never recovered, 15-24 did; with 2*N_HC + 1 all recovered within 2 s).
* Fast DDS disable_heartbeat_piggyback: a writer whose history is full appends a
  HEARTBEAT to every DATA_FRAG (StatefulWriter::send_heartbeat_piggyback_nts_), 12-40 k
  a second instead of n = 2r; each makes the reader NackFrag every missing fragment,
  including those still queued, so one stall multiplies into a repair storm.
* writer pacing at 0.9*T (Fast DDS throughputController): a burst (a stall's backlog,
  one sample's 400 fragments) never leaves faster than the link drains, so the link's
  queue does not overflow (measured: 35 k-250 k queue drops without, none with). Its
  period is long enough that periods starting late by the scheduler's wake-up on the CPU
  the user declares still carry the stream (pacing_period_s; model.cpu): at 3 CPU-bound
  competitors per core 5 ms periods delivered every sample in 1 of 10 trials, 10 ms in 4
  of 4; at 4 per core no period holds: the writer's CPU runs out, which the tuner's CPU
  verdict says (tune/cpu.py; docs/RESULTS.md "A busy robot").
* Cyclone HeartbeatInterval/NackDelay from model.repair (R3): Cyclone NACKs one sample
  per AckNack, so its repair loop must turn r*E[rounds] times a second, not 2r.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from linklab.model.cpu import competitors_per_core_for_share, sched_lateness_s
from linklab.model.fragmentation import max_message_size_for_mtu
from linklab.model.overhead import OVERLAY_OVERHEAD_BYTES
from linklab.model.rates import bits_to_bytes, dds_budget, publish_rate_bytes
from linklab.model.repair import serial_repair_interval
from linklab.model.retransmission import optimal_heartbeat_rate
from linklab.model.wire_traffic import cyclone_profile, fastdds_profile, predict
from linklab.tune.history import HistoryPlan, plan_history, repair_floor
from linklab.tune.inputs import PAPER_CONDITIONS, TuningInput

MIB = 1024 * 1024
# Cyclone DDS: RTPS header, INFO_TS, INFO_DST and DATA_FRAG header fit in 128 B, so its
# default FragmentSize 1344 B = 1472 B - 128 B. Keep that margin for any message size.
CYCLONE_FRAGMENT_MARGIN = 128
# Participant liveliness (000 IV-E / V-D, the link outage): lease L = D + 2A for an outage
# tolerance D and announcement period A = L/6, i.e. L = 1.5 D, A = D/4. The last
# announcement before the cut may be up to A old and the first one after it may be lost,
# so L covers D plus two periods; L/6 keeps Fast DDS's default ratio (20 s / 3 s) and lets a
# running link lose 5 announcements in a row (0.2^5 = 0.03 % at PER 20 %) before a drop.
LEASE_ANNOUNCEMENTS = 6
# The writer's pacing ceiling: this share of the link's rate T (the measured throughput,
# not a PHY rate). 10 % stays for the reverse path's AckNacks, discovery and the link's
# own rate jitter; bursts below T never overflow the link's queue.
PACING_SHARE = 0.9
PACING_PERIOD_MS = 5  # the shortest throughputController period (< one heartbeat period)
# The controller sends a period's bytes, then its thread sleeps to the next period; on a
# busy CPU each period starts late by the scheduler's wake-up delay L (model.cpu), so its
# ceiling falls to rate x P / (P + L). The period is chosen so the late ceiling still
# carries the stream with PACING_HEADROOM to spare, up to what the link's queue holds (the
# emulated links' 50 ms at their rate, link/impairments/rate.py RateStage). Measured at
# 512 KiB / 30 Hz
# over PER 20 %, 3 CPU-bound competitors per core: 5 ms periods (the idle CPU's) delivered
# every sample in 1 of 10 trials, the 10 ms this gives in 4 of 4 (docs/RESULTS.md "A busy
# robot"); with no contention declared the period is the idle CPU's.
PACING_HEADROOM = 1.1
PACING_MAX_PERIOD_S = 0.05
# Cyclone's heartbeat may not go below this (its HeartbeatInterval 'min' attribute).
CYCLONE_MIN_HEARTBEAT_S = 0.001
# Cyclone 0.10's own limits, kept when the tuned ones would be smaller.
CYCLONE_REXMIT_BYTES_DEFAULT = 512_000
CYCLONE_REXMIT_MESSAGES_DEFAULT = 200
CYCLONE_DEFRAG_DEFAULT = 16


class InSeconds:
    """A read-only attribute NAME_s: the field NAME_ns of the same object, in seconds."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.field = name.removesuffix("_s") + "_ns"

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        return self if obj is None else getattr(obj, self.field) / 1e9


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
    lease_duration_ns: int  # participant liveliness lease L = 1.5 * outage tolerance
    lease_announcement_ns: int  # participant announcement period A = L / 6
    r_pub_bytes_per_s: float
    budget_bytes_per_s: float  # T * omega
    reader_max_samples: int  # 2 * N_HC + 1: room for every owed sample (module docstring)
    heartbeat_piggyback: bool  # Fast DDS: False -> disable_heartbeat_piggyback
    pacing_bytes_per_s: float  # Fast DDS writer ceiling PACING_SHARE * T
    pacing_period_ms: int
    pacing_bytes_per_period: int
    pacing_demand_bytes_per_s: float  # what the stream puts through it (R_pub x the wire)
    # the scheduler's wake-up delay on the declared CPU (model.cpu; an idle CPU's when
    # none is declared): what each pacing period and Cyclone's loop timer wake late by
    wakeup_lateness_s: float
    cyclone_heartbeat_ns: int  # Cyclone HeartbeatInterval (model.repair R3, <= 1/(2r))
    cyclone_nack_delay_ns: int  # Cyclone NackDelay: the loop, or a repair's round trip
    cyclone_defrag_max_samples: int
    cyclone_rexmit_bytes: int
    cyclone_rexmit_messages: int
    sizing_per: float  # the packet error rate the loss-dependent values are sized for
    history: HistoryPlan

    heartbeat_period_s = InSeconds()
    lease_duration_s = InSeconds()
    lease_announcement_s = InSeconds()
    cyclone_heartbeat_s = InSeconds()

    def to_dict(self) -> dict:
        data = asdict(self)
        data.update({name: getattr(self, name) for name in SECONDS_VIEWS})
        return data


# the views in seconds to_dict adds, in its order
SECONDS_VIEWS = ("heartbeat_period_s", "cyclone_heartbeat_s", "lease_duration_s",
                 "lease_announcement_s")


def lease_for_outage(outage_tolerance_s: float) -> tuple[int, int]:
    """(lease, announcement period) in ns, whole milliseconds: L = D + 2A, A = L/6."""
    announcement_ms = math.ceil(outage_tolerance_s * 1000 / (LEASE_ANNOUNCEMENTS - 2))
    return LEASE_ANNOUNCEMENTS * announcement_ms * 1_000_000, announcement_ms * 1_000_000


def socket_buffer_size(largest_burst_bytes: float) -> int:
    """Room for two back-to-back bursts, in whole MiB, between 4 MiB and 64 MiB."""
    need = math.ceil(2 * largest_burst_bytes / MIB) * MIB
    return int(min(max(need, 4 * MIB), 64 * MIB))


def pacing(link_bytes_per_s: float, max_message_size: int, subscribers: int = 1,
           demand_bytes_per_s: float = 0.0, lateness_s: float = 0.0
           ) -> tuple[float, int, int]:
    """(bytes/s, period ms, bytes per period) of the writer's ceiling PACING_SHARE * T / k;
    the period grows on slow links so one period holds at least two messages (Fast DDS
    cuts fragments to fit one period), and so that periods starting ``lateness_s`` late
    still carry ``demand_bytes_per_s`` (pacing_period_s).

    Divided by the k unicast subscribers: Fast DDS 2.9's flow controller counts a message's
    bytes once however many readers it is sent to (RTPSMessageGroup counts the message it
    builds), so k readers put k times the configured rate on the wire (measured: a 1 -> 4
    star paced at 0.9 T for one reader overflowed a 50 Mbit/s link, 115 k queue drops)."""
    rate = PACING_SHARE * link_bytes_per_s / subscribers
    period = max(PACING_PERIOD_MS, math.ceil(2 * max_message_size * 1000 / rate),
                 math.ceil(pacing_period_s(rate, demand_bytes_per_s, lateness_s) * 1000))
    return rate, period, max(2 * max_message_size, int(rate * period / 1000))


def pacing_period_s(rate: float, demand: float, lateness_s: float) -> float:
    """The shortest period P whose ceiling still carries ``demand`` with PACING_HEADROOM
    when every period starts ``lateness_s`` late: rate P / (P + L) >= h D, i.e.
    P >= L h D / (rate - h D); at most PACING_MAX_PERIOD_S (also when no period can)."""
    need = PACING_HEADROOM * demand
    if need <= 0 or lateness_s <= 0:
        return 0.0
    if need >= rate:
        return PACING_MAX_PERIOD_S
    return min(PACING_MAX_PERIOD_S, lateness_s * need / (rate - need))


def tolerated_lateness_s(rate: float, demand: float, period_s: float) -> float:
    """The wake-up delay per period a ceiling of ``rate`` every ``period_s`` tolerates
    while carrying ``demand`` with PACING_HEADROOM (inf: no demand; 0: never)."""
    need = PACING_HEADROOM * demand
    if need <= 0:
        return math.inf
    return max(0.0, period_s * (rate - need) / need)


def competitors_per_core(t: TuningInput) -> float:
    """The CPU-bound competitors per core declared (--cpu-load, --cpu-share); 0: none."""
    if t.cpu_competitors is not None:
        return t.cpu_competitors / (t.cpu_cores or 1.0)
    if t.cpu_share is not None:
        return competitors_per_core_for_share(t.cpu_share)
    return 0.0


def sizing_per(t: TuningInput) -> float:
    """The loss the loss-dependent settings are sized for: --per, else the paper's worst."""
    return t.per if t.per is not None else max(PAPER_CONDITIONS)


def cyclone_timing(t: TuningInput, m: int, fragment: int, per: float,
                   link_bytes_per_s: float) -> tuple[int, int]:
    """(HeartbeatInterval, NackDelay) in ns for Cyclone: the loop R3 needs, at most 1/(2r);
    NackDelay also covers a repair's round trip (2 x --delay plus sending the fragments a
    round asks for) so a NACK is not repeated while its repair is on the way."""
    fragments = math.ceil(t.payload_bytes / fragment)
    loop = min(1.0 / optimal_heartbeat_rate(t.rate_hz),
               serial_repair_interval(t.rate_hz, fragments, per))
    loop = max(CYCLONE_MIN_HEARTBEAT_S, loop)
    repair_s = per * fragments * (m + 28) / link_bytes_per_s
    nack = min(1.0 / optimal_heartbeat_rate(t.rate_hz), max(loop, 2 * t.delay_s + repair_s))
    return round(loop * 1e9), round(nack * 1e9)


def compute_settings(t: TuningInput, largest_burst_bytes: float) -> TunedSettings:
    link = bits_to_bytes(t.link_bits_per_s)  # T in bytes per second, as Eq. 6 needs
    m = max_message_size_for_mtu(t.mtu, OVERLAY_OVERHEAD_BYTES[t.overlay])
    n = optimal_heartbeat_rate(t.rate_hz)
    per = sizing_per(t)
    pace_rate, _, _ = pacing(link, m, t.subscribers)
    fastdds = fastdds_profile(m, n, piggyback_bytes=None, paced_bits_per_s=pace_rate * 8)
    live = predict(fastdds, t.payload_bytes, t.rate_hz, per, t.link_bits_per_s, t.mtu)
    # the ceiling counts a message once however many readers get it (pacing's docstring)
    demand = publish_rate_bytes(t.rate_hz, t.payload_bytes) * live.amplification
    lateness = sched_lateness_s(competitors_per_core(t))
    pace_rate, pace_period, pace_bytes = pacing(link, m, t.subscribers, demand, lateness)
    floor = repair_floor(t.rate_hz, live.fragments, per, n)
    plan = plan_history(rate_hz=t.rate_hz, payload_bytes=t.payload_bytes,
                        subscribers=t.subscribers, link_bytes_per_s=link,
                        utilization=t.utilization,
                        live_wire_amplification=live.amplification,
                        outage_tolerance_s=t.outage_tolerance_s,
                        memory_cap_bytes=t.history_memory_bytes, floor_depth=floor,
                        forced_depth=t.history_depth)
    n_hc = plan.depth
    lease_ns, announcement_ns = lease_for_outage(t.outage_tolerance_s)
    fragment = m - CYCLONE_FRAGMENT_MARGIN
    cyc_hb, cyc_nack = cyclone_timing(t, m, fragment, per, link)
    cyc_datagrams = cyclone_profile(m, fragment, 1.0, m).fragments_per_datagram
    messages_per_sample = math.ceil(math.ceil(t.payload_bytes / fragment) / cyc_datagrams)
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
        cyclone_fragment_size=fragment,
        cyclone_whc_high_bytes=n_hc * t.payload_bytes,
        lease_duration_ns=lease_ns,
        lease_announcement_ns=announcement_ns,
        r_pub_bytes_per_s=publish_rate_bytes(t.rate_hz, t.payload_bytes),
        budget_bytes_per_s=dds_budget(link, t.utilization),
        reader_max_samples=2 * n_hc + 1,
        heartbeat_piggyback=False,
        pacing_bytes_per_s=pace_rate,
        pacing_period_ms=pace_period,
        pacing_bytes_per_period=pace_bytes,
        pacing_demand_bytes_per_s=demand,
        wakeup_lateness_s=lateness,
        cyclone_heartbeat_ns=cyc_hb,
        cyclone_nack_delay_ns=cyc_nack,
        cyclone_defrag_max_samples=max(CYCLONE_DEFRAG_DEFAULT, 2 * n_hc + 1),
        cyclone_rexmit_bytes=max(CYCLONE_REXMIT_BYTES_DEFAULT,
                                 n_hc * t.payload_bytes * t.subscribers),
        cyclone_rexmit_messages=max(CYCLONE_REXMIT_MESSAGES_DEFAULT,
                                    n_hc * messages_per_sample * t.subscribers),
        sizing_per=per,
        history=plan,
    )
