"""The emu wire: a link carried by the userspace link emulator (``linklab-emu``).

The relay runs inside the robot-side namespace (nothing is made in the root
namespace): it creates the link's two TAP devices, moves the edge-side one into the
edge's namespace, and forwards frames through the relay stages of each direction
(delay + jitter, Gilbert-Elliott burst loss, Mahimahi trace replay). Kernel stages
(nft loss/outage, tbf rate) are applied to the TAPs like to a veth pair.

If the relay dies its TAP devices vanish with it: the link is down, never bypassed,
and ``linklab link status`` says so (``health``).
"""

from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from linklab.emu.config import RelayConfig
from linklab.emu.relay import pid_running, read_stats, relay_binary, relay_status
from linklab.emu.directives import Delay, GilbertElliott
from linklab.emu.directives import Rate as EmuRate
from linklab.emu.directives import Stage as EmuStage
from linklab.emu.directives import Trace as EmuTrace
from linklab.errors import EnvironmentProblem, LinklabError
from linklab.link import made
from linklab.link.netops import NetOps
from linklab.link.placement import from_state
from linklab.link.stages import Stage, TraceStage
from linklab.link.system import Shell
from linklab.link.topology import LinkPlan
from linklab.link.wires import Wire

START_TIMEOUT_S = 10.0
TUN_DEVICE = "/dev/net/tun"
# relay stage kind -> which stage of the relay counts it
_EMU_KIND = {"delay": "delay", "jitter": "delay", "burst_loss": "loss", "trace": "trace",
             "rate": "rate"}
_DIRECTION_KEY = {"up": "ab", "down": "ba"}


def relay_stages_to_emu(stages: list[Stage]) -> tuple[EmuStage, ...]:
    """linklab.link relay stages (in pipeline order) -> the relay's stages.

    Delay and jitter are one relay stage (constant delay plus jitter)."""
    out: list[EmuStage] = []
    delay = jitter = 0.0
    distribution = "uniform"
    delay_at: int | None = None
    for stage in stages:
        params = stage.params()
        if stage.kind in ("delay", "jitter"):
            if stage.kind == "delay":
                delay = params["delay_s"]
            else:
                jitter = params["jitter_s"]
                distribution = params.get("distribution") or distribution
            if delay_at is None:
                delay_at = len(out)
                out.append(Delay(0.0))  # placeholder, filled below
        elif stage.kind == "burst_loss":
            out.append(GilbertElliott(params["p"], params["r"], one_minus_h=params["loss_bad"],
                                      one_minus_k=params["loss_good"]))
        elif stage.kind == "trace":
            out.append(EmuTrace(Path(params["trace"]), params["limit_packets"],
                                params["limit_bytes"], params["queue"]))
        elif stage.kind == "rate":
            out.append(EmuRate(params["rate_bps"], params["limit_packets"],
                               params["limit_bytes"], burst_bytes=params["burst_bytes"],
                               queue=params["queue"]))
        else:
            raise LinklabError(f"the emu wire cannot run a {stage.kind!r} stage")
    if delay_at is not None:
        out[delay_at] = Delay(delay, jitter, distribution)
    return tuple(out)


def relay_epoch(stages: list[Stage]) -> tuple[int | None, bool]:
    """(epoch_ns, first_packet) of a relay running ``stages``: where its traces start.
    A UTC time becomes this host's CLOCK_MONOTONIC (the relay's clock) now."""
    starts = {s.start for s in stages if isinstance(s, TraceStage) and s.start}
    if not starts:
        return None, False
    (start,) = starts  # one link-wide value (LinkSpec.trace_start)
    if start == "first-packet":
        return None, True
    utc_ns = round(datetime.fromisoformat(start.replace("Z", "+00:00")).timestamp() * 1e9)
    return time.monotonic_ns() + (utc_ns - time.time_ns()), False


def _files(state_path: Path, link: str) -> dict[str, Path]:
    stem = f"{state_path.stem}.emu-{link}"
    return {"config": state_path.with_name(stem + ".conf"),
            "stats": state_path.with_name(stem + ".stats.json"),
            "log": state_path.with_name(stem + ".log")}


class TapRelayWire(Wire):
    name: ClassVar[str] = "emu"
    executes: ClassVar[frozenset[str]] = frozenset({"delay", "jitter", "burst_loss", "trace",
                                                     "rate"})
    # Below veth: chosen only when a link has stages only the relay can run.
    priority: ClassVar[int] = -10

    @classmethod
    def unavailable(cls) -> str | None:
        try:
            relay_binary()
        except EnvironmentProblem as error:
            return str(error)
        if not os.access(TUN_DEVICE, os.R_OK | os.W_OK):
            mode = oct(os.stat(TUN_DEVICE).st_mode & 0o777) if os.path.exists(TUN_DEVICE) \
                else "missing"
            return (f"{TUN_DEVICE} is not readable and writable for this user ({mode}); "
                    "run as root, or make it 0666 as most distributions ship it")
        return None

    def build(self, net: NetOps, link: LinkPlan, relay_stages: dict[str, list[Stage]]) -> None:
        journal = net.journal
        files = _files(journal.path, link.name)
        epoch_ns, first_packet = relay_epoch(
            [s for stages in relay_stages.values() for s in stages])
        config = RelayConfig(
            tap_a=link.a.ifname, tap_b=link.b.ifname, netns_a=None, netns_b=link.b.netns,
            ab=relay_stages_to_emu(relay_stages.get("up", [])),
            ba=relay_stages_to_emu(relay_stages.get("down", [])),
            stats_path=files["stats"], epoch_ns=epoch_ns, epoch_first_packet=first_packet,
            extra_comment=f"run {journal.path.stem}, {link.name}")
        journal.store.write(files["config"].name, config.text().encode())
        journal.record(f"emu files {link.name}", made.files([p.name for p in files.values()]))
        placement = from_state(journal.state)
        pin = ["--cpu", str(placement.relay_cpu)] if placement is not None else []
        pid = journal.spawn(f"relay {link.name}",
                            [str(relay_binary()), "--config", str(files["config"]), *pin],
                            netns=link.a.netns, log=files["log"])
        emu = dict(journal.state.get("emu", {}))
        emu[link.name] = {"pid": pid, "stats": str(files["stats"]), "log": str(files["log"])}
        journal.update(emu=emu)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            stats = read_stats(files["stats"])
            if stats is not None and stats.state == "running":
                return
            if not pid_running(pid):  # (it may still be nsenter, before the exec)
                break
            time.sleep(0.02)
        log = files["log"].read_text().strip().splitlines() if files["log"].exists() else []
        why = log[-1] if log else (f"no TAP devices within {START_TIMEOUT_S:g} s"
                                   if pid_running(pid) else "it exited")
        raise LinklabError(f"the link emulator for {link.name} did not start: {why}")

    def _links(self) -> dict[str, dict[str, Any]]:
        journal = getattr(self, "journal", None)
        return dict(journal.state.get("emu", {})) if journal is not None else {}

    def counters(self, shell: Shell) -> dict[tuple[str, str, str], dict[str, Any]]:
        out: dict[tuple[str, str, str], dict[str, Any]] = {}
        for link, info in self._links().items():
            stats = read_stats(Path(info["stats"]))
            if stats is None:
                continue
            for direction, key in _DIRECTION_KEY.items():
                counters = getattr(stats, key)
                for stage in counters.stages:
                    entry = {"passed_packets": stage.packets_out, "passed_bytes": stage.bytes_out,
                             "dropped_packets": stage.dropped_packets,
                             "dropped_bytes": stage.dropped_bytes}
                    for kind, emu_kind in _EMU_KIND.items():
                        if emu_kind == stage.kind:
                            out[(link, direction, kind)] = entry
        return out

    def health(self, shell: Shell) -> dict[str, str]:
        """{link: "up" | "down: <why>"} -- a dead relay means a dead link."""
        result = {}
        for link, info in self._links().items():
            status = relay_status(info["pid"], Path(info["stats"]))
            result[link] = "up" if status.alive else f"down: {status.reason}"
        return result
