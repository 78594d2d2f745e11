"""Start a probe, watch it, stop it, and account for its CPU and memory.

The command line is the probe protocol (README, "Probes"). A probe runs as a child of
the runner (inside a host namespace via the testbed's ``popen``); the runner reaps it
with ``wait4`` so its CPU seconds come from the kernel's rusage; its peak RSS is the
probe image's VmHWM (/proc/PID/status), read while it runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linklab.errors import EnvironmentProblem

REPO = Path(__file__).resolve().parents[3]


def probe_binary(middleware: str) -> Path:
    """The built probe for a middleware (scripts/setup.sh builds them under build/probes)."""
    from linklab.brokers.bench_adapter import adapter_for

    adapter = adapter_for(middleware)
    if adapter is not None and adapter.probe != middleware:
        return adapter.binary(probe_binary)
    name = f"linklab-probe-{middleware}"
    try:  # the probes package knows where it puts its binaries
        from linklab.probes import binary_path  # type: ignore[attr-defined]

        found = Path(binary_path(middleware))
        if found.exists():
            return found
    except (ImportError, AttributeError, LookupError, OSError):
        pass
    for base in (REPO / "build" / "probes",):
        if base.is_dir():
            for path in sorted(base.rglob(name)):
                if path.is_file() and os.access(path, os.X_OK):
                    return path
    raise EnvironmentProblem(f"{name} is not built: run scripts/setup.sh (looked under "
                             f"{REPO / 'build' / 'probes'})")


@dataclass(frozen=True)
class ProbeArgs:
    role: str  # "pub" | "sub"
    topic: str
    type: str
    size: int
    rate_hz: float
    count: int | None
    duration_s: float | None
    warmup_s: float
    qos_flags: tuple[str, ...]  # --qos/--history/--durability/--system-default (endpoints.py)
    profile: Path | None
    records: Path
    peers: tuple[str, ...] = ()
    interface: str | None = None
    domain: int | None = None
    linger_s: float | None = None  # pub: how long to wait for acknowledgements at the end
    idle_timeout_s: float | None = None  # sub: leave when nothing arrived for this long
    match_timeout_s: float | None = None
    subscribers: int | None = None  # pub: matched readers to wait for
    extra: tuple[str, ...] = ()  # middleware-specific flags (zenoh --mode/--listen)
    ready_file: Path | None = None  # created once the endpoint matched (discovery gate)
    start_file: Path | None = None  # pub: waits for it before its first sample

    def argv(self, binary: Path) -> list[str]:
        argv = [str(binary), self.role, "--topic", self.topic, "--type", self.type,
                "--size", str(self.size), "--rate", f"{self.rate_hz:g}",
                *self.qos_flags, "--records", str(self.records)]
        if self.count is not None:
            argv += ["--count", str(self.count)]
        if self.duration_s is not None:
            argv += ["--duration", f"{self.duration_s:g}"]
            if self.count is None:
                argv += ["--count", str(int(round(self.rate_hz * self.duration_s)))]
        if self.warmup_s:
            argv += ["--warmup", f"{self.warmup_s:g}"]
        if self.profile is not None:
            argv += ["--profile", str(self.profile)]
        for peer in self.peers:
            argv += ["--peer", peer]
        if self.interface:
            argv += ["--interface", self.interface]
        if self.domain is not None:
            argv += ["--domain", str(self.domain)]
        if self.subscribers is not None and self.subscribers != 1:
            argv += ["--subscribers", str(self.subscribers)]
        for flag, value in (("--linger", self.linger_s), ("--idle-timeout", self.idle_timeout_s),
                            ("--match-timeout", self.match_timeout_s)):
            if value is not None:
                argv += [flag, f"{value:g}"]
        for flag, path in (("--ready-file", self.ready_file), ("--start-file", self.start_file)):
            if path is not None:
                argv += [flag, str(path)]
        return argv + list(self.extra)


def exit_and_cpu(status: int, usage: Any) -> tuple[int, float]:
    """The exit code and CPU seconds (user + system) of a child ``os.wait4`` reaped, from
    its wait status and rusage. (ru_maxrss is not used: it keeps the high-water mark of
    the forked runner image from before the exec, i.e. the Python runner's size.)"""
    return os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime


@dataclass
class ProbeProcess:
    """A running probe; ``poll()`` reaps it with wait4 and keeps its rusage."""

    role: str
    popen: subprocess.Popen
    stdout_path: Path
    started: float = field(default_factory=time.monotonic)
    exit_code: int | None = None
    cpu_s: float | None = None
    rss_peak_bytes: int | None = None
    signalled_by_runner: bool = False
    ended: float | None = None

    def poll(self) -> int | None:
        if self.exit_code is not None:
            return self.exit_code
        try:
            pid, status, usage = os.wait4(self.popen.pid, os.WNOHANG)
        except ChildProcessError:
            # someone else reaped it (Popen's own machinery); fall back to its returncode
            self.exit_code = self.popen.poll()
            if self.exit_code is not None:
                self.ended = time.monotonic()
            return self.exit_code
        if pid == 0:
            return None
        self.exit_code, self.cpu_s = exit_and_cpu(status, usage)
        self.popen.returncode = self.exit_code
        self.ended = time.monotonic()
        return self.exit_code

    def sample_memory(self) -> None:
        """Peak RSS of the probe's own image (VmHWM, reset at exec); call while it runs."""
        try:
            status = Path(f"/proc/{self.popen.pid}/status").read_text()
        except OSError:
            return
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                value = int(line.split()[1]) * 1024
                self.rss_peak_bytes = max(self.rss_peak_bytes or 0, value)
                return

    @property
    def running(self) -> bool:
        return self.poll() is None

    def stop(self, timeout_s: float = 5.0) -> None:
        """SIGINT (the probe flushes its records and prints its summary), then SIGKILL."""
        if not self.running:
            return
        self.sample_memory()
        self.signalled_by_runner = True
        self._signal(signal.SIGINT)
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if not self.running:
                return
            time.sleep(0.05)
        self._signal(signal.SIGKILL)
        end = time.monotonic() + 5.0
        while time.monotonic() < end and self.running:
            time.sleep(0.05)

    def _signal(self, sig: int) -> None:
        try:
            os.kill(self.popen.pid, sig)
        except ProcessLookupError:
            pass

    def summary(self) -> dict | None:
        """The probe's one JSON line on stdout, or None if it printed none."""
        try:
            lines = self.stdout_path.read_text(errors="replace").splitlines()
        except OSError:
            return None
        for line in reversed(lines):
            line = line.strip()
            if line.startswith("{"):
                try:
                    return json.loads(line)
                except json.JSONDecodeError:
                    continue
        return None

    def report(self) -> dict:
        return {"role": self.role, "exit_code": self.exit_code,
                "signalled_by_runner": self.signalled_by_runner, "cpu_s": self.cpu_s,
                "rss_peak_bytes": self.rss_peak_bytes,
                "wall_s": (self.ended or time.monotonic()) - self.started,
                # when the runner saw it end (CLOCK_MONOTONIC ns; None: still running)
                "ended_ns": None if self.ended is None else int(self.ended * 1e9),
                "summary": self.summary()}


Spawn = Callable[[list[str], object, object], subprocess.Popen]


def start_probe(spawn: Spawn, args: ProbeArgs, binary: Path, out_dir: Path,
                name: str | None = None) -> ProbeProcess:
    """Start one probe with ``spawn(argv, stdout_file, stderr_file)`` (the testbed's popen);
    its output goes to ``<name>.out`` / ``<name>.log`` (name: the role by default)."""
    name = name or args.role
    stdout_path = out_dir / f"{name}.out"
    with open(stdout_path, "wb") as stdout, open(out_dir / f"{name}.log", "wb") as stderr:
        popen = spawn(args.argv(binary), stdout, stderr)
    return ProbeProcess(role=args.role, popen=popen, stdout_path=stdout_path)
