"""Every trial of a bench run as one Markdown row, and per cell how many trials met a
target: docs/RESULTS.md's per-trial tables (issue 15's ten-trial check).

    python3 scripts/trial_table.py RUN_DIR [--min-hz 29]

A trial meets the target when its cell completed ("ok"), every published sample arrived
(received >= published) and the reception rate is at least --min-hz.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from linklab.bench.store import RunStore
from linklab.errors import UsageError
from linklab.report.view import count, fmt, num
from linklab.units import format_size

CELL_KEYS = ("middleware", "profile", "link_preset", "payload_bytes")


def _payload(size: Any) -> str:
    return "—" if num(size) is None else format_size(size)


def meets(row: Mapping[str, Any], min_hz: float) -> tuple[bool, bool]:
    """(rate target met, every sample arrived) for one trial."""
    ok = row.get("status") == "ok"
    hz = num(row.get("reception_rate_hz"))
    rate = ok and hz is not None and hz >= min_hz
    complete = ok and (row.get("received") or 0) >= (row.get("published") or 1)
    return bool(rate), bool(complete)


def trial_rows(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    lines = ["| middleware | payload | trial | received / published | Hz "
             "| mean latency ms (p99) | wire / payload (model) | queue drops "
             "| sub rcvbuf errors | history | outcome |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        outcome = "ok" if r.get("status") == "ok" else \
            f"{r.get('status')}: {r.get('failure_reason') or ''}".strip()
        lines.append(
            f"| {r.get('middleware')} | {_payload(r.get('payload_bytes'))} | {r.get('trial')} "
            f"| {r.get('received')} / {r.get('published')} "
            f"| {fmt(r.get('reception_rate_hz'))} "
            f"| {fmt(r.get('latency_mean_ms'), 1)} ({fmt(r.get('latency_p99_ms'), 1)}) "
            f"| {fmt(r.get('wire_amplification'))} ({fmt(r.get('model_amplification'))}) "
            f"| {count(r.get('rate_dropped_packets'))} "
            f"| {count(r.get('sub_udp_rcvbuf_errors'))} | {r.get('history_applied') or '—'} "
            f"| {outcome} |")
    return lines


def tally(rows: Iterable[Mapping[str, Any]], min_hz: float) -> list[str]:
    """Per cell (middleware, profile, link, payload): trials at >= min_hz, trials complete."""
    cells: dict[tuple, list[tuple[bool, bool]]] = defaultdict(list)
    for r in rows:
        cells[tuple(r.get(k) for k in CELL_KEYS)].append(meets(r, min_hz))
    lines = [f"| middleware | profile | link | payload | trials >= {min_hz:g} Hz "
             "| trials with every sample | both |", "|---|---|---|---|---|---|---|"]
    for (mw, profile, link, size), marks in cells.items():
        n = len(marks)
        rate = sum(a for a, _ in marks)
        complete = sum(b for _, b in marks)
        both = sum(a and b for a, b in marks)
        lines.append(f"| {mw} | {profile} | {link} | {_payload(size)} | {rate}/{n} "
                     f"| {complete}/{n} | {both}/{n} |")
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--min-hz", type=float, default=29.0)
    args = parser.parse_args(argv)
    try:
        stored = RunStore.open(args.run_dir).rows
    except UsageError as error:
        print(f"run_dir: {error}", file=sys.stderr)
        return 2
    rows = sorted(stored,
                  key=lambda r: (tuple(str(r.get(k)) for k in CELL_KEYS[:3]),
                                 r.get("payload_bytes") or 0, r.get("trial") or 0))
    print("\n".join(trial_rows(rows)))
    print()
    print("\n".join(tally(rows, args.min_hz)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
