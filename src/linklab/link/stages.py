"""Impairment stages: small classes with one interface (like Mahimahi's queues).

A link direction is a pipeline of stages. Every stage has

* ``kind``     -- what it does ("loss", "rate", "outage", "delay", ...);
* ``runs_in``  -- ``"kernel"`` (installed on the interfaces the wire produced, with
                  nft/tc/ip) or ``"relay"`` (executed by a userspace wire, e.g. the emu
                  TAP relay, which reads ``params()``);
* ``params()`` -- what it applies, as plain JSON (shown by ``status``; a relay wire turns
                  it into its own arguments);
* ``install(net, path)`` -- make it so, through the journaled ``NetOps`` (relay stages:
                  nothing to do, the wire runs them);
* ``counters(snapshot, path)`` -- packets/bytes passed and dropped, or None.

Kernel stages here: ``OutageStage`` and ``LossStage`` (nft on the receiving port's
ingress hook; a drop there is not reported back to the sender, like a radio error),
``RateStage`` (tbf on the edge-side port's egress, or on an ifb fed from its ingress).
Link-wide settings: ``MtuStage`` and ``OffloadsStage`` (both ports of a link), and the
per-host ``SocketBufferStage``. Relay stages: ``QueuedRateStage`` (a rate whose queue the
user set), ``DelayStage``, ``JitterStage``,
``BurstLossStage``, ``TraceStage`` -- declared here, run by a relay wire.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from linklab.errors import EnvironmentProblem
from linklab.link import made
from linklab.link.netops import NetOps, Snapshot, nft_name
from linklab.link.spec import (
    LOSS_RESOLUTION,
    BurstLoss,
    DirectionSpec,
    Outage,
    QueueLimit,
    loss_steps,
)
from linklab.link.topology import PathView
from linklab.model.shaper import bucket_bytes
from linklab.units import format_bitrate, format_duration, format_percent

TBF_LATENCY_S = 0.050     # tbf queue: 50 ms of traffic at the rate (a Wi-Fi-sized buffer)


@dataclass
class StageCounters:
    passed_packets: int | None = None
    passed_bytes: int | None = None
    dropped_packets: int | None = None
    dropped_bytes: int | None = None

    def to_dict(self) -> dict[str, int | None]:
        return asdict(self)


class Stage:
    """One impairment on one direction of one link. See the module docstring."""

    kind: ClassVar[str] = "stage"
    runs_in: ClassVar[str] = "kernel"

    def params(self) -> dict[str, Any]:
        raise NotImplementedError

    def install(self, net: NetOps, path: PathView) -> None:
        """Kernel stages: make the change (through ``net``). Relay stages: nothing."""

    def counters(self, snapshot: Snapshot, path: PathView) -> StageCounters | None:
        if self.runs_in == "relay":
            found = snapshot.relay.get((path.link, path.direction, self.kind))
            return StageCounters(**found) if found else None
        return None

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "runs_in": self.runs_in, **self.params()}


def _chain_counter(path: PathView, kind: str, what: str) -> str:
    return f"{kind}_{what}_{nft_name(path.receiver.ifname)}"


def _nft_counters(snapshot: Snapshot, path: PathView, kind: str) -> StageCounters:
    passed = snapshot.nft_counter(path.receiver.netns, _chain_counter(path, kind, "pass"))
    dropped = snapshot.nft_counter(path.receiver.netns, _chain_counter(path, kind, "drop"))
    return StageCounters(passed[0], passed[1], dropped[0], dropped[1])


@dataclass
class OutageStage(Stage):
    """100 % loss during scheduled windows. The rules are in place from the start; a
    scheduler process (``outage.py``) fills an nft chain with one drop rule when a window
    opens and flushes it when it closes."""

    outage: Outage
    kind: ClassVar[str] = "outage"

    def params(self) -> dict[str, Any]:
        return {"schedule": self.outage.text(), "start_s": self.outage.start_s,
                "length_s": self.outage.length_s, "period_s": self.outage.period_s}

    def switch_chain(self, path: PathView) -> str:
        return "outage_" + nft_name(path.receiver.ifname)

    def install(self, net: NetOps, path: PathView) -> None:
        family, chain = net.ingress_chain(path.receiver, path.receiver_shaped)
        ns = path.receiver.netns
        drop, passed = (_chain_counter(path, self.kind, w) for w in ("drop", "pass"))
        net.nft_counter(ns, family, drop)
        net.nft_counter(ns, family, passed)
        net.nft(ns, f"add chain {family} {net.table} {self.switch_chain(path)}\n", None,
                f"nft outage chain {ns}/{self.switch_chain(path)}")
        net.nft_rule(ns, family, chain, f"jump {self.switch_chain(path)}")
        net.nft_rule(ns, family, chain, f"counter name \"{passed}\"")

    def switch(self, net_table: str, path: PathView) -> dict[str, Any]:
        """What the scheduler needs to open/close a window on this path."""
        family = "inet" if path.receiver_shaped else "netdev"
        return {"netns": path.receiver.netns, "table": f"{family} {net_table}",
                "chain": self.switch_chain(path),
                "rule": f"counter name \"{_chain_counter(path, self.kind, 'drop')}\" drop",
                "link": path.link, "direction": path.direction}

    def counters(self, snapshot: Snapshot, path: PathView) -> StageCounters:
        return _nft_counters(snapshot, path, self.kind)


def steps_text(threshold: int) -> str:
    """The loss a stage applies, as a percentage that reads 100 % (0 %) only when every
    (no) packet is dropped: 99.9999 % is not rounded up to 100 %."""
    text = format_percent(threshold / LOSS_RESOLUTION)
    if text in ("100 %", "0 %") and 0 < threshold < LOSS_RESOLUTION:
        text = f"{threshold * 100 / LOSS_RESOLUTION:.4f}".rstrip("0").rstrip(".") + " %"
    return text


@dataclass
class LossStage(Stage):
    """Bernoulli packet loss: ``numgen random mod 1000000 < N drop`` on ingress (loss in
    steps of 0.0001 %: spec.LOSS_RESOLUTION). A loss of every step (N = 1000000, e.g. a
    radio curve at a distance beyond its range: radio_curve.py) is a plain ``drop`` of
    every packet: nft refuses ``< 1000000`` ("exceeds valid range 0-999999"), since
    ``mod 1000000`` never reaches it. Dropped packets are counted either way."""

    loss: float
    kind: ClassVar[str] = "loss"

    def __post_init__(self) -> None:
        if not 0.0 <= self.loss <= 1.0:   # what would reach nft otherwise: refused here
            raise ValueError(f"a loss stage takes 0..1, not {self.loss!r}")

    @property
    def threshold(self) -> int:
        return loss_steps(self.loss)

    @property
    def drops_all(self) -> bool:
        return self.threshold >= LOSS_RESOLUTION

    def params(self) -> dict[str, Any]:
        return {"loss": self.loss, "text": steps_text(self.threshold)}

    def rule(self, drop_counter: str) -> str:
        """The nft rule that drops (pure: what ``install`` adds)."""
        draw = "" if self.drops_all else (
            f"numgen random mod {LOSS_RESOLUTION} < {self.threshold} ")
        return f"{draw}counter name \"{drop_counter}\" drop"

    def install(self, net: NetOps, path: PathView) -> None:
        family, chain = net.ingress_chain(path.receiver, path.receiver_shaped)
        ns = path.receiver.netns
        drop, passed = (_chain_counter(path, self.kind, w) for w in ("drop", "pass"))
        net.nft_counter(ns, family, drop)
        net.nft_counter(ns, family, passed)
        net.nft_rule(ns, family, chain, self.rule(drop))
        net.nft_rule(ns, family, chain, f"counter name \"{passed}\"")

    def counters(self, snapshot: Snapshot, path: PathView) -> StageCounters:
        return _nft_counters(snapshot, path, self.kind)


@dataclass
class RateStage(Stage):
    """Token-bucket rate limit (tbf) at the link's edge-side port.

    ``down`` leaves that port: tbf on its egress. ``up`` arrives at it: the ingress is
    redirected to an ifb and shaped there. The queue holds 50 ms at the rate; beyond it
    packets are dropped, like a full Wi-Fi transmit queue.
    """

    rate_bps: float
    kind: ClassVar[str] = "rate"

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


# --- relay stages: executed by a userspace wire (emu), declared here -------------------

@dataclass
class DelayStage(Stage):
    delay_s: float
    kind: ClassVar[str] = "delay"
    runs_in: ClassVar[str] = "relay"

    def params(self) -> dict[str, Any]:
        return {"delay_s": self.delay_s, "text": format_duration(self.delay_s)}


@dataclass
class JitterStage(Stage):
    jitter_s: float
    distribution: str | None = None   # None: uniform, as netem without a table
    kind: ClassVar[str] = "jitter"
    runs_in: ClassVar[str] = "relay"

    def params(self) -> dict[str, Any]:
        return {"jitter_s": self.jitter_s, "distribution": self.distribution or "uniform",
                "text": format_duration(self.jitter_s)}


@dataclass
class BurstLossStage(Stage):
    model: BurstLoss
    kind: ClassVar[str] = "burst_loss"
    runs_in: ClassVar[str] = "relay"

    def params(self) -> dict[str, Any]:
        m = self.model
        text = "gemodel:" + ",".join(format_percent(v) for v in (m.p, m.r, m.loss_bad,
                                                                  m.loss_good))
        return {**asdict(m), "text": text.replace(" ", "")}


def _queue_params(queue: str | None, limit: QueueLimit | None) -> dict[str, Any]:
    return {"queue": queue or "droptail",
            "limit_packets": limit.packets if limit else None,
            "limit_bytes": limit.bytes if limit else None}


@dataclass
class TraceStage(Stage):
    trace: str
    queue: str | None = None
    queue_limit: QueueLimit | None = None
    start: str | None = None   # LinkSpec.trace_start: first-packet, a UTC time, None
    kind: ClassVar[str] = "trace"
    runs_in: ClassVar[str] = "relay"

    def params(self) -> dict[str, Any]:
        return {"trace": self.trace, "text": self.trace.rsplit("/", 1)[-1],
                "start": self.start or "relay start",
                **_queue_params(self.queue, self.queue_limit)}


@dataclass
class QueuedRateStage(Stage):
    """A rate whose queue the user set (discipline or limit): the relay runs it, with
    the kernel stage's bucket (model/shaper.py) and, without a limit, its 50 ms queue.
    tbf's own queue only drops the newcomer at a limit of its own making."""

    rate_bps: float
    queue: str | None = None
    queue_limit: QueueLimit | None = None
    kind: ClassVar[str] = "rate"
    runs_in: ClassVar[str] = "relay"

    @property
    def burst_bytes(self) -> int:
        return bucket_bytes(self.rate_bps)

    def params(self) -> dict[str, Any]:
        limit = self.queue_limit or QueueLimit(
            bytes=round(self.rate_bps / 8 * TBF_LATENCY_S) + self.burst_bytes)
        return {"rate_bps": self.rate_bps, "burst_bytes": self.burst_bytes,
                "text": f"{format_bitrate(self.rate_bps)}, {self.queue or 'droptail'} "
                        f"queue of {limit.text()}",
                **_queue_params(self.queue, limit)}


def direction_stages(spec: DirectionSpec, carries: frozenset[str],
                     trace_start: str | None = None) -> list[Stage]:
    """The pipeline of one direction of one link, in the order packets meet the kernel
    stages: the rate (sender's egress, or the ifb at the receiver's ingress, which runs
    before any nft hook), then outage and loss at the receiver. Relay stages run in
    between, inside the wire. Only the kinds this link carries (topology.py) are kept.
    """
    stages: list[Stage] = []
    if spec.outage is not None:
        stages.append(OutageStage(spec.outage))
    if spec.loss > 0:
        stages.append(LossStage(spec.loss))
    if spec.burst_loss is not None:
        stages.append(BurstLossStage(spec.burst_loss))
    if spec.trace is not None:
        stages.append(TraceStage(spec.trace, spec.queue, spec.queue_limit, trace_start))
    if spec.delay_s is not None:
        stages.append(DelayStage(spec.delay_s))
    if spec.jitter_s is not None:
        stages.append(JitterStage(spec.jitter_s, spec.jitter_distribution))
    if spec.rate_bps is not None and spec.trace is None and (
            spec.queue is not None or spec.queue_limit is not None):
        stages.append(QueuedRateStage(spec.rate_bps, spec.queue, spec.queue_limit))
    elif spec.rate_bps is not None:
        stages.append(RateStage(spec.rate_bps))
    stages.sort(key=lambda stage: stage.kind != "rate")  # the rate first (stable sort)
    return [stage for stage in stages if stage.kind in carries]


# --- link-wide and host-wide settings ---------------------------------------------------

# Socket buffers. The kernel default (rmem_default 212992 B) is smaller than one 256 KiB
# sample, so one burst of a large sample overflows a socket that did not ask for more.
# linklab asks for 64 MiB maxima (room for 32 samples of 2 MiB, or one second of a
# 433 Mbit/s link) and 8 MiB defaults (four of the largest samples the papers publish,
# PointCloud2m). On kernels that keep net.core.* read-only in a child namespace (6.18
# does) those four keep the host's values; status reports the effective value of each.
SOCKET_BUFFER_SYSCTLS: dict[str, str] = {
    "net.core.rmem_max": str(64 * 1024**2),
    "net.core.wmem_max": str(64 * 1024**2),
    "net.core.rmem_default": str(8 * 1024**2),
    "net.core.wmem_default": str(8 * 1024**2),
    "net.ipv4.tcp_rmem": f"4096 131072 {64 * 1024**2}",
    "net.ipv4.tcp_wmem": f"4096 16384 {64 * 1024**2}",
}


@dataclass
class SocketBufferStage:
    """Per-host socket buffer sysctls (see SOCKET_BUFFER_SYSCTLS for values and why)."""

    kind: ClassVar[str] = "socket_buffers"

    def install(self, net: NetOps, netns: str) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in SOCKET_BUFFER_SYSCTLS.items():
            applied = net.sysctl(netns, key, value)
            result[key] = {"wanted": value, "effective": net.read_sysctl(netns, key),
                           "applied": applied}
            if not applied:
                result[key]["why"] = "read-only in a child network namespace on this kernel"
        return result


TCP_CONGESTION_SYSCTL = "net.ipv4.tcp_congestion_control"


@dataclass
class TcpCongestionStage:
    """The TCP congestion control of one host namespace: set when the link pins one
    (LinkSpec.tcp_congestion), else the host's default; either way recorded, since TCP's
    throughput under loss depends on it (cubic backs off on every loss, bbr does not)."""

    wanted: str | None
    kind: ClassVar[str] = "tcp_congestion"

    def install(self, net: NetOps, netns: str) -> dict[str, Any]:
        if self.wanted is None:
            effective = net.read_sysctl(netns, TCP_CONGESTION_SYSCTL)
        elif net.sysctl(netns, TCP_CONGESTION_SYSCTL, self.wanted):
            effective = self.wanted
        else:  # read-only there, or refused (spec_checks.check_tcp_congestion runs first)
            raise EnvironmentProblem(f"the kernel did not let {netns} set "
                                     f"{TCP_CONGESTION_SYSCTL}={self.wanted}")
        return {"wanted": self.wanted, "effective": effective,
                "source": "pinned by the link" if self.wanted else "the host's default"}


@dataclass
class MtuStage:
    mtu: int
    kind: ClassVar[str] = "mtu"


@dataclass
class OffloadsStage:
    """GSO, TSO and GRO off: otherwise one drop removes a 64 KB super-packet."""

    kind: ClassVar[str] = "offloads"
