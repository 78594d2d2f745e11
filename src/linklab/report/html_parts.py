"""Small pieces of the HTML page: escaping, numbers, run.json values as HTML, files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from linklab.report.view import e, fmt

__all__ = ["LOG_TAIL_LINES", "e", "fmt", "read_json", "tail", "value_html"]
LOG_TAIL_LINES = 40


def tail(path: Path, lines: int = LOG_TAIL_LINES) -> str | None:
    if not path.is_file():
        return None
    text = path.read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:])


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def value_html(value: Any) -> str:
    """A run.json value as HTML: dicts as nested lists, lists of dicts as tables."""
    if isinstance(value, dict):
        if not value:
            return "<span class=dim>(none)</span>"
        items = "".join(f"<dt>{e(k)}</dt><dd>{value_html(v)}</dd>" for k, v in value.items())
        return f"<dl class=kv>{items}</dl>"
    if isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            columns: list[str] = []
            for v in value:
                columns.extend(k for k in v if k not in columns)
            head = "".join(f"<th>{e(c)}</th>" for c in columns)
            body = "".join("<tr>" + "".join(f"<td>{value_html(v.get(c, ''))}</td>"
                                            for c in columns) + "</tr>" for v in value)
            return f"<table class=plain><tr>{head}</tr>{body}</table>"
        return e(", ".join(str(v) for v in value)) if value else "<span class=dim>[]</span>"
    if value is None:
        return "<span class=dim>—</span>"
    return e(value)
