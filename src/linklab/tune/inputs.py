"""What the tuner needs to know about one topic and one link, and what it accepts."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from linklab.errors import UsageError
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
    for peer in t.peers:
        if not peer or any(c.isspace() for c in peer) or "<" in peer or "&" in peer:
            raise bad("--peer", f"{peer!r} is not a host name or IP address; e.g. 10.0.0.2")
