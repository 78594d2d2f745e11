"""Options several commands share."""

from __future__ import annotations

import typer

from linklab.errors import UsageError
from linklab.output import FORMATS

FORMAT_OPTION = typer.Option(
    "text", "--format", metavar="text|markdown|json",
    help="text: tables as on a terminal (piped or redirected, as wide as they need: "
         "never cut mid-word); markdown: GitHub tables; json: the rows as numbers (as "
         "--json).")


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
