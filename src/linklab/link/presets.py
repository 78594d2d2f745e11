"""Named link conditions from the papers (``presets.yaml``, shipped with the package)."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

from linklab.errors import UsageError


@cache
def load_presets() -> dict[str, dict[str, Any]]:
    text = resources.files("linklab.link").joinpath("presets.yaml").read_text()
    data = yaml.safe_load(text) or {}
    return {str(name): dict(fields or {}) for name, fields in data.items()}


def get_preset(name: str) -> dict[str, Any]:
    presets = load_presets()
    if name not in presets:
        raise UsageError(f"unknown preset {name!r}; known presets: {', '.join(presets)}",
                         argument="PRESET")
    return presets[name]
