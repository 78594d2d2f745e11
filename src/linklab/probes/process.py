"""Run a probe as a child process, optionally inside a network namespace."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from linklab.errors import LinklabError
from linklab.probes.command import ProbeCommand
from linklab.probes.summary import ProbeSummary, parse_summary


@dataclass(frozen=True)
class ProbeResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def summary(self) -> ProbeSummary:
        return parse_summary(self.stdout)


class ProbeProcess:
    """Start with ``ProbeProcess(command, netns=...)``; ``wait()`` or ``stop()`` for the result.

    ``prefix`` is put before the probe's argv (e.g. ``["ip", "netns", "exec", NAME]``,
    which ``netns`` fills in). stdout and stderr go to temporary files, so a chatty
    middleware never blocks on a full pipe.
    """

    def __init__(self, command: ProbeCommand | Sequence[str], *, netns: str | None = None,
                 prefix: Sequence[str] = (), env: dict[str, str] | None = None):
        argv = command.argv() if isinstance(command, ProbeCommand) else list(command)
        if netns:
            prefix = ["ip", "netns", "exec", netns, *prefix]
        self.argv = [*prefix, *argv]
        self._out = tempfile.TemporaryFile()
        self._err = tempfile.TemporaryFile()
        self.popen = subprocess.Popen(self.argv, stdout=self._out, stderr=self._err,
                                      env={**os.environ, **(env or {})})

    @property
    def running(self) -> bool:
        return self.popen.poll() is None

    def wait(self, timeout_s: float) -> ProbeResult:
        """Wait for a normal exit; past the timeout, stop it (SIGINT) and raise."""
        try:
            self.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            result = self.stop()
            raise LinklabError(f"probe did not finish within {timeout_s:g} s "
                               f"(stopped; stderr: {result.stderr.strip()[-300:]})") from None
        return self._result()

    def stop(self, grace_s: float = 10.0) -> ProbeResult:
        """SIGINT (the probe flushes records and prints its summary), SIGKILL after grace_s."""
        if self.running:
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        return self._result()

    def _result(self) -> ProbeResult:
        def text(f) -> str:
            f.seek(0)
            return f.read().decode(errors="replace")

        return ProbeResult(self.popen.returncode, text(self._out), text(self._err))

    def __enter__(self) -> ProbeProcess:
        return self

    def __exit__(self, *exc) -> None:
        if self.running:
            self.popen.kill()
            self.popen.wait()
        self._out.close()
        self._err.close()


def records_path(directory: Path, role: str) -> Path:
    return directory / f"{role}.bin"
