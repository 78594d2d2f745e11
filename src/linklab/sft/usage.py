"""CPU and memory of one sft-bench endpoint process over a trial's measured window.

Read from /proc (every namespace of the star shares the kernel's pid namespace and
/proc): CPU is utime + stime of /proc/PID/stat (every thread's, including threads that
ended; clock ticks, 10 ms each), memory is the resident set: VmRSS sampled while the
trial runs and VmHWM, the peak, reset at the window's start (``clear_refs`` 5, see
proc(5)) so it is the peak *in the window*.  RSS and not PSS: the endpoints of the star
share libpython, libddsc and the Zenoh library on one machine, and PSS would split
those pages among however many endpoints run (1 or 3 receivers change every process's
PSS); the paper's processes each ran alone on a machine, where what a process holds is
its RSS.  The SFT overhead is private memory, the same under both.  Definitions:
docs/metrics.md, "SFT endpoint overhead".
"""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path
from typing import Any

from linklab.procfs import cpu_seconds


def status_kb(text: str, key: str) -> int | None:
    """A ``Key:  N kB`` line of /proc/PID/status, in kB (None if absent)."""
    for line in text.splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return None


def _status(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return ""


def reset_peak(pid: int) -> None:
    """Set VmHWM of ``pid`` to its current RSS (proc(5), /proc/PID/clear_refs: 5)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        pass  # gone: its next snapshot says so (cpu_s None)


def snapshot(pids: list[int], reset: bool = False) -> dict[str, dict[str, Any]]:
    """CPU seconds so far, RSS and peak RSS (kB) of each pid, keyed by str(pid).

    ``reset``: afterwards reset each peak, so the next snapshot's is the window's."""
    out = {}
    for pid in pids:
        text = _status(pid)
        out[str(pid)] = {"cpu_s": cpu_seconds(pid), "rss_kb": status_kb(text, "VmRSS"),
                         "hwm_kb": status_kb(text, "VmHWM"), "t_ns": time.monotonic_ns()}
        if reset:
            reset_peak(pid)
    return out


class RssSampler:
    """VmRSS of some processes every ``period`` seconds, in a thread: (t_ns, pid, kB)."""

    def __init__(self, pids: list[int], period: float = 0.1):
        self.pids, self.period = list(pids), period
        self.samples: list[tuple[int, int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            for pid in self.pids:
                rss = status_kb(_status(pid), "VmRSS")
                if rss is not None:
                    self.samples.append((time.monotonic_ns(), pid, rss))
            self._stop.wait(self.period)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def window_usage(before: dict[str, Any], after: dict[str, Any], rss_kb: list[int],
                 seconds: float, messages: int) -> dict[str, float | None]:
    """One process over one window: its CPU and memory metrics (docs/metrics.md).

    before/after: its two :func:`snapshot` entries (the peak reset at ``before``);
    rss_kb: its VmRSS samples inside the window (the two snapshots' RSS when none);
    messages: the messages published in the window."""
    if before.get("cpu_s") is None or after.get("cpu_s") is None or seconds <= 0:
        return {"cpu_s": None, "cpu_pct": None, "cpu_s_per_msg": None,
                "rss_mean_kb": None, "rss_peak_kb": None}
    cpu = after["cpu_s"] - before["cpu_s"]
    edges = [v for v in (before.get("rss_kb"), after.get("rss_kb")) if v is not None]
    samples = rss_kb or edges
    # the kernel raises VmHWM lazily (mm->hiwater_rss at unmaps; proc(5) reports the larger
    # of it and the current RSS), so a rise and fall between two unmaps may pass it by:
    # the peak is the larger of VmHWM and every RSS the window sampled
    peaks = [v for v in (after.get("hwm_kb"), *samples) if v is not None]
    return {"cpu_s": cpu, "cpu_pct": 100 * cpu / seconds,
            "cpu_s_per_msg": cpu / messages if messages else None,
            "rss_mean_kb": statistics.fmean(samples) if samples else None,
            "rss_peak_kb": max(peaks) if peaks else None}


def in_window(samples: list[tuple[int, int, int]], pid: int, t0_ns: int,
              t1_ns: int) -> list[int]:
    """The RSS samples of ``pid`` taken inside [t0_ns, t1_ns]."""
    return [kb for t, p, kb in samples if p == pid and t0_ns <= t <= t1_ns]


def trial_usage(pids: dict[str, int], before: dict[str, Any], after: dict[str, Any],
                samples: list[tuple[int, int, int]], window_ns: tuple[int, int],
                messages: int) -> dict[str, dict[str, float | None]]:
    """Every process of a trial (role name -> pid): :func:`window_usage` each."""
    t0, t1 = window_ns
    seconds = (t1 - t0) / 1e9
    return {role: window_usage(before.get(str(pid), {}), after.get(str(pid), {}),
                               in_window(samples, pid, t0, t1), seconds, messages)
            for role, pid in pids.items()}
