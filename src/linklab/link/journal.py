"""The one place every network change of a run goes through, and how it is undone.

A :class:`Journal` runs a change (namespace, link, address, route, nft table, qdisc,
sysctl, helper process, cgroup), and records *what it made* -- data, never a command (see
``made.py``) -- in a state file ``<run name>.json`` in the state directory
(``statedir.py``: /run/linklab for root, /tmp/linklab-<uid> otherwise,
``$LINKLAB_STATE_DIR`` to override; owned by the user and 0700, checked every time).
``down`` and ``clean`` undo the records in reverse order, from this process or from any
other one, also after the process that built the run was killed: the command that
removes each record is derived by ``made.undo_command``.

A change is recorded right after it succeeds, with SIGINT/SIGTERM held back between
the two, so an interrupted run never loses track of something it made. Nothing is
recorded for a command that failed, so an undo can never remove an object linklab
did not create (for example a namespace of the same name that already existed).

State file, format 2 (JSON object): ``version`` (2), ``name`` (the run, = file name),
``created_unix``, ``steps`` (list of records, oldest first, each with ``what``: text for
messages, and ``kind`` + its fields, see ``made.py``), plus what lifecycle keeps there
(``inputs``, ``owner``, ``detached``, ``holder``, ``wires``, ``outage``, ``socket_buffers``,
``tcp_congestion``, ``emu``). ``owner`` (pid and start time) is the process the run lives
for -- ``clean`` leaves it alone while that process lives and undoes it once it is gone;
a run being built always has one. ``detached: true`` with no owner marks a run that is
fully up and meant to stay until ``linklab link down`` (``linklab link up``): ``clean``
never takes it down (``runs.kept_by``).
Format 1 files (undo argv lists) are refused with a message naming what they hold.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from linklab import procfs
from linklab.errors import LinklabError, UsageError
from linklab.held_signals import signals_held
from linklab.link import cgroups, made
from linklab.link.statedir import StateDir, UnsafeStateDir, default_path
from linklab.link.system import CommandFailed, Shell

STATE_VERSION = 2
STATE_SUFFIX = ".json"


class StateFileError(LinklabError):
    """A state file that cannot be read exactly (truncated, garbage, old format)."""

    exit_code = 2


def state_dir() -> Path:
    """The state directory's path (not checked: use ``StateDir.open()`` to use it)."""
    return default_path()


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (field 22 of /proc/PID/stat), None if gone.

    Recorded with every pid so that an undo never signals a recycled pid. A zombie
    (exited, not yet reaped by its parent) counts as gone.
    """
    fields = procfs.stat_fields(pid)
    if fields is None or fields[0] in ("Z", "X") or len(fields) < 20:
        return None
    return fields[19]


def process_alive(pid: int | None, start: str | None) -> bool:
    return (isinstance(pid, int) and pid > 0 and start is not None
            and process_start_time(pid) == start)


def stop_process(pid: int, start: str | None, child: subprocess.Popen[Any] | None = None,
                 grace_s: float = 2.0) -> None:
    """End process ``pid`` if it is still the one that started at ``start``: SIGTERM,
    then SIGKILL after ``grace_s``. A recycled pid (other start time) is left alone."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        if not process_alive(pid, start):
            break
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
        deadline = time.monotonic() + grace_s
        while process_alive(pid, start) and time.monotonic() < deadline:
            if child is not None and child.poll() is not None:
                break
            time.sleep(0.01)
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=grace_s)


def parse_state(data: bytes, run: str, where: Path | str) -> dict[str, Any]:
    """A state file's bytes -> its state (steps validated); StateFileError otherwise."""
    try:
        state = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise StateFileError(f"state file {where} is damaged ({detail}); nothing was "
                             f"undone: {_by_hand(run)}") from None
    if not isinstance(state, dict):
        raise StateFileError(f"state file {where} holds a {type(state).__name__}, not a "
                             f"linklab state; nothing was undone: {_by_hand(run)}")
    version = state.get("version")
    steps = state.get("steps")
    if version == 1 and isinstance(steps, list):
        named = _old_names(steps)
        raise StateFileError(
            f"state file {where} was written by an older linklab (format 1, undo "
            f"commands) and is not acted on; it names namespaces "
            f"{', '.join(named['namespaces']) or 'none'} and processes "
            f"{', '.join(named['processes']) or 'none'}: end those processes by hand, "
            f"delete the file, then run linklab link clean --name {run}")
    if version != STATE_VERSION:
        raise StateFileError(f"state file {where}: format version {_short(version)}, this "
                             f"linklab reads {STATE_VERSION}; {_by_hand(run)}")
    if state.get("name") != run:
        raise StateFileError(f"state file {where} names run {_short(state.get('name'))}, "
                             f"not {run!r}; {_by_hand(run)}")
    if not isinstance(steps, list):
        raise StateFileError(f"state file {where} has no list of steps; {_by_hand(run)}")
    checked = []
    for i, step in enumerate(steps):
        try:
            checked.append(made.check(step, run))
        except made.BadRecord as error:
            raise StateFileError(f"state file {where}, step {i + 1}: {error}; nothing was "
                                 f"undone: {_by_hand(run)}") from None
    state["steps"] = checked
    for key in ("owner", "holder"):
        value = state.get(key)
        if value is not None and not _pid_record(value):
            raise StateFileError(f"state file {where}: {key} is not a pid and start time; "
                                 f"{_by_hand(run)}")
    if not isinstance(state.get("detached", False), bool):
        raise StateFileError(f"state file {where}: detached is not true or false; "
                             f"{_by_hand(run)}")
    return state


def _pid_record(value: Any) -> bool:
    return (isinstance(value, dict) and type(value.get("pid")) is int
            and 1 < value["pid"] < made.MAX_PID
            and (value.get("start") is None or (isinstance(value["start"], str)
                                                 and made.START_TIME.match(value["start"]))))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _by_hand(run: str) -> str:
    return (f"remove it by hand and run linklab link clean --name {run} (which removes "
            "the run's marked namespaces)")


def _old_names(steps: list[Any]) -> dict[str, list[str]]:
    """Namespaces and pids a format-1 file mentions (for the message only)."""
    spaces: list[str] = []
    pids: list[str] = []
    for step in steps:
        if not isinstance(step, dict):
            continue
        undo = step.get("undo")
        if (isinstance(undo, list) and undo[:3] == ["ip", "netns", "delete"] and len(undo) == 4
                and isinstance(undo[3], str) and made.NAME.match(undo[3])):
            spaces.append(undo[3])
        if type(step.get("process")) is int:
            pids.append(str(step["process"]))
    return {"namespaces": spaces, "processes": pids}


class Journal:
    """Ordered record of a run's changes, persisted after every change."""

    def __init__(self, store: StateDir, name: str, state: dict[str, Any], shell: Shell):
        self.store = store
        self.name = name
        self.state = state
        self.shell = shell
        self._children: dict[int, subprocess.Popen[Any]] = {}
        self._lock = threading.RLock()

    @property
    def path(self) -> Path:
        """The state file (other files of the run sit next to it: ``<run>.<suffix>``)."""
        return self.store.path / (self.name + STATE_SUFFIX)

    # --- creating and opening -------------------------------------------------------

    @classmethod
    def claim(cls, name: str, shell: Shell, directory: Path | None = None,
              **fields: Any) -> Journal:
        """Create the state file for run ``name``; a run of that name must not exist."""
        store = StateDir.open(directory)
        state = {"version": STATE_VERSION, "name": name, "created_unix": time.time(),
                 "steps": [], **fields}
        if not store.create(name + STATE_SUFFIX, _encode(state)):
            raise UsageError(
                f"a link named {name!r} is already up (state {store.path / (name + '.json')});"
                f" take it down first: linklab link down --name {name}",
                argument="--name")
        return cls(store, name, state, shell)

    @classmethod
    def open(cls, path: Path) -> Journal:
        """The journal in state file ``path`` (``<state dir>/<run>.json``), checked."""
        store = StateDir.open(path.parent, create=False)
        return cls.load(store, path.name[:-len(STATE_SUFFIX)])

    @classmethod
    def load(cls, store: StateDir, name: str) -> Journal:
        """Read run ``name``'s journal from ``store``: FileNotFoundError if there is none,
        StateFileError / UnsafeStateDir (one line) if it cannot be trusted exactly."""
        where = store.path / (name + STATE_SUFFIX)
        state = parse_state(store.read(name + STATE_SUFFIX), name, where)
        return cls(store, name, state, Shell())

    def save(self) -> None:
        self.store.write(self.name + STATE_SUFFIX, _encode(self.state))

    def reload(self) -> None:
        """Take in what other processes recorded (e.g. host processes of the run)."""
        with contextlib.suppress(FileNotFoundError):
            self.state = parse_state(self.store.read(self.name + STATE_SUFFIX), self.name,
                                     self.path)

    def update(self, **fields: Any) -> None:
        self.state.update(fields)
        self.save()

    @property
    def steps(self) -> list[dict[str, Any]]:
        return self.state["steps"]

    def exists(self) -> bool:
        return self.store.exists(self.name + STATE_SUFFIX)

    # --- changes --------------------------------------------------------------------

    def change(self, what: str, argv: Sequence[str], undo: made.Record | None,
               netns: str | None = None, *, input: str | None = None) -> str:
        """Run ``argv`` (in ``netns``); on success record ``undo``: what it made (a record
        from ``made.py``). ``undo=None``: a change that goes away with the object that
        contains it (a rule inside an nft table, an MTU of a link) -- nothing to undo."""
        step = self._step(what, undo if undo is not None else {"kind": "inside"})
        with signals_held():
            result = self.shell.run(argv, netns, input=input)
            self._add(step)
        return result.stdout

    def record(self, what: str, undo: made.Record) -> None:
        """Record something made some other way (e.g. files a wire wrote)."""
        with signals_held():
            self._append(what, undo)

    def _step(self, what: str, record: made.Record) -> made.Record:
        """The step as it will be stored, checked before the change is made (a change
        whose record could not be read back must not happen)."""
        return made.check({"what": what[:made.WHAT_MAX], **record}, self.name)

    def _add(self, step: made.Record) -> None:
        with self._lock:  # (host processes may be started from several threads)
            self.steps.append(step)
            self.save()

    def _append(self, what: str, record: made.Record) -> None:
        self._add(self._step(what, record))

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
                                         env={**os.environ, **(env or {})})
            finally:
                if log:
                    out.close()  # type: ignore[union-attr]
            self._children[child.pid] = child
            self._append(what, made.process(child.pid, _start_of(child), "helper"))
        return child.pid

    def adopt(self, what: str, child: subprocess.Popen[Any]) -> None:
        """Record a process started in a host (Testbed.popen/run) so that ``down`` and
        ``clean`` end it if it still runs. Records of processes that are gone are
        dropped first, so a long session does not grow its state file."""
        with signals_held(), self._lock:
            self.state["steps"] = [
                s for s in self.steps
                if not (s["kind"] == "process" and s["role"] == "host"
                        and not process_alive(s["pid"], s["start"]))]
            self._children[child.pid] = child
            self._append(what, made.process(child.pid, _start_of(child), "host"))

    def forget(self, child: subprocess.Popen[Any]) -> None:
        """Drop the record of a host process that has ended (Testbed.run, after it)."""
        with signals_held(), self._lock:
            self._children.pop(child.pid, None)
            kept = [s for s in self.steps if not (s["kind"] == "process"
                                                   and s["role"] == "host"
                                                   and s["pid"] == child.pid)]
            if len(kept) != len(self.steps):
                self.state["steps"] = kept
                self.save()

    # --- undo -----------------------------------------------------------------------

    def undo_all(self) -> list[str]:
        """Undo every recorded change, newest first. Returns what could not be undone.

        Processes started inside the run's hosts are ended first (they hold the
        namespaces). An undo whose object is already gone (e.g. a qdisc inside a
        namespace that was deleted) is not a problem; the caller verifies the result
        (see ``residue``).
        """
        problems: list[str] = []
        with signals_held():
            self.stop_processes(role="host")
            while self.steps:
                step = self.steps[-1]
                problem = self._undo(step)
                if problem:
                    problems.append(f"{step['what']}: {problem}")
                self.steps.pop()
                self.save()
        return problems

    def _undo(self, step: made.Record) -> str | None:
        if step["kind"] == "process":
            self._stop_process(step["pid"], step["start"])
            return None
        if step["kind"] == "files":
            for name in step["names"]:
                self.store.remove(name)
            return None
        if step["kind"] == "cgroup":  # a host's CPU quota (cgroups.py)
            return cgroups.remove(Path(step["path"]))
        if step["kind"] == "netns":
            end_processes_in_netns(step["netns"])
        command = made.undo_command(step)
        if command is None:
            return None
        argv, netns = command
        try:
            self.shell.run(argv, netns)
        except CommandFailed as error:
            if not _gone(error):
                return str(error)
        return None

    def stop_processes(self, role: str | None = None) -> None:
        """End the recorded processes (of ``role``: "helper" or "host"; None: all)."""
        for step in reversed(self.steps):
            if step["kind"] == "process" and role in (None, step["role"]):
                self._stop_process(step["pid"], step["start"])

    def _stop_process(self, pid: int, start: str | None) -> None:
        stop_process(pid, start, self._children.pop(pid, None))

    def remove(self) -> None:
        self.store.remove(self.name + STATE_SUFFIX)


def _start_of(child: subprocess.Popen[Any]) -> str | None:
    """The start time of a child just started (None: it has already ended)."""
    for _ in range(100):  # /proc/PID/stat appears at once; be patient anyway
        start = process_start_time(child.pid)
        if start or child.poll() is not None:
            return start
        time.sleep(0.001)
    return None


def _encode(state: dict[str, Any]) -> bytes:
    return (json.dumps(state, indent=1) + "\n").encode()


def netns_inode(netns: str) -> tuple[int, int] | None:
    """(device, inode) of the network namespace bound at /run/netns/NAME, or None."""
    from linklab.link.system import NETNS_DIR

    try:
        st = os.stat(NETNS_DIR / netns)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def processes_in_netns(netns: str) -> list[tuple[int, str]]:
    """(pid, start time) of every process whose network namespace is ``netns``."""
    target = netns_inode(netns)
    if target is None:
        return []
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            st = os.stat(f"/proc/{entry.name}/ns/net")
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == target:
            start = process_start_time(int(entry.name))
            if start is not None:
                found.append((int(entry.name), start))
    return found


def end_processes_in_netns(netns: str) -> None:
    """End whatever still runs inside one of the run's namespaces before it is deleted:
    such a process keeps the namespace -- and everything in it -- alive after ``ip netns
    delete``. Only processes whose network namespace *is* that namespace are touched."""
    for pid, _start in processes_in_netns(netns):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    for pid, start in processes_in_netns(netns):
        stop_process(pid, start, grace_s=2.0)


def _gone(error: CommandFailed) -> bool:
    """Did an undo fail only because its object (or its namespace) no longer exists?"""
    text = error.stderr.lower()
    return any(marker in text for marker in (
        "cannot find device", "no such file or directory", "does not exist",
        "cannot open network namespace", "no such device", "not found",
        "cannot delete qdisc with handle of zero", "invalid handle",
        "could not find", "reopen", "no such process"))


__all__ = ["Journal", "StateFileError", "UnsafeStateDir", "end_processes_in_netns",
           "parse_state", "process_alive", "process_start_time",
           "state_dir", "stop_process"]
