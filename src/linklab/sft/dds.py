"""SFT over Cyclone DDS (the ``cyclonedds`` Python package): a partition per mask.

Data topic ``rt/<topic>``, type ``pkg::msg::dds_::Type_`` (ROS 2 naming), QoS as ROS 2's
default (reliable, volatile, keep last 10).  Full messages: default partition.  Variant
for mask M: a writer/reader pair in partition ``sft.<M>`` with the type projected onto
M (see :mod:`linklab.sft.transport` for why).  Requests: topic
``rt/<topic>/_sft_requests`` (a hidden ROS 2 topic), type
``linklab_sft::msg::dds_::FieldRequest_`` keyed by ``reader_id``, reliable +
transient-local, so a publisher that starts later still gets every reader's current
mask.  A reader that closes disposes its instance; one that dies stops renewing its
participant lease — either way the publisher sees the instance leave the ALIVE state
and drops that reader's mask.

Samples are written and taken as serialized bytes (``ddspy_write_ts``/``ddspy_take``
of the package's C layer) because linklab serializes them itself.
"""

from __future__ import annotations

import threading
from typing import Any

from cyclonedds._clayer import ddspy_take, ddspy_write_ts
from cyclonedds.core import InstanceState, Listener, Policy, Qos, SampleState, ViewState
from cyclonedds.domain import Domain, DomainParticipant
from cyclonedds.pub import DataWriter
from cyclonedds.pub import Publisher as DdsPublisher
from cyclonedds.sub import DataReader
from cyclonedds.sub import Subscriber as DdsSubscriber
from cyclonedds.topic import Topic

from linklab.errors import EnvironmentProblem
from linklab.sft.dds_types import (
    EMPTY_BODY,
    FieldRequest,
    idl_struct,
    projected_struct,
    request_from,
    request_to,
)
from linklab.sft.masks import FieldMask
from linklab.sft.schema import Schema
from linklab.sft.transport import (
    LeaveHandler,
    PublisherTransport,
    Request,
    RequestHandler,
    Sample,
    SampleHandler,
    SubscriberTransport,
    TransportConfig,
    realtime_ns,
)

DATA_QOS = Qos(Policy.Reliability.Reliable(max_blocking_time=100_000_000),
               Policy.History.KeepLast(10), Policy.Durability.Volatile)
REQUEST_QOS = Qos(Policy.Reliability.Reliable(max_blocking_time=100_000_000),
                  Policy.History.KeepLast(1), Policy.Durability.TransientLocal)
_ANY = SampleState.Any | ViewState.Any | InstanceState.Any
_lock = threading.Lock()
_participants: dict[TransportConfig, DomainParticipant] = {}
_domains: dict[int, tuple[str | None, Any]] = {}


def cyclone_config_xml(cfg: TransportConfig) -> str:
    """Cyclone configuration: unicast to the given peers on the given interface.

    In a fresh network namespace there is no multicast route, so with peers given
    discovery is unicast (ParticipantIndex auto lets peers be probed on known ports).
    """
    general = []
    if cfg.interface:
        general.append(f'<Interfaces><NetworkInterface name="{cfg.interface}"/></Interfaces>'
                       if not cfg.interface[0].isdigit() else
                       f'<Interfaces><NetworkInterface address="{cfg.interface}"/></Interfaces>')
    discovery = []
    if cfg.peers:
        general.append("<AllowMulticast>false</AllowMulticast>")
        discovery.append("<ParticipantIndex>auto</ParticipantIndex>"
                         "<MaxAutoParticipantIndex>20</MaxAutoParticipantIndex>")
        discovery.append("<Peers>" + "".join(f'<Peer address="{p}"/>' for p in cfg.peers)
                         + "</Peers>")
    return ('<CycloneDDS><Domain id="any"><General>' + "".join(general) + "</General>"
            "<Discovery>" + "".join(discovery) + "</Discovery></Domain></CycloneDDS>")


def participant(cfg: TransportConfig) -> DomainParticipant:
    """One participant per configuration and process (as a ROS 2 context has one).

    Cyclone allows one configuration per domain id and process: configurations that
    differ only in fields Cyclone does not use share it.
    """
    with _lock:
        if cfg not in _participants:
            xml = cyclone_config_xml(cfg) if (cfg.peers or cfg.interface) else None
            known = _domains.get(cfg.domain)
            if known is not None and known[0] != xml:
                raise EnvironmentProblem(f"DDS domain {cfg.domain} is already configured "
                                         "differently in this process")
            try:
                if known is None:
                    _domains[cfg.domain] = (xml, Domain(cfg.domain, xml) if xml else None)
                _participants[cfg] = DomainParticipant(cfg.domain)
            except Exception as error:
                raise EnvironmentProblem(f"Cyclone DDS did not start (domain {cfg.domain}, "
                                         f"peers {list(cfg.peers)}): {error}") from error
        return _participants[cfg]


def partition_name(mask: FieldMask) -> str:
    return f"sft.{mask.text()}"


def _pad4(payload: bytes) -> bytes:
    # cyclonedds pads serialized samples to a multiple of 4 (DataWriter.write does too)
    return payload + bytes(-len(payload) % 4)


def _dds_payload(payload: bytes) -> bytes:
    return _pad4(payload if len(payload) > 4 else payload + EMPTY_BODY)


def _delete_later(*entities: Any) -> None:
    """Delete entities off the listener thread (deleting from inside a callback deadlocks)."""
    def run() -> None:
        for entity in entities:
            entity.__del__()
    threading.Thread(target=run, daemon=True).start()


class DdsPublisherTransport(PublisherTransport):
    def __init__(self, cfg: TransportConfig, sch: Schema, topic: str):
        self.sch = sch
        self.dp = participant(cfg)
        self.topic_name = f"rt/{topic.strip('/')}"
        self.topic = Topic(self.dp, self.topic_name, idl_struct(sch))
        self._full = DataWriter(DdsPublisher(self.dp), self.topic, qos=DATA_QOS)
        self._variants: dict[FieldMask, tuple[Any, DataWriter]] = {}
        self._lock = threading.Lock()
        self._request_reader: DataReader | None = None

    def start(self, on_request: RequestHandler, on_leave: LeaveHandler) -> None:
        def on_data(reader: DataReader) -> None:
            for sample in reader.take(N=64):
                info = sample.sample_info
                if info.valid_data:
                    on_request(request_from(sample))
                elif info.instance_state != InstanceState.Alive:
                    on_leave(sample.key_sample.reader_id)

        topic = Topic(self.dp, f"{self.topic_name}/_sft_requests", FieldRequest)
        self._request_reader = DataReader(self.dp, topic, qos=REQUEST_QOS,
                                          listener=Listener(on_data_available=on_data))

    def _writer(self, mask: FieldMask) -> DataWriter:
        with self._lock:
            entry = self._variants.get(mask)
            if entry is None:
                publisher = DdsPublisher(self.dp, qos=Qos(Policy.Partition([partition_name(mask)])))
                topic = Topic(self.dp, self.topic_name, projected_struct(self.sch, mask.bits))
                entry = (publisher, DataWriter(publisher, topic, qos=DATA_QOS))
                self._variants[mask] = entry
            return entry[1]

    def prepare(self, mask: FieldMask) -> None:
        self._writer(mask)

    def send(self, mask: FieldMask | None, payload: bytes, stamp_ns: int) -> None:
        writer = self._full if mask is None else self._writer(mask)
        ret = ddspy_write_ts(writer._ref, _dds_payload(payload), stamp_ns)
        if ret < 0:
            raise EnvironmentProblem(f"Cyclone DDS write on {self.topic_name} failed ({ret})")

    def close_variant(self, mask: FieldMask) -> None:
        with self._lock:
            entry = self._variants.pop(mask, None)
        if entry:
            _delete_later(entry[0])

    def close(self) -> None:
        with self._lock:
            entries = list(self._variants.values())
            self._variants.clear()
        for publisher, _ in entries:
            publisher.__del__()
        if self._request_reader is not None:
            self._request_reader.__del__()
        self._full.__del__()


class DdsSubscriberTransport(SubscriberTransport):
    def __init__(self, cfg: TransportConfig, sch: Schema, topic: str, reader_id: str):
        self.sch = sch
        self.dp = participant(cfg)
        self.topic_name = f"rt/{topic.strip('/')}"
        self.reader_id = reader_id
        self._request_writer: DataWriter | None = None
        self._typename = sch.typename

    def listen(self, mask: FieldMask | None, on_sample: SampleHandler) -> object:
        def on_data(reader: DataReader) -> None:
            now = realtime_ns()
            result = ddspy_take(reader._ref, _ANY, 64)
            if isinstance(result, int):
                return
            for data, info in result:
                if info.valid_data:
                    on_sample(Sample(bytes(data), mask, info.source_timestamp, now, handle))

        if mask is None:
            subscriber = DdsSubscriber(self.dp)
            topic = Topic(self.dp, self.topic_name, idl_struct(self.sch))
        else:
            subscriber = DdsSubscriber(self.dp, qos=Qos(Policy.Partition([partition_name(mask)])))
            topic = Topic(self.dp, self.topic_name, projected_struct(self.sch, mask.bits))
        handle = [subscriber]
        reader = DataReader(subscriber, topic, qos=DATA_QOS,
                            listener=Listener(on_data_available=on_data))
        handle.append(reader)
        return handle

    def unlisten(self, handle: object) -> None:
        _delete_later(handle[0])  # type: ignore[index]

    def request(self, request: Request) -> None:
        if self._request_writer is None:
            topic = Topic(self.dp, f"{self.topic_name}/_sft_requests", FieldRequest)
            self._request_writer = DataWriter(self.dp, topic, qos=REQUEST_QOS)
        self._request_writer.write(request_to(request, self._typename))

    def on_publisher(self, callback) -> None:
        # transient-local durability delivers the current request to late publishers
        return None

    def close(self) -> None:
        if self._request_writer is not None:
            # dispose = explicit leave; deleting the writer also unregisters the instance
            self._request_writer.dispose(request_to(
                Request(self.reader_id, "", FieldMask(0, 0), 0), self._typename))
            self._request_writer.__del__()
            self._request_writer = None
