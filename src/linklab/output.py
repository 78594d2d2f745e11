"""Shared output helpers for CLI commands: rich tables on a terminal, JSON with --json."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from rich.console import Console

console = Console()
err_console = Console(stderr=True)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "to_dict"):
        return _jsonable(value.to_dict())
    return value


def print_json(data: Any) -> None:
    """Write one JSON document to stdout (machine-readable; nothing else on stdout)."""
    sys.stdout.write(json.dumps(_jsonable(data), indent=2, sort_keys=False) + "\n")


def err_line(text: str) -> None:
    """One line on stderr as it is: never wrapped (a pipe or file is 80 columns to rich),
    no markup, emoji or highlighting -- for lines a program reads one by one (gate misses)."""
    err_console.print(text, markup=False, highlight=False, emoji=False, soft_wrap=True)
