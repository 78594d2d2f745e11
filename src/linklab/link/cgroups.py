"""A CPU quota for the processes of a run's host: one cgroup of the cpu controller.

The controller is found from /proc/self/mountinfo and /proc/self/cgroup (``find``):
cgroup v1's ``cpu`` hierarchy (quota in ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``),
else cgroup v2 where ``cpu`` is among the controllers (``cpu.max``: "QUOTA PERIOD").
A run's group is ``linklab-<run>-<host>``:

- v1: under this process's own cgroup of the cpu hierarchy, so the probes keep every
  limit they had there (v1 has no rule against processes beside child groups);
- v2: under the nearest cgroup at or above this process's own whose
  ``cgroup.subtree_control`` enables ``cpu`` (a child gets the controller only there).

It is made by ``make`` and recorded in the run's journal (``made.cgroup``), so
``linklab link down`` / ``clean`` remove it (``remove``) also after linklab was killed.
A process joins it race-free through ``join_argv``: a shell writes its own pid to
``cgroup.procs`` and then execs the command, so the process is in the group before the
command's first instruction, and keeps its pid (the runner still reaps it with wait4).
The shell runs outside the host's namespace: ``ip netns exec`` mounts a /sys of its own,
without /sys/fs/cgroup.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linklab.link.made import CGROUP_ROOT

PERIOD_US = 100_000        # the kernel's default CFS period (cpu.cfs_period_us)
MIN_QUOTA_US = 1_000       # the least cfs_quota_us the kernel takes (1 ms)


@dataclass(frozen=True)
class Controller:
    """Where the cpu controller is and where a run's groups go (``parent``)."""

    version: int            # 1 or 2
    mount: Path             # the hierarchy's mount point
    parent: Path            # where linklab-<run>-<host> groups are made

    def group(self, run: str, host: str) -> Path:
        return self.parent / f"linklab-{run}-{host}"

    def describe(self) -> dict[str, Any]:
        return {"version": self.version, "mount": str(self.mount),
                "parent": str(self.parent), "period_us": PERIOD_US}


def parse_mounts(mountinfo: str) -> tuple[Path | None, Path | None]:
    """(v1 mount of the cpu controller, v2 mount) from /proc/self/mountinfo text."""
    v1 = v2 = None
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        kind, options = tail[0], tail[2].split(",")
        if kind == "cgroup" and "cpu" in options and v1 is None:
            v1 = Path(fields[4])
        elif kind == "cgroup2" and v2 is None:
            v2 = Path(fields[4])
    return v1, v2


def own_group(proc_cgroup: str, version: int) -> str:
    """This process's cgroup path (inside its hierarchy) from /proc/self/cgroup text."""
    for line in proc_cgroup.splitlines():
        _id, controllers, path = line.split(":", 2)
        if version == 2 and controllers == "":
            return path
        if version == 1 and "cpu" in controllers.split(","):
            return path
    return "/"


def find(mountinfo: str | None = None, proc_cgroup: str | None = None) -> Controller | str:
    """The cpu controller this process can make groups in, or why there is none (a
    sentence: no cpu controller, not mounted under /sys/fs/cgroup, no permission)."""
    mountinfo = Path("/proc/self/mountinfo").read_text() if mountinfo is None else mountinfo
    proc_cgroup = Path("/proc/self/cgroup").read_text() if proc_cgroup is None \
        else proc_cgroup
    v1, v2 = parse_mounts(mountinfo)
    if v1 is not None:
        controller = Controller(1, v1, _under(v1, own_group(proc_cgroup, 1)))
    elif v2 is not None and "cpu" in _words(v2 / "cgroup.controllers"):
        own = _under(v2, own_group(proc_cgroup, 2))
        parent = v2_parent(v2, own)
        if parent is None:
            return (f"cgroup v2 does not enable the cpu controller for children of {own} "
                    "or any cgroup above it (cgroup.subtree_control)")
        controller = Controller(2, v2, parent)
    else:
        return "this machine has no cgroup cpu controller (cgroup v1 cpu or v2 cpu)"
    if not str(controller.parent).startswith(CGROUP_ROOT):
        return f"the cpu controller is mounted at {controller.mount}, not under {CGROUP_ROOT}"
    if not os.access(controller.parent, os.W_OK | os.X_OK):
        return (f"cannot make a cgroup in {controller.parent}: run as root, or delegate "
                "that cgroup to this user")
    return controller


def v2_parent(mount: Path, own: Path) -> Path | None:
    """The nearest cgroup at or above ``own`` whose children get the cpu controller
    (``cpu`` in its cgroup.subtree_control), None if there is none up to ``mount``."""
    return next((p for p in (own, *own.parents) if p.is_relative_to(mount)
                 and "cpu" in _words(p / "cgroup.subtree_control")), None)


def _under(mount: Path, path: str) -> Path:
    return mount / path.lstrip("/")


def _words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def limit_cores(controller: Controller) -> float | None:
    """The tightest quota of ``controller.parent`` and the groups above it, in cores
    (None: unlimited): a child's quota cannot be more (v1 refuses to write it)."""
    tightest: float | None = None
    for path in (controller.parent, *controller.parent.parents):
        if not path.is_relative_to(controller.mount):
            break
        quota = read_quota(path)
        if quota is not None and quota[0] > 0:
            cores = quota[0] / quota[1]
            tightest = cores if tightest is None else min(tightest, cores)
    return tightest


def quota_us(cores: float, period_us: int = PERIOD_US) -> int:
    """CPU microseconds per period for ``cores`` (1.5 -> 150000 of 100000)."""
    return max(MIN_QUOTA_US, round(cores * period_us))


def make(journal: Any, controller: Controller, run: str, host: str, quota: int,
         period: int = PERIOD_US) -> Path:
    """Make run ``run``'s group for ``host`` with ``quota`` µs of CPU per ``period`` µs,
    recorded in ``journal`` first thing after the directory exists."""
    from linklab.held_signals import signals_held
    from linklab.link.made import cgroup

    path = controller.group(run, host)
    with signals_held():
        try:
            path.mkdir()
        except FileExistsError:
            raise FileExistsError(f"cgroup {path} already exists (a run of the same name "
                                  f"left it? linklab link clean --name {run})") from None
        journal.record(f"cpu quota cgroup for {host}: {path}", cgroup(str(path)))
    if controller.version == 1:
        (path / "cpu.cfs_period_us").write_text(f"{period}\n")
        (path / "cpu.cfs_quota_us").write_text(f"{quota}\n")
    else:
        (path / "cpu.max").write_text(f"{quota} {period}\n")
    return path


def read_quota(path: Path) -> tuple[int, int] | None:
    """(quota µs, period µs) of a group as the kernel has it; quota -1: no limit; None
    when the group has no such file."""
    try:
        if (path / "cpu.max").exists():
            quota, period = (path / "cpu.max").read_text().split()
            return (-1 if quota == "max" else int(quota)), int(period)
        return (int((path / "cpu.cfs_quota_us").read_text()),
                int((path / "cpu.cfs_period_us").read_text()))
    except (OSError, ValueError):
        return None


def throttling(path: Path) -> dict[str, float]:
    """From the group's cpu.stat: periods, periods throttled, seconds throttled."""
    stat: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in (path / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if value.strip().isdigit():
                stat[key] = int(value)
    seconds = (stat["throttled_time"] / 1e9 if "throttled_time" in stat  # v1: ns
               else stat.get("throttled_usec", 0) / 1e6)                   # v2: µs
    return {"periods": stat.get("nr_periods", 0), "throttled": stat.get("nr_throttled", 0),
            "throttled_s": seconds}


def join_argv(path: Path, argv: list[str]) -> list[str]:
    """``argv`` started so that it is in group ``path`` before it runs (same pid)."""
    return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(path / "cgroup.procs"),
            *argv]


def members(path: Path) -> list[int]:
    try:
        return [int(p) for p in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def remove(path: Path, wait_s: float = 3.0) -> str | None:
    """Remove a run's group (``made.cgroup``); what is still in it is a process linklab
    put there (a probe left by a killed run): it is killed first. None when done (or
    already gone), else what is wrong."""
    if not path.exists():
        return None
    deadline = time.monotonic() + wait_s
    while True:
        for pid in members(path):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            path.rmdir()
            return None
        except FileNotFoundError:
            return None
        except OSError as error:
            if error.errno != errno.EBUSY or time.monotonic() > deadline:
                return f"cannot remove cgroup {path}: {error.strerror}"
        time.sleep(0.02)
