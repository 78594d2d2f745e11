"""Writing and reading a run's files: atomic rewrites, appended JSON lines, the parquet
tables, and the rows read back from them (cells.parquet is the truth, cells.jsonl fills
in what a kill between the two writes left out)."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from linklab.errors import UsageError
from linklab.output import jsonable
from linklab.rundir.check import check_row
from linklab.rundir.schema import (
    CELLS_JSONL,
    CELLS_PARQUET,
    STREAMS_JSONL,
    STREAMS_PARQUET,
    first_line,
)


def json_text(value: Any, **dumps: Any) -> str:
    """``value`` as the run directory's JSON: NaN as null, an infinity as json writes it."""
    return json.dumps(jsonable(value, "keep"), **dumps)


def atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def append_jsonl(path: Path, rows) -> None:
    """Append one JSON line per row. A last line cut by a kill (no newline) is ended
    first, so the next row gets a line of its own instead of joining the cut one."""
    try:
        with open(path, "rb") as existing:
            existing.seek(-1, os.SEEK_END)
            cut = existing.read(1) != b"\n"
    except (FileNotFoundError, OSError):
        cut = False
    with open(path, "a") as out:
        if cut:
            out.write("\n")
        for row in rows:  # the cell id first: a line cut by a kill still names its cell
            first = {"cell_id": row["cell_id"]} if "cell_id" in row else {}
            out.write(json_text({**first, **row}) + "\n")
        out.flush()
        os.fsync(out.fileno())


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` atomically, with every column any row has (a resumed run's older
    rows lack columns added since: null there, not dropped from the newer rows as
    pyarrow's schema from the first row alone would)."""
    keys = list(dict.fromkeys(key for row in rows for key in row))
    table = pa.Table.from_pylist([{key: row.get(key) for key in keys} for row in rows])
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_streams(root: Path, cell_ids: set[str] | None = None) -> list[dict[str, Any]]:
    """Per-subscriber rows of a run (empty for runs made before they existed).
    streams.parquet is the truth; cells whose streams are only in streams.jsonl (a kill
    between the two writes) are added from there; streams of a cell without a row (a kill
    before the row was written) are left out."""
    have_cells = cell_ids if cell_ids is not None else {r["cell_id"] for r in read_rows(root)}
    rows: list[dict[str, Any]] = []
    parquet, jsonl = root / STREAMS_PARQUET, root / STREAMS_JSONL
    if parquet.exists():
        try:
            rows = pq.read_table(parquet).to_pylist()
        except (pa.ArrowException, OSError):
            rows = []
    have = {r.get("cell_id") for r in rows}
    if jsonl.exists():
        extra: dict[str, list[dict[str, Any]]] = {}
        for line in jsonl.read_text(errors="replace").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and row.get("cell_id") not in have:
                extra.setdefault(row["cell_id"], []).append(row)
        for cell_rows in extra.values():
            # a cell run again after --resume appended its streams again: the last wins
            rows.extend({r.get("endpoint"): r for r in cell_rows}.values())
    return [r for r in rows if r.get("cell_id") in have_cells]


def read_rows(root: Path, warnings: list[str] | None = None) -> list[dict[str, Any]]:
    """The cells of a run. cells.parquet is the truth; rows only in cells.jsonl (a kill
    between the two writes) are added from there. A row that is not a cell (not an
    object, no text ``cell_id``/``link``/``profile``, no integer ``index``, a metric that
    is not a number) is a one-line UsageError naming the file; a cells.jsonl line that is
    not JSON at all (cut by a kill) is skipped -- and said in ``warnings`` unless its cell
    has a row after all (in cells.parquet, or measured again after a --resume)."""
    rows = _parquet_rows(root / CELLS_PARQUET, root / CELLS_JSONL)
    have = {r["cell_id"] for r in rows}
    jsonl = root / CELLS_JSONL
    broken: list[tuple[int, str | None]] = []
    if jsonl.exists():
        for row in _jsonl_rows(jsonl, broken):
            if row["cell_id"] not in have:
                rows.append(row)
                have.add(row["cell_id"])
    if warnings is not None:
        for number, cell_id in broken:
            if cell_id in have:
                continue
            what = f"cell {cell_id}" if cell_id else "a row"
            warnings.append(f"{jsonl}, line {number}: not a JSON row ({what}, cut by a kill "
                            "or damaged); skipped: that cell has no row (linklab bench "
                            "--resume runs it again)")
    rows.sort(key=lambda r: r["index"])
    return rows


def _parquet_rows(parquet: Path, jsonl: Path) -> list[dict[str, Any]]:
    if not parquet.exists():
        return []
    try:
        table = pq.read_table(parquet).to_pylist()
    except (pa.ArrowException, OSError, ValueError) as error:
        if not jsonl.exists():
            raise UsageError(f"{parquet} is unreadable ({first_line(error)}) and there "
                             f"is no {CELLS_JSONL} to fall back on",
                             argument="RUN_DIR") from None
        table = []  # damaged: cells.jsonl holds the same rows
    return [check_row(row, f"{parquet}, row {i + 1}") for i, row in enumerate(table)]


def _jsonl_rows(jsonl: Path, broken: list[tuple[int, str | None]]) -> list[dict[str, Any]]:
    """cells.jsonl's rows, checked; ``broken`` gets (line number, its cell id if it can
    be read) for each line that is not JSON."""
    try:
        lines = jsonl.read_bytes().splitlines()
    except OSError as error:
        raise UsageError(f"{jsonl} is unreadable: {error.strerror or error}",
                         argument="RUN_DIR") from None
    rows = []
    for number, line in enumerate(lines, 1):
        try:
            row = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            if line.strip():  # a line cut by a kill, or damaged: said by read_rows
                found = _CELL_ID.search(line.decode("utf-8", "replace"))
                broken.append((number, found[1] if found else None))
            continue
        rows.append(check_row(row, f"{jsonl}, line {number}"))
    return rows


_CELL_ID = re.compile(r'"cell_id"\s*:\s*"((?:[^"\\]|\\.)*)"')
