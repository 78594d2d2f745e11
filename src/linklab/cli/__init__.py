"""The one ``linklab`` command: its entry point (pyproject's [project.scripts]).

Cheap to import on purpose: ``main`` puts linklab's answer to SIGINT, SIGTERM and SIGHUP
in place (stop_signals.py) before it imports the command tree (app.py: typer, rich,
numpy, pyarrow, every package's commands). So a signal at any moment -- the imports,
the parsing of the arguments, the work, its clean-up -- ends with one line at most and
the conventional status, 130 SIGINT, 143 SIGTERM, 129 SIGHUP, never a traceback; the
command's clean-up is the same whichever signal came. A ``LinklabError`` or a usage
error ends with one line ``linklab: error: ...`` and its status (app.py).
"""

import os
import sys

from linklab import stop_signals  # first: it imports nothing slow (its docstring)


def main(argv: list[str] | None = None) -> int:
    """Run ``linklab ARGV`` (default ``sys.argv[1:]``); return the exit status.

    As the process's entry point (no ``argv``) the stop signals stay ignored from the
    moment the outcome is decided to the exit; called with ``argv`` (tests, scripts in the
    same process), the caller's signal handlers are back when it returns.
    """
    replaced: dict[int, object] = {}
    try:
        try:
            try:
                replaced = stop_signals.install()
                from linklab.cli.app import run  # the slow imports

                stop_signals.raise_swallowed()   # a signal that came during them ends here
                status, line = run(sys.argv[1:] if argv is None else list(argv))
            except Exception:
                # a stop signal can come out of an import wrapped in another exception:
                # Python 3.11 turns one raised in a class body's __set_name__ (a dataclass
                # field being made) into "RuntimeError: Error calling __set_name__": the
                # signal decides the outcome, not its wrapper
                stop_signals.raise_swallowed()
                raise
            stop_signals.ignore()   # decided: a signal from now on changes nothing
        except (KeyboardInterrupt, SystemExit) as stop:
            stop_signals.ignore()
            interrupted = stop_signals.exit_status(stop)
            if interrupted is None:   # sys.exit(N) in a command: its own status
                raise
            status, line = interrupted, stop_signals.message(interrupted)
        _finish(line)
        return status
    finally:
        if argv is not None:
            stop_signals.restore(replaced)


def _finish(line: str | None) -> None:
    """Flush stdout and print ``line`` on stderr; a reader that is gone (``| head``, a
    closed terminal after SIGHUP) is not an error of linklab's."""
    try:
        sys.stdout.flush()
    except OSError:
        _quiet(sys.stdout)
    if line is not None:
        try:
            print(line, file=sys.stderr, flush=True)
        except OSError:
            _quiet(sys.stderr)


def _quiet(stream) -> None:
    """Point ``stream``'s file descriptor at /dev/null, so the interpreter's last flush of
    it at exit has nowhere to fail."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)
    except (OSError, ValueError):
        pass
