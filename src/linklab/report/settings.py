"""What makes two cells "the same cell": their settings, without the trial number.

Used by the plots (trials of one setting are drawn as one line) and by run comparison
(cells of two runs are matched by their settings, not by their ids: ids depend on which
settings were axes of the scenario). Column names are those of cells.parquet
(linklab.bench.store).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

from linklab.bench.matrix import size_label

# Every setting of a cell except the trial (the matrix identity, linklab.bench.matrix.Cell).
SETTING_KEYS = ("link", "middleware", "profile", "history", "type", "rate_hz", "qos",
                "payload_bytes", "count", "duration_s", "warmup_s", "outage_start_s",
                "outage_length_s", "grace_s")


def num(value: Any) -> float | None:
    """A finite float, or None for missing / NaN / not a number."""
    if value is None or isinstance(value, bool):
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _norm(value: Any) -> Any:
    if isinstance(value, float):
        if math.isnan(value):
            return None
        return round(value, 9)
    return value


def settings_key(row: dict[str, Any]) -> tuple:
    return tuple((k, _norm(row.get(k))) for k in SETTING_KEYS)


def group_by_settings(rows: list[dict[str, Any]]) -> OrderedDict[tuple, list[dict[str, Any]]]:
    """Rows with equal settings (trials of one cell), in run order."""
    groups: OrderedDict[tuple, list[dict[str, Any]]] = OrderedDict()
    for row in rows:
        groups.setdefault(settings_key(row), []).append(row)
    return groups


def varying_keys(rows: list[dict[str, Any]], keys: tuple[str, ...] = SETTING_KEYS) -> list[str]:
    return [k for k in keys if len({_norm(r.get(k)) for r in rows}) > 1]


def format_setting(key: str, value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if key == "payload_bytes":
        return size_label(int(value))
    if key == "rate_hz":
        return f"{float(value):g} Hz"
    if key.endswith("_s"):
        return f"{key[:-2].replace('_', ' ')} {float(value):g} s"
    if key == "count":
        return f"{int(value)} msgs"
    if key == "history":
        return f"history {value}"
    return str(value)


def label(row: dict[str, Any], keys: list[str]) -> str:
    """A short name of a cell from the settings that differ among its neighbours."""
    if not keys:
        return str(row.get("cell_id"))
    return ", ".join(format_setting(k, row.get(k)) for k in keys)
