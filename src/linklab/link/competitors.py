"""CPU-bound competitors in a run's hosts: the rest of a robot's software, as CPU load.

A competitor is the interpreter that runs linklab, ``python -I -S -c "while True: pass"``
(the last argument, ``linklab-cpu-competitor``, only names it in ``ps``). Chosen because it
is CPU-bound and nothing else: the loop is two bytecodes (a no-op and a jump back) that
make no system call and allocate nothing, so it runs from a few cache lines and never
waits -- not memory-bound, not I/O-bound; it is the same loop every time on a machine
(same interpreter, same bytecode: ``definition`` records both in run.json), and it needs
no build step wherever linklab runs.

It is started like a probe, through ``Testbed.popen``: inside a host (``ip netns exec``),
recorded in the run's journal with its pid and start time (``linklab link down`` /
``clean`` end it, also after linklab was SIGKILLed), a child of the runner, so it has the
probes' nice value, scheduling policy and cgroups (inherited from the runner, as the
probes' are). It gets a process group of its own -- a Ctrl-C at the terminal reaches
linklab, which stops it, not the competitor -- but not a session of its own: with
``kernel.sched_autogroup_enabled`` every session is a scheduling group of its own, and
competitors in other sessions would not compete with the probes task for task.

On namespace testbeds every host shares this machine's CPUs: the host a competitor runs in
is where it is recorded (its namespace), while it competes with every host's probes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linklab import procfs

CODE = "while True: pass"
TAG = "linklab-cpu-competitor"
WHY = ("CPU-bound busy loop: two bytecodes (no-op, jump back), no system call, no "
       "allocation; one per process, at the probes' nice, policy, cgroup and autogroup")


def argv() -> list[str]:
    return [sys.executable, "-I", "-S", "-c", CODE, TAG]


def definition() -> dict[str, Any]:
    """What a competitor is, for run.json."""
    policy = os.sched_getscheduler(0)
    names = {getattr(os, n): n for n in ("SCHED_OTHER", "SCHED_BATCH", "SCHED_IDLE",
                                         "SCHED_FIFO", "SCHED_RR") if hasattr(os, n)}
    return {"argv": argv(), "code": CODE, "python": sys.version.split()[0],
            "what": WHY, "nice": os.getpriority(os.PRIO_PROCESS, 0),
            "policy": names.get(policy, str(policy)),
            "online_cpus": online_cpus()}


def online_cpus() -> int:
    """The machine's online CPUs (sysconf _SC_NPROCESSORS_ONLN)."""
    return max(1, int(os.sysconf("SC_NPROCESSORS_ONLN")))


@dataclass
class Competitor:
    host: str
    popen: subprocess.Popen[Any]
    started: float            # time.monotonic() at its start
    cpu_s: float | None = None  # user + system seconds (rusage), once stopped
    wall_s: float | None = None
    ended_early: bool = False   # it had ended before stop (not by linklab)
    runqueue_s: float | None = None  # time it waited for a CPU while runnable (schedstat)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def cpu_now(self) -> float | None:
        """User + system seconds so far (/proc/PID/stat, clock ticks), None if gone."""
        return procfs.cpu_seconds(self.pid)

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "pid": self.pid, "cpu_s": self.cpu_s,
                "wall_s": self.wall_s, "runqueue_s": self.runqueue_s,
                "ended_early": self.ended_early}


def runqueue_seconds(pid: int) -> float | None:
    """Seconds ``pid`` has waited on a run queue (/proc/PID/schedstat, 2nd field): a
    CPU-bound process is always on a CPU or waiting for one, so CPU + this ~ its age."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def running(pid: int) -> bool:
    fields = procfs.stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def start(testbed: Any, hosts: list[str], into: list[Competitor] | None = None
          ) -> list[Competitor]:
    """One competitor in each of ``hosts`` (a host named twice gets two), started in
    order, each recorded in the run's journal as it starts and appended to ``into`` (so
    the caller can stop those started if a later one fails)."""
    out: list[Competitor] = [] if into is None else into
    for host in hosts:
        popen = testbed.popen(host, argv(), stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              process_group=0)
        out.append(Competitor(host, popen, time.monotonic()))
    return out


def stop(testbed: Any, competitors: list[Competitor]) -> None:
    """End every competitor (SIGKILL: it holds nothing), reap it with wait4 for its CPU
    seconds, and drop its record from the journal."""
    for c in competitors:
        if c.popen.returncode is None:
            c.ended_early = c.wall_s is None and not running(c.pid)
            c.runqueue_s = runqueue_seconds(c.pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(c.pid, signal.SIGKILL)
    for c in competitors:
        if c.popen.returncode is None:
            try:
                _pid, status, usage = os.wait4(c.pid, 0)
                c.popen.returncode = os.waitstatus_to_exitcode(status)
                c.cpu_s = usage.ru_utime + usage.ru_stime
            except ChildProcessError:  # reaped elsewhere: its rusage is gone
                c.popen.poll()
        if c.wall_s is None:
            c.wall_s = time.monotonic() - c.started
        testbed.journal.forget(c.popen)
