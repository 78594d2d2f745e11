"""The Zenoh probe's stream as the native probes have it (probes/common/probe.cpp and
publish.cpp), in Python: the sample payload (seq and send time first), the publish pacing
and the records file (zenoh_probe.py uses them)."""

from __future__ import annotations

import struct
import threading
import time

from linklab.probes import ros_types

RECORD = struct.Struct("<QqqI")
HEADER = struct.Struct("<8sII")
MAGIC = b"LLREC1\0\0"
FLUSH_EVERY_NS = 250_000_000  # records unwritten at most this long (RecordWriter)
PAYLOAD_HEADER = struct.Struct("<Qq")  # seq, t_send_ns at the start of every sample
WARMUP_FLAG = 1 << 63
END_OF_STREAM = (1 << 64) - 1


class RecordWriter:
    def __init__(self, path: str, publisher: bool):
        self.file = open(path, "wb")  # noqa: SIM115 - closed in close()
        self.file.write(HEADER.pack(MAGIC, RECORD.size, 1 if publisher else 0))
        self.file.flush()
        self.pending: list[bytes] = []
        self.flushed_at = time.monotonic_ns()

    def add(self, seq: int, t_send: int, t_recv: int, nbytes: int) -> None:
        self.pending.append(RECORD.pack(seq, t_send, t_recv, nbytes))
        # as the native probes: at most a quarter second of records is unwritten, so a
        # probe the runner has to SIGKILL keeps the rest (timed by the record's own local
        # time: the receive time in a subscriber, the send time in a publisher)
        if len(self.pending) >= 4096 or (t_recv or t_send) - self.flushed_at >= FLUSH_EVERY_NS:
            self.flush()

    def flush(self) -> None:
        self.file.write(b"".join(self.pending))
        self.file.flush()
        self.pending.clear()
        self.flushed_at = time.monotonic_ns()

    def close(self) -> None:
        self.flush()
        self.file.close()


class Pacer:
    """Absolute deadlines start + k/rate; a tick late by more than a period skips the
    missed deadlines (like an rcl timer), as probes/common/probe.cpp does."""

    def __init__(self, rate_hz: float, stop: threading.Event):
        self.start = time.monotonic_ns()
        self.period = round(1e9 / rate_hz)
        self.k = 0
        self.skipped = 0
        self.stop = stop

    def wait_next(self) -> bool:
        deadline = self.start + self.k * self.period
        now = time.monotonic_ns()
        if now - deadline > self.period:
            missed = (now - deadline) // self.period
            self.skipped += missed
            self.k += missed
            deadline = self.start + self.k * self.period
        while (now := time.monotonic_ns()) < deadline:
            if self.stop.wait(min(deadline - now, 50_000_000) / 1e9):
                return False
        self.k += 1
        return not self.stop.is_set()


class _Framed:
    """Bytes and performance_test's types: seq u64 + t_send_ns i64 + payload."""

    def __init__(self, size: int):
        self.buffer = bytearray(PAYLOAD_HEADER.size + size)  # allocated once
        self.buffer[:] = (bytes(range(256)) * (len(self.buffer) // 256)
                          + bytes(len(self.buffer) % 256))

    def stamp(self, seq: int, t_send_ns: int) -> None:
        PAYLOAD_HEADER.pack_into(self.buffer, 0, seq, t_send_ns)


def payload_for(type_name: str, size: int):
    """What the publisher sends: a buffer built once and a stamp(seq, t_send_ns)."""
    if type_name in ros_types.ROS_TYPES:
        return ros_types.CdrSample(type_name, size)
    return _Framed(size)


def decoder_for(type_name: str):
    """payload -> (seq, t_send_ns, payload bytes), or None when it is not a sample."""
    if type_name in ros_types.ROS_TYPES:
        return lambda payload: ros_types.read(type_name, payload)

    def framed(payload: bytes):
        if len(payload) < PAYLOAD_HEADER.size:
            return None
        seq, t_send = PAYLOAD_HEADER.unpack_from(payload)
        return seq, t_send, len(payload) - PAYLOAD_HEADER.size
    return framed
