"""Read a probe's record file into a numpy structured array."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from linklab.errors import LinklabError

MAGIC = b"LLREC1\0\0"
HEADER = struct.Struct("<8sII")  # magic, record_size, role
RECORD_DTYPE = np.dtype([("seq", "<u8"), ("t_send_ns", "<i8"), ("t_recv_ns", "<i8"),
                         ("bytes", "<u4")])
ROLES = {0: "sub", 1: "pub"}
ROLE_SUBSCRIBER = 0
ROLE_PUBLISHER = 1


class RecordFileError(LinklabError):
    """A file that is not in the probe record format (or is cut inside its header)."""


@dataclass(frozen=True)
class RecordFile:
    role: str  # sub | pub
    records: np.ndarray  # RECORD_DTYPE

    def __len__(self) -> int:
        return len(self.records)

    @property
    def latency_ns(self) -> np.ndarray:
        """One-way latency per sample (subscriber files)."""
        return self.records["t_recv_ns"] - self.records["t_send_ns"]


def read_records(path: Path | str) -> RecordFile:
    """Header checked; a trailing partial record (a killed probe) is ignored."""
    data = Path(path).read_bytes()
    if len(data) < HEADER.size:
        raise RecordFileError(f"{path}: {len(data)} bytes, not a linklab record file "
                              f"(shorter than its header of {HEADER.size} bytes)")
    magic, record_size, role = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise RecordFileError(f"{path}: not a linklab record file (magic {magic!r})")
    if record_size != RECORD_DTYPE.itemsize:
        raise RecordFileError(
            f"{path}: record size {record_size}, expected {RECORD_DTYPE.itemsize}")
    if role not in ROLES:
        raise RecordFileError(f"{path}: unknown role {role}")
    body = len(data) - HEADER.size
    whole = body - body % record_size
    records = np.frombuffer(data, dtype=RECORD_DTYPE, count=whole // record_size,
                            offset=HEADER.size)
    return RecordFile(role=ROLES[role], records=records)
