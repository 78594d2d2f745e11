"""Write docs/reference/cli.md from the ``linklab`` command tree, so it cannot drift.

    python scripts/cli_reference.py            # (re)write docs/reference/cli.md
    python scripts/cli_reference.py --check    # exit 1 when the committed file is stale
    make cli-reference                         # the same as the first line

Walks the Typer app of ``linklab.cli.app`` as click sees it (``typer.main.get_command``):
every command and sub-command in the order ``--help`` lists them, its help, its usage
line, its arguments and options with their help and their defaults (only where a
default exists). The page depends on the code alone: nothing of the terminal (width,
colours) goes into it. tests/test_docs_site.py checks the committed page equals this
output.
"""

from __future__ import annotations

import argparse
import enum
import inspect
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "docs" / "reference" / "cli.md"
REGENERATE = "make cli-reference"

HEADER = f"""\
# CLI reference

Every `linklab` command and sub-command, with its arguments and options, as `--help`
gives them. This page is generated from the command tree (`scripts/cli_reference.py`);
do not edit it by hand: run `{REGENERATE}` after changing a command or a help text.
Exit statuses are on [Exit codes](exit-codes.md).
"""

_MARKDOWN_SPECIAL = re.compile(r"([\\*_<>\[\]|])")


def _escape(text: str) -> str:
    """``text`` as literal Markdown: no emphasis, no HTML, no link, no table cell break."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _help_text(text: str | None) -> str:
    """A command's or parameter's help as Markdown paragraphs (click's ``\\b`` markers
    and the docstring's indentation removed)."""
    if not text:
        return ""
    lines = [line for line in inspect.cleandoc(text).splitlines() if line.strip() != "\b"]
    paragraphs, current = [], []
    for line in lines:
        if line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    return "\n\n".join(_escape(p) for p in paragraphs)


def _cell(text: str) -> str:
    """Help text in one table cell."""
    return _help_text(text).replace("\n\n", "<br>") if text else ""


def _default(param) -> str | None:
    """The default as the user would type it, or None where there is none to show."""
    import click

    default = param.default
    if callable(default) or default is None:
        return None
    if isinstance(default, (list, tuple)):
        if not default:
            return None
        return " ".join(_plain(v) for v in default)
    if isinstance(param, click.Option) and param.is_flag:
        if param.secondary_opts:   # --x/--no-x: name the one in force
            return param.opts[0] if default else param.secondary_opts[0]
        return None if not default else "on"
    if default == "":
        return None
    return _plain(default)


def _plain(value) -> str:
    if isinstance(value, enum.Enum):
        return str(value.value)
    return str(value)


def _param_row(param) -> str:
    import click

    if isinstance(param, click.Argument):
        name = f"`{param.human_readable_name}`"
        if param.nargs == -1:
            name += " …"
        what = getattr(param, "help", None) or ""
        required = "required" if param.required else "optional"
        default = _default(param)
        default_text = f"`{_escape_code(default)}`" if default is not None else ""
        return f"| {name} ({required}) | {default_text} | {_cell(what)} |"
    names = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
    if not param.is_flag and param.metavar:
        names += f" `{param.metavar}`"
    elif isinstance(param.type, click.Choice):
        names += " {" + _escape("|".join(_plain(c) for c in param.type.choices)) + "}"
    elif not param.is_flag:
        names += f" {_escape(param.type.name.upper())}"
    if param.multiple:
        names += " (repeatable)"
    if param.required:
        names += " (required)"
    default = _default(param)
    default_text = f"`{_escape_code(default)}`" if default is not None else ""
    return f"| {names} | {default_text} | {_cell(param.help or '')} |"


def _escape_code(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")


def _command_section(command, ctx, depth: int) -> list[str]:
    import click

    path = ctx.command_path
    lines = [f"## `{path}`", ""]
    help_text = _help_text(command.help)
    if help_text:
        lines += [help_text, ""]
    pieces = command.collect_usage_pieces(ctx)
    lines += ["```text", " ".join([path, *pieces]), "```", ""]
    params = [p for p in command.get_params(ctx)
              if not getattr(p, "hidden", False) and p.name != "help"]
    if params:
        lines += ["| argument or option | default | what it does |", "|---|---|---|"]
        lines += [_param_row(p) for p in params]
        lines.append("")
    if isinstance(command, click.Group):
        subs = [(n, command.get_command(ctx, n)) for n in command.list_commands(ctx)]
        subs = [(n, c) for n, c in subs if c is not None and not c.hidden]
        panels: dict[str | None, list] = {}   # --help's groups (rich_help_panel), in order
        for name, sub in subs:
            panels.setdefault(_panel(sub), []).append((name, sub))
        for panel, members in panels.items():
            if len(panels) > 1 or panel is not None:
                lines += [f"**{_escape(panel or 'Other commands')}**", ""]
            lines += ["| command | what it does |", "|---|---|"]
            for name, sub in members:
                anchor = _anchor(f"{path} {name}")
                lines.append(f"| [`{path} {name}`](#{anchor}) | {_cell(_summary(sub))} |")
            lines.append("")
    if command.epilog:
        lines += [_help_text(command.epilog), ""]
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            sub_ctx = click.Context(sub, info_name=name, parent=ctx)
            lines += _command_section(sub, sub_ctx, depth + 1)
    return lines


def _panel(command) -> str | None:
    """The group ``--help`` lists a command under (typer's rich_help_panel), or None."""
    panel = getattr(command, "rich_help_panel", None)
    panel = getattr(panel, "value", panel)   # typer's DefaultPlaceholder: not set
    return panel if isinstance(panel, str) and panel else None


def _summary(command) -> str:
    """A command's line in its group's table: its short help, else its help's first
    paragraph."""
    if command.short_help:
        return command.short_help
    text = inspect.cleandoc(command.help or "")
    return text.split("\n\n", 1)[0]


def _anchor(heading: str) -> str:
    """The id Python-Markdown's toc gives a heading ``` `linklab link up` ```."""
    return re.sub(r"[^\w]+", "-", heading.lower()).strip("-")


def render(app=None) -> str:
    """The whole page for the command tree as it is now (``app``: linklab's Typer app)."""
    if str(REPO / "src") not in sys.path:   # this checkout's code, not an installed one
        sys.path.insert(0, str(REPO / "src"))
    import click
    import typer

    if app is None:
        from linklab.cli.app import app

    command = typer.main.get_command(app)
    ctx = click.Context(command, info_name="linklab")
    lines = [HEADER, *_command_section(command, ctx, 0)]
    text = "\n".join(lines).rstrip() + "\n"
    return re.sub(r"[ \t]+\n", "\n", text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the committed page differs from the command tree")
    parser.add_argument("--out", type=Path, default=OUTPUT, help="where to write the page")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not args.out.exists() or args.out.read_text() != text:
            print(f"{args.out} is out of date: run {REGENERATE}", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
