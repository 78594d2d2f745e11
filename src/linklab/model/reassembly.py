"""The kernel's IP reassembly memory under loss: when fragmentation turns into total loss.

An extension to cause (1) of 000 IV-C, found while measuring (docs/RESULTS.md): a UDP
datagram that lost one IP fragment is not dropped at once. Linux keeps its other
fragments for net.ipv4.ipfrag_time (30 s) in a per-namespace pool capped at
net.ipv4.ipfrag_high_thresh (4 MiB). Once incomplete datagrams fill the pool, new
fragments are dropped and almost no fragmented datagram is reassembled, so delivery
collapses far below p^N_IP. Measured with Cyclone DDS (14720 B datagrams, 10
fragments) at PER 1 %: 132 KiB samples at 30 Hz arrived 8.6 % of the time against
39 % predicted; with ipfrag_time = 1 s, or with 1472 B messages (no fragments), the
measurement matched the p^N law again.

The estimate below counts payload bytes only; the kernel charges each fragment's
buffer (truesize), which is larger, so a value near the threshold already overflows.
"""

from __future__ import annotations

LINUX_IPFRAG_HIGH_THRESH = 4 * 1024 * 1024  # net.ipv4.ipfrag_high_thresh default [B]
LINUX_IPFRAG_TIME_S = 30.0  # net.ipv4.ipfrag_time default [s]


def incomplete_datagram_rate(datagrams_per_s: float, packets_per_datagram: int,
                             p: float) -> float:
    """Datagrams per second that lose at least one of their IP fragments: rate * (1 - p^N)."""
    if packets_per_datagram <= 1:
        return 0.0  # not fragmented: a lost packet frees nothing it did not hold
    return datagrams_per_s * (1.0 - p**packets_per_datagram)


def held_reassembly_bytes(datagrams_per_s: float, datagram_bytes: float,
                          packets_per_datagram: int, p: float,
                          timeout_s: float = LINUX_IPFRAG_TIME_S) -> float:
    """Bytes of incomplete datagrams held for reassembly in steady state (payload only).

    Each incomplete datagram keeps its arrived fragments, on average a share
    (p - p^N) / (1 - p^N) of its bytes, for ``timeout_s`` seconds.
    """
    n = packets_per_datagram
    incomplete = incomplete_datagram_rate(datagrams_per_s, n, p)
    if incomplete == 0.0:
        return 0.0
    arrived_share = (p - p**n) / (1.0 - p**n)
    return incomplete * datagram_bytes * arrived_share * timeout_s


def reassembly_overflows(held_bytes: float,
                         high_thresh: float = LINUX_IPFRAG_HIGH_THRESH) -> bool:
    return held_bytes > high_thresh
