"""The latency replay's input and answer (model/latency.py): what a stream, its link,
its middleware's repair rules and the machine are, and the mean and p95 the replay gives.
Pure data."""

from __future__ import annotations

import math
from dataclasses import dataclass

NACK_ALL = "all"  # Fast DDS: one AckNack NackFrags every incomplete sample
NACK_ONE = "one"  # Cyclone DDS 0.10: one sample per AckNack
# A NackFrag names the missing fragments of one sample as a bitmap of at most 256 bits
# from its lowest (RTPS 2.3, 9.4.2.8 FragmentNumberSet): a sample whose losses lie
# further apart needs another round for the rest -- in Fast DDS and in Cyclone DDS
# (0.10.2 q_radmin.c nn_defrag_nackmap, NN_FRAGMENT_NUMBER_SET_MAX_BITS), whose next
# NackFrag, starting past the last one's end, goes at once (get_AckNack_info). Cyclone's
# replay (tune/latencycheck.py) still names every missing fragment at once: with this
# window it repairs 512 KiB samples more slowly than Cyclone does (docs/RESULTS.md).
NACKFRAG_WINDOW = 256
CONTROL_WIRE_BYTES = 110  # a Heartbeat or AckNack on the wire (model/wire_traffic.py CONTROL_BYTES)
# The reader's thread, woken by a packet rather than a timer, is late by about half a
# timer's wake-up (fitted: the spread of the tuned profiles' latency at 0 % loss).
READER_WAKE = 0.5
SAMPLES = 1000  # replayed samples; the first WARMUP are not counted
MAX_EVENTS = 5_000_000
# A sample later than this many publish intervals counts as not delivered, as in the
# bench's completion rule (paper 000 Table II's caption: "—" above 100 intervals).
LATE_INTERVALS = 100
WARMUP = 60


@dataclass(frozen=True)
class LatencyInput:
    rate_hz: float
    fragments: int  # fragments per sample (one RTPS message, one IP packet each)
    fragment_wire_bytes: float  # interface bytes of one fragment's message
    per: float  # each packet lost with this probability, both directions
    link_bytes_per_s: float
    bucket_bytes: float  # what the link lets through at once after idling
    delay_s: float  # one-way propagation
    cpu_bytes_per_s: float  # the fastest the writer puts interface bytes out
    receive_bytes_per_s: float  # the fastest the reader takes fragments in
    heartbeat_s: float
    reader_delay_s: float
    writer_delay_s: float
    nack_scope: str  # NACK_ALL | NACK_ONE
    lateness_s: float  # mean wake-up lateness of every timer
    receive_s: float  # the reader's processing of a complete sample
    pacer_bytes: float | None = None  # interface bytes a pacer period lets out
    pacer_period_s: float = 0.0
    heartbeat_after_data: bool = False  # Cyclone: a Heartbeat asking for an answer at once
    # follows each sample's data and each repair
    control_s: float = 0.0  # handling one Heartbeat, AckNack or repair request
    nack_gap_s: float = 0.0  # Cyclone NackDelay: an AckNack that asks again for what the
    # last one asked for waits this long after it (unless a directed Heartbeat came)
    nackfrag_window: int = NACKFRAG_WINDOW  # fragments one NackFrag can name
    ack_delay_s: float = 0.0  # Cyclone AckDelay: the least time between two pure ACKs
    # Cyclone: the writer's thread hands a sample's fragments to its socket while the link
    # holds less than ``pacer_bytes`` of them (the socket's send buffer: it blocks), so
    # the repairs and Heartbeats its other thread sends meet a short queue, not the sample
    socket_paced: bool = False
    # a busy CPU: the reader's thread, woken by a packet, finds a competitor on its core
    # with probability slice_share and waits for up to slice_s (uniform) before it runs
    slice_share: float = 0.0
    slice_s: float = 0.0
    # Fast DDS: the periodic Heartbeat goes out only while some unacknowledged sample has
    # nothing left in the flow controller; else its timer stops, and the next delivery
    # through the flow controller starts it again a period later
    heartbeat_needs_sent: bool = False
    # the mean lateness of the reader's thread, woken by a packet rather than a timer
    # (None: READER_WAKE x lateness_s)
    reader_wake_s: float | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.per < 1.0:
            raise ValueError(f"PER must lie in [0, 1), got {self.per}")
        if self.nack_scope not in (NACK_ALL, NACK_ONE):
            raise ValueError(f"nack_scope must be {NACK_ALL!r} or {NACK_ONE!r}")
        if min(self.rate_hz, self.fragments, self.link_bytes_per_s, self.cpu_bytes_per_s,
               self.heartbeat_s) <= 0:
            raise ValueError("rate, fragments, link rate, CPU rate and heartbeat must be > 0")


@dataclass(frozen=True)
class LatencyPrediction:
    mean_s: float
    p95_s: float
    rounds_mean: float  # repair rounds that sent a sample something, on average
    completed: int  # replayed samples that completed (of SAMPLES - WARMUP)

    @property
    def kept_up(self) -> bool:
        """Every counted sample completed (else mean and p95 are infinite)."""
        return math.isfinite(self.mean_s)

    def to_dict(self) -> dict:
        return dict(self.__dict__)
