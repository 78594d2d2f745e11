"""Named link conditions from the papers (``presets.yaml``, shipped with the package)."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

from linklab.errors import UsageError


@cache
def load_presets() -> dict[str, dict[str, Any]]:
    # presets.yaml, then any presets-*.yaml beside it (e.g. presets-emu.yaml)
    folder = resources.files("linklab.link")
    names = ["presets.yaml"] + sorted(p.name for p in folder.iterdir()
                                      if p.name.startswith("presets-") and p.name.endswith(".yaml"))
    data: dict[str, Any] = {}
    for file_name in names:
        data.update(yaml.safe_load(folder.joinpath(file_name).read_text()) or {})
    return {str(name): dict(fields or {}) for name, fields in data.items()}


def get_preset(name: str) -> dict[str, Any]:
    presets = load_presets()
    if name not in presets:
        raise UsageError(f"unknown preset {name!r}; known presets: {', '.join(presets)}",
                         argument="PRESET")
    return presets[name]
