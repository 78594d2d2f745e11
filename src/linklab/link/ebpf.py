"""The eBPF datapath's tc program, as BPF assembly text (pure; ``datapath.py`` loads it).

What Cilium and Calico-eBPF do on a node (001 §V-B, Fig. 7: "Packet forwarding ... is
executed directly in the kernel via eBPF programs", bypassing "the costly
iptables/conntrack rule chain"), reduced to its core: a ``cls_bpf`` classifier in
direct-action mode on the ingress of each pod's node-side veth and of the vxlan device.
For an IPv4 packet whose destination is in the program's table it calls
``bpf_redirect_neigh(ifindex)`` (helper 152): the kernel looks the destination up in the
node's routing table, fills in the Ethernet addresses from the neighbour table and
transmits on that device -- the packet never enters the node's IP stack, so no
netfilter hook (PREROUTING, FORWARD, POSTROUTING) and no conntrack sees it. Anything
else (ARP, a destination not in the table) goes on to the stack (TC_ACT_OK).

The table is compiled into the program (one program per node; pods and devices are
fixed while a run is up): a pod's /32 -> its veth, another node's pod subnet -> the
vxlan device (or, without an overlay, the underlay port). Assembled with ``llvm-mc
-triple bpf`` into an ELF object that ``tc filter add ... bpf da obj FILE sec
classifier`` loads (libbpf checks and the kernel verifier accepts it: every packet
read is behind a bounds check against ``data_end``).
"""

from __future__ import annotations

import ipaddress
import sys

SECTION = "classifier"
# struct __sk_buff offsets (include/uapi/linux/bpf.h)
SKB_PROTOCOL = 16
SKB_DATA = 76
SKB_DATA_END = 80
ETHERNET_HEADER = 14
IPV4_DADDR = 16          # within the IPv4 header
BPF_FUNC_REDIRECT_NEIGH = 152
TC_ACT_OK = 0


def _host_order(raw: bytes) -> int:
    """A 32-bit field as a load from packet memory gives it (the CPU's byte order),
    as the signed immediate BPF assembly takes."""
    value = int.from_bytes(raw.ljust(4, b"\0"), sys.byteorder)
    return value - (1 << 32) if value >= 1 << 31 else value


def redirect_program(table: list[tuple[str, int]]) -> str:
    """BPF assembly for a tc classifier redirecting by IPv4 destination.

    ``table``: (destination network, e.g. "10.244.1.11/32" or "10.244.100.0/24",
    ifindex of the device to send it out of). Longest prefix first, as a route lookup.
    """
    ip_protocol = _host_order((0x0800).to_bytes(2, "big"))   # skb->protocol is __be16
    lines = [
        f"\t.section\t{SECTION},\"ax\",@progbits",
        "\t.globl\tlinklab_redir",
        "\t.type\tlinklab_redir,@function",
        "linklab_redir:",
        "\tr6 = r1",
        f"\tr2 = *(u32 *)(r6 + {SKB_PROTOCOL})",
        f"\tif r2 != {ip_protocol} goto pass",
        f"\tr2 = *(u32 *)(r6 + {SKB_DATA})",
        f"\tr3 = *(u32 *)(r6 + {SKB_DATA_END})",
        "\tr4 = r2",
        f"\tr4 += {ETHERNET_HEADER + 20}",
        "\tif r4 > r3 goto pass",
        f"\tr7 = *(u32 *)(r2 + {ETHERNET_HEADER + IPV4_DADDR})",
    ]
    ordered = sorted(((ipaddress.IPv4Network(net), ifindex) for net, ifindex in table),
                     key=lambda item: -item[0].prefixlen)
    targets: dict[int, str] = {}
    for network, ifindex in ordered:
        label = targets.setdefault(ifindex, f"to_{ifindex}")
        lines += ["\tw5 = w7",
                  f"\tw5 &= {_host_order(network.netmask.packed)}",
                  f"\tif w5 == {_host_order(network.network_address.packed)} goto {label}"]
    lines += ["pass:", f"\tr0 = {TC_ACT_OK}", "\texit"]
    for ifindex, label in targets.items():
        lines += [f"{label}:", f"\tr1 = {int(ifindex)}", "\tgoto redirect"]
    lines += ["redirect:", "\tr2 = 0", "\tr3 = 0", "\tr4 = 0",
              f"\tcall {BPF_FUNC_REDIRECT_NEIGH}", "\texit",
              "\t.size\tlinklab_redir, .-linklab_redir",
              "\t.section\tlicense,\"aw\",@progbits",
              "_license:", "\t.asciz\t\"GPL\"", ""]
    return "\n".join(lines)
