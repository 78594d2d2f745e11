"""The ``linklab`` command tree: typer, rich and every package's commands (the slow
imports, which ``cli.main`` makes only once its signal handlers are in place).

Every command module is in this package (``linklab/cli/<command>.py`` exposing
``register(app)``; the domain packages export functions and types, never commands); this
file only assembles them and turns ``LinklabError`` and click's usage errors into one
line ``linklab: error: <message>`` and an exit status, never a traceback. Interruptions
pass through untouched (cli/__init__.py and stop_signals.py).
"""

from __future__ import annotations

import errno
import importlib
import importlib.util
import inspect

import click
import typer
from typer.core import TyperGroup
from typer.models import ParameterInfo

from linklab import __version__
from linklab.errors import LinklabError

# Packages that contribute commands.
COMMAND_MODULES = (
    "linklab.cli.link",       # linklab link up|status|exec|down|clean|presets|measure
    "linklab.cli.bench",      # linklab bench
    "linklab.cli.report",     # linklab report
    "linklab.cli.drive",      # linklab drive
    "linklab.cli.keystore",   # linklab keystore
    "linklab.cli.model",      # linklab model, model-check
    "linklab.cli.tune",       # linklab tune
    "linklab.cli.sft",        # linklab sft-bench
    "linklab.cli.field",      # linklab field check|tune (linklab link measure: cli/link.py)
    "linklab.cli.k8s",        # linklab k8s run|preflight|clean|image
)

# How ``linklab --help`` groups the commands, in the order a user meets the jobs: a
# command not named here is listed last, under "Other".
PANELS = (
    ("Emulate a link", ("link",)),
    ("Measure", ("bench", "report", "drive", "keystore")),
    ("Understand", ("model", "model-check")),
    ("Fix", ("tune", "sft-bench")),
    ("Scale out", ("field", "k8s")),
)
OTHER_PANEL = "Other"

EXIT_STATUS = ("Exit status: 0 done; 1 failed (a gate missed, a run that could not be "
               "made); 2 bad input, one line 'linklab: error: ...'; a command's own (bench "
               "70, tune 3/4: its --help); interrupted, after the same clean-up whichever "
               "signal: 130 Ctrl-C (SIGINT), 143 SIGTERM, 129 SIGHUP.")

class _Commands(TyperGroup):
    """A command group that refuses a name it does not have, whatever its first character.
    (Click reads the arguments again when the name starts with a character that is not
    a letter or digit, in case it was an option; with nothing after it, a group with
    no_args_is_help then printed its help and exited 0: ``linklab ' '``, ``linklab field
    .x``.)"""

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name = click.utils.make_str(args[0])
        if self.get_command(ctx, name) is None and not ctx.resilient_parsing:
            ctx.fail(f"No such command {name!r}.")
        return super().resolve_command(ctx, args)


class _Root(_Commands):
    """The top-level group: its commands listed panel by panel, in PANELS' order."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        order = [name for _, names in PANELS for name in names]
        names = super().list_commands(ctx)
        return sorted(names, key=lambda n: order.index(n) if n in order else len(order))


app = typer.Typer(
    name="linklab",
    cls=_Root,
    help="Measure, reproduce, understand and fix ROS 2 traffic over real networks: "
         "emulate a link, benchmark middlewares across it, explain the results with an "
         "analytic model, tune DDS profiles, then do the same on real hosts or Kubernetes.",
    epilog=EXIT_STATUS,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"linklab {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """linklab: measure, reproduce, understand and fix ROS 2 traffic over real networks."""


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _panel(name: str | None) -> str:
    return next((panel for panel, names in PANELS if name in names), OTHER_PANEL)


def _hide_none_defaults(typer_app: typer.Typer) -> None:
    """No ``[default: None]`` in any --help: an option (or argument) whose default is None
    is one that may be left out, and its help says what happens then."""
    infos = [c.callback for c in typer_app.registered_commands]
    infos += [g.typer_instance.registered_callback.callback
              for g in typer_app.registered_groups if g.typer_instance.registered_callback]
    for callback in infos:
        if callback is None:
            continue
        for parameter in inspect.signature(callback).parameters.values():
            given = parameter.default
            if isinstance(given, ParameterInfo) and given.default in (None, ...) \
                    and given.show_default is True:
                given.show_default = False
    for group in typer_app.registered_groups:
        _hide_none_defaults(group.typer_instance)


def _assemble(typer_app: typer.Typer) -> None:
    """Every package's commands, each in its panel of ``linklab --help``."""
    for module in COMMAND_MODULES:
        if _module_exists(module):
            importlib.import_module(module).register(typer_app)
    for command in typer_app.registered_commands:
        command.rich_help_panel = _panel(command.name)
    for group in typer_app.registered_groups:
        group.rich_help_panel = _panel(group.name or group.typer_instance.info.name)
    _hide_none_defaults(typer_app)


_assemble(app)


def _strict(command: click.Command) -> click.Command:
    """``command`` with every typer group in it a ``_Commands`` (the packages make their
    groups with typer.Typer, which builds plain TyperGroups)."""
    if isinstance(command, click.Group):
        if type(command) is TyperGroup:
            command.__class__ = _Commands
        for sub in command.commands.values():
            _strict(sub)
    return command


def one_line(text: str) -> str:
    """``text`` as one line: a character that is not printable (a newline, a tab, a line
    or record separator -- in an argument the message quotes) written as its escape."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def run(args: list[str]) -> tuple[int, str | None]:
    """Run ``linklab ARGS``: (exit status, the one line to print on stderr or None).

    Click's own ``main`` is not used: it turns KeyboardInterrupt into exit 130 (typer's)
    whatever the signal was, and prints a blank line for EOFError."""
    command = _strict(typer.main.get_command(app))
    try:
        with command.make_context("linklab", list(args)) as ctx:
            result = command.invoke(ctx)
    except LinklabError as error:
        return error.exit_code, one_line(f"linklab: error: {error}")
    except click.UsageError as error:
        where = f" (see '{error.ctx.command_path} --help')" if error.ctx else ""
        return 2, one_line(f"linklab: error: {error.format_message()}{where}")
    except click.ClickException as error:
        return error.exit_code, one_line(f"linklab: error: {error.format_message()}")
    except click.exceptions.Abort:   # (click's prompts: linklab has none)
        return 130, "linklab: interrupted"
    except click.exceptions.Exit as done:
        return done.exit_code, None
    except OSError as error:
        if error.errno != errno.EPIPE:
            raise
        return 1, None   # the reader of stdout is gone (| head): nothing to tell it
    return (result if isinstance(result, int) else 0), None

