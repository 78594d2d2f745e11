"""held_signals.py: SIGINT/SIGTERM/SIGHUP that come during a held block take effect when it
ends, also when another thread took them; handlers are restored; SIG_IGN stays ignored.
Each case runs in its own interpreter (the handlers are process state)."""

from __future__ import annotations

import signal
import subprocess
import sys

CASE = """
import os, signal, sys, threading, time
from linklab.held_signals import signals_held
def raise_exit(signum, frame):
    raise SystemExit(128 + signum)
mode = sys.argv[1]
signal.signal(signal.SIGTERM, signal.SIG_IGN if mode == "ignored" else raise_exit)
signal.signal(signal.SIGHUP, raise_exit)
threading.Thread(target=time.sleep, args=(30,), daemon=True).start()  # may take the signal
with signals_held():
    with signals_held():                       # nested: the outer block still holds
        os.kill(os.getpid(), signal.SIGTERM)
        if mode == "two":
            os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(0.3)
        print("inner done", flush=True)
    time.sleep(0.1)
    print("outer done", flush=True)
print("after", signal.getsignal(signal.SIGTERM) in (raise_exit, signal.SIG_IGN), flush=True)
"""


def run(mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CASE, mode], capture_output=True, text=True,
                          timeout=30)


def test_a_signal_in_a_held_block_takes_effect_when_the_outermost_block_ends():
    got = run("one")
    assert got.stdout.splitlines() == ["inner done", "outer done"], got.stderr
    assert got.returncode == 128 + signal.SIGTERM


def test_two_signals_are_raised_again_in_the_order_the_block_saw_them():
    got = run("two")
    assert got.stdout.splitlines() == ["inner done", "outer done"], got.stderr
    assert got.returncode == 128 + signal.SIGTERM   # the first one's handler ended it


def test_an_ignored_signal_stays_ignored_and_the_handlers_come_back():
    got = run("ignored")
    assert got.stdout.splitlines() == ["inner done", "outer done", "after True"], got.stderr
    assert got.returncode == 0


def test_outside_the_main_thread_the_block_changes_nothing():
    import threading

    from linklab.held_signals import signals_held

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    seen = []

    def body():
        with signals_held():
            seen.append({s: signal.getsignal(s) for s in before})

    worker = threading.Thread(target=body)
    worker.start()
    worker.join()
    assert seen == [before]
