"""The most a link carries: per payload, the highest publish rate a pair sustains.

``rate: max`` in a scenario runs a bounded search of short trials on one link (paper 001
§V-A, Fig. 5: "the publish rate ... is dynamically selected to ensure that the subscriber
receive the messages with minimal packet loss"). A trial at rate r is *sustained* when

- the publishers kept the rate (measured publish rate >= 97 % of r: a writer blocked by
  a full socket buffer behind the link's queue, or one the CPU cannot keep up with,
  does not publish at r);
- reliable QoS: every published sample arrived; best effort: at least 99.9 % did;
- latency did not grow through the trial (median of the last third of the samples, by
  send time, at most max(2 ms, 50 % of the first third's median) above the first
  third's): a queue that fills is not sustained, however long the trial and whatever
  the QoS. Best effort needs this too: MQTT's QoS 0 and Zenoh's best effort ride TCP,
  and a client library that queues what the link cannot take (libmosquitto does, in
  memory) delivers every sample late instead of dropping any -- without this check
  MQTT "sustained" 2.4 Gbit/s on a 1 Gbit/s link (docs/RESULTS.md);
- the payload that arrived was measured (``goodput_bit_s``: it is what the search
  reports);
- and the cell did not fail otherwise (crash, mean latency above 100 intervals).

Every rule reads what the trial achieved (the publisher's measured rate, the samples and
payload that arrived, their latency); the rate asked only sets the bar the publisher's
rate is held to. The search brackets and bisects on the rate it asks, but what it
reports is achieved: of its sustained trials the best is the one whose publisher wrote
the most samples per second, and the maximum is that trial's measured publish rate and
the payload bit/s that arrived in it, with the rate asked beside them. A trial asked
380.1 Hz of 64 KiB samples on a 200 Mbit/s link whose publisher wrote 370.0 Hz (97.3 %)
is a maximum of 370.0 Hz and the ~193.8 Mbit/s of payload that arrived, never
380.1 x 64 KiB = 199.3 Mbit/s.

The search starts near the model's capacity of the link (or at a rate carrying
100 Mbit/s when the link has no rate), doubles until a trial fails (or halves until one
passes), then bisects (geometric mean) until the bracket is within the precision or the
trial budget is spent. ``rate: 75%`` then runs a cell at that share of the maximum found
for the same settings (paper 001 Fig. 6): of the publish rate achieved.

``records/<cell>/search.json`` (search_cells.run_search): per trial the rate asked
(``rate_hz``), whether it was sustained and why not, ``received`` / ``expected``,
``publish_rate_hz`` and ``goodput_bit_s`` (achieved), ``latency_p50_ms``,
``latency_growth_ms``; once the search ends, ``best_trial`` (its number, null when none
was sustained), ``stop``, ``max_rate_hz`` and ``max_throughput_bit_s`` (achieved) and
``asked_rate_hz``. Files written before issue 37 have neither goodput nor ``best_trial``
(their best is the highest rate asked that was sustained).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from linklab.model.fragmentation import ETHERNET_HEADER
from linklab.model.overhead import WirePath, path_bytes

PUBLISH_RATE_SHARE = 0.97
BEST_EFFORT_DELIVERY = 0.999
GROWTH_FLOOR_MS = 2.0
GROWTH_SHARE = 0.5
MIN_RATE_HZ = 0.5
MAX_RATE_HZ = 200_000.0
MIN_TRIAL_SAMPLES = 20


@dataclass
class Trial:
    rate_hz: float              # the rate asked
    sustained: bool
    reason: str | None          # why not sustained (None when sustained)
    row: dict[str, Any] = field(default_factory=dict)
    streams: list[dict[str, Any]] = field(default_factory=list)

    @property
    def publish_rate_hz(self) -> float | None:
        """The rate the publishers achieved (the row's measured ``publish_rate_hz``)."""
        return _num(self.row.get("publish_rate_hz"))

    @property
    def goodput_bit_s(self) -> float | None:
        """Payload bits per second that arrived (the row's ``goodput_bit_s``)."""
        return _num(self.row.get("goodput_bit_s"))


@dataclass
class SearchResult:
    best: Trial | None          # the sustained trial that achieved the most (best_trial)
    trials: list[Trial]
    stop: str                   # why the search ended

    @property
    def max_rate_hz(self) -> float:
        """The maximum: the publish rate achieved in the best trial (0.0 when no trial
        was sustained; NaN when its publish rate was not measured)."""
        return _achieved(self.best, "publish_rate_hz")

    @property
    def max_throughput_bit_s(self) -> float:
        """The payload bit/s that arrived in the best trial (0.0 when none was
        sustained)."""
        return _achieved(self.best, "goodput_bit_s")

    @property
    def asked_rate_hz(self) -> float:
        """The rate the best trial asked for (0.0 when none was sustained)."""
        return 0.0 if self.best is None else self.best.rate_hz

    @property
    def bracket_hz(self) -> float:
        """The highest rate asked that was sustained: the bracket's lower end."""
        return max((t.rate_hz for t in self.trials if t.sustained), default=0.0)

    @property
    def next_failure(self) -> str | None:
        """Why the lowest failing rate above the highest sustained one failed."""
        failing = [t for t in self.trials if not t.sustained and t.rate_hz > self.bracket_hz]
        return min(failing, key=lambda t: t.rate_hz).reason if failing else None


def _achieved(trial: Trial | None, name: str) -> float:
    if trial is None:
        return 0.0
    value = getattr(trial, name)
    return math.nan if value is None else value


def best_trial(trials: list[Trial]) -> Trial | None:
    """The sustained trial whose publisher achieved the highest rate (by the rate asked
    where none was measured, and between equal ones): None when none was sustained."""
    sustained = [t for t in trials if t.sustained]
    if not sustained:
        return None
    return max(sustained, key=lambda t: (-math.inf if t.publish_rate_hz is None
                                         else t.publish_rate_hz, t.rate_hz))


def judge(row: dict[str, Any], streams: list[dict[str, Any]], rate_hz: float,
          reliable: bool) -> str | None:
    """None if a trial at ``rate_hz`` was sustained, else why not (one line)."""
    if row.get("status") != "ok":
        return f"cell failed: {row.get('failure_reason')}"
    publish_rate = _num(row.get("publish_rate_hz"))
    if publish_rate is None or publish_rate < PUBLISH_RATE_SHARE * rate_hz:
        shown = "nothing" if publish_rate is None else f"{publish_rate:.1f} Hz"
        return (f"the publisher wrote {shown} of {rate_hz:.1f} Hz (below "
                f"{PUBLISH_RATE_SHARE:.0%}: blocked by the link's queue, or by the CPU)")
    delivered = _num(row.get("delivery_ratio")) or 0.0
    if reliable and delivered < 1.0:
        return f"reliable: {delivered:.4%} of the samples arrived (needs all)"
    if not reliable and delivered < BEST_EFFORT_DELIVERY:
        return (f"best effort: {delivered:.4%} of the samples arrived "
                f"(needs {BEST_EFFORT_DELIVERY:.1%})")
    if not (_num(row.get("goodput_bit_s")) or 0.0) > 0:
        return "no payload throughput was measured (goodput_bit_s)"
    for stream in streams or [row]:
        growth = _num(stream.get("latency_growth_ms"))
        first = _num(stream.get("latency_first_third_ms")) or 0.0
        limit = max(GROWTH_FLOOR_MS, GROWTH_SHARE * first)
        if growth is not None and growth > limit:
            return (f"latency grew {growth:.1f} ms through the trial "
                    f"(limit {limit:.1f} ms): a queue is filling")
    return None


def reliable_qos(qos: str) -> bool:
    """Whether a topic's QoS (reliability or ROS 2 profile name) is reliable: the
    search's delivery rule and the model's RTPS header size depend on it."""
    return qos not in ("best_effort", "sensor_data")


def rule_text(reliable: bool) -> str:
    """The rule that decides a searched cell, in one line (what ``judge`` checks)."""
    delivery = "every sample arrived" if reliable else \
        f"at least {BEST_EFFORT_DELIVERY:.1%} of the samples arrived"
    return (f"rate: max -- the highest publish rate achieved in a sustained trial, and the "
            f"payload that arrived in it: the publisher kept {PUBLISH_RATE_SHARE:.0%} of "
            f"the rate asked, {delivery}, latency grew at most "
            f"max({GROWTH_FLOOR_MS:g} ms, {GROWTH_SHARE:.0%} of the first third's median); "
            f"failed when nothing was, down to {MIN_RATE_HZ} Hz")


def _num(value: Any) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def trial_count(rate_hz: float, trial_s: float) -> int:
    """Samples of one trial: ``trial_s`` of publishing, at least MIN_TRIAL_SAMPLES."""
    return max(MIN_TRIAL_SAMPLES, math.ceil(rate_hz * trial_s))


def start_rate(payload_bytes: int, capacity_hz: float | None) -> float:
    """Where the search starts: 90 % of the model's capacity, or 100 Mbit/s of payload."""
    guess = 0.9 * capacity_hz if capacity_hz else 100e6 / (8 * max(payload_bytes, 1))
    return min(max(guess, MIN_RATE_HZ), MAX_RATE_HZ)


def search(run_trial: Callable[[float], Trial], start_hz: float, *, precision: float,
           max_trials: int) -> SearchResult:
    """Bracket and bisect the highest sustained rate (see the module docstring)."""
    trials: list[Trial] = []
    lo: float | None = None
    hi: float | None = None
    rate = start_hz
    stop = "trial budget spent"
    while len(trials) < max_trials:
        trial = run_trial(rate)
        trials.append(trial)
        if trial.sustained:
            lo = rate if lo is None else max(lo, rate)
        else:
            hi = rate if hi is None else min(hi, rate)
        if lo is None:
            if rate <= MIN_RATE_HZ:
                stop = f"nothing sustained down to {MIN_RATE_HZ} Hz"
                break
            rate = max(rate / 4, MIN_RATE_HZ)
        elif hi is None:
            if rate >= MAX_RATE_HZ:
                stop = f"sustained at the search ceiling {MAX_RATE_HZ:g} Hz"
                break
            rate = min(rate * 2, MAX_RATE_HZ)
        else:
            if hi / lo <= 1 + precision:
                stop = f"bracket within {precision:.0%}"
                break
            rate = math.sqrt(lo * hi)
    return SearchResult(best_trial(trials), trials, stop)


def model_overhead(payload_bytes: int, max_message_size: int, qos: str, path: WirePath,
                   link_bits_per_s: float | None, *, sample_bytes: int) -> dict[str, float]:
    """Bytes on the link per sample (paper 001 §V-A headers: RTPS 56-116 B, UDP 8, IPv4
    20 per packet; on a cluster's underlay VXLAN 50 and WireGuard 32 + its own IPv4/UDP,
    linklab.model.overhead.path_bytes) and, where the path crosses a rate-limited link,
    the samples per second it carries: the limiter counts Ethernet frames, so 14 B more
    per IP packet.

    ``sample_bytes``: the serialized sample the middleware sends (the payload, the CDR
    encapsulation and the type's own fields: linklab.probes.types.sample_bytes); the
    efficiency and the capacity in bit/s count ``payload_bytes``."""
    kind = "reliable" if reliable_qos(qos) else "best_effort"
    wire, packets = path_bytes(sample_bytes, max_message_size, pod_mtu=path.mtu, qos=kind,
                               vxlan=path.vxlan, wireguard_mtu=path.wireguard_mtu,
                               ethernet=False)
    frame_bytes = wire + ETHERNET_HEADER * packets
    out = {"model_wire_bytes_per_sample": float(wire),
           "model_ip_packets_per_sample": float(packets),
           "model_efficiency": payload_bytes / wire,
           "model_capacity_hz": math.nan, "model_capacity_bit_s": math.nan}
    if link_bits_per_s and path.bounded:
        capacity = link_bits_per_s / (8 * frame_bytes)
        out["model_capacity_hz"] = capacity
        out["model_capacity_bit_s"] = capacity * payload_bytes * 8
    return out
