"""Run a probe on a host for the controller, and clean up after a field run.

Copied to every remote host of a field run with agent.py (standard library only, Python
3.8+, no linklab import) and run over SSH::

    python3 procwrap.py run --usage FILE --pids DIR -- PROBE ARGS...
    python3 procwrap.py keep DIR

``run`` starts the probe with this process's stdout and stderr (the SSH channel: the
controller writes them to the run directory as they come). A line ``int`` on stdin sends
the probe SIGINT (the runner's stop: the probe flushes its records and prints its
summary); EOF on stdin (the controller or its SSH connection died) sends SIGINT, then
SIGKILL after 3 s. When the probe ends, its exit status, CPU seconds (wait4's rusage)
and peak RSS (VmHWM, sampled every 0.1 s) go to the usage FILE as JSON, and ``run``
exits with the probe's status (128 + N for a signal N, as a shell reports it).

``keep`` prints ``ready`` and waits for EOF on stdin: the end of the run, or the loss of
the controller. Then it ends every probe still listed in ``DIR/pids`` (checking each
pid's start time, so a recycled pid is left alone) and removes DIR.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time


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


def keep(directory: str) -> int:
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for _line in sys.stdin:
        pass
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
            os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + 3.0
    while victims and time.monotonic() < deadline:
        victims = [(p, s) for p, s in victims if _start_time(p) == s]
        time.sleep(0.1)
    for pid, expected in victims:
        if _start_time(pid) == expected:
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(directory, ignore_errors=True)
    return 0


def main(args: list) -> int:
    if args[:1] == ["keep"] and len(args) == 2:
        return keep(args[1])
    if args[:1] == ["run"] and "--" in args:
        split = args.index("--")
        options = dict(zip(args[1:split:2], args[2:split:2]))  # noqa: B905 (Python 3.8)
        return run(options["--usage"], options["--pids"], args[split + 1:])
    sys.stderr.write("usage: procwrap.py run --usage FILE --pids DIR -- ARGV | keep DIR\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
