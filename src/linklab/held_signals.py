"""Holding SIGINT, SIGTERM and SIGHUP back around work that must not stop half-way: a
network change and its record, a teardown, the last save of a run.

A process-directed signal goes to any thread that does not block it, and CPython runs the
Python handler in the main thread whichever thread took it; so blocking the signals in the
main thread's mask (``pthread_sigmask``) holds them only while the process has no other
thread. A bench has one (its progress bar's refresh thread), and a SIGTERM sent during a
teardown raised in the middle of it and left the link up: two namespaces and an emulator
process of ``linklab bench --resume`` stopped with ``kill -TERM`` (2026-11-26). Here the
main thread's Python handlers are replaced for the block by a recorder, and the signals
it saw are raised again, in the order it saw them, once the previous handlers are back.
No mask is changed, so a child spawned meanwhile inherits none. Other threads need
nothing: no Python handler runs in them.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP back for the block; they take effect when it ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []

    def record(signum: int, _frame: object) -> None:
        if signum not in came:
            came.append(signum)

    previous: dict[int, Callable | int] = {}
    try:
        for sig in HELD:
            handler = signal.getsignal(sig)
            if handler is not None:   # None: a handler not installed from Python, left
                previous[sig] = handler
                signal.signal(sig, record)
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for sig in came:
            signal.raise_signal(sig)   # to the handler now in place (ignored if SIG_IGN)

