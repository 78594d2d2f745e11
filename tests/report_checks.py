"""Checks shared by the report tests: run linklab, read a report page's cells."""

from __future__ import annotations

import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def linklab(*args, columns: int = 220, timeout: float = 120, cwd: Path | None = None):
    env = dict(os.environ, COLUMNS=str(columns))
    return subprocess.run([sys.executable, "-m", "linklab.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


class Cells(HTMLParser):
    """Every <td>/<th> of a page with its attributes and text; <img> sources; references."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[dict] = []
        self.images: list[str] = []
        self.refs: list[str] = []
        self._open: dict | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("td", "th"):
            self._open = dict(attrs, _tag=tag, _text="")
            self.cells.append(self._open)
        if tag == "img":
            self.images.append(attrs.get("src", ""))
        for key in ("src", "href"):
            if key in attrs and tag != "a":
                self.refs.append(attrs[key])

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self._open = None

    def handle_data(self, data):
        if self._open is not None:
            self._open["_text"] += data


def parse(page: str) -> Cells:
    parser = Cells()
    parser.feed(page)
    return parser


def check_table_ii(page: str, rows: list[dict]) -> tuple[int, int]:
    """Every Table II value of the page against cells.parquet's rows: the mean over the
    column's trials when all are ok, "—" for a cell that did not complete; a cell failed
    only on latency keeps its reception rate. Returns (numbers, dashes) checked."""
    by_id = {r["cell_id"]: r for r in rows}
    numbers = dashes = 0
    for cell in parse(page).cells:
        if "ours" not in cell.get("class", "").split():
            continue
        trials = [by_id[i] for i in cell["data-cells"].split()]
        metric = cell["data-metric"]
        reasons = [r["failure_reason"] or "" for r in trials if r["status"] != "ok"]
        latency_only = reasons and all(r.startswith("latency:") for r in reasons)
        if not reasons or (latency_only and metric == "reception_rate_hz"):
            values = [r[metric] for r in trials if r[metric] == r[metric]]
            expected = sum(values) / len(values)
            assert float(cell["_text"]) == pytest.approx(expected, abs=0.005), cell
            numbers += 1
        else:
            assert cell["_text"] == "—", cell
            dashes += 1
    return numbers, dashes
