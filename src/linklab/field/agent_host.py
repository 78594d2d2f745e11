"""What linklab's agent (agent.py) reads of its host: who it is, the route and interface
towards a peer, byte and UDP counters, sysctls and a socket's drops, from /proc and /sys.

Copied to every host of a field run beside agent.py (field/shell.py ``AGENT_FILES``);
standard library only, Python 3.8+, never imports linklab.
"""

from __future__ import annotations

import os
import socket
import struct
import sys

IP_MTU = 14   # <linux/in.h>


def read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return ""


def to_int(text: str, base: int = 10):
    try:
        return int(text, base)
    except ValueError:
        return None


def identity() -> dict:
    """Python, boot id (one machine: one clock), host name, machine, kernel and pid."""
    boot_id = read("/proc/sys/kernel/random/boot_id")
    return {"python": sys.version.split()[0], "boot_id": boot_id,
            "hostname": socket.gethostname(), "machine": os.uname().machine,
            "kernel": os.uname().release, "pid": os.getpid()}


def device_of(address: str):
    """The interface holding ``address`` (SIOCGIFADDR on each interface)."""
    import fcntl

    for name in sorted(os.listdir("/sys/class/net")):
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            ifreq = struct.pack("256s", name.encode()[:15])
            got = fcntl.ioctl(probe.fileno(), 0x8915, ifreq)   # SIOCGIFADDR
            if socket.inet_ntoa(got[20:24]) == address:
                return name
        except OSError:
            continue
        finally:
            probe.close()
    return None


def route(to: str) -> dict:
    """The source address, interface and route MTU towards ``to``."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect((to, 9))
        source = probe.getsockname()[0]
        route_mtu = probe.getsockopt(socket.IPPROTO_IP, IP_MTU)
    except OSError as error:
        return {"ok": False, "error": f"no route to {to}: {error.strerror}"}
    finally:
        probe.close()
    device = device_of(source)
    out = {"source": source, "device": device, "route_mtu": route_mtu}
    if device:
        out["mtu"] = to_int(read(f"/sys/class/net/{device}/mtu"))
        flags = to_int(read(f"/sys/class/net/{device}/flags"), base=16)
        out["multicast_flag"] = bool(flags is not None and flags & 0x1000)
    return out


def counters(names: list) -> dict:
    """Byte counters of the interfaces ``names`` and the UDP line of /proc/net/snmp."""
    devices = {}
    for line in read("/proc/net/dev").splitlines()[2:]:
        name, _, rest = line.partition(":")
        name = name.strip()
        if name in names:
            v = [int(x) for x in rest.split()]
            devices[name] = {"rx_bytes": v[0], "rx_packets": v[1], "tx_bytes": v[8],
                             "tx_packets": v[9]}
    rows = [line.split()[1:] for line in read("/proc/net/snmp").splitlines()
            if line.startswith("Udp:")]
    udp = {}
    if len(rows) >= 2:
        pairs = zip(rows[0], rows[1])  # noqa: B905 -- Python 3.8 on the hosts
        udp = {k: int(v) for k, v in pairs if v.lstrip("-").isdigit()}
    return {"interfaces": devices, "udp": udp}


def sysctls(names: list) -> dict:
    """Each sysctl's value, whitespace collapsed (None: not readable)."""
    values = {}
    for name in names:
        text = read("/proc/sys/" + name.replace(".", "/"))
        values[name] = " ".join(text.split()) if text else None
    return values


def socket_drops(port: int):
    """Datagrams the kernel dropped for the UDP socket on ``port`` (/proc/net/udp, last
    column); None when there is none."""
    hex_port = f"{port:04X}"
    for line in read("/proc/self/net/udp").splitlines()[1:]:
        fields = line.split()
        if len(fields) > 12 and fields[1].endswith(":" + hex_port):
            return int(fields[-1])
    return None
