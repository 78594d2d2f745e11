"""What makes two cells "the same cell": their settings, without the trial number.

Used by the plots (trials of one setting are drawn as one line) and by run comparison
(cells of two runs are matched by their settings, not by their ids: ids depend on which
settings were axes of the scenario). Column names are those of cells.parquet
(linklab.rundir).

A run made before a setting column existed (topology, subscribers, endpoints,
link_overrides ...) simply lacks it: comparison matches on the columns both runs have
(:func:`common_keys`). A throughput search's rate (``rate_asked`` "max") and a share's
("75%") are what was asked, not the rate found, so those rows are matched on
``rate_asked`` and not on ``rate_hz`` (a search's count and duration are its best
trial's, so they are left out too).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from linklab.rundir import num
from linklab.units import size_label

# Every setting of a cell except the trial (the matrix identity, linklab.bench.matrix.Cell).
SETTING_KEYS = ("link", "link_preset", "link_overrides", "middleware", "profile", "topology",
                "hosts", "topics", "subscribers", "endpoints", "history", "durability",
                "type", "rate_hz", "rate_asked", "qos", "payload_bytes", "count", "duration_s",
                "warmup_s", "outage_start_s", "outage_length_s", "grace_s",
                "cpu_load", "cpu_load_on", "cpu_quota", "cpu_quota_on", "broker_host")
# CPU contention as asked (linklab.bench.cpu): "none", "2/core", "1.5cores", "robot,edge"
CPU_KEYS = ("cpu_load", "cpu_load_on", "cpu_quota", "cpu_quota_on")
# Settings whose value is the outcome of a search, not a choice: left out of the key.
SEARCHED = {"max": ("rate_hz", "count", "duration_s"), "share": ("rate_hz",)}


def _norm(value: Any) -> Any:
    if isinstance(value, float):
        if math.isnan(value):
            return None
        return round(value, 9)
    return value


def _searched(row: dict[str, Any]) -> tuple[str, ...]:
    asked = str(row.get("rate_asked") or "")
    if asked == "max":
        return SEARCHED["max"]
    if asked.endswith("%"):
        return SEARCHED["share"]
    return ()


def common_keys(*runs: Iterable[dict[str, Any]]) -> tuple[str, ...]:
    """The setting columns every one of ``runs`` has (in any of its rows)."""
    keys = list(SETTING_KEYS)
    for rows in runs:
        present = set()
        for row in rows:
            present.update(row)
        keys = [k for k in keys if k in present]
    return tuple(keys)


def settings_key(row: dict[str, Any], keys: tuple[str, ...] = SETTING_KEYS) -> tuple:
    skip = _searched(row)
    return tuple((k, None if k in skip else _norm(row.get(k))) for k in keys)


def group_by_settings(rows: list[dict[str, Any]], keys: tuple[str, ...] | None = None
                      ) -> OrderedDict[tuple, list[dict[str, Any]]]:
    """Rows with equal settings (trials of one cell), in run order."""
    keys = common_keys(rows) if keys is None else keys
    groups: OrderedDict[tuple, list[dict[str, Any]]] = OrderedDict()
    for row in rows:
        groups.setdefault(settings_key(row, keys), []).append(row)
    return groups


def varying_keys(rows: list[dict[str, Any]], keys: tuple[str, ...] = SETTING_KEYS) -> list[str]:
    varying = [k for k in keys
               if len({None if k in _searched(r) else _norm(r.get(k)) for r in rows}) > 1]
    if "link" in varying:  # the label says it: preset and overrides would repeat it
        varying = [k for k in varying if k not in ("link_preset", "link_overrides")]
    if "endpoints" in varying and any(k in varying for k in ("payload_bytes", "rate_hz",
                                                             "qos", "type")):
        varying.remove("endpoints")  # a topic's line repeats its payload, rate, QoS
    return varying


def format_setting(key: str, value: Any) -> str:
    """A setting as a reader wants it: 256KiB, 30 Hz, duration 10 s ... Values that are
    not numbers where a number is usual (rate "max", "75%") are shown as they are."""
    if value is None and key in ("cpu_load_on", "cpu_quota_on"):
        return f"{key.replace('_', ' ')} endpoints"   # the default: the endpoints' hosts
    if key == "broker_host":  # where a broker/router ran (bench.broker_host; default edge)
        return f"broker on {value or 'edge'}"
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    number = num(value)
    if key == "payload_bytes" and number is not None:
        return size_label(int(number))
    if key == "rate_hz" and number is not None:
        return f"{number:g} Hz"
    if key == "rate_asked":
        return f"rate {value}" if number is None else f"{number:g} Hz"
    if key.endswith("_s") and number is not None:
        return f"{key[:-2].replace('_', ' ')} {number:g} s"
    if key == "count" and number is not None:
        return f"{int(number)} msgs"
    if key == "history":
        return f"history {value}"
    if key in ("subscribers", "topics", "hosts") and number is not None:
        return f"{int(number)} {key}"
    if key == "link_overrides":
        return f"over preset: {value}"
    if key in CPU_KEYS:  # cpu load 2/core, cpu quota on robot
        return f"{key.replace('_', ' ')} {value}"
    return str(value)


def label(row: dict[str, Any], keys: list[str]) -> str:
    """A short name of a cell from the settings that differ among its neighbours."""
    if not keys:
        return str(row.get("cell_id"))
    return ", ".join(format_setting(k, row.get(k)) for k in keys)
