"""Fan-out by unicast: one sample sent k times over one shared link (paper 002, IV-C).

002_d18906a16de1bd6a.txt, Table III: with one publisher and four subscribers, ROS 2
(Fast RTPS) sends each message to each subscriber in turn (Fig. 15 Wireshark capture),
so subscriber i receives it about (i-1) copy-times after the first. Its 45-byte message
is one datagram. Its measured step, about 10 ms per subscriber over 802.11a at 54
Mbit/s, is far more than the air time of a 146-byte frame (~22 us): per-send overhead of
that ns-3 set-up. ``fit_fanout_step`` recovers it from Table III; that is a fit, not a
check of the model.

What the model says, for samples of any size (checked against measured 1 -> k star cells
with ``linklab model-check``, scenarios/fanout-star.yaml):

* Fast DDS sends each datagram to every matched reader before the next datagram
  (StatefulWriter::deliver_sample_to_network selects all readers per fragment), so
  consecutive subscribers are one *datagram* copy apart, not one sample copy
  (``interleaved_step``); for a one-datagram sample the two are the same.
* On one shared link every subscriber's copy completes about k sample copy times after
  the sample starts (``shared_link_completion``): the fan-out shows as a latency that
  grows with k for every subscriber, not as a step between them.
* ``fanout_time``: when the last of k subscribers has its copy, k copy times.
"""

from __future__ import annotations

# 002 Table III: latency [ns] of one message; one subscriber vs nodes 1..4 of four.
TABLE_III_NS = {
    "Sensor": (614_292, (684_854, 10_645_701, 20_617_056, 30_396_675)),
    "Default": (639_480, (712_332, 10_706_034, 20_725_019, 30_793_318)),
    "Parameters": (647_597, (716_007, 10_724_211, 20_734_675, 31_384_246)),
}


def copy_time(wire_bytes: float, link_bits_per_s: float, per_copy_overhead_s: float = 0.0) -> float:
    """Seconds to put one copy of a sample on the link (serialization + fixed overhead)."""
    return wire_bytes * 8.0 / link_bits_per_s + per_copy_overhead_s


def fanout_arrival_offsets(subscribers: int, wire_bytes: float, link_bits_per_s: float,
                           per_copy_overhead_s: float = 0.0,
                           first_latency_s: float = 0.0) -> list[float]:
    """Arrival time of one sample at subscriber 1..k when sent by unicast in turn (002, Table III).

    t_i = first_latency + (i - 1) * copy_time.
    """
    step = copy_time(wire_bytes, link_bits_per_s, per_copy_overhead_s)
    return [first_latency_s + i * step for i in range(subscribers)]


def interleaved_step(datagram_wire_bytes: float, link_bits_per_s: float,
                     per_copy_overhead_s: float = 0.0) -> float:
    """Seconds between two subscribers' copies when the writer sends every datagram to all
    readers in turn: one datagram's copy time (see the module docstring)."""
    return copy_time(datagram_wire_bytes, link_bits_per_s, per_copy_overhead_s)


def shared_link_completion(subscribers: int, sample_wire_bytes: float,
                           link_bits_per_s: float) -> float:
    """Seconds until every subscriber has its copy of one sample over one shared link:
    k copies of the sample's wire bytes at the link rate (each subscriber completes near
    the end, as the copies are interleaved per datagram)."""
    return subscribers * copy_time(sample_wire_bytes, link_bits_per_s)


def fanout_time(subscribers: int, wire_bytes: float, link_bits_per_s: float,
                per_copy_overhead_s: float = 0.0) -> float:
    """Time until the last of k subscribers has its copy: k * copy_time (002, IV-C)."""
    return subscribers * copy_time(wire_bytes, link_bits_per_s, per_copy_overhead_s)


def fit_fanout_step(latencies_s: list[float]) -> tuple[float, float]:
    """Least-squares (first_latency, step) of t_i = first + (i-1) * step for measured latencies."""
    n = len(latencies_s)
    if n < 2:
        raise ValueError("need at least two subscribers to fit a step")
    xs = list(range(n))
    mean_x = sum(xs) / n
    mean_y = sum(latencies_s) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, latencies_s, strict=True))
    step = sxy / sxx
    return mean_y - step * mean_x, step
