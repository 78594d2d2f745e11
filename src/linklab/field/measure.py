"""``linklab link measure A B``: what the path between two hosts does, as numbers.

Phases, in order (each through the agents, agent.py; A's direction to B is ``up``):
1. clock: an NTP exchange A -> B (clock.py), for the record and the same-kernel check;
2. probes: A sends ``probe_rate`` small UDP probes a second for ``duration``; B echoes
   each at once. B's receipts give the up direction's losses, reordering and duplicates;
   A's receipts of B's echoes (numbered by B) give the down direction's; A's round trips
   exclude B's turnaround. Losses are fitted with the Gilbert model (fit.py);
3. path MTU per direction: DF probes, binary search (agent ``mtu``);
4. the rate per direction: a UDP ramp of path-MTU packets, ``ramp_step`` per step,
   doubling from 1 Mbit/s until the receiver gets less than 85 % of what the base loss
   lets through (saturated), then once more at 1.25x to confirm; the carried rate is the
   mean of the saturated steps, each counted after its first 30 % (queues filled).
   A sender that cannot reach the offered rate, or ``max_rate``, ends the ramp with a
   lower bound ("at least").
"""

from __future__ import annotations

import base64
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from linklab.bench.host_address import HostSpec
from linklab.errors import LinklabError, UsageError
from linklab.field import fit
from linklab.field.clock import Offset
from linklab.field.hosts import HostSet

PROBE_PAYLOAD = 64                # UDP payload bytes of a loss/RTT probe
RAMP_SKIP = 0.3                   # share of a ramp step before the rate is counted
RAMP_GROWTH, CONFIRM_GROWTH = 2.0, 1.25
NO_RTT = 0xFFFFFFFF
MIN_MTU = 576


@dataclass(frozen=True)
class MeasureSettings:
    duration_s: float = 30.0  # of the loss/RTT probes (--duration)
    probe_rate_hz: float = 2000.0  # loss/RTT probes per second (--probe-rate)
    ramp_step_s: float = 0.8  # one step of the UDP rate ramp (--ramp-step)
    ramp_start_bps: float = 1e6  # the ramp's first rate
    max_rate_bps: float = 1e9  # where the ramp stops if the path carries it all (--max-rate)

    def check(self) -> None:
        if not 1.0 <= self.duration_s <= 3600:
            raise UsageError(f"{self.duration_s:g} s is outside 1 s .. 1 h", argument="--duration")
        if not 10 <= self.probe_rate_hz <= 20000:
            raise UsageError(f"{self.probe_rate_hz:g} Hz is outside 10 Hz .. 20 kHz",
                             argument="--probe-rate")
        if not 0.2 <= self.ramp_step_s <= 10:
            raise UsageError(f"{self.ramp_step_s:g} s is outside 0.2 .. 10 s",
                             argument="--ramp-step")
        if not 2e5 <= self.max_rate_bps <= 1e11:
            raise UsageError(f"{self.max_rate_bps:g} bit/s is outside 200kbit/s .. 100Gbit/s",
                             argument="--max-rate")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Direction:
    """One direction of the path (up: A -> B)."""

    loss: fit.LossFit
    reordered: float = math.nan         # RFC 4737 ratio
    duplicates: int = 0
    socket_drops: int | None = None     # the receiving socket's own drops (must be 0)
    pmtu: int | None = None
    carried_bps: float | None = None    # IP bits per second the path delivered
    carried_se_bps: float = math.nan
    carried_bound: str = "saturated"    # "saturated" | "sender-limited" | "max-rate"
    ramp_packet_bytes: int | None = None
    ramp: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["loss"] = self.loss.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Direction:
        return cls(**{**data, "loss": fit.LossFit(**data["loss"])})


@dataclass
class Measurement:
    a: dict[str, Any]                   # name, at, address, hostname, kernel
    b: dict[str, Any]
    started_utc: str
    settings: dict[str, Any]
    rtt: fit.RttStats
    up: Direction
    down: Direction
    clock: dict[str, Any]
    command: str = ""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"format": "linklab-path-measurement/1", "a": self.a, "b": self.b,
                "started_utc": self.started_utc, "settings": self.settings,
                "rtt": self.rtt.to_dict(), "up": self.up.to_dict(), "down": self.down.to_dict(),
                "clock": self.clock, "command": self.command, "notes": self.notes}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Measurement:
        if data.get("format") != "linklab-path-measurement/1":
            raise UsageError("not a measurement of linklab link measure (format "
                             "linklab-path-measurement/1)", argument="--compare")
        return cls(a=data["a"], b=data["b"], started_utc=data["started_utc"],
                   settings=data["settings"], rtt=fit.RttStats(**data["rtt"]),
                   up=Direction.from_dict(data["up"]), down=Direction.from_dict(data["down"]),
                   clock=data["clock"], command=data.get("command", ""),
                   notes=list(data.get("notes", [])))

    def direction(self, name: str) -> Direction:
        return self.up if name == "up" else self.down


Progress = Callable[[str], None]


def measure_path(a: HostSpec, b: HostSpec, settings: MeasureSettings,
                 progress: Progress = lambda _: None, command: str = "") -> Measurement:
    """Measure the path between two hosts (connects, measures, cleans up)."""
    settings.check()
    if a.kind == b.kind == "local":
        raise UsageError("A and B are both this machine; measure between two hosts",
                         argument="B")
    started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with HostSet({"A": a, "B": b}) as hosts:
        progress(f"connecting to {a.text} and {b.text}")
        hosts.open()
        ha, hb = hosts["A"], hosts["B"]
        progress(f"clock: {ha.address} <-> {hb.address}")
        offset = hosts.offset("A", "B")
        progress(f"probes: {settings.probe_rate_hz:g} Hz for {settings.duration_s:g} s")
        rtt, up, down, notes = _probes(hosts, settings, offset)
        wait = max(0.3, 3 * rtt.p99_ms / 1000) if rtt.count else 1.0
        progress("path MTU")
        up.pmtu = _pmtu(ha, hb, wait)
        down.pmtu = _pmtu(hb, ha, wait)
        for name, sender, receiver, direction in (("up", ha, hb, up), ("down", hb, ha, down)):
            size = direction.pmtu or ha.route.get("route_mtu") or 1500
            progress(f"rate {name}: UDP ramp of {size} B packets")
            _ramp(sender, receiver, direction, size, settings, wait, progress,
                  0 if name == "up" else 1000)
        info = {}
        for key, item in (("a", ha), ("b", hb)):
            info[key] = {"name": item.spec.name if item.spec.name not in ("A", "B") else key,
                         "at": item.spec.text, "address": item.address,
                         "hostname": item.agent.hello.get("hostname"),
                         "kernel": item.agent.hello.get("kernel"),
                         "interface": item.route.get("device"),
                         "interface_mtu": item.route.get("mtu")}
    return Measurement(a=info["a"], b=info["b"], started_utc=started,
                       settings=settings.to_dict(), rtt=rtt, up=up, down=down,
                       clock=offset.to_dict(), command=command, notes=notes)


def _bits(text: str, length: int | None = None) -> np.ndarray:
    got = np.frombuffer(base64.b64decode(text), dtype=np.uint8).astype(bool)
    if length is not None:
        got = np.concatenate([got[:length], np.zeros(max(0, length - got.size), dtype=bool)])
    return got


def _probes(hosts: HostSet, settings: MeasureSettings, offset: Offset
            ) -> tuple[fit.RttStats, Direction, Direction, list[str]]:
    ha, hb = hosts["A"], hosts["B"]
    timeout = settings.duration_s * 1.5 + 30
    sent = ha.agent.call("stream", timeout_s=timeout, peer=hb.peer(),
                         rate_hz=settings.probe_rate_hz, duration_s=settings.duration_s,
                         size=PROBE_PAYLOAD, drain_s=max(1.0, 3 * offset.rtt_median_ns / 1e9))
    report = hb.agent.call("probe_report")
    total = int(sent["sent"])
    up_got = _bits(report["received"], total)
    echoes = int(report["echoes_sent"])
    down_got = _bits(sent["echoes"], echoes)
    rtt_raw = np.frombuffer(base64.b64decode(sent["rtt_us"]), dtype="<u4")
    rtt = fit.rtt_stats(rtt_raw[rtt_raw != NO_RTT] / 1000.0)
    notes = []
    if sent["send_errors"]:
        notes.append(f"A could not send {sent['send_errors']} of {total} probes (its socket "
                     "buffer was full): they count as lost")
    pace = total / sent["elapsed_s"] if sent["elapsed_s"] else math.nan
    if pace < 0.95 * settings.probe_rate_hz:
        notes.append(f"A sent {pace:.0f} probes/s of {settings.probe_rate_hz:g} asked (a busy "
                     "host): the loss statistics hold, timing is coarser")
    drops = report.get("socket_drops")
    if drops:
        raise LinklabError(f"B's socket dropped {drops} probes itself (receive buffer full: the "
                           "host was too busy); the loss measured would not be the path's. "
                           "Measure again with a lower --probe-rate")
    up = Direction(fit.fit_gilbert(up_got),
                   reordered=fit.reorder_fraction(report["reordered"], int(up_got.sum())),
                   duplicates=int(report["duplicates"]), socket_drops=drops)
    if sent.get("socket_drops"):
        raise LinklabError(f"A's socket dropped {sent['socket_drops']} echoes itself (receive "
                           "buffer full: the host was too busy); measure again with a lower "
                           "--probe-rate")
    down = Direction(fit.fit_gilbert(down_got),
                     reordered=fit.reorder_fraction(int(sent["echoes_reordered"]),
                                                    int(down_got.sum())),
                     socket_drops=sent.get("socket_drops"))
    return rtt, up, down, notes


def _pmtu(sender, receiver, wait_s: float) -> int | None:
    high = sender.route.get("route_mtu") or sender.route.get("mtu") or 1500
    reply = sender.agent.call("mtu", timeout_s=120, peer=receiver.peer(), low=MIN_MTU,
                              high=int(high), tries=10, wait_s=wait_s)
    return reply.get("pmtu")


def _ramp(sender, receiver, direction: Direction, size: int, settings: MeasureSettings,
          wait_s: float, progress: Progress, first_step: int = 0) -> None:
    loss = direction.loss.mean_loss if not math.isnan(direction.loss.mean_loss) else 0.0
    offered = settings.ramp_start_bps
    saturated: list[float] = []
    step = len(direction.ramp) + first_step
    direction.ramp_packet_bytes = size
    window = settings.ramp_step_s * (1 - RAMP_SKIP)
    while True:
        step += 1
        sent = sender.agent.call("send", timeout_s=settings.ramp_step_s * 4 + 30,
                                 peer=receiver.peer(), rate_bps=offered,
                                 duration_s=settings.ramp_step_s, size=size, step=step)
        time.sleep(wait_s)
        got = receiver.agent.call("step_report", step=step, skip_s=settings.ramp_step_s
                                  * RAMP_SKIP)
        rate = got.get("rate_bps")
        entry = {"step": step, "offered_bps": offered, "sent_bps": sent["sent_bps"],
                 "received_bps": rate, "received": got["received"], "sent": sent["sent"]}
        direction.ramp.append(entry)
        progress(f"  offered {offered / 1e6:.3g} Mbit/s, received "
                 f"{(rate or 0) / 1e6:.3g} Mbit/s")
        # a sender slower than asked is judged by what it sent
        if fit.saturated(min(offered, sent["sent_bps"]), rate, loss):
            entry["saturated"] = True
            saturated.append(rate or 0.0)
            if len(saturated) >= 2:
                break
            offered = min(offered * CONFIRM_GROWTH, settings.max_rate_bps * CONFIRM_GROWTH)
            continue
        saturated.clear()   # a dip that did not repeat: keep ramping
        if sent["sent_bps"] < 0.9 * offered:
            direction.carried_bound = "sender-limited"
            break
        if offered >= settings.max_rate_bps:
            direction.carried_bound = "max-rate"
            break
        offered = min(offered * RAMP_GROWTH, settings.max_rate_bps)
    if direction.carried_bound == "saturated":
        direction.carried_bps = float(np.mean(saturated))
        # the loss process's noise over the counted windows (fit.py's standard error of a
        # mean loss, for the number of packets counted)
        packets = sum(direction.carried_bps * window / (size * 8) for _ in saturated)
        pi = loss
        lam = 1 - direction.loss.p - direction.loss.r if direction.loss.lost else 0.0
        inflation = (1 + lam) / (1 - lam) if lam < 1 else math.inf
        se_loss = math.sqrt(pi * (1 - pi) / max(packets, 1) * inflation)
        spread = float(np.std(saturated, ddof=1) / math.sqrt(len(saturated)))
        direction.carried_se_bps = max(direction.carried_bps * se_loss / max(1 - pi, 1e-9),
                                       spread)
    else:
        direction.carried_bps = max((e["received_bps"] or 0.0) for e in direction.ramp)
