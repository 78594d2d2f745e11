"""Put the record files of a field cell on one clock (clock.py says how well).

Each probe stamps with its own host's CLOCK_MONOTONIC. A subscriber's file holds t_send
(the publisher's clock, carried in the sample) and t_recv (its own); a publisher's holds
t_send. The runner's clock (the controller's CLOCK_MONOTONIC) is the reference: it ends
cells and bins reception rates. ``to_reference`` adds to each timestamp the offset
reference - host at that moment (clock.Drift: linear between the measurements before and
after the cell). The files as recorded are kept under ``field/`` beside them.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

from linklab.probes.records import HEADER, MAGIC, RECORD_DTYPE, read_records

Offset = Callable[[np.ndarray], np.ndarray]   # host time (ns) -> reference - host (ns)


def to_reference(path: Path, role: str, own: Offset | None, sender: Offset | None) -> int:
    """Rewrite ``path`` on the reference clock: t_recv with ``own`` (the file's host),
    t_send with ``sender`` (a subscriber's publisher; for a publisher its own host).
    A None offset leaves that column as it is (already the reference clock). Returns the
    number of records. The original goes to ``path.parent / 'field' / path.name``."""
    record_file = read_records(path)
    records = record_file.records.copy()
    if own is None and sender is None:
        return len(records)
    keep = path.parent / "field"
    keep.mkdir(exist_ok=True)
    shutil.copy2(path, keep / path.name)
    if len(records):
        if sender is not None:
            t = records["t_send_ns"].astype(np.int64)
            records["t_send_ns"] = t + np.round(sender(t)).astype(np.int64)
        if own is not None and role == "sub":
            t = records["t_recv_ns"].astype(np.int64)
            records["t_recv_ns"] = t + np.round(own(t)).astype(np.int64)
    role_code = 1 if record_file.role == "pub" else 0
    tmp = path.with_suffix(".bin.tmp")
    with open(tmp, "wb") as out:
        out.write(HEADER.pack(MAGIC, RECORD_DTYPE.itemsize, role_code))
        out.write(records.tobytes())
    tmp.replace(path)
    return len(records)


def latencies_ms(path: Path) -> np.ndarray:
    """t_recv - t_send of a subscriber's file, in ms."""
    records = read_records(path).records
    return (records["t_recv_ns"].astype(np.int64) - records["t_send_ns"].astype(np.int64)) / 1e6
