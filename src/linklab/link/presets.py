"""Link presets: named link conditions, shipped or written by the user.

Shipped: ``presets.yaml`` (the papers' conditions) and every ``presets-*.yaml`` beside
it (e.g. ``presets-emu.yaml``), each entry naming its source. The user's own: any file
of the same shape (``linklab link up PRESET --presets FILE``, ``linklab link presets
--presets FILE``; the format is in ``preset_file.py``). Both are read by one loader,
so a broken shipped preset is the same ``FILE:LINE: ...`` error as a broken user one.
A user preset may not take a shipped preset's name (one name, one meaning).

API: ``load_preset_file(path)``, ``resolve_preset(name, user_files)``,
``catalogue(user_files)``; ``load_presets()`` and ``get_preset(name)`` for the shipped
set.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from linklab.errors import UsageError
from linklab.link.preset_file import Preset, read_preset_file


def shipped_files() -> list[Path]:
    """presets.yaml, then any presets-*.yaml beside it, sorted."""
    folder = Path(str(resources.files("linklab.link")))
    extra = sorted(p for p in folder.glob("presets-*.yaml") if p.is_file())
    return [folder / "presets.yaml", *extra]


@cache
def _shipped() -> dict[str, Preset]:
    out: dict[str, Preset] = {}
    for path in shipped_files():
        for name, preset in read_preset_file(path).items():
            if name in out:
                raise UsageError(f"preset {name}: also defined at {out[name].file}:"
                                 f"{out[name].line}; each shipped preset has one name",
                                 argument=f"{preset.file}:{preset.line}")
            out[name] = preset
    return out


def _user(files: Sequence[Path | str]) -> dict[str, Preset]:
    """The presets of the user's files, in order; no shipped name, no name twice."""
    shipped = _shipped()
    out: dict[str, Preset] = {}
    for path in files:
        for name, preset in read_preset_file(path).items():
            where = f"{preset.file}:{preset.line}"
            if name in shipped:
                raise UsageError(
                    f"the name of a shipped preset ({shipped[name].file}:"
                    f"{shipped[name].line}); give yours another name, e.g. {name}-mine",
                    argument=f"{where}: preset {name}")
            if name in out:
                raise UsageError(f"already defined at {out[name].file}:{out[name].line}; "
                                 "give each preset its own name",
                                 argument=f"{where}: preset {name}")
            out[name] = preset
    return out


def load_preset_file(path: Path | str) -> dict[str, dict[str, Any]]:
    """The presets of one user file: name -> fields, every preset validated.

    Fields are as written, except trace paths, which are made absolute (relative paths
    are relative to the file). Any problem -- the file, its YAML, a name (also one that
    is a shipped preset's), a field or a value -- is one ``UsageError`` line
    ``FILE:LINE: preset NAME: FIELD: what is wrong; what is accepted``.
    """
    return {name: copy.deepcopy(p.fields) for name, p in _user([path]).items()}


def resolve_preset(name: str, user_files: Sequence[Path | str] = ()) -> dict[str, Any]:
    """The fields of preset ``name``: from the user's files (each loaded and validated
    whole), else the shipped ones. Unknown: a UsageError (argument ``PRESET``) listing
    the known names. The result can go to ``up(name, preset_fields=...)``."""
    user = _user(user_files)
    found = user.get(name) or _shipped().get(name)
    if found is None:
        known = f"known presets: {', '.join(_shipped())}"
        if user:
            known += f"; from {', '.join(str(f) for f in user_files)}: {', '.join(user)}"
        raise UsageError(f"unknown preset {name!r}; {known}", argument="PRESET")
    return copy.deepcopy(found.fields)


def catalogue(user_files: Sequence[Path | str] = ()) -> list[dict[str, Any]]:
    """Every preset (shipped, then the user's): name, description, source, fields (the
    link settings), file, line, shipped."""
    user = _user(user_files)
    out = []
    for shipped, presets in ((True, _shipped()), (False, user)):
        for preset in presets.values():
            fields = copy.deepcopy(preset.fields)
            out.append({"name": preset.name,
                        "description": fields.pop("description", ""),
                        "source": fields.pop("source", ""),
                        "fields": fields, "file": preset.file, "line": preset.line,
                        "shipped": shipped})
    return out


def check_not_shipped(name: str | None, fields: Mapping[str, Any] | None) -> None:
    """Refuse other fields under a shipped preset's name (one name, one meaning)."""
    shipped = _shipped().get(name or "")
    if shipped is not None and fields is not None and dict(fields) != shipped.fields:
        raise UsageError(f"{name!r} is a shipped preset ({shipped.file}:{shipped.line}) and "
                         "these are other fields; give your preset another name, or change "
                         "the shipped one with overrides (--loss, --rate, ...)",
                         argument="PRESET")


def load_presets() -> dict[str, dict[str, Any]]:
    """The shipped presets: name -> fields."""
    return {name: copy.deepcopy(p.fields) for name, p in _shipped().items()}


def get_preset(name: str) -> dict[str, Any]:
    """The fields of a shipped preset (unknown: UsageError naming ``PRESET``)."""
    return resolve_preset(name)
