"""docs/RESULTS.md, one page per study, for the docs site (an mkdocs hook).

docs/RESULTS.md stays one file in the repository: code, tests and studies cite it, and
every benchmark result goes there. The site cuts it at its ``## `` headings (outside
code blocks) into one page per study under ``results/``, with an index listing each
study and the first command it was made with. The pages are made at build time and never
written into docs/: mkdocs.yml names this file under ``hooks:`` and its ``nav`` has a
``Results: results/index.md`` entry, which the hook fills with the studies.

    python scripts/docs_pages.py OUT_DIR     # write the pages into OUT_DIR, to look at
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "docs" / "RESULTS.md"
FOLDER = "results"
INDEX = f"{FOLDER}/index.md"

_FENCE = re.compile(r"^\s*(```|~~~)")
_LINK = re.compile(r"\]\((?!https?:|mailto:|#|/)([^)\s]+)\)")
_COMMAND = re.compile(r"^\s*(?:\$\s+|sudo\s+)?((?:\.venv/bin/)?(?:linklab|python3?|bash)\s.*)$")


@dataclass(frozen=True)
class Study:
    slug: str
    title: str
    body: str          # the section without its heading, headings one level up
    command: str | None

    @property
    def path(self) -> str:
        return f"{FOLDER}/{self.slug}.md"

    def page(self) -> str:
        made_with = (f"The first command of this study: `{self.command}`; every number below "
                     f"comes from the command written next to it.\n\n" if self.command else
                     "Every number below comes from the command written next to it.\n\n")
        return (f"# {self.title}\n\n"
                f"*One study of docs/RESULTS.md, the file in the repository that holds them "
                f"all.* {made_with}"
                f"{self.body.strip()}\n")


def _slug(title: str, taken: set[str]) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", title.lower().replace("`", "")).strip("-")
    slug = words[:60].rstrip("-") or "study"
    base, n = slug, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    taken.add(slug)
    return slug


def _first_command(lines: list[str]) -> str | None:
    """The first command line of the section's code blocks (its ``linklab``, ``python``
    or ``bash`` line), continuation lines joined."""
    fence = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fence = not fence
            continue
        if fence and (match := _COMMAND.match(line)):
            command = match.group(1).rstrip()
            j = i
            while command.endswith("\\") and j + 1 < len(lines):
                j += 1
                command = command[:-1].rstrip() + " " + lines[j].strip()
            return re.sub(r"\s+", " ", command.split("  #", 1)[0]).strip()
    return None


def _rebase(line: str) -> str:
    """A relative link of RESULTS.md (docs/) as seen from docs/results/."""
    return _LINK.sub(lambda m: f"](../{m.group(1)})", line)


def split(text: str) -> tuple[str, list[Study]]:
    """(the introduction before the first ``## ``, the studies) of RESULTS.md's text."""
    intro: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fence = not fence
        if not fence and line.startswith("## "):
            sections.append((line[3:].strip(), []))
            continue
        if not fence and sections and re.match(r"^#{3,6} ", line):
            line = line[1:]   # ### -> ## under the page's own title
        line = _rebase(line) if not fence else line
        (sections[-1][1] if sections else intro).append(line)
    taken: set[str] = {"index"}
    studies = [Study(_slug(title, taken), title, "\n".join(body), _first_command(body))
               for title, body in sections]
    intro_text = "\n".join(line for line in intro if not line.startswith("# "))
    return intro_text.strip(), studies


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def index_page(intro: str, studies: list[Study]) -> str:
    rows = []
    for s in studies:
        command = f"`{_cell(s.command)}`" if s.command else "(in the text)"
        rows.append(f"| [{_cell(s.title)}]({s.slug}.md) | {command} |")
    return ("# Results\n\n" + intro + "\n\n"
            "One page per study, in the order of docs/RESULTS.md (the one file in the "
            "repository that holds them all, where every new benchmark result goes). Each "
            "page gives the commands that made its numbers; the first is listed here.\n\n"
            "| study | command |\n|---|---|\n" + "\n".join(rows) + "\n")


def pages(results: Path = RESULTS) -> dict[str, str]:
    """Every generated page: path under docs/ -> Markdown."""
    intro, studies = split(results.read_text())
    made = {INDEX: index_page(intro, studies)}
    made.update({s.path: s.page() for s in studies})
    return made


# ---- mkdocs hook -------------------------------------------------------------------

def _nav_with_results(nav: list, studies: list[Study]) -> list:
    section = [INDEX] + [{s.title.replace("`", ""): s.path} for s in studies]  # plain text
    out = []
    for entry in nav:
        if isinstance(entry, dict):
            (key, value), = entry.items()
            if value == INDEX:
                entry = {key: section}
            elif isinstance(value, list):
                entry = {key: _nav_with_results(value, studies)}
        out.append(entry)
    return out


def on_config(config, **_):
    _, studies = split(RESULTS.read_text())
    if config.get("nav"):
        config["nav"] = _nav_with_results(config["nav"], studies)
    return config


def on_files(files, config, **_):
    from mkdocs.structure.files import File

    for path, text in pages().items():
        files.append(File.generated(config, path, content=text))
    return files


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    for path, text in pages().items():
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    print(f"wrote {len(pages())} pages under {out / FOLDER}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
