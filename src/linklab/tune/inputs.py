"""What the tuner needs to know about one topic and one link, and what it accepts."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from linklab.errors import UsageError
from linklab.middleware import DDS_FAMILIES
from linklab.model.fragmentation import max_message_size_for_mtu
from linklab.model.overhead import OVERLAY_OVERHEAD_BYTES, OVERLAYS
from linklab.model.scenario import DEFAULT_UTILIZATION

ROS_DISTROS: tuple[str, ...] = ("humble", "jazzy")

# Outside these a value is a typo, not a robot (one-line errors name the range).
MAX_RATE_HZ = 100_000.0
MAX_PAYLOAD_BYTES = 1024**3
MIN_LINK_BITS, MAX_LINK_BITS = 10e3, 1e12
MIN_MTU, MAX_MTU = 576, 65535
MAX_SUBSCRIBERS = 1000
MIN_MESSAGE_SIZE = 512  # smaller RTPS messages would be mostly headers
# The participant lease must outlast the link's outages (000 IV-E, V-D: a 20 s outage equals
# Fast DDS's default 20 s lease, the participants drop each other and nothing sent during
# the outage is resent). 60 s = 3x the paper's outage, long enough for a robot driving out
# of Wi-Fi range and back or an AP roam; a crashed peer is still forgotten within 1.5x that.
DEFAULT_OUTAGE_TOLERANCE_S = 60.0
MIN_OUTAGE_TOLERANCE_S, MAX_OUTAGE_TOLERANCE_S = 1.0, 86_400.0
PAPER_CONDITIONS = (0.01, 0.20)  # mild and severe loss of 000 V-B
# The writer's history may grow to cover an outage (tune.history) up to this many bytes of
# samples: the writer holds them, and each reader may.
DEFAULT_HISTORY_MEMORY_BYTES = 256 * 1024 * 1024
MAX_DELAY_S = 10.0
MAX_CPU_CORES = 1024
TUNED_MIDDLEWARES = DDS_FAMILIES  # the DDS probe families (linklab.middleware)
MAX_CPU_COMPETITORS = 100_000


@dataclass(frozen=True)
class TuningInput:
    """The paper's four inputs (r, u, T_OS->Link, omega; 000 IV-F) plus the network around them."""

    rate_hz: float  # r
    payload_bytes: int  # u
    link_bits_per_s: float  # T_OS->Link, the link's real throughput in bit/s
    utilization: float = DEFAULT_UTILIZATION  # omega, in (0, 1]
    mtu: int = 1500
    overlay: str = "none"  # none | vxlan | wireguard
    subscribers: int = 1  # unicast subscribers of this topic
    ros: str = "humble"  # humble | jazzy
    per: float | None = None  # packet error rate to explain for; None: the paper's 1 % and 20 %
    peers: tuple[str, ...] = field(default_factory=tuple)  # unicast peers (multicast off)
    outage_tolerance_s: float = DEFAULT_OUTAGE_TOLERANCE_S  # longest outage the session survives
    delay_s: float = 0.0  # the link's one-way delay (Cyclone NackDelay, --verify's link)
    history_memory_bytes: int = DEFAULT_HISTORY_MEMORY_BYTES  # cap for outage coverage
    history_depth: int | None = None  # force the history (None: planned, tune/history.py)
    # the CPU the middleware shares (model.cpu): CPU-bound tasks beside it on the writer's
    # machine of cpu_cores cores (--cpu-load), or the cores it can count on (--cpu-share);
    # None: not declared (no CPU verdict)
    cpu_competitors: float | None = None
    cpu_cores: float | None = None
    cpu_share: float | None = None
    # the middlewares the profiles are for: the CPU verdict asks whether one of them holds
    middlewares: tuple[str, ...] = DDS_FAMILIES

    def to_dict(self) -> dict:
        return asdict(self)


def validate(t: TuningInput) -> None:
    """Raise UsageError (argument named, accepted form given) for anything unusable."""

    def bad(argument: str, message: str) -> UsageError:
        return UsageError(message, argument=argument)

    if not 0 < t.rate_hz <= MAX_RATE_HZ:
        raise bad("--rate", f"{t.rate_hz:g} Hz is outside (0, {MAX_RATE_HZ:g}] Hz; e.g. 30Hz")
    if not 0 < t.payload_bytes <= MAX_PAYLOAD_BYTES:
        raise bad("--payload", f"{t.payload_bytes} B is outside 1 B .. 1 GiB; e.g. 256KiB")
    if not MIN_LINK_BITS <= t.link_bits_per_s <= MAX_LINK_BITS:
        raise bad("--link", f"{t.link_bits_per_s:g} bit/s is outside 10kbit/s .. 1000Gbit/s; "
                            "e.g. 433Mbit/s")
    if not 0.0 < t.utilization <= 1.0:
        raise bad("--utilization", f"{t.utilization:g} is outside (0, 1]; e.g. 0.65 or 65%")
    if not MIN_MTU <= t.mtu <= MAX_MTU:
        raise bad("--mtu", f"{t.mtu} is outside {MIN_MTU}..{MAX_MTU} bytes; e.g. 1500")
    if t.overlay not in OVERLAYS:
        raise bad("--overlay", f"{t.overlay!r} is not one of {', '.join(OVERLAYS)}")
    if not 1 <= t.subscribers <= MAX_SUBSCRIBERS:
        raise bad("--subscribers", f"{t.subscribers} is outside 1..{MAX_SUBSCRIBERS}")
    if t.ros not in ROS_DISTROS:
        raise bad("--ros", f"{t.ros!r} is not one of {', '.join(ROS_DISTROS)}")
    if t.per is not None and not 0.0 <= t.per < 1.0:
        raise bad("--per", f"{t.per:g} is outside [0, 100%); e.g. 1% or 0.2")
    if t.payload_bytes * 8 > t.link_bits_per_s:
        raise bad("--payload", f"one sample ({t.payload_bytes} B = {t.payload_bytes * 8:g} bit) "
                               f"is more than the link carries in one second "
                               f"({t.link_bits_per_s:g} bit/s); check --payload and --link")
    room = max_message_size_for_mtu(t.mtu, OVERLAY_OVERHEAD_BYTES[t.overlay])
    if room < MIN_MESSAGE_SIZE:
        raise bad("--mtu", f"MTU {t.mtu} with overlay {t.overlay} leaves {room} B per RTPS "
                           f"message (need at least {MIN_MESSAGE_SIZE}); e.g. 1500")
    if not MIN_OUTAGE_TOLERANCE_S <= t.outage_tolerance_s <= MAX_OUTAGE_TOLERANCE_S:
        raise bad("--outage-tolerance", f"{t.outage_tolerance_s:g} s is outside 1s .. 24h; "
                                        "e.g. 60s or 2min")
    if not 0.0 <= t.delay_s <= MAX_DELAY_S:
        raise bad("--delay", f"{t.delay_s:g} s is outside 0 .. {MAX_DELAY_S:g} s; e.g. 3ms")
    if t.history_depth is not None and not 1 <= t.history_depth <= 1_000_000:
        raise bad("--history-depth", f"{t.history_depth} is outside 1..1000000; e.g. 47")
    if t.history_memory_bytes < t.payload_bytes:
        raise bad("--history-memory", f"{t.history_memory_bytes} B holds not even one "
                                      f"{t.payload_bytes} B sample; e.g. 256MiB")
    if not t.middlewares or any(m not in TUNED_MIDDLEWARES for m in t.middlewares):
        raise bad("--middleware", f"{', '.join(t.middlewares) or 'none'}: expected "
                                  f"{' and/or '.join(TUNED_MIDDLEWARES)}")
    if t.cpu_competitors is not None and t.cpu_share is not None:
        raise bad("--cpu-share", "give --cpu-load or --cpu-share, not both")
    if t.cpu_cores is not None and not 0 < t.cpu_cores <= MAX_CPU_CORES:
        raise bad("--cpu-cores", f"{t.cpu_cores:g} is outside (0, {MAX_CPU_CORES}]; e.g. 4")
    if t.cpu_competitors is not None and not 0 <= t.cpu_competitors <= MAX_CPU_COMPETITORS:
        raise bad("--cpu-load", f"{t.cpu_competitors:g} competitors is outside "
                                f"0..{MAX_CPU_COMPETITORS}; e.g. 2/core or 4")
    if t.cpu_share is not None and not 0 < t.cpu_share <= MAX_CPU_CORES:
        raise bad("--cpu-share", f"{t.cpu_share:g} cores is outside (0, {MAX_CPU_CORES}]; "
                                 "e.g. 50% (of one core) or 1.5cores")
    for peer in t.peers:
        if not peer or any(c.isspace() for c in peer) or "<" in peer or "&" in peer:
            raise bad("--peer", f"{peer!r} is not a host name or IP address; e.g. 10.0.0.2")
