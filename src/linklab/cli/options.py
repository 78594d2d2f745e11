"""Options several commands share."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from linklab.errors import UsageError
from linklab.output import FORMATS

FORMAT_OPTION = typer.Option(
    "text", "--format", metavar="text|markdown|json",
    help="text: tables as on a terminal (piped or redirected, as wide as they need: "
         "never cut mid-word); markdown: GitHub tables; json: the rows as numbers (as "
         "--json).")


def options_from(helps: dict[str, str]) -> Callable[..., Any]:
    """A maker of typer Options whose help is ``helps[NAME]``: a command's options then read
    as one table of help texts, and each option as one line."""
    def option(default: Any, name: str, *names: str, metavar: str | None = None) -> Any:
        return typer.Option(default, name, *names, metavar=metavar, help=helps[name])

    return option


def output_format(value: str, *, json_flag: bool = False, markdown_flag: bool = False) -> str:
    """The format asked for: ``--format``, or ``--json`` / ``--markdown``, which say the same
    (giving both with different formats is a usage error)."""
    if value not in FORMATS:
        raise UsageError(f"{value!r}: expected text, markdown or json", argument="--format")
    flags = [name for name, given in (("json", json_flag), ("markdown", markdown_flag))
             if given]
    if flags and value != "text" and value != flags[0]:
        raise UsageError(f"--format {value} and --{flags[0]} ask for different outputs",
                         argument="--format")
    return flags[0] if flags else value


JSON_TEXT_OPTION = typer.Option(False, "--json", help="Print JSON instead of text.")

# A scenario run: linklab bench and linklab k8s run.
SCENARIO_ARGUMENT = typer.Argument(None, metavar="SCENARIO.yaml",
                                   help="Scenario file (examples in scenarios/). Not needed "
                                        "with --resume.")
QUICK_OPTION = typer.Option(False, "--quick", help="Apply the scenario's quick: overrides "
                            "(fewer, shorter cells).")
RUNS_OUT_OPTION = typer.Option(Path("runs"), "--out", metavar="DIR",
                               help="Parent directory of the new run directory.")
PRESETS_OPTION = typer.Option([], "--presets", metavar="FILE",
                              help="Link presets of your own (format: linklab link presets "
                                   "--help); repeatable.")
PRESET_FILES_OPTION = typer.Option([], "--presets", metavar="FILE",
                                   help="Link presets of your own; repeatable.")


def resume_option(help_text: str) -> Any:
    """``--resume RUN_DIR``, in the words of the command."""
    return typer.Option(None, "--resume", metavar="RUN_DIR", help=help_text)


def dry_run_option(help_text: str) -> Any:
    """``--dry-run``, in the words of the command."""
    return typer.Option(False, "--dry-run", help=help_text)


def repeat_option(help_text: str) -> Any:
    """``--repeat N``, in the words of the command."""
    return typer.Option(None, "--repeat", metavar="N", help=help_text)


GATE_OPTION = typer.Option([], "--gate", metavar="[TOPIC:]METRIC OP VALUE",
                           help="A pass/fail target on every cell (or one topic), e.g. "
                                "'reception_rate>=29Hz'; repeatable. Missed: exit 1.")

# Measuring a path between two hosts: linklab link measure and linklab field tune.
PROBE_RATE_OPTION = typer.Option("2kHz", "--probe-rate",
                                 help="Probes per second (64 B UDP), each echoed.")
RAMP_STEP_OPTION = typer.Option("0.8s", "--ramp-step",
                                help="Length of one step of the UDP rate ramp.")
