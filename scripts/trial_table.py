"""Every trial of a bench run as one Markdown row, and per cell how many trials met a
target: docs/RESULTS.md's per-trial tables (issue 15's ten-trial check).

    python3 scripts/trial_table.py RUN_DIR [--min-hz 29]

A run whose cells differ in profile names it in each row; a run with CPU contention
(cpu_load, issue 38) adds the load, the longest stall and the writer's CPU seconds.

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

from linklab.errors import UsageError
from linklab.report.view import count, fmt, num
from linklab.rundir import RunStore
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


def busy(rows: Iterable[Mapping[str, Any]]) -> bool:
    """Whether any cell ran beside CPU-bound competitors."""
    return any(r.get("cpu_load") not in (None, "none") for r in rows)


def profiles_differ(rows: Iterable[Mapping[str, Any]]) -> bool:
    return len({r.get("profile") for r in rows}) > 1


def _profile(name: Any) -> str:
    return Path(str(name)).name


def trial_rows(rows: list[Mapping[str, Any]]) -> list[str]:
    loaded, named = busy(rows), profiles_differ(rows)
    head = ("| " + ("cpu_load | " if loaded else "") + ("profile | " if named else "")
            + "middleware | payload | trial | received / published | Hz "
            "| mean latency ms (p99) | wire / payload (model) | queue drops "
            "| sub rcvbuf errors | history | " + ("longest stall s | writer CPU s | "
                                                  if loaded else "") + "outcome |")
    lines = [head, "|" + "---|" * (11 + 2 * loaded + named)]
    for r in rows:
        outcome = "ok" if r.get("status") == "ok" else \
            f"{r.get('status')}: {r.get('failure_reason') or ''}".strip()
        lines.append(
            "| " + (f"{r.get('cpu_load')} | " if loaded else "")
            + (f"{_profile(r.get('profile'))} | " if named else "")
            + f"{r.get('middleware')} | {_payload(r.get('payload_bytes'))} | {r.get('trial')} "
            f"| {r.get('received')} / {r.get('published')} "
            f"| {fmt(r.get('reception_rate_hz'))} "
            f"| {fmt(r.get('latency_mean_ms'), 1)} ({fmt(r.get('latency_p99_ms'), 1)}) "
            f"| {fmt(r.get('wire_amplification'))} ({fmt(r.get('model_amplification'))}) "
            f"| {count(r.get('rate_dropped_packets'))} "
            f"| {count(r.get('sub_udp_rcvbuf_errors'))} | {r.get('history_applied') or '—'} "
            + (f"| {fmt(r.get('stall_max_s'))} | {fmt(r.get('pub_cpu_s'))} " if loaded else "")
            + f"| {outcome} |")
    return lines


def tally(rows: list[Mapping[str, Any]], min_hz: float) -> list[str]:
    """Per cell (middleware, profile, link, payload, and the CPU load of a busy run):
    trials at >= min_hz, trials complete."""
    loaded = busy(rows)
    cells: dict[tuple, list[tuple[bool, bool]]] = defaultdict(list)
    for r in rows:
        key = tuple(r.get(k) for k in CELL_KEYS) + ((r.get("cpu_load"),) if loaded else ())
        cells[key].append(meets(r, min_hz))
    lines = ["| " + ("cpu_load | " if loaded else "") + "middleware | profile | link | payload "
             f"| trials >= {min_hz:g} Hz | trials with every sample | both |",
             "|" + "---|" * (7 + loaded)]
    for key, marks in cells.items():
        mw, profile, link, size = key[:4]
        n = len(marks)
        rate = sum(a for a, _ in marks)
        complete = sum(b for _, b in marks)
        both = sum(a and b for a, b in marks)
        lines.append("| " + (f"{key[4]} | " if loaded else "")
                     + f"{mw} | {_profile(profile)} | {link} | {_payload(size)} | {rate}/{n} "
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
                  key=lambda r: (str(r.get("cpu_load")),
                                 tuple(str(r.get(k)) for k in CELL_KEYS[:3]),
                                 r.get("payload_bytes") or 0, r.get("trial") or 0))
    print("\n".join(trial_rows(rows)))
    print()
    print("\n".join(tally(rows, args.min_hz)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
