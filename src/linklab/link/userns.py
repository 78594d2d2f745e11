"""Running linklab as a normal user, inside an unprivileged user namespace.

Without root, ``up`` starts a *holder*: ``unshare --user --map-root-user --mount``
running ``python -m linklab.link.userns_holder hold``. Inside it the user is root of its own
user namespace, with a private tmpfs on /run/netns; the holder builds the testbed there
and stays alive, keeping it up. The run's state file (in ``/tmp/linklab-<uid>`` unless
``$LINKLAB_STATE_DIR`` says otherwise; owned by the user and 0700, see ``statedir.py``)
records the holder; other processes reach the
hosts with ``nsenter --target <holder> --user --mount``. ``down`` asks the holder to
take the testbed down; if the holder dies, the namespaces die with it (``clean`` stops
any helper process still holding them). A holder started for ``testbed()`` also watches
the process that owns it and takes the testbed down when that process is gone, even
after a SIGKILL.

If unprivileged user namespaces are disabled, linklab says so in one line.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from linklab.errors import LinklabError, PrivilegeError, UsageError
from linklab.held_signals import signals_held
from linklab.link.journal import process_alive, process_start_time


def is_root() -> bool:
    return os.geteuid() == 0


def userns_available() -> str | None:
    """None if an unprivileged user namespace can be made here, else why not."""
    try:
        result = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "--net",
                                 "true"], capture_output=True, text=True, timeout=10)
    except FileNotFoundError:
        return "unshare (util-linux) is not installed"
    if result.returncode == 0:
        return None
    return (result.stderr.strip().splitlines() or ["unshare failed"])[-1]


def check() -> None:
    """Raise PrivilegeError (one line) unless root or a user namespace is possible."""
    if is_root():
        return
    reason = userns_available()
    if reason is not None:
        raise PrivilegeError(
            "linklab link needs CAP_NET_ADMIN: run it as root, or enable unprivileged "
            f"user namespaces (sysctl kernel.unprivileged_userns_clone=1 / "
            f"user.max_user_namespaces > 0); here: {reason}")


def should_delegate() -> bool:
    """True when this (non-root) process must work through a holder."""
    if is_root():
        return False
    check()
    return True


def holder_prefix(holder: dict[str, Any]) -> tuple[str, ...]:
    return ("nsenter", f"--target={holder['pid']}", "--user", "--mount",
            "--preserve-credentials")


# --- starting a holder ------------------------------------------------------------------------

def start_holder(kwargs: dict[str, Any], owner_pid: int | None = None,
                 on_ready: Callable[[], None] | None = None) -> Path:
    """Start a holder that builds the testbed ``kwargs`` describes; return its state file.

    ``on_ready`` is called as soon as the holder says the run is up. If this process is
    interrupted before that (an exception while it waits, ``on_ready``'s included), the
    holder is asked to stop -- it takes down what it built -- and waited for.
    """
    from linklab.link.statedir import StateDir

    with StateDir.open() as store:  # made if missing; checked: ours and 0700
        directory = store.path
    config = {"kwargs": kwargs, "owner": None}
    if owner_pid is not None:
        config["owner"] = {"pid": owner_pid, "start": process_start_time(owner_pid)}
    env = {**os.environ, "LINKLAB_STATE_DIR": str(directory)}
    proc: subprocess.Popen[str] | None = None
    try:
        with signals_held():   # a holder is never started without being known here
            proc = subprocess.Popen(
                ["unshare", "--user", "--map-root-user", "--mount", "--net", "--propagation",
                 "private", sys.executable, "-m", "linklab.link.userns_holder", "hold",
                 json.dumps(config)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                text=True, env=env, start_new_session=True)
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if line.startswith("ready ") and on_ready is not None:
            on_ready()
    except BaseException:
        if proc is not None:
            with signals_held():
                _abandon(proc)
        raise
    assert proc.stdout is not None
    proc.stdout.close()
    if line.startswith("ready "):
        return Path(line.split(" ", 1)[1])
    proc.wait(timeout=30)
    code, _, message = line.partition(" ")
    if code == "2":
        raise UsageError(message)
    raise LinklabError(message or "the user-namespace holder failed to start")


def _abandon(proc: subprocess.Popen[str], timeout: float = 60.0) -> None:
    """Stop a holder whose starter gives up: SIGTERM (it finishes what it is making, takes
    the testbed down and exits), SIGKILL after ``timeout``."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def stop_holder(holder: dict[str, Any], state: Path, timeout: float = 30.0) -> None:
    """Ask a holder to take its testbed down, and wait for it."""
    pid, start = holder["pid"], holder.get("start")
    if process_alive(pid, start):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while process_alive(pid, start) and time.monotonic() < deadline:
        time.sleep(0.05)
    if process_alive(pid, start):
        os.kill(pid, signal.SIGKILL)
