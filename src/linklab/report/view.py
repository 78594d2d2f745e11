"""One table of a report, said once and drawn for each output.

A :class:`Section` is a titled table of text cells (with a legend above it and notes
below), plus ``records``: the same facts as numbers for ``--json``. Builders (per
subscriber, searches, gates, errors, paper 004 ...) return Sections; the terminal
(:func:`to_rich`), ``--markdown`` (:func:`to_markdown`), the HTML page (:func:`to_html`)
and ``--json`` (:meth:`Section.to_dict`) draw the same Section, so no output can say
something another does not.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from linklab.output import jsonable
from linklab.rundir import num

# HTML class of a cell -> terminal style
STYLES = {"failed": "red", "error": "bold magenta", "dim": "dim", "paper": "dim",
          "better": "green", "worse": "red", "miss": "bold red", "met": "green"}


@dataclass
class Cell:
    """One table cell: its text, and how the HTML page marks it (class, tooltip, data-*)."""

    text: str
    klass: str = ""
    title: str = ""
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Section:
    key: str                      # HTML id and --json key
    title: str
    columns: list[str]
    rows: list[list[Cell]] = field(default_factory=list)
    legend: str = ""
    notes: list[str] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)  # for --json
    right: tuple[int, ...] = ()   # indexes of right-aligned (numeric) columns
    # the terminal prints each row as this line (str.format of the texts) instead of a
    # table: for lists of long reasons, which a table would cut into narrow columns
    line_format: str | None = None
    outputs: tuple[str, ...] = ("terminal", "markdown", "html", "json")
    md_heading: str = ""          # e.g. "####": a Markdown heading instead of bold
    terminal_notes: list[str] | None = None  # the terminal's notes, when not ``notes``

    def add(self, *cells: Cell | str) -> None:
        self.rows.append([c if isinstance(c, Cell) else Cell(str(c)) for c in cells])

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "legend": self.legend, "columns": self.columns,
                "rows": [[c.text for c in row] for row in self.rows], "notes": self.notes,
                "records": [jsonable(r, "null") for r in self.records]}


# --- numbers as text ---------------------------------------------------------------------

def fmt(value: Any, digits: int = 2, dash: str = "—") -> str:
    value = num(value)
    return dash if value is None else f"{value:.{digits}f}"


def pct(value: Any, digits: int = 2) -> str:
    value = num(value)
    return "—" if value is None else f"{value * 100:.{digits}f} %"


def count(value: Any) -> str:
    value = num(value)
    return "—" if value is None else str(int(value))


# --- drawing ------------------------------------------------------------------------------

def to_rich(section: Section) -> Group:
    parts: list[Any] = [Text(section.title, style="bold")]
    if section.legend:
        parts.append(Text(section.legend, style="dim"))
    if section.rows and section.line_format:
        for row in section.rows:
            parts.append(Text(section.line_format.format(*(c.text for c in row)),
                              style=STYLES.get(row[0].klass.split(" ")[0], "")))
    elif section.rows:
        table = Table(show_lines=False, pad_edge=False, title_justify="left")
        for i, name in enumerate(section.columns):
            table.add_column(name, justify="right" if i in section.right else "left",
                             overflow="fold")
        for row in section.rows:
            table.add_row(*(Text(c.text, style=STYLES.get(c.klass.split(" ")[0], ""))
                            for c in row))
        parts.append(table)
    for note in section.notes if section.terminal_notes is None else section.terminal_notes:
        parts.append(Text(note))
    parts.append(Text(""))
    return Group(*parts)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(section: Section) -> str:
    title = f"{section.md_heading} {section.title}" if section.md_heading else \
        f"**{section.title}**"
    lines = [title, ""]
    if section.legend:
        lines += [section.legend, ""]
    if section.rows:
        lines.append("| " + " | ".join(_md(c) for c in section.columns) + " |")
        lines.append("|" + "---|" * len(section.columns))
        lines += ["| " + " | ".join(_md(c.text) for c in row) + " |" for row in section.rows]
        lines.append("")
    if len(section.notes) == 1:
        lines += section.notes + [""]
    elif section.notes:  # one item each (consecutive lines would run into one paragraph)
        lines += [f"- {note}" for note in section.notes] + [""]
    return "\n".join(lines)


def e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def to_html(section: Section, level: int = 3) -> str:
    head = "".join(f"<th>{e(c)}</th>" for c in section.columns)
    body = []
    for row in section.rows:
        cells = []
        for i, c in enumerate(row):
            attrs = "".join(f" data-{e(k)}='{e(v)}'" for k, v in c.data.items())
            klass = " ".join(filter(None, [c.klass, "num" if i in section.right else ""]))
            if klass:
                attrs += f" class='{e(klass)}'"
            if c.title:
                attrs += f" title='{e(c.title)}'"
            cells.append(f"<td{attrs}>{e(c.text)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    legend = f"<p class=legend>{e(section.legend)}</p>" if section.legend else ""
    table = (f"<div class=scroll><table class=view id='table-{e(section.key)}'><thead><tr>"
             f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
             if section.rows else "")
    notes = "".join(f"<p class=note>{e(n)}</p>" for n in section.notes)
    return (f"<section class=view id='{e(section.key)}'><h{level}>{e(section.title)}"
            f"</h{level}>{legend}{table}{notes}</section>")
