"""Shared output helpers for CLI commands: rich tables on a terminal, JSON with --json.

Every command that prints tables takes ``--format text|markdown|json`` (the option is
linklab.cli.options'), the same numbers in each:

- ``text``: on a terminal, what rich lays out for its width. Anywhere else (a pipe, a
  file, a CI log, where rich would assume 80 columns and cut table cells mid-word) the
  same layout at the width the output needs: :func:`print_text` measures it first, and
  :func:`layout_console` is the console a command lays its output out for.
- ``markdown``: GitHub tables (:func:`to_markdown` turns the rich tables and lines a
  command prints into Markdown; :func:`markdown_table` makes one from rows).
- ``json``: the command's ``--json`` document, the rows as numbers.
"""

from __future__ import annotations

import io
import json
import math
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

console = Console()
err_console = Console(stderr=True)

FORMATS = ("text", "markdown", "json")
# Wide enough for any table linklab prints: the width its output is laid out for when
# stdout is not a terminal (print_text then prints at the width really taken).
UNBOUNDED_WIDTH = 1000

def jsonable(value: Any, infinite: str = "text") -> Any:
    """``value`` as JSON takes it: NaN as null, a mapping's keys as text, tuples as lists,
    a record by its ``to_dict()``. An infinity becomes ``"inf"``/``"-inf"`` (``infinite=
    "text"``, a command's --json), null (``"null"``, a report's records) or stays a float
    (``"keep"``, the run directory's files: json writes it as Infinity)."""
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value) or infinite == "null":
            return None
        return value if infinite == "keep" else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): jsonable(v, infinite) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, infinite) for v in value]
    if hasattr(value, "to_dict"):
        return jsonable(value.to_dict(), infinite)
    return value


def print_json(data: Any) -> None:
    """Write one JSON document to stdout (machine-readable; nothing else on stdout)."""
    sys.stdout.write(json.dumps(jsonable(data), indent=2, sort_keys=False) + "\n")


def err_line(text: str) -> None:
    """One line on stderr as it is: never wrapped (a pipe or file is 80 columns to rich),
    no markup, emoji or highlighting -- for lines a program reads one by one (gate misses)."""
    err_console.print(text, markup=False, highlight=False, emoji=False, soft_wrap=True)


# --- text ----------------------------------------------------------------------------------

def layout_console() -> Console:
    """The console to lay output out for (a table split to fit, a column width): stdout's
    when it is a terminal; otherwise one so wide that nothing needs splitting or wrapping
    (:func:`print_text` prints it at the width it really takes)."""
    if console.is_terminal:
        return console
    return Console(width=UNBOUNDED_WIDTH, file=io.StringIO())


def needed_width(*renderables: RenderableType) -> int:
    """The width ``renderables`` take when nothing in them is wrapped (at least 80)."""
    probe = Console(width=UNBOUNDED_WIDTH, file=io.StringIO())
    widths = [Measurement.get(probe, probe.options, r).maximum for r in renderables]
    return max([80, *widths])


def print_text(*renderables: RenderableType, **print_options: Any) -> None:
    """Print rich renderables on stdout. On a terminal, as rich lays them out for its
    width (what every command printed before --format); anywhere else at the width they
    need, so a table is never cut mid-word into a column too narrow for it and no line
    is wrapped at 80 columns."""
    if console.is_terminal:
        console.print(*renderables, **print_options)
        return
    Console(width=needed_width(*renderables)).print(*renderables, **print_options)


def print_lines(lines: Iterable[str]) -> None:
    """Plain lines on stdout as they are: no markup, never wrapped, on a terminal or not."""
    for line in lines:
        console.print(line, markup=False, highlight=False, emoji=False, soft_wrap=True)


# --- markdown ------------------------------------------------------------------------------

def _md_cell(text: str) -> str:
    return text.strip().replace("|", "\\|").replace("\n", "<br>")


def markdown_table(columns: Sequence[str], rows: Iterable[Sequence[str]],
                   right: Sequence[int] = ()) -> list[str]:
    """A GitHub table: a header, its alignment row (``right``: indexes of numeric columns)
    and one line per row; a cell's lines joined with <br>."""
    lines = ["| " + " | ".join(_md_cell(c) for c in columns) + " |",
             "|" + "|".join("---:" if i in right else "---" for i in range(len(columns)))
             + "|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return lines


def _plain(value: Any) -> str:
    if isinstance(value, Text):
        return value.plain
    if isinstance(value, str):
        return Text.from_markup(value).plain
    return str(value)


def table_rows(table: Table) -> tuple[list[str], list[list[str]]]:
    """A rich table's header and rows as the plain text of each cell."""
    columns = [_plain(c.header) for c in table.columns]
    cells = [[_plain(cell) for cell in column.cells] for column in table.columns]
    return columns, [list(row) for row in zip(*cells, strict=True)] if cells else []


def to_markdown(*renderables: RenderableType) -> str:
    """What :func:`print_text` prints, as Markdown: each rich table a GitHub table (its
    title above it in bold, its caption under it), each text a paragraph (bold when the
    whole text is), any other renderable as its text in a code block."""
    parts: list[str] = []
    for item in renderables:
        if isinstance(item, Group):
            parts.append(to_markdown(*item.renderables))
        elif isinstance(item, Table):
            block = [f"**{_plain(item.title)}**", ""] if item.title else []
            columns, rows = table_rows(item)
            right = [i for i, c in enumerate(item.columns) if c.justify == "right"]
            block += markdown_table(columns, rows, right)
            if item.caption:
                block += ["", _plain(item.caption)]
            parts.append("\n".join(block))
        elif isinstance(item, (Text, str)):
            text = _plain(item).rstrip()
            if not text:
                continue
            bold = isinstance(item, Text) and "bold" in str(item.style).split()
            parts.append(f"**{text}**" if bold and "\n" not in text else text)
        else:
            capture = Console(width=needed_width(item), file=io.StringIO())
            capture.print(item)
            parts.append("```\n" + capture.file.getvalue().rstrip() + "\n```")
    return "\n\n".join(p for p in parts if p)
