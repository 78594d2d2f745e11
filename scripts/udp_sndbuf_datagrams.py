"""How many UDP datagrams a socket's default send buffer holds while the link drains them
slowly: the latency model's CYCLONE_SOCKET_DATAGRAMS (tune/latencycheck.py), the queue a
Cyclone DDS writer's thread fills before sendmsg blocks.

    sudo .venv/bin/python scripts/udp_sndbuf_datagrams.py [--size 1472]

Two scratch namespaces joined by a veth pair whose sending side has a tbf of 8 kbit/s and a
large queue, so nothing leaves in the meantime; a non-blocking UDP socket with the kernel's
default send buffer (net.core.wmem_default) sends datagrams of --size bytes until EAGAIN.
Prints the count, the buffer, and the buffer per datagram (the skb's truesize). The
namespaces go away at the end.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys

from linklab.emu.tap_wire import scratch_namespaces

NS_A, NS_B = f"llsnd{os.getpid()}a", f"llsnd{os.getpid()}b"


def sh(*args: str) -> None:
    subprocess.run(args, check=True)


def send(size: int) -> int:
    """Datagrams of ``size`` until the send buffer is full; prints what it held."""
    with open("/proc/sys/net/core/wmem_default") as f:
        default = int(f.read())
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setblocking(False)
    sent = 0
    try:
        while sent < 100_000:
            s.sendto(b"x" * size, ("10.99.0.2", 9))
            sent += 1
    except BlockingIOError:
        pass
    buffer = s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
    print(f"{sent} datagrams of {size} B before EAGAIN; SO_SNDBUF {buffer} B "
          f"(net.core.wmem_default {default}); {buffer / max(sent, 1):.0f} B each")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1472)
    parser.add_argument("--send", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.send:   # inside the sending namespace
        return send(args.size)
    with scratch_namespaces((NS_A, NS_B)):
        sh("ip", "-n", NS_A, "link", "add", "a0", "type", "veth", "peer", "b0", "netns", NS_B)
        sh("ip", "-n", NS_A, "addr", "add", "10.99.0.1/24", "dev", "a0")
        sh("ip", "-n", NS_B, "addr", "add", "10.99.0.2/24", "dev", "b0")
        sh("ip", "-n", NS_A, "link", "set", "a0", "up")
        sh("ip", "-n", NS_B, "link", "set", "b0", "up")
        sh("ip", "-n", NS_A, "neigh", "add", "10.99.0.2", "lladdr", "02:00:00:00:00:02",
           "dev", "a0")
        sh("tc", "-n", NS_A, "qdisc", "add", "dev", "a0", "root", "tbf", "rate", "8kbit",
           "burst", "1600", "limit", "100mb")
        subprocess.run(["ip", "netns", "exec", NS_A, sys.executable, __file__, "--size",
                        str(args.size), "--send"], check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
