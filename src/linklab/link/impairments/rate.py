"""A bottleneck rate: the ``rate`` field, run by the kernel (tbf) or, when the user set
its queue, by the relay."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from linklab.emu.directives import Rate as RelayRate
from linklab.link import made
from linklab.link.direction_spec import DirectionSpec, QueueLimit
from linklab.link.impairments.base import Field, Impairment, StageCounters
from linklab.link.impairments.queue import Queue
from linklab.link.netops import NetOps, Snapshot
from linklab.link.topology import PathView
from linklab.model.shaper import bucket_bytes
from linklab.units import format_bitrate, format_duration, parse_bitrate

TBF_LATENCY_S = 0.050     # tbf queue: 50 ms of traffic at the rate (a Wi-Fi-sized buffer)


def parse_rate(text: str, argument: str | None = "--rate") -> float:
    return parse_bitrate(text, argument)


@dataclass
class RateStage(Impairment):
    """Token-bucket rate limit (tbf) at the link's edge-side port.

    ``down`` leaves that port: tbf on its egress. ``up`` arrives at it: the ingress is
    redirected to an ifb and shaped there. The queue holds 50 ms at the rate; beyond it
    packets are dropped, like a full Wi-Fi transmit queue. A rate whose queue the user set
    (``queue``, ``queue_limit``) is a :class:`QueuedRateStage` instead, which the relay
    runs; with a trace, the trace is the direction's bottleneck and the rate is not used.
    """

    rate_bps: float
    kind: ClassVar[str] = "rate"
    FIELDS: ClassVar[dict[str, Field]] = {"rate": Field("rate_bps", parse_rate, format_bitrate)}

    @classmethod
    def from_direction(cls, spec: DirectionSpec,
                       trace_start: str | None) -> list[Impairment]:
        if spec.rate_bps is None:
            return []
        if spec.trace is None and (spec.queue is not None or spec.queue_limit is not None):
            return [QueuedRateStage(spec.rate_bps, spec.queue, spec.queue_limit)]
        return [cls(spec.rate_bps)]

    @property
    def burst_bytes(self) -> int:
        return bucket_bytes(self.rate_bps)  # 2 ms of traffic, at least 32 KiB

    def params(self) -> dict[str, Any]:
        return {"rate_bps": self.rate_bps, "text": format_bitrate(self.rate_bps),
                "burst_bytes": self.burst_bytes, "queue": format_duration(TBF_LATENCY_S)}

    def device(self, path: PathView) -> str:
        return path.shaper.ifname if path.sender == path.shaper else path.ifb

    def install(self, net: NetOps, path: PathView) -> None:
        ns = path.shaper.netns
        if path.sender != path.shaper:
            net.ifb(path.shaper, path.ifb)
        dev = self.device(path)
        net.tc(ns, ["qdisc", "add", "dev", dev, "root", "handle", "1:", "tbf",
                    "rate", f"{int(self.rate_bps)}bit", "burst", str(self.burst_bytes),
                    "latency", f"{int(TBF_LATENCY_S * 1000)}ms"],
               undo=made.qdisc(ns, dev, "root"))

    def counters(self, snapshot: Snapshot, path: PathView) -> StageCounters | None:
        entry = snapshot.qdisc(path.shaper.netns, self.device(path), "tbf")
        if entry is None:
            return None
        return StageCounters(entry.get("packets"), entry.get("bytes"), entry.get("drops"), None)


@dataclass
class QueuedRateStage(Impairment):
    """A rate whose queue the user set (discipline or limit): the relay runs it, with
    the kernel stage's bucket (model/shaper.py) and, without a limit, its 50 ms queue.
    tbf's own queue only drops the newcomer at a limit of its own making."""

    rate_bps: float
    queue: str | None = None
    queue_limit: QueueLimit | None = None
    kind: ClassVar[str] = "rate"
    runs_in: ClassVar[str] = "relay"
    relay_kind: ClassVar[str | None] = "rate"

    @property
    def burst_bytes(self) -> int:
        return bucket_bytes(self.rate_bps)

    def bottleneck_queue(self) -> Queue:
        """The queue, with the kernel stage's 50 ms at the rate when no limit is set."""
        return Queue(self.queue, self.queue_limit or QueueLimit(
            bytes=round(self.rate_bps / 8 * TBF_LATENCY_S) + self.burst_bytes))

    def params(self) -> dict[str, Any]:
        queue = self.bottleneck_queue()
        return {"rate_bps": self.rate_bps, "burst_bytes": self.burst_bytes,
                "text": f"{format_bitrate(self.rate_bps)}, {queue.name} "
                        f"queue of {queue.limit.text()}",
                **queue.params()}

    def relay_stage(self) -> RelayRate:
        queue = self.bottleneck_queue()
        return RelayRate(self.rate_bps, queue.limit.packets, queue.limit.bytes,
                         burst_bytes=self.burst_bytes, queue=queue.name)
