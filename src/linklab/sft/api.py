"""``sft.Publisher`` and ``sft.Subscriber``: one API over Cyclone DDS and Zenoh.

    pub = sft.Publisher("battery", "sensor_msgs/msg/BatteryState")
    pub.publish(msg)
    sub = sft.Subscriber("battery", "sensor_msgs/msg/BatteryState", on_battery,
                         fields=["current"])            # requirements API
    sub = sft.Subscriber("scan", "sensor_msgs/msg/LaserScan", on_scan, record=True)  # ARR

The publisher keeps a mask per reader (from the request channel), serializes one
variant per distinct mask (built once per publish, shared by every reader with that
mask) and sends each on that mask's channel; readers without a request get full
messages on the standard channel.  See :mod:`linklab.sft.transport` for the channels.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from linklab.errors import UsageError
from linklab.sft import cdr
from linklab.sft.masks import FieldMask, mask_for_paths
from linklab.sft.recording import FieldNotTransmitted, Recorder, wrap
from linklab.sft.schema import Schema, schema
from linklab.sft.transport import (
    ReaderTable,
    RecentStamps,
    Request,
    Sample,
    TransportConfig,
    realtime_ns,
)


def _transports(cfg: TransportConfig):
    if cfg.middleware == "zenoh":
        from linklab.sft import zenoh_transport as module
        return module.ZenohPublisherTransport, module.ZenohSubscriberTransport
    from linklab.sft import dds as module
    return module.DdsPublisherTransport, module.DdsSubscriberTransport


def _config(middleware: str | None, config: TransportConfig | None) -> TransportConfig:
    if config is None:
        return TransportConfig(middleware=middleware or "cyclonedds")
    if middleware and middleware != config.middleware:
        raise UsageError(f"middleware {middleware!r} differs from config's "
                         f"{config.middleware!r}", argument="middleware")
    return config


@dataclass
class MaskChange:
    """One request as the publisher applied it (for the response-time measurement)."""

    reader_id: str
    mask: FieldMask
    seq: int
    sent_ns: int
    applied_ns: int


@dataclass
class PublisherStats:
    published: int = 0
    variants_built: int = 0
    payload_bytes: int = 0  # serialized bytes handed to the middleware, all channels
    changes: list[MaskChange] = field(default_factory=list)
    leaves: int = 0


class Publisher:
    """Publishes one topic; ``sft=False`` is the baseline (full messages, requests ignored)."""

    def __init__(self, topic: str, msgtype: str, *, middleware: str | None = None,
                 config: TransportConfig | None = None, sft: bool = True,
                 grace_s: float = 2.0):
        self.topic = topic
        self.schema: Schema = schema(msgtype)
        self.config = _config(middleware, config)
        self.sft = sft
        self.grace_ns = int(grace_s * 1e9)
        self.readers = ReaderTable(self.schema.leaf_count)
        self.stats = PublisherStats()
        self._retiring: dict[FieldMask, int] = {}
        self._active: set[FieldMask] = set()
        self._lock = threading.Lock()
        pub_cls, _ = _transports(self.config)
        self.transport = pub_cls(self.config, self.schema, topic)
        if sft:
            self.transport.start(self._on_request, self._on_leave)

    def _on_request(self, request: Request) -> None:
        if request.topic.strip("/") != self.topic.strip("/"):
            return
        if self.readers.apply(request):
            applied = realtime_ns()
            with self._lock:
                self.stats.changes.append(MaskChange(request.reader_id, request.mask,
                                                     request.seq, request.sent_ns, applied))
            if not request.mask.is_full:
                self.transport.prepare(request.mask)

    def _on_leave(self, reader_id: str) -> None:
        if self.readers.leave(reader_id):
            with self._lock:
                self.stats.leaves += 1

    def masks(self) -> dict[str, FieldMask]:
        """The current mask of every reader that sent a request."""
        with self.readers.lock:
            return {reader: mask for reader, (mask, _) in self.readers.masks.items()}

    def publish(self, message: Any) -> None:
        stamp = realtime_ns()
        sent = 0
        built = 0
        if self.sft:
            variants = set(self.readers.variants())
            now = time.monotonic_ns()
            with self._lock:
                for mask in self._active - variants:
                    self._retiring[mask] = now + self.grace_ns  # readers may still hand over
                for mask in variants:
                    self._retiring.pop(mask, None)
                self._active = variants
                expired = [m for m, deadline in self._retiring.items() if deadline < now]
                for mask in expired:
                    del self._retiring[mask]
                channels = variants | set(self._retiring)
            for mask in expired:
                self.transport.close_variant(mask)
            # current masks first, then channels being retired, then the full channel:
            # a reader handing over sees the new channel's sample first (no duplicate)
            ordered = sorted(variants) + sorted(channels - variants)
            for mask in ordered:
                payload = cdr.serialize(message, self.schema, mask)  # once per distinct mask
                self.transport.send(mask, payload, stamp)
                sent += len(payload)
                built += 1
        full = cdr.serialize(message, self.schema)
        self.transport.send(None, full, stamp)
        sent += len(full)
        with self._lock:
            self.stats.published += 1
            self.stats.variants_built += built
            self.stats.payload_bytes += sent

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> Publisher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class SampleInfo:
    stamp_ns: int  # publish() time, CLOCK_REALTIME
    recv_ns: int  # arrival at this process
    mask: FieldMask  # the leaves this message carried
    size: int  # serialized bytes of this message


@dataclass
class SubscriberStats:
    received: int = 0
    duplicates: int = 0
    payload_bytes: int = 0
    misses: int = 0
    latencies_ns: list[int] = field(default_factory=list)  # publish() -> callback start
    sizes: list[int] = field(default_factory=list)  # serialized bytes of each message
    announced: list[tuple[int, FieldMask, int]] = field(default_factory=list)  # seq, mask, ns
    first_reduced_ns: dict[int, int] = field(default_factory=dict)  # seq -> first arrival


class Subscriber:
    """Receives one topic and tells the publishers which fields it needs.

    fields: the requirements API (paths, nested allowed: ``header.stamp``).
    record: ARR — the callback gets a recording view (see :mod:`linklab.sft.recording`);
    with ``fields`` too, the recorded reads widen that initial mask.
    on_miss: "raise" or "flag" (how a read of an omitted field is reported).
    miss_callback(message, paths): called after a callback ended on a miss.
    with_info: call ``callback(message, SampleInfo)``.  sft=False: baseline reader.
    """

    def __init__(self, topic: str, msgtype: str, callback: Callable[..., Any],
                 fields: Iterable[str] | None = None, *, record: bool = False,
                 on_miss: str = "raise", miss_callback: Callable[[Any, list[str]], Any]
                 | None = None, middleware: str | None = None,
                 config: TransportConfig | None = None, sft: bool = True,
                 with_info: bool = False):
        if on_miss not in ("raise", "flag"):
            raise UsageError(f"on_miss {on_miss!r}: use 'raise' or 'flag'", argument="on_miss")
        self.topic = topic
        self.schema = schema(msgtype)
        self.config = _config(middleware, config)
        self.callback = callback
        self.sft = sft
        self.on_miss = on_miss
        self.miss_callback = miss_callback
        self.with_info = with_info
        self.reader_id = uuid.uuid4().hex[:16]
        self.stats = SubscriberStats()
        explicit = mask_for_paths(self.schema, fields) if fields is not None else None
        self.recorder = Recorder(self.schema, explicit) if record else None
        self._announced: FieldMask | None = None
        self._seq = 0
        self._lock = threading.RLock()
        self._channels: dict[FieldMask | None, object] = {}
        self._target: FieldMask | None = None
        self._recent = RecentStamps()
        self._closed = False
        _, sub_cls = _transports(self.config)
        self.transport = sub_cls(self.config, self.schema, topic, self.reader_id)
        with self._lock:
            self._channels[None] = self.transport.listen(None, self._on_sample)
            if sft:
                self.transport.on_publisher(self._resend)
                if explicit is not None:
                    self._announce(explicit)

    # -- request channel ---------------------------------------------------------------
    @property
    def mask(self) -> FieldMask | None:
        """The mask last announced (None: none yet, full messages)."""
        return self._announced

    def _announce(self, mask: FieldMask) -> None:
        with self._lock:
            if self._closed or mask == self._announced:
                return
            self._seq += 1
            self._announced = mask
            target = None if mask.is_full else mask
            if target not in self._channels:
                self._channels[target] = self.transport.listen(target, self._on_sample)
            self._target = target
            sent = realtime_ns()
            self.stats.announced.append((self._seq, mask, sent))
            self.transport.request(Request(self.reader_id, self.topic, mask, self._seq, sent))

    def set_fields(self, fields: Iterable[str]) -> None:
        """Change the requirements (requirements API); with ARR, recorded reads still add."""
        mask = mask_for_paths(self.schema, fields)
        if self.recorder is not None:
            with self._lock:
                self.recorder.bits |= mask.bits
                mask = self.recorder.mask()
        self._announce(mask)

    def _resend(self) -> None:
        with self._lock:
            if self._announced is not None and not self._closed:
                self.transport.request(Request(self.reader_id, self.topic, self._announced,
                                               self._seq, realtime_ns()))

    def _widen_now(self) -> None:
        if self.recorder is not None and self.sft:
            self._announce(self.recorder.mask())

    # -- data ---------------------------------------------------------------------------
    def _on_sample(self, sample: Sample) -> None:
        with self._lock:
            if self._closed:
                return
            if sample.mask == self._target and len(self._channels) > 1:
                self._hand_over()
            if sample.stamp_ns and not self._recent.first_time(sample.stamp_ns):
                self.stats.duplicates += 1
                return
            received = sample.mask or FieldMask.full(self.schema.leaf_count)
            message = cdr.deserialize(sample.payload, self.schema, sample.mask)
            start = realtime_ns()
            self.stats.received += 1
            self.stats.payload_bytes += len(sample.payload)
            self.stats.sizes.append(len(sample.payload))
            if sample.stamp_ns:
                self.stats.latencies_ns.append(start - sample.stamp_ns)
            if sample.mask is not None and self._seq not in self.stats.first_reduced_ns:
                self.stats.first_reduced_ns[self._seq] = sample.recv_ns
            info = SampleInfo(sample.stamp_ns, sample.recv_ns, received, len(sample.payload))
            if self.recorder is None:
                self._deliver(message, info)
                return
            view, state = wrap(message, self.schema, self.recorder, received, self.on_miss,
                               self._widen_now)
            try:
                self._deliver(view, info)
            except FieldNotTransmitted:
                pass
            finally:
                if state.paths:
                    self.stats.misses += 1
                if self.sft:
                    self._announce(self.recorder.mask())
            if state.paths and self.miss_callback is not None:
                self.miss_callback(message, list(state.paths))

    def _deliver(self, message: Any, info: SampleInfo) -> None:
        if self.with_info:
            self.callback(message, info)
        else:
            self.callback(message)

    def _hand_over(self) -> None:
        """The first sample arrived on the new channel: stop listening on the others."""
        for mask in [m for m in self._channels if m != self._target]:
            self.transport.unlisten(self._channels.pop(mask))

    def close(self) -> None:
        """Leave: unsubscribe and tell the publishers to drop this reader's mask."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for handle in self._channels.values():
                self.transport.unlisten(handle)
            self._channels.clear()
        self.transport.close()

    def __enter__(self) -> Subscriber:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
