"""The local stand-in of a probe that runs on a remote host (standard library only).

The bench runner starts, reaps and stops probes as its own children (probe_driver.py):
SIGINT to stop one, wait4 for its exit status. For a remote probe that child is this
relay::

    python3 relay.py -- ssh ... 'python3 procwrap.py run ... -- PROBE ARGS'

It runs the ssh command with its own stdout and stderr (the probe's output reaches the
run directory as it comes), and translates:
- SIGINT -> the line ``int`` on the remote side's stdin (procwrap sends the probe SIGINT);
- SIGTERM, or the runner dying (PR_SET_PDEATHSIG) -> EOF on that stdin (procwrap stops
  the probe and the keeper cleans up);
- the remote exit status -> this process's: an exit code as it is, 128 + N (procwrap's
  report of a probe killed by signal N) as death by signal N, so the runner sees what it
  would have seen locally. ssh's own failure (255) stays 255, with ssh's message in the
  probe's log.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import subprocess
import sys

_PR_SET_PDEATHSIG = 1


def _pdeathsig() -> None:
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def main(argv: list) -> int:
    state = {"child": None, "pending": []}

    def on_int(*_):
        child = state["child"]
        if child is None:
            state["pending"].append(b"int\n")
            return
        try:
            child.stdin.write(b"int\n")
            child.stdin.flush()
        except OSError:
            pass

    def on_term(*_):
        child = state["child"]
        if child is not None:
            try:
                child.stdin.close()
            except OSError:
                pass

    signal.signal(signal.SIGINT, on_int)
    signal.signal(signal.SIGTERM, on_term)
    _pdeathsig()
    parent = os.environ.get("LINKLAB_RELAY_PARENT")
    if parent and os.getppid() != int(parent):
        return 255   # the runner died before PR_SET_PDEATHSIG was set
    if argv[:1] != ["--"] or len(argv) < 2:
        sys.stderr.write("usage: relay.py -- COMMAND...\n")
        return 2
    child = subprocess.Popen(argv[1:], stdin=subprocess.PIPE, preexec_fn=_pdeathsig)
    state["child"] = child
    for _ in state["pending"]:   # a stop that came before the child existed
        on_int()
    while True:
        try:
            code = child.wait()
            break
        except InterruptedError:
            continue
    if 128 < code < 128 + 65:
        signum = code - 128
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
