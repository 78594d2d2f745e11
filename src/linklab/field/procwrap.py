"""Processes on a host of a field run: the probes, the agent, and the clean-up after them.

Copied to every remote host of a field run with agent.py (standard library only, Python
3.8+, no linklab import) and run over SSH::

    python3 procwrap.py run --usage FILE --pids DIR -- PROBE ARGS...
    python3 procwrap.py keep DIR | --make

``run`` starts the probe with this process's stdout and stderr (the SSH channel: the
controller writes them to the run directory as they come). A line ``int`` on stdin sends
the probe SIGINT (the runner's stop: the probe flushes its records and prints its
summary); EOF on stdin (the controller or its SSH connection died) sends SIGINT, then
SIGKILL after 3 s. When the probe ends, its exit status, CPU seconds (wait4's rusage)
and peak RSS (VmHWM, sampled every 0.1 s) go to the usage FILE as JSON, and ``run``
exits with the probe's status (128 + N for a signal N, as a shell reports it).

``keep`` prints ``ready`` and waits for EOF on stdin: the end of the run, or the loss of
the controller (SIGHUP, SIGINT or SIGTERM count as that loss too). Then it ends every
process still listed in ``DIR/pids`` -- probes, the agent -- (checking each pid's start
time, so a recycled pid is left alone) and removes DIR. ``keep --make`` first makes the
work directory (``/tmp/linklab-field.XXXXXX``, 0700, with ``pids/``) and prints
``ready DIR``: started before anything else is put on the host, it leaves no moment at
which a directory exists that no keeper holds (the controller starts it from this file's
text, ``python3 -c``, as nothing is on the host yet).

``lifeline`` serves the agent (agent.py): the command lines on stdin, read by a thread
while the operations run in the main thread, so the agent ends at once -- even in the
middle of a stream -- on ``{"op": "quit"}``, on EOF (linklab closed stdin or died: SSH
closes a session's pipes when its connection ends, whatever the remote shell does with
SIGHUP), when its parent process changes (the SSH session or linklab gone; checked every
0.2 s), and on SIGINT, SIGTERM and SIGHUP (their default action, even when inherited
ignored). With ``--pids DIR`` it registers itself there for the keeper.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

PARENT_CHECK_S = 0.2
WORK_PREFIX = "linklab-field."


def _start_time(pid: int):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _vm_hwm(pid: int):
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def run(usage_path: str, pids_dir: str, argv: list) -> int:
    started = time.monotonic()
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
    pidfile = os.path.join(pids_dir, str(child.pid))
    with open(pidfile, "w") as handle:
        handle.write(str(_start_time(child.pid)))
    peak = [0]
    done = threading.Event()

    def signal_child(sig: int) -> None:
        if not done.is_set():
            try:
                os.kill(child.pid, sig)
            except ProcessLookupError:
                pass

    def read_commands() -> None:
        for line in sys.stdin:
            if line.strip() == "int":
                signal_child(signal.SIGINT)
            elif line.strip() == "term":
                signal_child(signal.SIGTERM)
        # EOF: the controller is gone (or done with us)
        signal_child(signal.SIGINT)
        if not done.wait(3.0):
            signal_child(signal.SIGKILL)

    threading.Thread(target=read_commands, daemon=True).start()
    signal.signal(signal.SIGINT, lambda *_: signal_child(signal.SIGINT))
    signal.signal(signal.SIGTERM, lambda *_: signal_child(signal.SIGTERM))
    signal.signal(signal.SIGHUP, lambda *_: signal_child(signal.SIGINT))
    while True:
        hwm = _vm_hwm(child.pid)
        if hwm:
            peak[0] = max(peak[0], hwm)
        try:
            pid, status, rusage = os.wait4(child.pid, os.WNOHANG)
        except ChildProcessError:
            return 255
        if pid:
            break
        time.sleep(0.1)
    done.set()
    child.returncode = 0
    try:
        os.unlink(pidfile)
    except OSError:
        pass
    code = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else (
        -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
    usage = {"exit_code": code, "cpu_s": rusage.ru_utime + rusage.ru_stime,
             "rss_peak_bytes": peak[0] or None, "wall_s": time.monotonic() - started}
    tmp = usage_path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(usage, handle)
    os.replace(tmp, usage_path)
    sys.stdout.flush()
    return code if code >= 0 else 128 - code


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:   # it ended since its start time was read
        pass


class _Stop(Exception):
    pass


def _stop(*_args) -> None:
    raise _Stop


def keep(directory: str) -> int:
    if directory == "--make":
        directory = tempfile.mkdtemp(prefix=WORK_PREFIX, dir="/tmp")
        os.mkdir(os.path.join(directory, "pids"))
        sys.stdout.write(f"ready {directory}\n")
    else:
        sys.stdout.write("ready\n")
    try:
        for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _stop)
        sys.stdout.flush()
        for _line in sys.stdin:
            pass
    except (_Stop, OSError):
        pass
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    pids_dir = os.path.join(directory, "pids")
    try:
        names = os.listdir(pids_dir)
    except OSError:
        names = []
    victims = []
    for name in names:
        try:
            with open(os.path.join(pids_dir, name)) as handle:
                expected = handle.read().strip()
            pid = int(name)
        except (OSError, ValueError):
            continue
        if _start_time(pid) == expected:
            victims.append((pid, expected))
            _kill(pid, signal.SIGINT)
    deadline = time.monotonic() + 3.0
    while victims and time.monotonic() < deadline:
        victims = [(p, s) for p, s in victims if _start_time(p) == s]
        time.sleep(0.1)
    for pid, expected in victims:
        if _start_time(pid) == expected:
            _kill(pid, signal.SIGKILL)
    shutil.rmtree(directory, ignore_errors=True)
    return 0


def register(pids_dir: str) -> str:
    """List this process in ``pids_dir`` for the keeper (its pid and start time)."""
    path = os.path.join(pids_dir, str(os.getpid()))
    with open(path, "w") as handle:
        handle.write(str(_start_time(os.getpid())))
    return path


def _is_quit(line: str) -> bool:
    try:
        return json.loads(line).get("op") == "quit"
    except (ValueError, AttributeError):
        return False


def lifeline(reply, args: list) -> int:
    """Answer each command line on stdin with ``reply(line)`` (one line) until the
    controller quits or is gone; then end this process at once (the module's docstring)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    parent = os.getppid()
    pidfile = register(args[1]) if args[:1] == ["--pids"] and len(args) == 2 else ""
    lines: queue.Queue = queue.Queue()

    def end() -> None:
        if pidfile:
            try:
                os.unlink(pidfile)
            except OSError:
                pass
        os._exit(0)

    def read_commands() -> None:
        for line in sys.stdin:
            if _is_quit(line):
                break
            if line.strip():
                lines.put(line.strip())
        end()

    def watch_parent() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        end()

    threading.Thread(target=read_commands, daemon=True).start()
    threading.Thread(target=watch_parent, daemon=True).start()
    while True:
        answer = reply(lines.get())
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()


def main(args: list) -> int:
    if args[:1] == ["keep"] and len(args) == 2:
        return keep(args[1])
    if args[:1] == ["run"] and "--" in args:
        split = args.index("--")
        options = dict(zip(args[1:split:2], args[2:split:2]))  # noqa: B905 (Python 3.8)
        return run(options["--usage"], options["--pids"], args[split + 1:])
    sys.stderr.write("usage: procwrap.py run --usage FILE --pids DIR -- ARGV | "
                     "keep DIR|--make\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
