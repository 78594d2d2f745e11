"""The emu wire: a link carried by the userspace link emulator (``linklab-emu``).

The relay runs inside the robot-side namespace (nothing is made in the root
namespace): it creates the link's two TAP devices, moves the edge-side one into the
edge's namespace, and forwards frames through the relay stages of each direction
(delay + jitter, Gilbert-Elliott burst loss, Mahimahi trace replay). Kernel stages
(nft loss/outage, tbf rate) are applied to the TAPs like to a veth pair.

If the relay dies its TAP devices vanish with it: the link is down, never bypassed,
and ``linklab link status`` says so (``health``).

A star whose links have the 802.11 medium gets one relay for all its robot links
(``build_medium``): it runs in the ``ap`` namespace, makes each link's two TAPs there,
moves each robot's into the robot's namespace and leaves the AP's ports for the bridge;
every robot is a station of the one channel and the AP another (the relay's medium).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, ClassVar

from linklab.emu.config import RelayConfig, RelayLink
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
from linklab.link.impairments.medium import STATIONS, station_name
from linklab.link.impairments.trace import relay_epoch
from linklab.link.netops import NetOps
from linklab.link.placement import from_state
from linklab.link.system import Shell
from linklab.link.topology import LinkPlan
from linklab.link.wires import TUN_DEVICE, Wire, binary_problem, tun_usable

START_TIMEOUT_S = 10.0
_DIRECTION_KEY = {"up": "ab", "down": "ba"}


def _files(state_path: Path, link: str) -> dict[str, Path]:
    """The relay's files: its config, stats and log (``link``: the link, or ``star``)."""
    stem = f"{state_path.stem}.emu-{link}"
    return {"config": state_path.with_name(stem + ".conf"),
            "stats": state_path.with_name(stem + ".stats.json"),
            "log": state_path.with_name(stem + ".log")}


def _item(values: Any, index: int) -> int | None:
    return values[index] if isinstance(values, list) and index < len(values) else None


def medium_counters(link: str, medium: MediumStats, robot: int | None = None
                    ) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Each direction's sending station on the medium (up: a, down: b): frames delivered
    (passed), MPDUs dropped at the retry limit or a full queue (dropped), and the medium's
    figures (every station, the lag). A star's robot ``robot`` (0-based): up is its
    station, down the AP's frames for it (delivered_to, dropped_to: every frame lost on
    the way, a group frame it missed too)."""
    out = {}
    for direction in STATIONS:
        counters = medium.station(station_name(direction, robot))
        if robot is not None and direction == "down":
            passed = _item(counters.get("delivered_to"), robot)
            entry = {"passed_packets": passed, "passed_bytes": None,
                     "dropped_packets": _item(counters.get("dropped_to"), robot)}
        else:
            entry = {"passed_packets": counters.get("delivered_frames"),
                     "passed_bytes": counters.get("delivered_bytes"),
                     "dropped_packets": dropped_frames(counters)}
        out[(link, direction, "medium")] = {**entry, "dropped_bytes": None,
                                            "medium": medium.figures()}
    return out


def _split(relay_stages: dict[str, list[Impairment]]
           ) -> tuple[dict[str, list[Impairment]], list[MediumStage]]:
    """A link's relay stages per direction without its medium stages, and those."""
    media = [s for stages in relay_stages.values() for s in stages if isinstance(s, MediumStage)]
    stages = {d: [s for s in relay_stages.get(d, []) if not isinstance(s, MediumStage)]
              for d in _DIRECTION_KEY}
    return stages, media


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

    def build_medium(self, net: NetOps, design: Any) -> None:
        """A star's robot links on the 802.11 medium: one relay for all of them."""
        plan = design.plan
        stars = [link for link in plan.links if plan.kind == "star"
                 and any(isinstance(s, MediumStage)
                         for d in _DIRECTION_KEY for s in design.stages[link.name][d])]
        if not stars:
            return
        journal = net.journal
        files = _files(journal.path, "star")
        parts = [_split({d: [s for s in design.stages[link.name][d] if s.runs_in == "relay"]
                         for d in _DIRECTION_KEY}) for link in stars]
        epoch_ns, first_packet = relay_epoch(
            [s for stages, _ in parts for d in stages.values() for s in d])
        more = tuple(RelayLink(tap_a=link.a.ifname, tap_b=link.b.ifname, netns_a=link.a.netns,
                               ab=relay_directives(stages["up"]),
                               ba=relay_directives(stages["down"]))
                     for link, (stages, _) in zip(stars[1:], parts[1:], strict=True))
        first, (stages, media) = stars[0], parts[0]
        config = RelayConfig(
            tap_a=first.a.ifname, tap_b=first.b.ifname, netns_a=first.a.netns,
            ab=relay_directives(stages["up"]), ba=relay_directives(stages["down"]),
            medium=media[0].medium.directive(), more=more,
            stats_path=files["stats"], epoch_ns=epoch_ns, epoch_first_packet=first_packet,
            extra_comment=f"run {journal.path.stem}, the star's {len(stars)} robot links")
        self._start(journal, "star", config, files, plan.host("ap").netns,
                    {link.name: {"robot": k} for k, link in enumerate(stars)})

    def build(self, net: NetOps, link: LinkPlan, relay_stages: dict[str, list[Impairment]]) -> None:
        journal = net.journal
        if link.name in journal.state.get("emu", {}):
            return   # a star's robot link: build_medium's relay carries it
        files = _files(journal.path, link.name)
        epoch_ns, first_packet = relay_epoch(
            [s for stages in relay_stages.values() for s in stages])
        # the 802.11 medium: one directive for both directions, after their stages
        stages, media = _split(relay_stages)
        config = RelayConfig(
            tap_a=link.a.ifname, tap_b=link.b.ifname, netns_a=None, netns_b=link.b.netns,
            ab=relay_directives(stages["up"]), ba=relay_directives(stages["down"]),
            medium=media[0].medium.directive() if media else None,
            stats_path=files["stats"], epoch_ns=epoch_ns, epoch_first_packet=first_packet,
            extra_comment=f"run {journal.path.stem}, {link.name}")
        self._start(journal, link.name, config, files, link.a.netns, {link.name: {}})

    @staticmethod
    def _start(journal: Any, what: str, config: RelayConfig, files: dict[str, Path],
               netns: str, links: dict[str, dict[str, Any]]) -> None:
        """Write the relay's config, start it in ``netns``, record it for each of ``links``
        (with what each needs: a star's robot index), and wait until it runs."""
        journal.store.write(files["config"].name, config.text().encode())
        journal.record(f"emu files {what}", made.files([p.name for p in files.values()]))
        placement = from_state(journal.state)
        pin = ["--cpu", str(placement.relay_cpu)] if placement is not None else []
        pid = journal.spawn(f"relay {what}",
                            [str(relay_binary()), "--config", str(files["config"]), *pin],
                            netns=netns, log=files["log"])
        emu = dict(journal.state.get("emu", {}))
        for name, extra in links.items():
            emu[name] = {"pid": pid, "stats": str(files["stats"]), "log": str(files["log"]),
                         **extra}
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
        raise LinklabError(f"the link emulator for {what} did not start: {why}")

    def _links(self) -> dict[str, dict[str, Any]]:
        journal = getattr(self, "journal", None)
        return dict(journal.state.get("emu", {})) if journal is not None else {}

    def counters(self, shell: Shell) -> dict[tuple[str, str, str], dict[str, Any]]:
        out: dict[tuple[str, str, str], dict[str, Any]] = {}
        read: dict[str, Any] = {}   # a star's relay: one stats file for its links
        for link, info in self._links().items():
            if info["stats"] not in read:
                read[info["stats"]] = read_stats(Path(info["stats"]))
            stats = read[info["stats"]]
            robot = info.get("robot")
            if stats is None or (robot or 0) > len(stats.more):
                continue
            for direction, counters in zip(_DIRECTION_KEY, stats.link(robot or 0), strict=True):
                for stage in counters.stages:
                    entry = {"passed_packets": stage.packets_out, "passed_bytes": stage.bytes_out,
                             "dropped_packets": stage.dropped_packets,
                             "dropped_bytes": stage.dropped_bytes}
                    for kind, emu_kind in RELAY_KINDS.items():
                        if emu_kind == stage.kind:
                            out[(link, direction, kind)] = entry
            if stats.medium is not None:
                out.update(medium_counters(link, stats.medium, robot))
        return out

    def health(self, shell: Shell) -> dict[str, str]:
        """{link: "up" | "down: <why>"} -- a dead relay means a dead link."""
        result = {}
        seen: dict[int, Any] = {}   # a star's relay: asked once for all its links
        for link, info in self._links().items():
            if info["pid"] not in seen:
                seen[info["pid"]] = relay_status(info["pid"], Path(info["stats"]))
            status = seen[info["pid"]]
            result[link] = "up" if status.alive else f"down: {status.reason}"
        return result
