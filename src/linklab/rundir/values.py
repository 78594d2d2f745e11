"""A number as a reader of a run takes it."""

from __future__ import annotations

import math
from typing import Any


def num(value: Any) -> float | None:
    """A finite float, or None for missing / NaN / not a number (a row's NaN is "not
    measured")."""
    if value is None or isinstance(value, bool):
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None
