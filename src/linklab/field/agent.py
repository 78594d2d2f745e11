"""linklab's agent on one host: UDP measurements between hosts, driven over stdin/stdout.

This file is copied to every host of a field run (over SSH) with agent_host.py and
procwrap.py and runs there as ``python3 agent.py [--pids DIR]``; it uses the standard
library (and those two files beside it) only and Python 3.8+, so a robot with ROS 2 needs
nothing else. It must not import linklab.

Protocol: one JSON object per line on stdin (``{"op": ..., ...}``), one JSON reply per
line on stdout (``{"ok": true, ...}`` or ``{"ok": false, "error": "..."}``).

The agent never outlives its controller (procwrap.py ``lifeline``): ``quit`` or EOF on
stdin, the loss of its parent process, SIGINT, SIGTERM or SIGHUP end it at once, even in
the middle of a stream or a ramp step; ``--pids DIR`` also registers it with the host's
keeper.

One UDP socket (bound by ``bind``) carries every measurement; a receiver thread answers
and records what arrives, stamped by the kernel (SO_TIMESTAMPNS, CLOCK_REALTIME, turned
into CLOCK_MONOTONIC -- the probes' clock -- with an offset read once at bind). Packets
start with MAGIC and the session id the controller gave both agents; others are ignored.

- probe ``P`` (seq, t1): recorded (loss, reordering, duplicates) and echoed at once as
  ``E`` (seq, echo seq, t1, t2 = kernel receive time, t3 = send time): the sender gets the
  round trip without the reflector's turnaround, (t4 - t1) - (t3 - t2), and the echo
  sequence gives the other direction's losses.
- clock ``C``/``R``: NTP's four timestamps (RFC 5905 §8), for the offset between hosts.
- ramp data ``D`` (step, seq, send offset): counted per step by the receiver.
- MTU ``M`` (size, nonce), sent with DF set: answered by a small ``A``.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import sys
import threading
import time
from array import array

import agent_host  # beside this file (here and on the host): what it reads of its host

MAGIC = b"LLF1"
HEAD = struct.Struct("!4sIc")          # magic, session, type
PROBE = struct.Struct("!Iq")            # seq, t1
ECHO = struct.Struct("!IIqqq")          # seq, echo seq, t1, t2, t3
CLOCK = struct.Struct("!Iqqq")          # id, t1, t2, t3
DATA = struct.Struct("!HIq")            # step, seq, offset from the step's start (ns)
MTU = struct.Struct("!II")              # size, nonce
SO_TIMESTAMPNS = 35                     # Linux <asm-generic/socket.h>
IP_MTU_DISCOVER, IP_PMTUDISC_PROBE = 10, 3   # <linux/in.h>
BUFFER_BYTES = 4 * 1024 * 1024
NO_RTT = 0xFFFFFFFF
IP_UDP_HEADERS = 28


def mono_ns() -> int:
    return time.monotonic_ns()


class Agent:
    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self.session = 0
        self.real_to_mono = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.reset_probes()
        self.clock_replies: dict[int, tuple[int, int, int, int]] = {}
        self.steps: dict[int, list[tuple[int, int, int]]] = {}
        self.acks: set[tuple[int, int]] = set()

    # --- receiving ----------------------------------------------------------------------

    def reset_probes(self, expected: int = 0) -> None:
        self.got = bytearray(0)           # probes received here, by seq
        self.max_seq = -1
        self.reordered = 0
        self.duplicates = 0
        self.echoes_sent = 0
        self.rtt_us = array("I", [NO_RTT]) * expected   # round trips of our probes, by seq
        self.echo_got = bytearray(expected)              # the peer's echoes we got, by echo seq
        self.max_echo = -1
        self.echoes_reordered = 0

    def receive_loop(self) -> None:
        sock = self.sock
        assert sock is not None
        sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                data, anc, _flags, peer = sock.recvmsg(65536, 64)
            except socket.timeout:  # noqa: UP041 -- Python 3.8 on the hosts: not TimeoutError
                continue
            except OSError:
                if self.stop.is_set():
                    return
                continue
            t_rx = None
            for level, kind, value in anc:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(value) >= 16:
                    sec, nsec = struct.unpack("qq", value[:16])
                    t_rx = sec * 1_000_000_000 + nsec + self.real_to_mono
            if t_rx is None:
                t_rx = mono_ns()
            if len(data) < HEAD.size:
                continue
            magic, session, kind = HEAD.unpack_from(data)
            if magic != MAGIC or session != self.session:
                continue
            self.handle(kind, data[HEAD.size:], peer, t_rx)

    def send(self, kind: bytes, body: bytes, peer, pad_to: int = 0) -> None:
        packet = HEAD.pack(MAGIC, self.session, kind) + body
        if len(packet) < pad_to:
            packet += bytes(pad_to - len(packet))
        assert self.sock is not None
        self.sock.sendto(packet, peer)

    def answer(self, kind: bytes, body: bytes, peer) -> None:
        """A reply to what arrived; one that cannot be sent is lost, as on the wire."""
        try:
            self.send(kind, body, peer)
        except OSError:
            pass

    def handle(self, kind: bytes, body: bytes, peer, t_rx: int) -> None:
        if kind == b"P":
            seq, t1 = PROBE.unpack_from(body)
            with self.lock:
                if seq >= len(self.got):
                    self.got.extend(bytes(seq + 1 - len(self.got) + 4096))
                if self.got[seq]:
                    self.duplicates += 1
                    return
                self.got[seq] = 1
                if seq < self.max_seq:
                    self.reordered += 1
                self.max_seq = max(self.max_seq, seq)
                echo_seq = self.echoes_sent
                self.echoes_sent += 1
            self.answer(b"E", ECHO.pack(seq, echo_seq, t1, t_rx, mono_ns()), peer)
        elif kind == b"E":
            seq, echo_seq, t1, t2, t3 = ECHO.unpack_from(body)
            rtt = (t_rx - t1) - (t3 - t2)
            with self.lock:
                if seq < len(self.rtt_us) and self.rtt_us[seq] == NO_RTT:
                    self.rtt_us[seq] = max(0, min(NO_RTT - 1, rtt // 1000))
                if echo_seq < len(self.echo_got) and not self.echo_got[echo_seq]:
                    self.echo_got[echo_seq] = 1
                    if echo_seq < self.max_echo:
                        self.echoes_reordered += 1
                    self.max_echo = max(self.max_echo, echo_seq)
        elif kind == b"C":
            ident, t1, _t2, _t3 = CLOCK.unpack_from(body)
            self.answer(b"R", CLOCK.pack(ident, t1, t_rx, mono_ns()), peer)
        elif kind == b"R":
            ident, t1, t2, t3 = CLOCK.unpack_from(body)
            with self.lock:
                self.clock_replies.setdefault(ident, (t1, t2, t3, t_rx))
        elif kind == b"D":
            step, _seq, offset = DATA.unpack_from(body)
            with self.lock:
                self.steps.setdefault(step, []).append((offset, t_rx, len(body) + HEAD.size))
        elif kind == b"M":
            size, nonce = MTU.unpack_from(body)
            self.answer(b"A", MTU.pack(size, nonce), peer)
        elif kind == b"A":
            with self.lock:
                self.acks.add(MTU.unpack_from(body))

    # --- operations (one per command) ---------------------------------------------------

    def op_hello(self, msg: dict) -> dict:
        return agent_host.identity()

    def op_bind(self, msg: dict) -> dict:
        self.session = int(msg["session"])
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        applied = {}
        for name, option in (("rcvbuf", socket.SO_RCVBUF), ("sndbuf", socket.SO_SNDBUF)):
            try:
                sock.setsockopt(socket.SOL_SOCKET, option, BUFFER_BYTES)
            except OSError:
                pass
            applied[name] = sock.getsockopt(socket.SOL_SOCKET, option)
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        sock.bind((msg.get("address") or "0.0.0.0", int(msg.get("port") or 0)))
        # CLOCK_REALTIME (kernel receive stamps) -> CLOCK_MONOTONIC: the closest of a few reads
        best = None
        for _ in range(5):
            a = mono_ns()
            r = time.time_ns()
            b = mono_ns()
            if best is None or b - a < best[0]:
                best = (b - a, (a + b) // 2 - r)
        self.real_to_mono = best[1]
        self.sock = sock
        threading.Thread(target=self.receive_loop, daemon=True).start()
        return {"port": sock.getsockname()[1], "buffers": applied}

    def op_route(self, msg: dict) -> dict:
        """The source address, interface and route MTU towards ``to``."""
        return agent_host.route(msg["to"])

    def op_clock(self, msg: dict) -> dict:
        """``count`` NTP exchanges with the peer: [t1, t2, t3, t4] each (ns)."""
        peer = _peer(msg)
        count, interval = int(msg.get("count", 32)), float(msg.get("interval_s", 0.005))
        with self.lock:
            self.clock_replies = {}
        for ident in range(count):
            self.send(b"C", CLOCK.pack(ident, mono_ns(), 0, 0), peer)
            time.sleep(interval)
        deadline = time.monotonic() + float(msg.get("wait_s", 1.0))
        while time.monotonic() < deadline and len(self.clock_replies) < count:
            time.sleep(0.01)
        with self.lock:
            samples = [list(v) for _k, v in sorted(self.clock_replies.items())]
        return {"samples": samples, "sent": count}

    def op_stream(self, msg: dict) -> dict:
        """Probes at ``rate_hz`` for ``duration_s``; round trips and the echoes that came."""
        peer = _peer(msg)
        rate, duration = float(msg["rate_hz"]), float(msg["duration_s"])
        size = max(HEAD.size + PROBE.size, int(msg.get("size", 64)))
        total = int(rate * duration)
        with self.lock:
            self.reset_probes(total)
        _sent, errors, elapsed = _paced(
            total, rate,
            lambda seq, _start: self.send(b"P", PROBE.pack(seq, mono_ns()), peer, pad_to=size))
        time.sleep(float(msg.get("drain_s", 1.0)))
        with self.lock:
            rtt = self.rtt_us.tobytes() if sys.byteorder == "little" else _swapped(self.rtt_us)
            echoes = bytes(self.echo_got)
            echoes_reordered = self.echoes_reordered
        return {"sent": total, "send_errors": errors, "elapsed_s": elapsed,
                "echoes_reordered": echoes_reordered, "socket_drops": self.socket_drops(),
                "rtt_us": base64.b64encode(rtt).decode(),
                "echoes": base64.b64encode(echoes).decode()}

    def op_probe_report(self, msg: dict) -> dict:
        """What arrived here of the peer's probes (received by seq, reordering, echoes)."""
        with self.lock:
            got = bytes(self.got[:self.max_seq + 1])
            out = {"received": base64.b64encode(got).decode(), "reordered": self.reordered,
                   "duplicates": self.duplicates, "echoes_sent": self.echoes_sent}
            self.got = bytearray(0)
            self.max_seq, self.reordered, self.duplicates, self.echoes_sent = -1, 0, 0, 0
        out["socket_drops"] = self.socket_drops()
        return out

    def op_send(self, msg: dict) -> dict:
        """One ramp step: ``size``-byte IP packets at ``rate_bps`` for ``duration_s``."""
        peer = _peer(msg)
        rate, duration = float(msg["rate_bps"]), float(msg["duration_s"])
        size = int(msg["size"]) - IP_UDP_HEADERS
        step = int(msg["step"])
        pps = rate / ((size + IP_UDP_HEADERS) * 8)
        total = max(1, int(pps * duration))
        sent, errors, elapsed = _paced(
            total, pps, lambda seq, start: self.send(
                b"D", DATA.pack(step, seq, mono_ns() - start), peer, pad_to=size),
            slack_ns=200_000)
        return {"sent": sent, "send_errors": errors, "elapsed_s": elapsed,
                "sent_bps": sent * (size + IP_UDP_HEADERS) * 8 / max(elapsed, 1e-9)}

    def op_step_report(self, msg: dict) -> dict:
        """A ramp step as received: packets, and the rate over its part after ``skip_s``."""
        step, skip_ns = int(msg["step"]), int(float(msg["skip_s"]) * 1e9)
        with self.lock:
            packets = self.steps.pop(step, [])
        late = sorted((t, n) for offset, t, n in packets if offset >= skip_ns)
        out = {"received": len(packets), "window_packets": len(late), "rate_bps": None}
        if len(late) >= 10 and late[-1][0] > late[0][0]:
            ip_bytes = sum(n + IP_UDP_HEADERS for _t, n in late[1:])
            out["rate_bps"] = ip_bytes * 8 / ((late[-1][0] - late[0][0]) / 1e9)
        return out

    def op_mtu(self, msg: dict) -> dict:
        """The largest IP packet (DF set) that reaches the peer: a binary search, each size
        tried ``tries`` times (one answer is enough: losses do not shrink the MTU)."""
        peer = _peer(msg)
        tries, wait_s = int(msg.get("tries", 10)), float(msg.get("wait_s", 0.5))
        sock = self.sock
        assert sock is not None
        sock.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_PROBE)
        nonce = int(msg.get("nonce", 1))

        def passes(size: int) -> bool:
            for _ in range(tries):
                try:
                    self.send(b"M", MTU.pack(size, nonce), peer, pad_to=size - IP_UDP_HEADERS)
                except OSError:
                    return False  # larger than this host's own interface allows
                time.sleep(0.005)
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline:
                with self.lock:
                    if (size, nonce) in self.acks:
                        return True
                time.sleep(0.01)
            return False

        try:
            low, high = int(msg.get("low", 576)), int(msg["high"])
            if not passes(low):
                return {"pmtu": None, "tested": [low, high]}
            if passes(high):
                return {"pmtu": high, "tested": [low, high]}
            while high - low > 1:        # low passes, high does not
                middle = (low + high) // 2
                if passes(middle):
                    low = middle
                else:
                    high = middle
            return {"pmtu": low, "tested": [int(msg.get("low", 576)), int(msg["high"])]}
        finally:
            sock.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, 0)

    def op_counters(self, msg: dict) -> dict:
        """Byte counters of ``devices`` and the UDP line of /proc/net/snmp."""
        return agent_host.counters(msg.get("devices", []))

    def op_exists(self, msg: dict) -> dict:
        """Which of ``paths`` exist (the discovery gate's ready files, field/gate_files.py)."""
        return {"exists": [path for path in msg["paths"] if os.path.exists(path)]}

    def op_touch(self, msg: dict) -> dict:
        """Create each of ``paths`` (the gate's start file for this host's publishers)."""
        for path in msg["paths"]:
            with open(path, "a"):
                pass
        return {"touched": len(msg["paths"])}

    def op_sysctl(self, msg: dict) -> dict:
        return {"values": agent_host.sysctls(msg["names"])}

    def op_multicast(self, msg: dict) -> dict:
        """Listen (``listen``: join the group on the interface of ``source``) or send."""
        group, port = msg["group"], int(msg["port"])
        if msg.get("listen"):
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("", port))
            member = socket.inet_aton(group) + socket.inet_aton(msg["source"])
            try:
                sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, member)
            except OSError as error:
                sock.close()
                return {"ok": False, "error": f"cannot join {group}: {error.strerror}"}
            self.mcast_sock = sock
            return {}
        if msg.get("collect"):
            sock = getattr(self, "mcast_sock", None)
            got = 0
            if sock is not None:
                sock.setblocking(False)
                while True:
                    try:
                        data = sock.recv(2048)
                    except OSError:
                        break
                    if data.startswith(MAGIC + struct.pack("!I", self.session)):
                        got += 1
                sock.close()
                self.mcast_sock = None
            return {"received": got}
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF,
                        socket.inet_aton(msg["source"]))
        errors = 0
        for _ in range(int(msg.get("count", 5))):
            try:
                sock.sendto(HEAD.pack(MAGIC, self.session, b"G"), (group, port))
            except OSError:
                errors += 1
            time.sleep(0.02)
        sock.close()
        return {"send_errors": errors}

    def reply(self, line: str) -> dict:
        """The reply to one command line."""
        try:
            msg = json.loads(line)
            handler = getattr(self, "op_" + str(msg.get("op")), None)
            if handler is None:
                return {"ok": False, "error": f"unknown op {msg.get('op')!r}"}
            reply = handler(msg)
            reply.setdefault("ok", True)
            return reply
        except Exception as error:  # noqa: BLE001 -- reported to the controller, one line
            return {"ok": False, "error": f"{type(error).__name__}: {error}"}

    def socket_drops(self) -> int | None:
        """Datagrams the kernel dropped for this socket (/proc/net/udp, last column)."""
        if self.sock is None:
            return None
        return agent_host.socket_drops(self.sock.getsockname()[1])


def _peer(msg: dict) -> tuple:
    """The command's ``peer``: (address, port)."""
    return msg["peer"][0], int(msg["peer"][1])


def _paced(total: int, per_s: float, send_one, slack_ns: int = 0) -> tuple:
    """Calls send_one(seq, start_ns) for seq 0..total-1 at ``per_s`` a second from the
    start (sleeping while the next one is due more than ``slack_ns`` later); returns
    (sent, send errors, elapsed s)."""
    sent = errors = 0
    start = mono_ns()
    for seq in range(total):
        due = start + int(seq * 1e9 / per_s)
        now = mono_ns()
        if due - now > slack_ns:
            time.sleep((due - now) / 1e9)
        try:
            send_one(seq, start)
            sent += 1
        except OSError:
            errors += 1
    return sent, errors, (mono_ns() - start) / 1e9


def _swapped(values: array) -> bytes:
    copy = array(values.typecode, values)
    copy.byteswap()
    return copy.tobytes()


def serve(args: list) -> int:
    import procwrap  # beside this file on the host: the agent's lifetime (``lifeline``)

    agent = Agent()
    return procwrap.lifeline(lambda line: json.dumps(agent.reply(line)), args)


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1:]))
