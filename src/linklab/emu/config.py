"""The relay's configuration file, written from typed stage lists."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from linklab.emu.directives import Medium, Stage
from linklab.errors import UsageError

MAX_IFNAME = 15
# The most the relay polls before a deadline when it learns the lead (spin_s None).
SPIN_AUTO_CAP_S = 300e-6


# The most links one relay carries (the relay's MAX_LINKS: a star's robots).
MAX_LINKS = 32


def _check_ifname(name: str) -> None:
    if not name or len(name) > MAX_IFNAME or any(c.isspace() for c in name):
        raise UsageError(f"interface name {name!r}: 1 to {MAX_IFNAME} characters, no spaces")


@dataclass(frozen=True)
class RelayLink:
    """One more link of a relay on a medium (a star's robot K >= 2): its TAPs, where
    they go, and its stages (the relay's ``tap aK``, ``stage abK`` lines)."""

    tap_a: str
    tap_b: str
    netns_a: str | None = None
    netns_b: str | None = None
    ab: tuple[Stage, ...] = ()
    ba: tuple[Stage, ...] = ()

    def __post_init__(self) -> None:
        for name in (self.tap_a, self.tap_b):
            _check_ifname(name)


def _link_lines(suffix: str, link: RelayLink) -> list[str]:
    lines = [f"tap {side}{suffix} {name}" + (f" netns {netns}" if netns else "")
             for side, name, netns in (("a", link.tap_a, link.netns_a),
                                       ("b", link.tap_b, link.netns_b))]
    for direction, stages in (("ab", link.ab), ("ba", link.ba)):
        lines.extend(f"stage {direction}{suffix} {stage.directive()}" for stage in stages)
    return lines


@dataclass(frozen=True)
class RelayConfig(RelayLink):
    """One emulated link: TAP ``tap_a`` (moved into ``netns_a``) and ``tap_b``;
    ``ab`` are the stages frames from a to b pass, ``ba`` the other direction (the
    fields of RelayLink), and the relay's own settings. With a ``medium``, ``more`` are a
    star's links 2..N on the same channel (one AP)."""

    # the 802.11 medium both directions share, after their stages (None: none)
    medium: Medium | None = None
    more: tuple[RelayLink, ...] = ()
    seed: int = 1
    stats_path: Path | None = None
    stats_interval_s: float = 0.1
    epoch_ns: int | None = None
    # the time-based stages' zero at the first frame of the link (epoch_ns unset)
    epoch_first_packet: bool = False
    mtu: int = 1500
    # SCHED_FIFO priority of the relay (None: normal scheduling). A delay emulator must
    # not be late because other processes are busy; netem runs in softirq context.
    realtime_priority: int | None = 10
    # How long before each deadline the relay stops sleeping and polls: None learns it
    # (the recent p90 of the timer's lateness, at most SPIN_AUTO_CAP_S; emu/src/lead.rs),
    # a number fixes it (0: sleep to the deadline). SCHED_FIFO does not make a timer on
    # an idle vCPU fire on time: the host wakes the vCPU first (~0.1 ms here).
    spin_s: float | None = None
    extra_comment: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.more and self.medium is None:
            raise UsageError("a relay carries several links only on one 802.11 medium "
                             "(a star's robots): give it a medium")
        if 1 + len(self.more) > MAX_LINKS:
            raise UsageError(f"{1 + len(self.more)} links: one relay carries at most "
                             f"{MAX_LINKS}")

    def text(self) -> str:
        lines = ["# linklab-emu configuration (written by linklab.emu.config)"]
        if self.extra_comment:
            lines.append(f"# {self.extra_comment}")
        lines.append(f"seed {self.seed}")
        lines.append(f"mtu {self.mtu}")
        if self.realtime_priority:
            lines.append(f"priority {self.realtime_priority}")
        if self.spin_s is None:
            lines.append(f"spin auto {round(SPIN_AUTO_CAP_S * 1e9)}")
        else:
            lines.append(f"spin {round(self.spin_s * 1e9)}")
        if self.stats_path is not None:
            lines.append(f"stats {self.stats_path} {round(self.stats_interval_s * 1e9)}")
        if self.epoch_first_packet and self.epoch_ns is not None:
            raise UsageError("a relay's epoch is a time or its first frame, not both")
        if self.epoch_ns is not None:
            lines.append(f"epoch {self.epoch_ns}")
        elif self.epoch_first_packet:
            lines.append("epoch first-packet")
        lines.extend(_link_lines("", self))
        for k, link in enumerate(self.more, start=2):
            lines.extend(_link_lines(str(k), link))
        if self.medium is not None:
            lines.extend(self.medium.lines())
        return "\n".join(lines) + "\n"
