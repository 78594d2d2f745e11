"""Running commands on the hosts of a field run: over OpenSSH, here, or in a namespace.

:class:`SshHost` uses the ``ssh`` binary, so the user's configuration, keys, agent and
known_hosts apply as they do for ``ssh`` itself (``$LINKLAB_SSH_CONFIG``: ``ssh -F FILE``).
Authentication is by key only (BatchMode: a password prompt would hang a run). One
master connection per host (ControlMaster, a socket in a private 0700 directory)
carries every command; it is this process's child, ends with it (PR_SET_PDEATHSIG), and
``close`` ends it.

On the host, a keeper (``procwrap.py keep --make``, started from the file's text before
anything is on the host) makes a work directory (``/tmp/linklab-field.XXXXXX``) that
receives the agent (agent.py, agent_host.py, procwrap.py), the probes and their records,
and holds it: when its SSH session ends -- ``close``, or this process dying, which ends
the master -- it stops the agent and any probe still running there (each listed in
``pids/``) and removes the directory. The agent also ends by itself when its own session ends
(procwrap.py ``lifeline``). Nothing is left on the host.

:class:`LocalHost` (``local``) and :class:`NetnsHost` (``netns:NAME``) run on this machine;
their work directory is a local temporary directory. Local directories carry their
owner (leftovers.py), so a session killed with SIGKILL is cleaned by the next one.
"""

from __future__ import annotations

import base64
import ctypes
import os
import shlex
import shutil
import signal
import subprocess
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from linklab.bench.host_address import HostSpec
from linklab.errors import EnvironmentProblem, LinklabError, UsageError
from linklab.field import leftovers

HERE = Path(__file__).resolve().parent
AGENT_FILES = ("agent.py", "agent_host.py", "procwrap.py")
CONNECT_TIMEOUT_S = 15.0
PYTHON_CHECK = ("import sys; v = sys.version_info; "
                "print('%d.%d' % v[:2]); sys.exit(0 if v >= (3, 8) else 3)")
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """preexec_fn: SIGTERM this child when linklab exits, however it exits."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def keeper_command() -> list[str]:
    """``procwrap.py keep --make`` run from procwrap.py's text (packed: a short command
    line, which ``pgrep -f agent.py`` does not match)."""
    packed = base64.b64encode(zlib.compress((HERE / "procwrap.py").read_bytes(), 9)).decode()
    return ["python3", "-c", "import base64, zlib; exec(zlib.decompress(base64.b64decode("
            f"'{packed}')))", "keep", "--make"]


def ssh_options() -> list[str]:
    """Options every ssh call gets (besides the user's own configuration)."""
    options = ["-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
               "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=6"]
    config = os.environ.get("LINKLAB_SSH_CONFIG")
    if config:
        if not Path(config).is_file():
            raise UsageError(f"{config} is not a file (an ssh configuration for ssh -F)",
                             argument="LINKLAB_SSH_CONFIG")
        options = ["-F", config, *options]
    return options


class Host:
    """A host commands run on. Subclasses say how (``argv``) and where files go."""

    def __init__(self, spec: HostSpec):
        self.spec = spec
        self.workdir = ""
        self.opened = False

    @property
    def name(self) -> str:
        return self.spec.name

    def argv(self, command: Sequence[str]) -> list[str]:
        raise NotImplementedError

    def popen(self, command: Sequence[str], **kwargs: Any) -> subprocess.Popen:
        """Start ``command`` on the host; the process ends when linklab does."""
        return subprocess.Popen(self.argv(command), preexec_fn=die_with_parent, **kwargs)

    def run(self, command: Sequence[str], *, input: bytes | None = None,
            timeout: float = 60.0, check: bool = True) -> subprocess.CompletedProcess:
        try:
            result = subprocess.run(self.argv(command), input=input, capture_output=True,
                                    timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise LinklabError(f"{self.name} ({self.spec.text}): "
                               f"'{shlex.join(command)}' took more than {timeout:g} s") from None
        if check and result.returncode != 0:
            why = result.stderr.decode(errors="replace").strip().splitlines()
            raise LinklabError(f"{self.name} ({self.spec.text}): '{shlex.join(command)}' "
                               f"failed: {why[-1] if why else f'exit {result.returncode}'}")
        return result

    def open(self) -> None:
        """Connect, make the work directory and copy the agent there."""
        self.workdir = leftovers.make("linklab-field.")
        for name in AGENT_FILES:
            shutil.copy(HERE / name, Path(self.workdir) / name)
        self.opened = True
        self.check_python()

    def check_python(self) -> str:
        result = self.run(["python3", "-c", PYTHON_CHECK], check=False)
        if result.returncode != 0:
            found = result.stdout.decode(errors="replace").strip() or "none"
            raise EnvironmentProblem(
                f"{self.name} ({self.spec.text}): linklab's agent needs python3 3.8 or newer "
                f"there (found: {found}); install python3 on the host")
        return result.stdout.decode().strip()

    def path(self, *parts: str) -> str:
        return "/".join([self.workdir, *parts])

    @property
    def pids_dir(self) -> str | None:
        """Where the host's keeper looks for what to stop (None: no keeper; the processes
        are this one's children and end with it)."""
        return None

    def put(self, data: bytes, path: str, mode: int = 0o644) -> None:
        Path(path).write_bytes(data)
        os.chmod(path, mode)

    def get(self, path: str) -> bytes:
        return Path(path).read_bytes()

    def close(self) -> None:
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = ""
        self.opened = False


class LocalHost(Host):
    def argv(self, command: Sequence[str]) -> list[str]:
        return list(command)


class NetnsHost(Host):
    def open(self) -> None:
        if not Path("/run/netns", self.spec.target).exists():
            raise UsageError(f"no network namespace {self.spec.target!r} here (ip netns list)",
                             argument=self.spec.name)
        super().open()

    def argv(self, command: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.spec.target, *command]


class SshHost(Host):
    def __init__(self, spec: HostSpec):
        super().__init__(spec)
        self.control_dir: str | None = None
        self.master: subprocess.Popen | None = None
        self.keeper: subprocess.Popen | None = None

    @property
    def control(self) -> str:
        assert self.control_dir is not None
        return os.path.join(self.control_dir, "ctl")

    def _base(self) -> list[str]:
        port = ["-p", str(self.spec.port)] if self.spec.port else []
        return ["ssh", *ssh_options(), *port]

    def argv(self, command: Sequence[str]) -> list[str]:
        return [*self._base(), "-S", self.control, "-o", "ControlMaster=no", "-T",
                self.spec.target, "--", shlex.join(command)]

    def open(self) -> None:
        if shutil.which("ssh") is None:
            raise EnvironmentProblem("ssh not found on PATH: install openssh-client "
                                     "(scripts/setup.sh)")
        self.control_dir = leftovers.make("llssh.")
        self.master = subprocess.Popen(
            [*self._base(), "-M", "-N", "-S", self.control, "-o", "ControlPersist=no",
             self.spec.target], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, preexec_fn=die_with_parent, start_new_session=True)
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        while True:
            if self.master.poll() is not None:
                why = self.master.stderr.read().decode(errors="replace").strip().splitlines()
                self.close()
                raise LinklabError(f"{self.name}: cannot reach {self.spec.text} with ssh: "
                                   f"{why[-1] if why else 'ssh exited'} (key authentication; "
                                   "try: ssh " + shlex.join(self._base()[1:] + [
                                       self.spec.target, "true"]) + ")")
            check = subprocess.run([*self._base(), "-S", self.control, "-O", "check",
                                    self.spec.target], capture_output=True)
            if check.returncode == 0:
                break
            if time.monotonic() > deadline:
                self.close()
                raise LinklabError(f"{self.name}: ssh to {self.spec.text} did not connect "
                                   f"within {CONNECT_TIMEOUT_S:g} s")
            time.sleep(0.1)
        self.opened = True
        self.check_python()
        self.keeper = self.popen(keeper_command(), stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 start_new_session=True)
        ready, _, made = self.keeper.stdout.readline().decode(errors="replace").partition(" ")
        if ready != "ready" or not made.strip().startswith("/tmp/linklab-field."):
            self.close()
            raise LinklabError(f"{self.name}: the clean-up keeper did not start on "
                               f"{self.spec.text}")
        self.workdir = made.strip()
        for name in AGENT_FILES:
            self.put((HERE / name).read_bytes(), self.path(name))

    @property
    def pids_dir(self) -> str | None:
        return self.path("pids") if self.workdir else None

    def put(self, data: bytes, path: str, mode: int = 0o644) -> None:
        self.run(["sh", "-c", f"cat > {shlex.quote(path)} && chmod {mode:o} "
                 f"{shlex.quote(path)}"], input=data)

    def get(self, path: str) -> bytes:
        return self.run(["cat", path]).stdout

    def close(self) -> None:
        """End the keeper (it removes the work directory), then the master connection."""
        if self.keeper is not None:
            try:
                self.keeper.stdin.close()
                self.keeper.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.keeper.kill()
            self.keeper = None
        if self.master is not None:
            if self.master.poll() is None:
                subprocess.run([*self._base(), "-S", self.control, "-O", "exit",
                                self.spec.target], capture_output=True, timeout=10)
                try:
                    self.master.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.master.kill()
                    self.master.wait()
            self.master = None
        if self.control_dir:
            shutil.rmtree(self.control_dir, ignore_errors=True)
            self.control_dir = None
        self.workdir = ""
        self.opened = False


def host_for(spec: HostSpec) -> Host:
    return {"ssh": SshHost, "local": LocalHost, "netns": NetnsHost}[spec.kind](spec)
