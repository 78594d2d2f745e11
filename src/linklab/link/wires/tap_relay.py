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
from pathlib import Path
from typing import Any, ClassVar

from linklab.emu.config import RelayConfig
from linklab.emu.relay import (
    MediumStats,
    dropped_frames,
    pid_running,
    read_stats,
    relay_binary,
    relay_status,
)
from linklab.errors import LinklabError
from linklab.link import made
from linklab.link.impairments import RELAY_KINDS, Impairment, MediumStage, relay_directives
from linklab.link.impairments.medium import STATIONS
from linklab.link.impairments.trace import relay_epoch
from linklab.link.netops import NetOps
from linklab.link.placement import from_state
from linklab.link.system import Shell
from linklab.link.topology import LinkPlan
from linklab.link.wires import TUN_DEVICE, Wire, binary_problem, tun_usable

START_TIMEOUT_S = 10.0
_DIRECTION_KEY = {"up": "ab", "down": "ba"}


def _files(state_path: Path, link: str) -> dict[str, Path]:
    stem = f"{state_path.stem}.emu-{link}"
    return {"config": state_path.with_name(stem + ".conf"),
            "stats": state_path.with_name(stem + ".stats.json"),
            "log": state_path.with_name(stem + ".log")}


def medium_counters(link: str, medium: MediumStats) -> dict[tuple[str, str, str],
                                                               dict[str, Any]]:
    """Each direction's sending station on the medium (up: a, down: b): frames delivered
    (passed), MPDUs dropped at the retry limit or a full queue (dropped), and the medium's
    figures (every station, the lag)."""
    out = {}
    for direction, station in STATIONS.items():
        counters = medium.station(station)
        out[(link, direction, "medium")] = {
            "passed_packets": counters.get("delivered_frames"),
            "passed_bytes": counters.get("delivered_bytes"),
            "dropped_packets": dropped_frames(counters), "dropped_bytes": None,
            "medium": medium.figures()}
    return out


class TapRelayWire(Wire):
    name: ClassVar[str] = "emu"
    executes: ClassVar[frozenset[str]] = frozenset(RELAY_KINDS)  # those with a relay form
    # Below veth: chosen only when a link has stages only the relay can run.
    priority: ClassVar[int] = -10

    @classmethod
    def unavailable(cls) -> str | None:
        problem = binary_problem(relay_binary)
        if problem is not None or tun_usable():
            return problem
        mode = oct(os.stat(TUN_DEVICE).st_mode & 0o777) if os.path.exists(TUN_DEVICE) \
            else "missing"
        return (f"{TUN_DEVICE} is not readable and writable for this user ({mode}); "
                "run as root, or make it 0666 as most distributions ship it")

    def build(self, net: NetOps, link: LinkPlan, relay_stages: dict[str, list[Impairment]]) -> None:
        journal = net.journal
        files = _files(journal.path, link.name)
        epoch_ns, first_packet = relay_epoch(
            [s for stages in relay_stages.values() for s in stages])
        # the 802.11 medium: one directive for both directions, after their stages
        media = [s.medium for stages in relay_stages.values() for s in stages
                 if isinstance(s, MediumStage)]
        stages = {d: [s for s in relay_stages.get(d, []) if not isinstance(s, MediumStage)]
                  for d in _DIRECTION_KEY}
        config = RelayConfig(
            tap_a=link.a.ifname, tap_b=link.b.ifname, netns_a=None, netns_b=link.b.netns,
            ab=relay_directives(stages["up"]), ba=relay_directives(stages["down"]),
            medium=media[0].directive() if media else None,
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
                    for kind, emu_kind in RELAY_KINDS.items():
                        if emu_kind == stage.kind:
                            out[(link, direction, kind)] = entry
            if stats.medium is not None:
                out.update(medium_counters(link, stats.medium))
        return out

    def health(self, shell: Shell) -> dict[str, str]:
        """{link: "up" | "down: <why>"} -- a dead relay means a dead link."""
        result = {}
        for link, info in self._links().items():
            status = relay_status(info["pid"], Path(info["stats"]))
            result[link] = "up" if status.alive else f"down: {status.reason}"
        return result
