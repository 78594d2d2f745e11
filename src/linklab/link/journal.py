"""The one place every network change of a run goes through, and how it is undone.

A :class:`Journal` runs a change (namespace, link, address, route, nft table, qdisc,
ifb, sysctl, helper process), and records how to undo it in a state file
``<state dir>/<run name>.json`` (``/run/linklab`` by default, ``$LINKLAB_STATE_DIR``
to override). ``down`` and ``clean`` replay the undo list in reverse order, from this
process or from any other one, also after the process that built the run was killed.

A change is recorded right after it succeeds, with SIGINT/SIGTERM held back between
the two, so an interrupted run never loses track of something it made. Nothing is
recorded for a command that failed, so an undo can never remove an object linklab
did not create (for example a namespace of the same name that already existed).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from linklab.errors import UsageError
from linklab.link.system import CommandFailed, Shell

DEFAULT_STATE_DIR = Path("/run/linklab")
STATE_VERSION = 1


def state_dir() -> Path:
    """``$LINKLAB_STATE_DIR``, else /run/linklab for root, /tmp/linklab-<uid> otherwise."""
    if os.environ.get("LINKLAB_STATE_DIR"):
        return Path(os.environ["LINKLAB_STATE_DIR"])
    return DEFAULT_STATE_DIR if os.geteuid() == 0 else Path(f"/tmp/linklab-{os.geteuid()}")


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (field 22 of /proc/PID/stat), None if gone.

    Recorded with every pid so that an undo never signals a recycled pid. A zombie
    (exited, not yet reaped by its parent) counts as gone.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):
        return None
    return fields[19]


def process_alive(pid: int | None, start: str | None) -> bool:
    return pid is not None and start is not None and process_start_time(pid) == start


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM back (delivered afterwards) around a change and its record."""
    held = {signal.SIGINT, signal.SIGTERM}
    try:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    except (ValueError, OSError):  # pragma: no cover - not on a POSIX main thread
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _unblock_signals() -> None:
    """In a spawned child: the signals held back around the spawn must reach it."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


class Journal:
    """Ordered record of a run's changes, persisted after every change."""

    def __init__(self, path: Path, state: dict[str, Any], shell: Shell):
        self.path = path
        self.state = state
        self.shell = shell
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    # --- creating and opening -------------------------------------------------------

    @classmethod
    def claim(cls, name: str, shell: Shell, directory: Path | None = None,
              **fields: Any) -> Journal:
        """Create the state file for run ``name``; a run of that name must not exist."""
        directory = directory or state_dir()
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{name}.json"
        state = {"version": STATE_VERSION, "name": name, "created_unix": time.time(),
                 "shell_prefix": list(shell.prefix), "steps": [], **fields}
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise UsageError(
                f"a link named {name!r} is already up (state {path}); "
                f"take it down first: linklab link down --name {name}",
                argument="--name") from None
        with os.fdopen(fd, "w") as handle:
            json.dump(state, handle, indent=1)
        return cls(path, state, shell)

    @classmethod
    def open(cls, path: Path) -> Journal:
        state = json.loads(path.read_text())
        return cls(path, state, Shell(tuple(state.get("shell_prefix", ()))))

    def save(self) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.state, indent=1))
        os.replace(tmp, self.path)

    def update(self, **fields: Any) -> None:
        self.state.update(fields)
        self.save()

    @property
    def steps(self) -> list[dict[str, Any]]:
        return self.state["steps"]

    # --- changes --------------------------------------------------------------------

    def change(self, what: str, argv: Sequence[str], undo: Sequence[str] | None,
               netns: str | None = None, *, input: str | None = None) -> str:
        """Run ``argv`` (in ``netns``); on success record it with ``undo`` (run in the
        same place). ``undo=None`` records a change that goes away with the object that
        contains it (a rule inside an nft table, an MTU of a link) -- nothing to run."""
        with signals_held():
            result = self.shell.run(argv, netns, input=input)
            self.steps.append({"what": what, "netns": netns,
                               "undo": list(undo) if undo is not None else None})
            self.save()
        return result.stdout

    def record(self, what: str, undo: Sequence[str], netns: str | None = None) -> None:
        """Record an undo for a change made some other way (e.g. by a wire's process)."""
        with signals_held():
            self.steps.append({"what": what, "netns": netns, "undo": list(undo)})
            self.save()

    def spawn(self, what: str, argv: Sequence[str], netns: str | None = None, *,
              log: Path | None = None, env: dict[str, str] | None = None) -> int:
        """Start a helper process (outage scheduler, relay) that ``down`` will stop.

        The process runs in its own session (so a Ctrl-C meant for the user's program
        does not reach it) and outlives the process that started it; its pid and start
        time are recorded so ``down``/``clean`` stop exactly this process.
        """
        full = self.shell.argv_in(netns, argv)
        out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115
        with signals_held():
            try:
                child = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=out, start_new_session=True,
                                         env={**os.environ, **(env or {})},
                                         preexec_fn=_unblock_signals)
            finally:
                if log:
                    out.close()  # type: ignore[union-attr]
            start = None
            for _ in range(100):  # /proc/PID/stat appears at once; be patient anyway
                start = process_start_time(child.pid)
                if start:
                    break
                time.sleep(0.001)
            self._children[child.pid] = child
            self.steps.append({"what": what, "netns": netns, "process": child.pid,
                               "start": start})
            self.save()
        return child.pid

    # --- undo -----------------------------------------------------------------------

    def undo_all(self) -> list[str]:
        """Undo every recorded change, newest first. Returns what could not be undone.

        An undo whose object is already gone (e.g. a qdisc inside a namespace that was
        deleted) is not a problem; the caller verifies the result (see ``residue``).
        """
        problems: list[str] = []
        with signals_held():
            while self.steps:
                step = self.steps[-1]
                if "process" in step:
                    self._stop_process(step["process"], step.get("start"))
                elif step.get("undo"):
                    try:
                        self.shell.run(step["undo"], step.get("netns"))
                    except CommandFailed as error:
                        if not _gone(error, step):
                            problems.append(f"{step['what']}: {error}")
                self.steps.pop()
                self.save()
        return problems

    def stop_processes(self) -> None:
        """Stop the recorded helper processes only (when the namespaces die anyway)."""
        for step in reversed(self.steps):
            if "process" in step:
                self._stop_process(step["process"], step.get("start"))

    def _stop_process(self, pid: int, start: str | None) -> None:
        child = self._children.pop(pid, None)
        if process_alive(pid, start):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 2.0
            while process_alive(pid, start) and time.monotonic() < deadline:
                if child is not None and child.poll() is not None:
                    break
                time.sleep(0.01)
            if process_alive(pid, start):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if child is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=2.0)

    def remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def _gone(error: CommandFailed, step: dict[str, Any]) -> bool:
    """Did an undo fail only because its object (or its namespace) no longer exists?"""
    text = error.stderr.lower()
    return any(marker in text for marker in (
        "cannot find device", "no such file or directory", "does not exist",
        "cannot open network namespace", "no such device", "not found",
        "cannot delete qdisc with handle of zero", "invalid handle",
        "could not find", "reopen", "no such process"))
