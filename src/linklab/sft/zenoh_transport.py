"""SFT over Zenoh (``eclipse-zenoh``): a key expression per mask.

Keys follow rmw_zenoh's layout so the full channel is where a ROS 2 node looks:
``<domain>/<topic>/<pkg::msg::dds_::Type_>/RIHS01_<hash>``.  The variant for mask M is
``<full key>/@sft/<M>`` (``@sft`` is a verbatim chunk: wildcards never match it).
Requests: ``<domain>/<topic>/@sft/request/<reader id>`` (payload: the
``FieldRequest`` CDR).  Presence: each reader holds a liveliness token
``<domain>/<topic>/@sft/reader/<id>`` — its DELETE (close or crash) tells the
publisher to drop the mask; each publisher holds ``.../@sft/publisher/<id>`` so readers
re-send their request when a publisher appears.  Every data put carries an attachment
``<qq`` (sequence, publish stamp in ns) — in the baseline too.
"""

from __future__ import annotations

import struct
import threading
import uuid
from typing import Any

import zenoh

from linklab.errors import EnvironmentProblem
from linklab.sft import transport
from linklab.sft.dds_types import FieldRequest, request_from, request_to
from linklab.sft.masks import FieldMask
from linklab.sft.schema import Schema, typestore
from linklab.sft.transport import Request, Sample, TransportConfig, realtime_ns

_ATTACHMENT = struct.Struct("<qq")
_lock = threading.Lock()
_sessions: dict[TransportConfig, Any] = {}


def session(cfg: TransportConfig) -> Any:
    """One Zenoh peer session per configuration and process."""
    with _lock:
        if cfg not in _sessions:
            conf = zenoh.Config()
            conf.insert_json5("mode", '"peer"')
            # Namespaced hosts share /dev/shm: without this, Zenoh hands large payloads
            # over in shared memory and they never cross the (emulated) link.
            conf.insert_json5("transport/shared_memory/enabled", "false")
            if cfg.peers or cfg.listen:
                conf.insert_json5("scouting/multicast/enabled", "false")
            if cfg.listen:
                conf.insert_json5("listen/endpoints",
                                  "[" + ",".join(f'"{e}"' for e in cfg.listen) + "]")
            if cfg.peers:
                endpoints = [p if "/" in p else f"tcp/{p}:{cfg.zenoh_port}" for p in cfg.peers]
                conf.insert_json5("connect/endpoints",
                                  "[" + ",".join(f'"{e}"' for e in endpoints) + "]")
            try:
                _sessions[cfg] = zenoh.open(conf)
            except Exception as error:
                raise EnvironmentProblem(f"Zenoh session did not open "
                                         f"(listen {list(cfg.listen)}, peers "
                                         f"{list(cfg.peers)}): {error}") from error
        return _sessions[cfg]


def full_key(cfg: TransportConfig, sch: Schema, topic: str) -> str:
    digest = typestore().hash_rihs01(sch.typename).split("RIHS01_")[-1]
    return f"{cfg.domain}/{topic.strip('/')}/{sch.dds_typename}/RIHS01_{digest}"


def variant_key(base: str, mask: FieldMask) -> str:
    return f"{base}/@sft/{mask.text()}"


def _sft_space(cfg: TransportConfig, topic: str) -> str:
    return f"{cfg.domain}/{topic.strip('/')}/@sft"


class ZenohPublisherTransport(transport.PublisherTransport):
    def __init__(self, cfg: TransportConfig, sch: Schema, topic: str):
        self.session = session(cfg)
        self.base = full_key(cfg, sch, topic)
        self.space = _sft_space(cfg, topic)
        self._full = self.session.declare_publisher(self.base)
        self._variants: dict[FieldMask, Any] = {}
        self._seq = 0
        self._lock = threading.Lock()
        self._entities: list[Any] = []

    def start(self, on_request: transport.RequestHandler,
              on_leave: transport.LeaveHandler) -> None:
        def request(sample: Any) -> None:
            on_request(request_from(FieldRequest.deserialize(sample.payload.to_bytes())))

        def presence(sample: Any) -> None:
            if sample.kind == zenoh.SampleKind.DELETE:
                on_leave(str(sample.key_expr).rsplit("/", 1)[-1])

        self._entities = [
            self.session.declare_subscriber(f"{self.space}/request/*", request),
            self.session.liveliness().declare_subscriber(f"{self.space}/reader/*", presence),
            self.session.liveliness().declare_token(
                f"{self.space}/publisher/{uuid.uuid4().hex[:16]}"),
        ]

    def _publisher(self, mask: FieldMask) -> Any:
        with self._lock:
            publisher = self._variants.get(mask)
            if publisher is None:
                publisher = self.session.declare_publisher(variant_key(self.base, mask))
                self._variants[mask] = publisher
            return publisher

    def prepare(self, mask: FieldMask) -> None:
        self._publisher(mask)

    def send(self, mask: FieldMask | None, payload: bytes, stamp_ns: int) -> None:
        publisher = self._full if mask is None else self._publisher(mask)
        with self._lock:
            self._seq += 1
            seq = self._seq
        publisher.put(payload, attachment=_ATTACHMENT.pack(seq, stamp_ns))

    def close_variant(self, mask: FieldMask) -> None:
        with self._lock:
            publisher = self._variants.pop(mask, None)
        if publisher is not None:
            publisher.undeclare()

    def close(self) -> None:
        with self._lock:
            publishers = [self._full, *self._variants.values()]
            self._variants.clear()
        for entity in [*publishers, *self._entities]:
            entity.undeclare()
        self._entities = []


class ZenohSubscriberTransport(transport.SubscriberTransport):
    def __init__(self, cfg: TransportConfig, sch: Schema, topic: str, reader_id: str):
        self.session = session(cfg)
        self.base = full_key(cfg, sch, topic)
        self.space = _sft_space(cfg, topic)
        self.reader_id = reader_id
        self._typename = sch.typename
        self._token = self.session.liveliness().declare_token(f"{self.space}/reader/{reader_id}")
        self._publisher_watch: Any = None

    def listen(self, mask: FieldMask | None, on_sample: transport.SampleHandler) -> object:
        def callback(sample: Any) -> None:
            now = realtime_ns()
            stamp = 0
            if sample.attachment is not None:
                _, stamp = _ATTACHMENT.unpack(sample.attachment.to_bytes()[:_ATTACHMENT.size])
            on_sample(Sample(sample.payload.to_bytes(), mask, stamp, now, subscriber))

        key = self.base if mask is None else variant_key(self.base, mask)
        subscriber = self.session.declare_subscriber(key, callback)
        return subscriber

    def unlisten(self, handle: object) -> None:
        threading.Thread(target=handle.undeclare, daemon=True).start()  # type: ignore[attr-defined]

    def request(self, request: Request) -> None:
        payload = request_to(request, self._typename).serialize()
        self.session.put(f"{self.space}/request/{self.reader_id}", payload)

    def on_publisher(self, callback) -> None:
        def seen(sample: Any) -> None:
            if sample.kind == zenoh.SampleKind.PUT:
                callback()
        self._publisher_watch = self.session.liveliness().declare_subscriber(
            f"{self.space}/publisher/*", seen)

    def close(self) -> None:
        if self._publisher_watch is not None:
            self._publisher_watch.undeclare()
        self._token.undeclare()
