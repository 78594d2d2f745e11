"""``linklab --help`` is written for users (issue 39): every command and option of the whole
tree says what it does, in the user's words -- no source paths, no paper variable names,
no paper cited by number alone -- a default is shown only when there is one, and the
top-level help lists the commands in panels in the order of the jobs."""

from __future__ import annotations

import re

import click
import pytest
import typer
from typer.testing import CliRunner

from linklab.cli.app import PANELS, app

PANEL_ORDER = ["Emulate a link", "Measure", "Understand", "Fix", "Scale out"]

# Code-speak: (pattern, what it is). A paper's table, equation or figure is fine when the
# paper is named next to it ("paper 000, Eq. 6", "Table II of paper 000").
FORBIDDEN = [
    (r"\.py\b", "a source file"),
    (r"\bseed 00\d", "a seed file's name for a paper"),
    (r"(?<!paper )\b00[0-4]\b", "a paper by its number alone"),
    (r"\b(?:IV|V|VI)-[A-F]\b", "a paper's section number"),
    (r"T_OS|\bomega\b|\bN_HC\b|\bN_IP\b|\bR_pub\b|\bR_DDS\b|\bB_DDS\b|T\*omega",
     "a paper's variable name"),
    (r"[\u0391-\u03a9\u03b1-\u03c9]", "a Greek letter"),
    (r"\blinklab\.(?:app|bench|cli|drive|emu|field|k8s|link|model|output|probes|report|"
     r"security|sft|tune)\b", "an internal module"),
    (r"\bdocs/", "a path in the repository"),
    (r"\[default: None\]", "a default that is not one"),
]
NEEDS_PAPER_BEFORE = [r"\bTable I+\b", r"\bEq\. \d", r"\bFig\. \d"]


def walk(command: click.Command, path: tuple[str, ...] = ()):
    """(path, command) for ``command`` and everything under it."""
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from walk(sub, (*path, name))


ROOT = typer.main.get_command(app)
COMMANDS = list(walk(ROOT))
IDS = [" ".join(path) or "linklab" for path, _ in COMMANDS]


def render(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def flat(shown: str) -> str:
    """Rendered help as one line of words (no panel borders, no line breaks)."""
    lines = (line.strip(" │╭╮╰╯─") for line in shown.splitlines())
    return re.sub(r"\s+", " ", " ".join(lines))


def texts(path: tuple[str, ...], command: click.Command) -> list[tuple[str, str]]:
    """(where, text) of the command's help and each of its parameters'."""
    name = " ".join(path) or "linklab"
    out = [(name, command.help or "")]
    for param in command.params:
        out.append((f"{name} {param.opts[0] if param.opts else param.name}",
                    getattr(param, "help", None) or ""))
    return out


def code_speak(text: str) -> list[str]:
    found = [f"{what}: {m.group(0)!r}" for pattern, what in FORBIDDEN
             for m in re.finditer(pattern, text)]
    for pattern in NEEDS_PAPER_BEFORE:
        for m in re.finditer(pattern, text):
            if "paper" not in text[max(0, m.start() - 100):m.end() + 15]:
                found.append(f"a paper's table, equation or figure without the paper: "
                             f"{m.group(0)!r}")
    return found


def test_the_tree_is_the_whole_cli():
    names = {path[0] for path, _ in COMMANDS if path}
    assert {"link", "bench", "report", "model", "model-check", "tune", "k8s", "field"} <= names
    assert len(COMMANDS) > 25


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_every_command_and_option_says_what_it_does(path, command):
    missing = [where for where, text in texts(path, command) if not text.strip()]
    assert not missing, f"no help: {missing}"
    problems = [f"{where}: {p}" for where, text in texts(path, command)
                for p in code_speak(text)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_rendered_help_shows_no_default_that_is_not_one(path, command):
    shown = render(path)
    assert "[default: None]" not in shown
    assert "[default: ]" not in shown
    problems = code_speak(flat(shown))
    assert not problems, "\n".join(problems)


def test_top_level_help_lists_the_jobs_in_order():
    shown = render(())
    panels = re.findall(r"╭─ (.+?) ─", shown)
    assert panels[0] == "Options"
    assert panels[1:] == PANEL_ORDER, panels
    assert [title for title, _ in PANELS] == PANEL_ORDER
    listed = re.findall(r"^│ ([a-z][a-z0-9-]+) ", shown, flags=re.MULTILINE)
    in_panels = [name for _, names in PANELS for name in names]
    assert listed == in_panels, "every command in its panel, in the panels' order"
    assert set(listed) == set(ROOT.commands), "no command left out of the panels"


def test_each_option_shows_a_real_default():
    shown = flat(render(("tune",)))
    assert "[default: 1500]" in shown and "[default: linklab-profiles]" in shown
    assert "Default: both." in shown  # an option without a value says what happens then
