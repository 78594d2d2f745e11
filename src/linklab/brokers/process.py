"""A broker/router process in a host namespace: start, wait until it listens, CPU, stop."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from linklab.errors import EnvironmentProblem

TCP_LISTEN = "0A"  # /proc/net/tcp state code for LISTEN


def in_namespace(netns: str | None, argv: list[str]) -> list[str]:
    """The command line that runs ``argv`` inside network namespace ``netns`` (None: here)."""
    return ["ip", "netns", "exec", netns, *argv] if netns else list(argv)


def listening_ports(pid: int) -> set[int]:
    """TCP ports in LISTEN state in the network namespace of process ``pid``.

    /proc/<pid>/net/tcp{,6} shows that process's namespace, so no tool has to enter it.
    """
    ports: set[int] = set()
    for name in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == TCP_LISTEN:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


@dataclass(frozen=True)
class CpuUsage:
    """CPU used by a process over a wall-clock interval (percent of one core)."""

    cpu_seconds: float
    wall_seconds: float

    @property
    def percent_of_one_core(self) -> float:
        return 100.0 * self.cpu_seconds / self.wall_seconds if self.wall_seconds > 0 else 0.0


@dataclass
class BrokerProcess:
    """A running broker or router; ``stop()`` ends it and returns its CPU usage."""

    name: str
    popen: subprocess.Popen
    port: int
    log_path: Path
    started_monotonic: float = field(default_factory=time.monotonic)
    _cpu_mark: tuple[float, float] | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def cpu_seconds(self) -> float:
        """CPU seconds the process (and its threads) ran so far; NaN if it is gone (not
        measured -- never a made-up 0).

        The kernel's run time in nanoseconds (/proc/PID/task/*/schedstat, first field)
        when it is there: a broker relaying a few hundred kilobytes uses a few
        milliseconds, below the 10 ms tick that user + system times count in. Threads
        that already ended are only in the tick counts, so the larger of the two is used.
        """
        try:
            times = psutil.Process(self.pid).cpu_times()
        except psutil.NoSuchProcess:
            return math.nan
        ticks = times.user + times.system
        return max(ticks, _schedstat_seconds(self.pid))

    def mark_cpu(self) -> None:
        """Start a CPU measurement interval (e.g. when the publisher starts)."""
        self._cpu_mark = (self.cpu_seconds(), time.monotonic())

    def cpu_since_mark(self) -> CpuUsage:
        start_cpu, start_wall = self._cpu_mark or (0.0, self.started_monotonic)
        return CpuUsage(self.cpu_seconds() - start_cpu, time.monotonic() - start_wall)

    def wait_listening(self, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise EnvironmentProblem(
                    f"{self.name} exited with status {self.popen.returncode} before listening "
                    f"on port {self.port}: {self.log_tail()}")
            if self.port in listening_ports(self.pid):
                return
            time.sleep(0.05)
        self.stop()
        raise EnvironmentProblem(
            f"{self.name} did not listen on port {self.port} within {timeout_s:.0f} s: "
            f"{self.log_tail()}")

    def log_tail(self, lines: int = 5) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return " | ".join(text[-lines:]) or "(empty log)"

    def stop(self, timeout_s: float = 5.0) -> CpuUsage:
        usage = self.cpu_since_mark()
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        return usage

    def __enter__(self) -> BrokerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _schedstat_seconds(pid: int) -> float:
    """Sum of the run time (ns) of the live threads of ``pid``, in seconds; 0.0 if the
    kernel does not report it."""
    total = 0
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return 0.0
    for task in tasks:
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


def launch(name: str, argv: list[str], netns: str | None, log_path: Path, *, port: int = 0,
           env: dict[str, str] | None = None, stdout: Path | None = None) -> BrokerProcess:
    """Start ``argv`` in ``netns``: stderr (and stdout, unless ``stdout`` names a file of
    its own) to ``log_path``; a missing program is an EnvironmentProblem."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log, open(stdout or os.devnull, "wb") as out:
        try:
            popen = subprocess.Popen(in_namespace(netns, argv),
                                     stdout=out if stdout else log,
                                     stderr=log if stdout else subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL,
                                     env={**os.environ, **(env or {})})
        except FileNotFoundError as error:
            raise EnvironmentProblem(f"{name}: {error.filename} not found "
                                     "(run scripts/setup.sh)") from None
    return BrokerProcess(name=name, popen=popen, port=port, log_path=log_path)


def spawn(name: str, argv: list[str], netns: str | None, port: int, log_path: Path,
          env: dict[str, str] | None = None) -> BrokerProcess:
    """Start ``argv`` in ``netns`` with output to ``log_path``; wait until it listens."""
    broker = launch(name, argv, netns, log_path, port=port, env=env)
    broker.wait_listening()
    return broker
