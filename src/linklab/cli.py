"""The one ``linklab`` command.

Each sub-command lives with its package (``linklab/<package>/cli.py`` exposing
``register(app)``); this file only assembles them and turns ``LinklabError`` into a
one-line message and an exit status, never a traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import click
import typer

from linklab import __version__
from linklab.errors import LinklabError

# Packages that contribute commands, in the order --help lists them.
COMMAND_MODULES = (
    "linklab.model.cli",      # linklab model
    "linklab.tune.cli",       # linklab tune
    "linklab.link.cli",       # linklab link up|status|exec|down|clean
    "linklab.bench.cli",      # linklab bench
    "linklab.report.cli",     # linklab report
    "linklab.sft.cli",        # linklab sft-bench
    "linklab.security.cli",   # linklab keystore
    "linklab.drive.cli",      # linklab drive
    "linklab.field.cli",      # linklab field check|tune (linklab link measure: link/cli.py)
    "linklab.k8s.cli",        # linklab k8s run|preflight|clean|image
)

app = typer.Typer(
    name="linklab",
    help="Measure, reproduce, understand and fix ROS 2 traffic over real networks.",
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


for _name in COMMAND_MODULES:
    if _module_exists(_name):
        importlib.import_module(_name).register(app)


def fail(message: str, exit_code: int = 2) -> None:
    """Print one error line and exit (for the CLI layer only)."""
    typer.echo(f"linklab: error: {message}", err=True)
    raise SystemExit(exit_code)


def main(argv: list[str] | None = None) -> int:
    command = typer.main.get_command(app)
    args = sys.argv[1:] if argv is None else argv
    try:
        result = command.main(args=args, prog_name="linklab", standalone_mode=False)
    except LinklabError as error:
        typer.echo(f"linklab: error: {error}", err=True)
        return error.exit_code
    except click.UsageError as error:
        where = f" (see '{error.ctx.command_path} --help')" if error.ctx else ""
        typer.echo(f"linklab: error: {error.format_message()}{where}", err=True)
        return 2
    except click.ClickException as error:
        typer.echo(f"linklab: error: {error.format_message()}", err=True)
        return error.exit_code
    except click.exceptions.Abort:
        typer.echo("linklab: interrupted", err=True)
        return 130
    except KeyboardInterrupt:
        typer.echo("linklab: interrupted", err=True)
        return 130
    except click.exceptions.Exit as done:
        return done.exit_code
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    raise SystemExit(main())
