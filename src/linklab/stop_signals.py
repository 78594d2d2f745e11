"""How linklab ends on SIGINT, SIGTERM and SIGHUP, at any moment of any command.

``install()`` -- the first thing ``linklab`` does, before its slow imports (typer, rich,
numpy, pyarrow: about 0.4 s, more on a loaded machine) -- makes each of the three raise
``Interrupted`` in the main thread. It is a KeyboardInterrupt that carries its signal, so
every clean-up written for Ctrl-C (``except KeyboardInterrupt``, ``finally``, the held
blocks of held_signals.py) runs for SIGTERM and SIGHUP too, and the exit status still
says which came: 128 + the signal (``exit_status``: 130 SIGINT, 143 SIGTERM, 129 SIGHUP).
A signal the parent made this process ignore (``nohup``, ``cmd &`` in a script) stays
ignored. ``ignore()``: once a command's outcome is decided (its status and last line), a
later signal changes nothing.

Before ``install()`` only the interpreter's own start-up runs (about 10 ms here, the
first 5 ms before Python has a SIGINT handler): a signal then has its default action --
the process ends by it, nothing printed, the status a shell shows is 128 + the signal --
except SIGINT once Python's handler is in: the interpreter's KeyboardInterrupt traceback,
in its own code, before any of linklab's runs.

Imported first, before anything else of linklab's CLI, so it imports only ``_signal``:
the C module ``signal`` wraps, without the enum, functools and collections that
``signal`` and ``threading`` would import first (about 6 ms more in which a Ctrl-C
would still be the interpreter's traceback).
"""

import _signal

SIGHUP, SIGINT, SIGTERM = _signal.SIGHUP, _signal.SIGINT, _signal.SIGTERM
STOPS = (SIGINT, SIGTERM, SIGHUP)
NAMES = {SIGINT: "SIGINT", SIGTERM: "SIGTERM", SIGHUP: "SIGHUP"}
_DEFAULTS = (_signal.SIG_DFL, _signal.default_int_handler)


class Interrupted(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP, raised where the main thread was."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


_came: list[int] = []   # the signals ``_raise`` turned into Interrupted since install()


def _raise(signum: int, _frame: object) -> None:
    _came.append(signum)
    raise Interrupted(signum)


def install() -> dict[int, object]:
    """Make each stop signal whose action is still the default raise ``Interrupted``;
    return the handlers it replaced (for ``restore``). Outside the main thread: nothing
    (only the main thread may set handlers)."""
    replaced: dict[int, object] = {}
    _came.clear()
    try:
        for sig in STOPS:
            current = _signal.getsignal(sig)
            if current in _DEFAULTS:
                _signal.signal(sig, _raise)
                replaced[sig] = current
    except ValueError:   # not the main thread
        pass
    return replaced


def raise_swallowed() -> None:
    """Raise the first stop signal since ``install()`` again: for a point its Interrupted
    should have passed, had nothing swallowed it. CPython's ``_elementtree`` does: a
    KeyboardInterrupt while it imports pyexpat becomes an ImportError that ElementTree
    catches, and the import goes on as if no signal had come."""
    if _came:
        raise Interrupted(_came[0])


def restore(replaced: dict[int, object]) -> None:
    """Put back the handlers ``install`` replaced (a caller in the same process: tests)."""
    try:
        for sig, handler in replaced.items():
            if handler is not None:
                _signal.signal(sig, handler)
    except ValueError:   # not the main thread
        pass


def ignore() -> None:
    """Ignore the stop signals from now on. Never raises: a signal whose handler was
    already due (setting a handler runs the pending ones first) is dropped with the rest."""
    while True:
        try:
            for sig in STOPS:
                _signal.signal(sig, _signal.SIG_IGN)
            return
        except KeyboardInterrupt:
            continue
        except ValueError:   # not the main thread
            return


def exit_status(stop: BaseException) -> int | None:
    """The status an interruption ends linklab with: 128 + its signal (a plain
    KeyboardInterrupt is SIGINT's; SystemExit(128 + signal) is what link's build and
    ``testbed()`` raise for SIGTERM and SIGHUP). None: not an interruption."""
    if isinstance(stop, Interrupted):
        return 128 + stop.signum
    if isinstance(stop, KeyboardInterrupt):
        return 128 + SIGINT
    if isinstance(stop, SystemExit) and stop.code in {128 + sig for sig in STOPS}:
        return int(stop.code)   # type: ignore[arg-type]
    return None


def message(status: int) -> str:
    """The one line an interruption ends with (``exit_status``'s status)."""
    if status == 128 + SIGINT:
        return "linklab: interrupted"
    return f"linklab: interrupted ({NAMES[status - 128]})"
