#!/usr/bin/env python3
"""Copy what a bench run needs to be reported and resumed, without its bulky records.

    python3 scripts/keep_run.py RUN_DIR DEST_DIR

A study that outlives one machine (seed 000's calibrated Table II: ~12 h of cells) is
kept in the repository between sessions (studies/). DEST_DIR gets run.json,
cells.jsonl and streams.jsonl (linklab.rundir reads the rows from these when the
parquet files are absent), the profiles/ every cell used, and, of every cell that did
not end "ok", the probes' summaries and logs (records/<cell>/*.json, *.log: why it
failed). The per-sample record files (*.bin, ~90 KB a cell) stay behind.
`linklab report DEST_DIR` reads the copy; `linklab bench --resume` continues it (copy it
to a working directory first). Copying again refreshes DEST_DIR; files it holds that
the run does not are left alone.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

KEPT = ("run.json", "cells.jsonl", "streams.jsonl")
FAILED_CELL_FILES = ("*.json", "*.log")


def cell_status(run: Path) -> dict[str, str]:
    """Each cell id in cells.jsonl with its status (the last row of a cell counts: a
    cell run again after --resume)."""
    status: dict[str, str] = {}
    for line in (run / "cells.jsonl").read_text(errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by a kill: the store skips it too
        if isinstance(row, dict) and isinstance(row.get("cell_id"), str):
            status[row["cell_id"]] = str(row.get("status"))
    return status


def keep(run: Path, dest: Path) -> tuple[list[Path], dict[str, str]]:
    """Copy the kept parts of ``run`` into ``dest``; return the files written and each
    cell's status."""
    if not (run / "run.json").is_file() or not (run / "cells.jsonl").is_file():
        raise ValueError(f"{run} is not a bench run directory (needs run.json and "
                         "cells.jsonl)")
    if dest.resolve() == run.resolve():
        raise ValueError("DEST_DIR is the run directory itself")
    written = []
    dest.mkdir(parents=True, exist_ok=True)
    for name in KEPT:
        if (run / name).is_file():
            shutil.copy2(run / name, dest / name)
            written.append(dest / name)
    for profile in sorted((run / "profiles").glob("*")) if (run / "profiles").is_dir() else []:
        (dest / "profiles").mkdir(exist_ok=True)
        shutil.copy2(profile, dest / "profiles" / profile.name)
        written.append(dest / "profiles" / profile.name)
    status = cell_status(run)
    for cell in (cell for cell, state in status.items() if state != "ok"):
        source = run / "records" / cell
        for pattern in FAILED_CELL_FILES:
            for path in sorted(source.glob(pattern)):
                target = dest / "records" / cell / path.name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
                written.append(target)
    return written, status


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: keep_run.py RUN_DIR DEST_DIR", file=sys.stderr)
        return 2
    try:
        written, status = keep(Path(argv[0]), Path(argv[1]))
    except (ValueError, OSError) as error:
        print(f"keep_run.py: {error}", file=sys.stderr)
        return 2
    not_ok = sum(1 for state in status.values() if state != "ok")
    print(f"kept {len(written)} files: {len(status)} cells ({not_ok} not ok), "
          f"in {argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
