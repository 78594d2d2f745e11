"""What the kernel says of one process in /proc/PID/stat (proc(5)), read in one place for
every layer: its fields, the CPU seconds it has used, and its start time."""

from __future__ import annotations

import os
from pathlib import Path


def stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name, state first (so proc(5)'s
    field n is index n - 3); None if the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def cpu_seconds(pid: int) -> float | None:
    """utime + stime (proc(5) fields 14 and 15, clock ticks) in seconds: what the process
    and its threads ran, including kernel work its system calls did; None if gone."""
    fields = stat_fields(pid)
    if fields is None:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_time(pid: int) -> str | None:
    """The process's start time after boot (proc(5) field 22, clock ticks), as written: a
    pid and this identify one process even after the pid is reused; None if gone."""
    fields = stat_fields(pid)
    return None if fields is None or len(fields) < 20 else fields[19]
