"""What a middleware must provide for SFT, and how the transports are configured.

Targeted transmission (paper 003 §IV-D) needs one channel per distinct mask that reaches
only the readers holding that mask, on the standard topic:

* Cyclone DDS (:mod:`linklab.sft.dds`): a **partition** per mask, ``sft.<mask>``.
  Partitions are matched on the writer side at discovery, so a sample written in
  partition P goes (unicast) only to readers in P — the middleware does the
  targeting, nothing is filtered after the bytes crossed the link.  Content filters
  would be evaluated by the reader in Cyclone (bytes already sent); one topic per
  mask would change the topic name.  The variant writer and reader use the ROS type
  *projected* onto the mask — same type name, only the selected members — because
  Cyclone validates every sample against its type; its XCDR1 encoding is exactly
  linklab's selective serialization.  Full messages go to the default partition,
  where every stock ROS 2 node listens.
* Zenoh (:mod:`linklab.sft.zenoh`): a **key expression** per mask,
  ``<full key>/@sft/<mask>``.  ``@sft`` is a verbatim chunk: wildcard subscribers
  (``**``) never match it, so only SFT readers that asked for that mask see it, and
  Zenoh routes a put only to the peers that declared a matching subscriber.

A reader is on the full channel until the publisher has its request (the publisher
sends "full messages to a reader until its request arrives", §IV-B); after a mask
change it keeps its old channel until the first sample arrives on the new one, so no
sample is lost, and drops duplicates by the publish stamp.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from linklab.errors import UsageError
from linklab.sft.masks import FieldMask

MIDDLEWARES = ("cyclonedds", "zenoh")


@dataclass(frozen=True)
class TransportConfig:
    """Where and how to talk.  Defaults: DDS domain 0 / Zenoh peer with multicast scouting.

    peers: unicast addresses of the other hosts (Cyclone ``<Peers>``; for Zenoh
    ``tcp/<peer>:<port>`` connect endpoints).  interface: the interface name or
    address Cyclone binds to.  listen: Zenoh listen endpoints (e.g. ``tcp/0.0.0.0:7447``).
    """

    middleware: str = "cyclonedds"
    domain: int = 0
    peers: tuple[str, ...] = ()
    interface: str | None = None
    listen: tuple[str, ...] = ()
    zenoh_port: int = 7447

    def __post_init__(self) -> None:
        if self.middleware not in MIDDLEWARES:
            raise UsageError(f"unknown middleware {self.middleware!r}: use one of "
                             f"{', '.join(MIDDLEWARES)}", argument="--middleware")


@dataclass
class Request:
    """A Selective Transmission Request: (reader id, topic, mask, monotonic seq)."""

    reader_id: str
    topic: str
    mask: FieldMask
    seq: int
    sent_ns: int = 0  # CLOCK_REALTIME when the reader emitted it (same kernel clock)


@dataclass
class Sample:
    payload: bytes
    mask: FieldMask | None  # None: the full channel
    stamp_ns: int  # CLOCK_REALTIME at publish() (DDS source timestamp / Zenoh attachment)
    recv_ns: int
    channel: object = None


RequestHandler = Callable[[Request], None]
LeaveHandler = Callable[[str], None]
SampleHandler = Callable[[Sample], None]


class PublisherTransport(ABC):
    @abstractmethod
    def start(self, on_request: RequestHandler, on_leave: LeaveHandler) -> None: ...

    @abstractmethod
    def send(self, mask: FieldMask | None, payload: bytes, stamp_ns: int) -> None:
        """Publish on the full channel (mask None) or the variant channel of ``mask``."""

    @abstractmethod
    def prepare(self, mask: FieldMask) -> None:
        """Open the channel of ``mask`` now (discovery runs before the next publish)."""

    @abstractmethod
    def close_variant(self, mask: FieldMask) -> None: ...

    @abstractmethod
    def close(self) -> None: ...


class SubscriberTransport(ABC):
    @abstractmethod
    def listen(self, mask: FieldMask | None, on_sample: SampleHandler) -> object:
        """Start receiving a channel; returns a handle for :meth:`unlisten`."""

    @abstractmethod
    def unlisten(self, handle: object) -> None: ...

    @abstractmethod
    def request(self, request: Request) -> None: ...

    @abstractmethod
    def on_publisher(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when a new SFT publisher appears (to re-send the request)."""

    @abstractmethod
    def close(self) -> None:
        """Leave: the publishers drop this reader's mask."""


class RecentStamps:
    """Duplicate filter for the hand-over between two channels (bounded memory)."""

    def __init__(self, size: int = 256):
        self._seen: OrderedDict[int, None] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def first_time(self, stamp: int) -> bool:
        with self._lock:
            if stamp in self._seen:
                return False
            self._seen[stamp] = None
            if len(self._seen) > self._size:
                self._seen.popitem(last=False)
            return True


@dataclass
class ReaderTable:
    """The publisher's per-reader masks (§IV-B) and the variants they need (§IV-C)."""

    leaf_count: int
    masks: dict[str, tuple[FieldMask, int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def apply(self, request: Request) -> bool:
        """Record a request; False if it is stale (seq not newer) or malformed."""
        if request.mask.length != self.leaf_count:
            return False
        with self.lock:
            known = self.masks.get(request.reader_id)
            if known is not None and request.seq <= known[1]:
                return False
            self.masks[request.reader_id] = (request.mask, request.seq)
            return True

    def leave(self, reader_id: str) -> bool:
        with self.lock:
            return self.masks.pop(reader_id, None) is not None

    def variants(self) -> dict[FieldMask, list[str]]:
        """Distinct non-full masks -> readers holding them (full masks use the full channel)."""
        out: dict[FieldMask, list[str]] = {}
        with self.lock:
            for reader, (mask, _) in self.masks.items():
                if not mask.is_full:
                    out.setdefault(mask, []).append(reader)
        return out


def realtime_ns() -> int:
    return time.time_ns()
