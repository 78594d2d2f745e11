"""Rows of runs made with run format 1, read with today's definitions (docs/metrics.md).

Format 1 (linklab up to commit ee6aa2c, 2026-11-27) stored a reception rate over the
reception span alone (received / (last - first arrival): a burst could raise it), a
"message loss" that counted only the gaps between the first and the last sample received
(paper 002's counter rule), and no stall. Its rows keep what was measured, so the first two
follow exactly from their own columns:

- reception span = received / reception_rate_hz (received >= 2), publishing span =
  published / publish_rate_hz; today's rate is received / max(the two), goodput scales
  by the same window;
- message loss = 1 - delivery_ratio; the old figure moves to ``gap_loss_rate`` (its name
  today; format 1 also counted a failed write's seq as a gap);
- the publish rate was published / publishing span; today's is (published - 1) / span;
- the stall was not measured: NaN. The verdicts stay format 1's (a RELIABLE KEEP_LAST
  cell was "ok" whenever samples arrived); ``metrics_version`` 1 says so, and reports
  name such cells.

A row written with today's definitions carries ``metrics_version`` = METRICS_VERSION
(rundir/schema.py).
"""

from __future__ import annotations

import math
from typing import Any

STALL_COLUMNS = ("stall_max_s", "stall_at_s", "stall_link_up_s", "stall_link_up_at_s")


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return None if math.isnan(value) else float(value)


def is_format1(row: dict[str, Any]) -> bool:
    return row.get("metrics_version") in (None, 1)


def _window_s(row: dict[str, Any]) -> tuple[float, float] | None:
    """(reception span, window) of a one-stream row, from its format-1 columns."""
    received, published = _num(row.get("received")), _num(row.get("published"))
    rate, pub_rate = _num(row.get("reception_rate_hz")), _num(row.get("publish_rate_hz"))
    if received is None:
        return None
    reception = received / rate if received >= 2 and rate else 0.0
    publishing = published / pub_rate if published and pub_rate else 0.0
    window = max(reception, publishing)
    return (reception, window) if window > 0 else None


def upgrade_stream(row: dict[str, Any]) -> dict[str, Any]:
    """One stream row (or a one-stream cell row) of format 1, in today's terms."""
    if row.get("metrics_version") is not None:
        return row
    out = dict(row, metrics_version=1)
    out["gap_loss_rate"] = row.get("message_loss_rate")
    delivered = _num(row.get("delivery_ratio"))
    out["message_loss_rate"] = math.nan if delivered is None else max(0.0, 1.0 - delivered)
    spans = _window_s(row)
    received = _num(row.get("received"))
    if spans is not None and received is not None:
        reception, window = spans
        out["reception_rate_hz"] = received / window
        goodput = _num(row.get("goodput_bit_s"))
        out["goodput_bit_s"] = (goodput * reception / window
                                if goodput is not None and reception > 0 else math.nan)
    published, pub_rate = _num(row.get("published")), _num(row.get("publish_rate_hz"))
    if published and published >= 2 and pub_rate is not None:
        out["publish_rate_hz"] = pub_rate * (published - 1) / published
    for key in STALL_COLUMNS:
        out[key] = math.nan
    return out


def upgrade_cell(row: dict[str, Any], streams: list[dict[str, Any]]) -> dict[str, Any]:
    """A cell row of format 1 in today's terms; ``streams``: its (upgraded) stream rows.
    A cell of several streams takes the mean of theirs, as streams.aggregate does."""
    if row.get("metrics_version") is not None:
        return row
    if len(streams) <= 1:
        out = upgrade_stream(row)
        if out.get("expected") not in (None, out.get("published")):
            delivered = _num(out.get("delivery_ratio"))
            out["message_loss_rate"] = (math.nan if delivered is None
                                        else max(0.0, 1.0 - delivered))
        return out
    out = dict(row, metrics_version=1, gap_loss_rate=row.get("message_loss_rate"))
    delivered = _num(row.get("delivery_ratio"))
    out["message_loss_rate"] = math.nan if delivered is None else max(0.0, 1.0 - delivered)
    rates = [v for v in (_num(s.get("reception_rate_hz")) for s in streams) if v is not None]
    out["reception_rate_hz"] = sum(rates) / len(rates) if rates else math.nan
    goodputs = [v for v in (_num(s.get("goodput_bit_s")) for s in streams) if v is not None]
    out["goodput_bit_s"] = sum(goodputs) if goodputs else math.nan
    for key in STALL_COLUMNS:
        out[key] = math.nan
    return out
