"""Start, watch and stop one ``linklab-emu`` process, and read its counters.

The relay creates its TAP devices itself (so they vanish, and the link is down,
whenever it exits) and rewrites a JSON stats file every interval. ``Relay`` is
the owner's handle; ``relay_status`` answers "is this link's relay alive, and what
did it count" for anyone who knows its pid and stats file (e.g. ``linklab link
status`` in another process).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linklab.emu.config import RelayConfig
from linklab.errors import EnvironmentProblem, LinklabError

REPO = Path(__file__).resolve().parents[3]
BINARY_NAME = "linklab-emu"


def relay_binary() -> Path:
    """The built relay: $LINKLAB_EMU, else build/emu/release/linklab-emu in the repo."""
    override = os.environ.get("LINKLAB_EMU")
    path = Path(override) if override else REPO / "build" / "emu" / "release" / BINARY_NAME
    if not path.is_file() or not os.access(path, os.X_OK):
        raise EnvironmentProblem(
            f"the link emulator {path} is not built: run scripts/setup.sh "
            "(cargo build --release --manifest-path emu/Cargo.toml --target-dir build/emu)")
    return path


@dataclass(frozen=True)
class StageCounters:
    name: str
    kind: str
    packets_in: int
    bytes_in: int
    packets_out: int
    bytes_out: int
    dropped_packets: int
    dropped_bytes: int
    queue_packets: int
    queue_bytes: int
    queue_max_packets: int
    queue_max_bytes: int
    state: str | None = None


@dataclass(frozen=True)
class DirectionCounters:
    rx_frames: int
    rx_bytes: int
    tx_frames: int
    tx_bytes: int
    tx_errors: int
    stages: tuple[StageCounters, ...]


@dataclass(frozen=True)
class MediumStats:
    """The ``medium`` object of a relay's stats (emu/src/medium/mod.rs ``json``): per
    station (a: the robot, b: the AP, bg0..: background stations) its counters as the relay
    wrote them (offered/delivered frames and bit/s, drops_retry, drops_queue, collisions,
    mac_delay_mean_ns/p95_ns, ...), the totals (throughput_bps, collision_probability,
    mean_ampdu_frames, busy_fraction) and the lag -- how late the relay handled a medium
    event against its schedule (lag_max_ns, lag_p90_ns, lag_p99_ns, lag_mean_ns)."""

    stations: dict[str, dict[str, Any]]
    raw: dict[str, Any]

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> MediumStats:
        return cls(dict(raw.get("stations") or {}), raw)

    def station(self, name: str) -> dict[str, Any]:
        return self.stations.get(name) or {}

    def figures(self) -> dict[str, Any]:
        """As plain data (a stage's counters carry it into every snapshot)."""
        return dict(self.raw)


# A station's drops in the medium's counters: at the retry limit, at a full queue.
DROP_COUNTERS = ("drops_retry", "drops_queue")


def dropped_frames(station: dict[str, Any]) -> int | None:
    """What a station of the medium dropped (retry limit and queue), or None if unknown."""
    counts = [station.get(key) for key in DROP_COUNTERS]
    return None if any(c is None for c in counts) else sum(counts)


@dataclass(frozen=True)
class LinkStats:
    """A star's link 2..N on the relay's medium: its TAPs and each direction's counters."""

    tap_a: str
    tap_b: str
    ab: DirectionCounters
    ba: DirectionCounters


@dataclass(frozen=True)
class RelayStats:
    pid: int
    state: str          # running | stopped | failed (as the relay last wrote it)
    updated_ns: int     # CLOCK_MONOTONIC of the last rewrite
    started_ns: int
    epoch_ns: int
    tap_a: str
    tap_b: str
    ab: DirectionCounters
    ba: DirectionCounters
    medium: MediumStats | None = None   # a link with the 802.11 medium
    more: tuple[LinkStats, ...] = ()     # a star's links 2..N on the medium

    def link(self, index: int) -> tuple[DirectionCounters, DirectionCounters]:
        """(ab, ba) of link ``index`` (0: the first, a pair's one)."""
        if index == 0:
            return self.ab, self.ba
        other = self.more[index - 1]
        return other.ab, other.ba

    def as_dict(self) -> dict:
        from dataclasses import asdict
        return asdict(self)


def _direction(raw: dict) -> DirectionCounters:
    stages = tuple(
        StageCounters(**{k: v for k, v in s.items() if k in StageCounters.__dataclass_fields__})
        for s in raw["stages"])
    return DirectionCounters(raw["rx_frames"], raw["rx_bytes"], raw["tx_frames"],
                             raw["tx_bytes"], raw["tx_errors"], stages)


def read_stats(path: Path) -> RelayStats | None:
    """The relay's last stats file, or None if it has not written one."""
    try:
        raw = json.loads(Path(path).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    medium = raw.get("medium")
    more = tuple(LinkStats(link["tap_a"], link["tap_b"], _direction(link["ab"]),
                           _direction(link["ba"])) for link in raw.get("links") or ())
    return RelayStats(raw["pid"], raw["state"], raw["updated_ns"], raw["started_ns"],
                      raw["epoch_ns"], raw["tap_a"], raw["tap_b"],
                      _direction(raw["ab"]), _direction(raw["ba"]),
                      MediumStats.from_raw(medium) if isinstance(medium, dict) else None, more)


def pid_running(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie (whatever program it runs)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    return "\nState:\tZ" not in status


def pid_is_relay(pid: int) -> bool:
    """True if ``pid`` is a live (not zombie) linklab-emu process."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    if "\nState:\tZ" in status:
        return False
    return BINARY_NAME.encode() in cmdline.split(b"\0")[0]


@dataclass(frozen=True)
class RelayStatus:
    alive: bool
    link: str             # "up" when the relay forwards, "down" otherwise
    reason: str
    stats: RelayStats | None


def relay_status(pid: int, stats_path: Path) -> RelayStatus:
    stats = read_stats(stats_path)
    if pid_is_relay(pid):
        return RelayStatus(True, "up", "relay running", stats)
    if stats is not None and stats.state == "stopped":
        why = "the link emulator stopped"
    elif stats is not None and stats.state == "failed":
        why = "the link emulator failed (one of its TAP devices went away)"
    else:
        why = "the link emulator is not running (it died or was killed)"
    return RelayStatus(False, "down", f"{why}: pid {pid}", stats)


class Relay:
    """One relay process for one link."""

    def __init__(self, config: RelayConfig, workdir: Path, binary: Path | None = None):
        self.workdir = Path(workdir)
        if config.stats_path is None:
            from dataclasses import replace
            config = replace(config, stats_path=self.workdir / "emu-stats.json")
        self.config = config
        self.binary = binary or relay_binary()
        self.config_path = self.workdir / "emu.conf"
        self.log_path = self.workdir / "emu.log"
        self.process: subprocess.Popen | None = None

    @property
    def stats_path(self) -> Path:
        assert self.config.stats_path is not None
        return self.config.stats_path

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def start(self, timeout_s: float = 10.0, cpu: int | None = None) -> None:
        """Start the relay and return once its TAP devices exist in their namespaces."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(self.config.text())
        command = [str(self.binary), "--config", str(self.config_path)]
        if cpu is not None:
            command += ["--cpu", str(cpu)]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        line = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], 0.05)
            if ready:
                line = self.process.stdout.readline()
                if line.startswith(b"ready"):
                    return
            if self.process.poll() is not None:
                break
        error = self.log_path.read_text().strip().splitlines()
        self.stop()
        detail = error[-1] if error else f"no 'ready' within {timeout_s:g} s"
        raise LinklabError(f"the link emulator did not start: {detail}")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stats(self) -> RelayStats | None:
        return read_stats(self.stats_path)

    def fresh_stats(self, timeout_s: float = 2.0) -> RelayStats | None:
        """Stats written after this call (waits up to one interval or so)."""
        since = time.monotonic_ns()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            stats = self.stats()
            if stats is not None and (stats.updated_ns >= since or stats.state == "stopped"):
                return stats
            time.sleep(self.config.stats_interval_s / 4)
        return self.stats()

    def stop(self, timeout_s: float = 5.0) -> int | None:
        """SIGTERM, wait, SIGKILL if it does not go; returns the exit status."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout:
            self.process.stdout.close()
        return self.process.returncode

    def __enter__(self) -> Relay:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
