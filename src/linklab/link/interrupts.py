"""How building a run answers SIGINT, SIGTERM and SIGHUP: never with an exit status that
lies about what is left.

Before the run is up, an interrupt undoes everything made so far and is raised again
(``lifecycle.up``); ``stop_raises()`` makes SIGTERM and SIGHUP raise
``SystemExit(128 + signal)`` for that -- their default action would kill the process on the
spot, half-way through the build and with nothing undone (SIGINT raises KeyboardInterrupt
already). A handler the caller installed is left in place.

A command whose work is done once the run is up (``linklab link up``: it only reports the
run then) calls ``ignore_from_now()`` right before it records the run as up: from then on
the three signals are ignored, so the command finishes and exits 0 with the run up and
recorded. An interrupt that came before that call is taken first (it raises, and the run
is undone).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
RAISED = (signal.SIGTERM, signal.SIGHUP)


def _raise(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def stop_raises() -> Iterator[None]:
    """In the block, SIGTERM and SIGHUP raise SystemExit(128 + signal) where they would
    otherwise kill the process (default action); main thread only (signal handlers)."""
    installed = []
    if _main_thread():
        for sig in RAISED:
            if signal.getsignal(sig) == signal.SIG_DFL:
                signal.signal(sig, _raise)
                installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            if signal.getsignal(sig) is _raise:   # (not after ignore_from_now)
                signal.signal(sig, signal.SIG_DFL)


def ignore_from_now() -> None:
    """Ignore SIGINT, SIGTERM and SIGHUP for the rest of the process (main thread only).

    The signals are blocked while their actions change, so one that comes meanwhile stays
    pending and is then discarded; one whose Python handler was already due runs before
    (``signal.signal`` runs pending handlers first) and raises here.
    """
    if not _main_thread():
        return
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        for sig in STOPS:
            signal.signal(sig, signal.SIG_IGN)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
