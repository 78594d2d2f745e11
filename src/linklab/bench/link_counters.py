"""What the link and the hosts counted during a cell, from the bed's two snapshots
(Bed.snapshot: ``link`` -- its interfaces and stages -- and ``udp``, each host's
/proc/net/snmp Udp counters)."""

from __future__ import annotations

from typing import Any


def _part(snap: dict[str, Any], key: str) -> dict[str, Any]:
    """One part of a snapshot (``link``, ``udp``), empty when the bed has none."""
    return snap.get(key) or {}


def _interfaces_of(snap: dict, host: str) -> dict[str, Any]:
    return _part(snap, "link").get("interfaces", {}).get(host, {})


def _stage_sum(snap: dict[str, Any], kinds: tuple[str, ...], key: str) -> int:
    return sum(int(st.get(key) or 0) for st in _part(snap, "link").get("stages", [])
               if st.get("kind") in kinds)


def _if_bytes(snap: dict[str, Any], host: str) -> int:
    return sum(int(v.get("rx_bytes") or 0) + int(v.get("tx_bytes") or 0)
               for v in _interfaces_of(snap, host).values())


def _udp_delta(before: dict[str, Any], after: dict[str, Any], hosts: tuple[str, ...],
               key: str) -> int | None:
    """A Udp counter's growth summed over ``hosts``; None when a host lacks it."""
    total = 0
    for host in hosts:
        b = _part(before, "udp").get(host, {}).get(key)
        a = _part(after, "udp").get(host, {}).get(key)
        if a is None or b is None:
            return None
        total += a - b
    return total


def counter_deltas(before: dict[str, Any], after: dict[str, Any],
                   pub_hosts: tuple[str, ...] = ("robot",),
                   sub_hosts: tuple[str, ...] = ("edge",)) -> dict[str, Any]:
    """What happened on the link during the cell, from two snapshots (Bed.snapshot).

    wire_bytes: rx + tx bytes of the link interfaces of the publishers' hosts;
    link_dropped/passed_packets: the loss and outage stages (all links, both directions);
    rate_dropped_packets: the rate limiters' drops (queue overflow);
    *_udp_*_errors: /proc/net/snmp Udp counters, summed over the subscribers' /
    publishers' hosts.
    """
    out: dict[str, Any] = {}
    present = [h for h in pub_hosts if _interfaces_of(after, h)]
    out["wire_bytes"] = (sum(_if_bytes(after, h) - _if_bytes(before, h) for h in present)
                         if present else None)
    out["link_dropped_packets"] = (_stage_sum(after, ("loss", "outage"), "dropped_packets")
                                   - _stage_sum(before, ("loss", "outage"), "dropped_packets"))
    out["link_passed_packets"] = (_stage_sum(after, ("loss",), "passed_packets")
                                  - _stage_sum(before, ("loss",), "passed_packets"))
    out["rate_dropped_packets"] = (_stage_sum(after, ("rate",), "dropped_packets")
                                   - _stage_sum(before, ("rate",), "dropped_packets"))
    for role, hosts, key in (("sub", sub_hosts, "RcvbufErrors"), ("pub", pub_hosts, "RcvbufErrors"),
                             ("pub", pub_hosts, "SndbufErrors")):
        column = f"{role}_udp_{key.replace('bufErrors', 'buf_errors').lower()}"
        out[column] = _udp_delta(before, after, hosts, key)
    return out


def interface_deltas(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """Bytes and packets each interface of each host carried during the cell."""
    out = []
    hosts = _part(after, "link").get("interfaces", {})
    for host, interfaces in hosts.items():
        for ifname, a in interfaces.items():
            b = _interfaces_of(before, host).get(ifname, {})
            out.append({"host": host, "interface": ifname, **{
                key: int(a.get(key) or 0) - int(b.get(key) or 0)
                for key in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets")}})
    return out
