"""Small UDP measurements across namespaces, from one Python process.

A socket belongs to the network namespace it was created in, so this process
enters a namespace only to create a socket and returns at once. Each datagram
carries its sequence number and send time (CLOCK_REALTIME, ns); the receiver takes
the kernel's receive timestamp (SO_TIMESTAMPNS, also CLOCK_REALTIME), so one-way
delay excludes the time Python takes to get to the packet.
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
SO_RCVBUFFORCE = 33
IP_RECVERR = 11
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


def udp_run(sender: socket.socket, receiver: socket.socket, destination: tuple[str, int],
            count: int, rate_pps: float, size: int, linger_s: float = 0.5,
            send_at_ns: np.ndarray | None = None) -> UdpRun:
    """Send ``count`` datagrams of ``size`` bytes at ``rate_pps`` (paced in small
    bursts) and collect what arrives until ``linger_s`` after the last one."""
    size = max(size, _HEADER.size)
    payload = bytearray(size)
    run = UdpRun(count, np.zeros(count, bool), np.zeros(count, np.int64), np.zeros(count, bool),
                 np.zeros(count, np.int64), np.zeros(0, np.int64), 0)
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
        try:
            sender.sendto(payload, destination)
            run.left[seq] = True
        except OSError:
            pass  # ENOBUFS: dropped in the sending host, never reached the link
        if seq % 32 == 0:
            _drain(receiver, run, order)
    end = time.monotonic() + linger_s
    while time.monotonic() < end:
        _drain(receiver, run, order)
        time.sleep(0.0005)
    run.arrival_order = np.array(order, np.int64)
    return run
