"""Small UDP measurements across namespaces, from one Python process.

A socket belongs to the network namespace it was created in, so this process
enters a namespace only to create a socket and returns at once. Each datagram
carries its sequence number and send time (CLOCK_REALTIME, ns); the receiver takes
the kernel's receive timestamp (SO_TIMESTAMPNS, also CLOCK_REALTIME), so one-way
delay excludes the time Python takes to get to the packet.

The sender's own stamp is taken before ``sendto``: if the process is preempted in
between, the datagram reaches the link later than its stamp says. ``tx_ns`` holds the
kernel's software transmit timestamp of each datagram (SO_TIMESTAMPING, taken when the
device -- a TAP, a veth -- is handed the frame), i.e. when it really reached the link.
"""

from __future__ import annotations

import ctypes
import os
import socket
import struct
import time
from dataclasses import dataclass

import numpy as np

CLONE_NEWNET = 0x40000000
SO_TIMESTAMPNS = 35
SO_TIMESTAMPING = 37
SO_RCVBUFFORCE = 33
IP_RECVERR = 11
# SOF_TIMESTAMPING_TX_SOFTWARE | _SOFTWARE | _OPT_ID | _OPT_TSONLY (linux/net_tstamp.h)
TX_TIMESTAMPING = (1 << 1) | (1 << 4) | (1 << 7) | (1 << 11)
SO_EE_ORIGIN_TIMESTAMPING = 4
_EXTENDED_ERR = struct.Struct("=IBBBBII")  # struct sock_extended_err
_HEADER = struct.Struct("<Qq")
_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def udp_socket_in(netns: str, rcvbuf: int = 32 << 20) -> socket.socket:
    """A UDP socket living in namespace ``netns`` (/run/netns/NAME)."""
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{netns}", os.O_RDONLY)
    try:
        _setns(target)
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        finally:
            _setns(own)
    finally:
        os.close(own)
        os.close(target)
    sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf)
    # report a datagram the sending host dropped (full device queue) as ENOBUFS
    sock.setsockopt(socket.IPPROTO_IP, IP_RECVERR, 1)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    return sock


@dataclass
class UdpRun:
    sent: int
    left: np.ndarray           # bool per sequence number: the sending host sent it
    send_ns: np.ndarray        # per sequence number, CLOCK_REALTIME
    received: np.ndarray       # bool per sequence number
    recv_ns: np.ndarray        # kernel receive time per sequence number (0 if lost)
    arrival_order: np.ndarray  # sequence numbers in the order they arrived
    recv_bytes: int            # UDP payload bytes received
    tx_ns: np.ndarray | None = None  # kernel transmit time per sequence number (0: none)

    @property
    def one_way_s(self) -> np.ndarray:
        ok = self.received
        return (self.recv_ns[ok] - self.send_ns[ok]) / 1e9


def _drain(sock: socket.socket, run: UdpRun, order: list[int]) -> None:
    while True:
        try:
            data, ancillary, _, _ = sock.recvmsg(65536, 64, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        seq, _ = _HEADER.unpack_from(data)
        stamp = 0
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", payload[:16])
                stamp = sec * 1_000_000_000 + nsec
        if seq < run.sent and not run.received[seq]:
            run.received[seq] = True
            run.recv_ns[seq] = stamp or time.time_ns()
            order.append(seq)
            run.recv_bytes += len(data)


def _drain_tx(sock: socket.socket, run: UdpRun, keys: list[int]) -> None:
    """Take the transmit timestamps off the sender's error queue (key = send number)."""
    assert run.tx_ns is not None
    while True:
        try:
            _, ancillary, _, _ = sock.recvmsg(1, 256, socket.MSG_ERRQUEUE | socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return
        stamp = key = None
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPING and len(data) >= 16:
                sec, nsec = struct.unpack_from("qq", data)
                stamp = sec * 1_000_000_000 + nsec
            elif level == socket.IPPROTO_IP and kind == IP_RECVERR and \
                    len(data) >= _EXTENDED_ERR.size:
                _, origin, _, _, _, _, ee_data = _EXTENDED_ERR.unpack_from(data)
                if origin == SO_EE_ORIGIN_TIMESTAMPING:
                    key = ee_data
        if stamp and key is not None and key < len(keys) and keys[key] < run.sent:
            run.tx_ns[keys[key]] = stamp


def udp_run(sender: socket.socket, receiver: socket.socket, destination: tuple[str, int],
            count: int, rate_pps: float, size: int, linger_s: float = 0.5,
            send_at_ns: np.ndarray | None = None, tx_timestamps: bool = False) -> UdpRun:
    """Send ``count`` datagrams of ``size`` bytes at ``rate_pps`` (paced in small
    bursts) and collect what arrives until ``linger_s`` after the last one. With
    ``tx_timestamps``, also the kernel's transmit time of each datagram (``tx_ns``)."""
    size = max(size, _HEADER.size)
    payload = bytearray(size)
    run = UdpRun(count, np.zeros(count, bool), np.zeros(count, np.int64), np.zeros(count, bool),
                 np.zeros(count, np.int64), np.zeros(0, np.int64), 0)
    keys: list[int] = []  # send number -> sequence number
    if tx_timestamps:
        sender.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING, TX_TIMESTAMPING)
        run.tx_ns = np.zeros(count, np.int64)
    order: list[int] = []
    receiver.setblocking(False)
    interval_ns = 1e9 / rate_pps
    start = time.monotonic_ns()
    for seq in range(count):
        due = start + int(seq * interval_ns)
        while (now := time.monotonic_ns()) < due:
            _drain(receiver, run, order)
            if due - now > 200_000:
                time.sleep(0.0001)
        stamp = time.time_ns()
        _HEADER.pack_into(payload, 0, seq, stamp)
        run.send_ns[seq] = stamp
        keys.append(seq)  # (a failed send uses up its timestamp key too)
        try:
            sender.sendto(payload, destination)
            run.left[seq] = True
        except OSError:
            pass  # ENOBUFS: dropped in the sending host, never reached the link
        if seq % 32 == 0:
            _drain(receiver, run, order)
            if tx_timestamps:
                _drain_tx(sender, run, keys)
    end = time.monotonic() + linger_s
    while time.monotonic() < end:
        _drain(receiver, run, order)
        if tx_timestamps:
            _drain_tx(sender, run, keys)
        time.sleep(0.0005)
    run.arrival_order = np.array(order, np.int64)
    return run
