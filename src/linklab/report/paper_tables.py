"""The papers' tables, kept as data beside this module (paper_000.yaml: seed 000's Table
II; paper_004.yaml: seed 004's Tables 2 and 3), as printed; read as tuples (null: the
paper's "—")."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


@cache
def paper_tables(name: str) -> dict[str, Any]:
    """The tables of ``name``.yaml (paper_000, paper_004), every list a tuple."""
    return _tuples(yaml.safe_load((HERE / f"{name}.yaml").read_text(encoding="utf-8")))
