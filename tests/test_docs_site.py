"""The docs site: it builds strictly, its CLI page is the command tree's, RESULTS.md is
split into one page per study without losing a line, the built home page renders in a
browser, and README stays a one-page start that links into the site.

Needs the venv (mkdocs-material, dev extras) and Chromium (scripts/setup.sh installs
both); no root, no native build. The screenshot is kept in test-artifacts/docs-site.png.
"""

from __future__ import annotations

import enum
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, load_script

CHROMIUM = "/usr/bin/chromium"
REGENERATE = "make cli-reference  (or: .venv/bin/python scripts/cli_reference.py)"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("docs-site") / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"),
         "-d", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-4000:]}"
    return out


def test_the_cli_reference_is_the_command_tree_of_now():
    committed = (REPO / "docs" / "reference" / "cli.md").read_text()
    generated = load_script("cli_reference").render()
    assert committed == generated, (
        f"docs/reference/cli.md differs from the linklab command tree: run {REGENERATE} "
        "and commit the result")


def test_the_cli_reference_has_every_command_and_option():
    import click
    import typer

    from linklab.cli.app import app

    page = (REPO / "docs" / "reference" / "cli.md").read_text()
    root = typer.main.get_command(app)

    def walk(command: click.Command, path: str) -> None:
        assert f"## `{path}`" in page, path
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert f"`{param.opts[0]}`" in page, f"{path} {param.opts[0]}"
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                if not sub.hidden:
                    walk(sub, f"{path} {name}")

    walk(root, "linklab")


def _headings_outside_code(text: str) -> list[str]:
    found, fence = [], False
    for line in text.splitlines():
        if re.match(r"^\s*(```|~~~)", line):
            fence = not fence
        elif not fence and line.startswith("## "):
            found.append(line[3:].strip())
    return found


def test_results_are_one_page_per_study_and_lose_no_line():
    pages = load_script("docs_pages")
    text = (REPO / "docs" / "RESULTS.md").read_text()
    intro, studies = pages.split(text)
    assert [s.title for s in studies] == _headings_outside_code(text)
    assert len({s.slug for s in studies}) == len(studies)
    made = pages.pages()
    index = made["results/index.md"]
    for study in studies:
        assert f"]({study.slug}.md)" in index
        assert study.path in made
    # every line of RESULTS.md is on some page (headings one level up, links rebased)
    body = "\n".join([intro] + [made[s.path] for s in studies])
    for line in text.splitlines():
        if not line.strip() or line.startswith("# Measured results") or line.startswith("## "):
            continue
        assert (line in body or line.lstrip("#").strip() in body
                or pages._rebase(line) in body), line


def test_a_heading_in_a_code_block_does_not_cut_a_study():
    pages = load_script("docs_pages")
    intro, studies = pages.split(
        "# R\n\nintro\n\n## One\n\n```sh\n## not a study\nlinklab bench s.yaml  # why\n```\n"
        "### Part\n\n[m](metrics.md)\n\n## Two\n\ntext\n")
    assert intro == "intro"
    assert [s.title for s in studies] == ["One", "Two"]
    assert "## not a study" in studies[0].body
    assert "\n## Part" in studies[0].body            # one level up under the page title
    assert "[m](../metrics.md)" in studies[0].body   # a link of docs/ from docs/results/
    assert studies[0].command == "linklab bench s.yaml"
    assert studies[1].command is None


@pytest.mark.slow   # mkdocs builds the whole site (~3 s)
def test_the_site_builds_strictly_with_every_section(site):
    for page in ("index.html", "getting-started/index.html", "concepts/index.html",
                 "architecture/index.html", "results/index.html", "reference/cli/index.html",
                 "reference/probe-protocol/index.html", "reference/exit-codes/index.html",
                 "run-directory/index.html", "metrics/index.html"):
        assert (site / page).is_file(), page
    for guide in ("emulate-a-link", "run-a-benchmark", "read-a-report", "tune-a-profile",
                  "field-runs", "kubernetes", "sft", "drive"):
        assert (site / "guides" / guide / "index.html").is_file(), guide
    studies = _headings_outside_code((REPO / "docs" / "RESULTS.md").read_text())
    built = [p for p in (site / "results").iterdir() if p.is_dir()]
    assert len(built) == len(studies)


@pytest.mark.native   # chromium: an apt package of setup.sh
def test_the_home_page_renders_in_chromium(site, artifacts_dir):
    from PIL import Image

    shot = artifacts_dir / "docs-site.png"
    shot.unlink(missing_ok=True)
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", f"--screenshot={shot}", "--window-size=1280,900",
         (site / "index.html").as_uri()],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    assert shot.stat().st_size > 20_000, "a screenshot this small is an empty page"
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, 900)
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50, "the page rendered blank"
    white = sum(n for n, c in colours if c == (255, 255, 255))
    assert white < 0.95 * 1280 * 900, "the page rendered (almost) all white"


def _relative_links(text: str) -> list[str]:
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", text)
            if not re.match(r"^(https?:|mailto:|#)", t)]


def test_readme_is_one_page_that_links_into_the_docs():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    links = _relative_links(text)
    assert any(link.startswith("docs/") for link in links)
    for link in links:
        assert (REPO / link.split("#", 1)[0]).exists(), f"README links to a missing {link}"


def test_no_page_cites_a_missing_design_document():
    for path in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        assert "DESIGN.md" not in path.read_text(), path


class Colour(enum.Enum):
    red = "red"


def test_the_cli_reference_shows_groups_defaults_and_arguments():
    import typer

    app = typer.Typer()

    @app.command(rich_help_panel="Measure")
    def bench(scenario: str = typer.Argument(..., help="The scenario | file."),
              repeat: int = typer.Option(1, help="Repeats."),
              out: str = typer.Option(None, help="Where."),
              colour: Colour = typer.Option(Colour.red, help="A colour."),
              quick: bool = typer.Option(False, "--quick", help="A *smaller* matrix."),
              tag: list[str] = typer.Option([], "--tag", help="Tags.")) -> None:
        """Run a scenario.

        Every cell of its matrix."""

    @app.command(rich_help_panel="Understand")
    def model(json_output: bool = typer.Option(True, "--json/--text")) -> None:
        """The model."""

    page = load_script("cli_reference").render(app)
    assert "**Measure**" in page and "**Understand**" in page
    assert "Run a scenario.\n\nEvery cell of its matrix." in page
    assert "| `SCENARIO` (required) |  | The scenario \\| file. |" in page
    assert "| `--repeat` INTEGER | `1` | Repeats. |" in page
    assert "| `--out` TEXT |  | Where. |" in page          # no default shown for None
    assert "| `--colour` {red} | `red` | A colour. |" in page
    assert "| `--quick` |  | A \\*smaller\\* matrix. |" in page
    assert "`--tag` TEXT (repeatable) |  |" in page
    assert "| `--json`, `--text` | `--json` |" in page
