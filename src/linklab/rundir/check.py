"""One cell row as read back, checked against the columns' kinds (rundir/columns.py)."""

from __future__ import annotations

from typing import Any

from linklab.errors import UsageError
from linklab.rundir.columns import NUMBER_COLUMNS, NUMBER_SUFFIXES, TEXT_COLUMNS
from linklab.rundir.schema import short


def check_row(row: Any, where: str) -> dict[str, Any]:
    """One cell row as read back, checked (see ``files.read_rows``); a missing number
    (null) in a float column becomes NaN, as cells.parquet has it."""
    cell_id = _check_identity(row, where)
    out = {key: _checked_value(key, value, cell_id, where) for key, value in row.items()}
    if out.get("payload_bytes") != out.get("payload_bytes") or \
            abs(out["payload_bytes"]) == float("inf"):
        raise UsageError(f"{where}: cell {short(cell_id)}: payload_bytes is not finite",
                         argument="RUN_DIR")
    return out


def _check_identity(row: Any, where: str) -> str:
    """The row's cell id, once the columns every reader relies on are there."""
    if not isinstance(row, dict):
        raise UsageError(f"{where}: a cell row is a JSON {type(row).__name__}, not an "
                         "object", argument="RUN_DIR")
    cell_id = row.get("cell_id")
    if not isinstance(cell_id, str) or not cell_id:
        raise UsageError(f"{where}: no cell_id (text)", argument="RUN_DIR")
    index = row.get("index")
    if type(index) is not int or index < 0:
        raise UsageError(f"{where}: cell {short(cell_id)} has index {short(index)}, not a "
                         "whole number >= 0", argument="RUN_DIR")
    if not is_number(row.get("payload_bytes")):
        raise UsageError(f"{where}: cell {short(cell_id)} has no payload_bytes (a number)",
                         argument="RUN_DIR")
    for key in ("link", "profile"):  # what a report groups cells by
        if not isinstance(row.get(key), str):
            raise UsageError(f"{where}: cell {short(cell_id)} has no {key} (text)",
                             argument="RUN_DIR")
    return cell_id


def _checked_value(key: str, value: Any, cell_id: str, where: str) -> Any:
    if key == "rate_bins_hz":
        if value is not None and (not isinstance(value, list)
                                  or not all(is_number(v) for v in value)):
            raise UsageError(f"{where}: cell {short(cell_id)}: rate_bins_hz is not a "
                             "list of numbers", argument="RUN_DIR")
    elif key in NUMBER_COLUMNS or key.endswith(NUMBER_SUFFIXES):
        if value is None:
            return float("nan") if key not in NUMBER_COLUMNS else None
        if not is_number(value):
            raise UsageError(f"{where}: cell {short(cell_id)}: {key} is "
                             f"{short(value)}, not a number", argument="RUN_DIR")
    elif key in TEXT_COLUMNS and value is not None and not isinstance(value, str):
        raise UsageError(f"{where}: cell {short(cell_id)}: {key} is {short(value)}, "
                         "not text", argument="RUN_DIR")
    return value


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
