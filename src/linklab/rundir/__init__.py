"""The run directory: what a bench run leaves behind, written as it goes (format 2).

docs/run-directory.md is the contract for everything that reads a run (``linklab
report``, the HTML report, comparisons, the field and Kubernetes runs): the files,
run.json's keys and every column of cells.parquet and streams.parquet; docs/metrics.md
defines each metric. This package is that contract in code: run.json, cells.* and
streams.* are written and read only through it (linklab.bench writes; report, field and
k8s read). The per-cell files under records/ (the probes' records and reports, cpu.json,
search.json, error.txt) and gates.json are written by the bench modules that make them.
It depends on the core alone (units, errors, output).

- schema.py: the format's version, the files, run.json (``RunInfo``, ``Session``);
- records.py: a measured cell as typed records (``CellMetrics``, ``StreamRow``,
  ``CellFields``), each ``to_dict`` the row as written;
- columns.py: every column of a cell row with its empty value, and the columns' kinds;
- check.py, files.py, store.py: checking rows read back; the files written atomically
  and read back; ``RunStore``, a run being written or read;
- format1.py: the rows of format 1 in today's terms; versions.py: what a run was
  measured with; values.py: a number as a reader takes it (``num``).

The records are dataclasses, not pydantic models: they add no dependency; building one
is a plain constructor call in the bench's hot path (a search makes hundreds of rows);
pyarrow already does the columnar typing of cells.parquet; and the checks a row read
back needs are few and specific (a one-line error naming the file and the row, NaN for a
missing float) -- hand-written in check.py rather than bent out of a validation library.
A reader gets rows as dicts (``RunStore.rows``): a report groups and filters by column
name, and a run made before a column existed simply lacks it.
"""

from linklab.rundir.check import check_row
from linklab.rundir.columns import (
    COUNTER_COLUMNS,
    CPU_COLUMNS,
    ROW_DEFAULTS,
    complete_row,
)
from linklab.rundir.files import read_rows, read_streams, write_parquet
from linklab.rundir.records import CellFields, CellMetrics, StreamRow
from linklab.rundir.schema import (
    CELLS_JSONL,
    CELLS_PARQUET,
    FORMAT_VERSION,
    METRICS_VERSION,
    READABLE_VERSIONS,
    RUN_JSON,
    STREAMS_JSONL,
    STREAMS_PARQUET,
    RunInfo,
    Session,
    now_utc,
)
from linklab.rundir.store import RunStore, in_todays_terms
from linklab.rundir.values import num
from linklab.rundir.versions import collect_versions, measured_with

__all__ = [
    "CELLS_JSONL", "CELLS_PARQUET", "COUNTER_COLUMNS", "CPU_COLUMNS", "FORMAT_VERSION",
    "METRICS_VERSION", "READABLE_VERSIONS", "ROW_DEFAULTS", "RUN_JSON", "STREAMS_JSONL",
    "STREAMS_PARQUET", "CellFields", "CellMetrics", "RunInfo", "RunStore", "Session",
    "StreamRow", "check_row", "collect_versions", "complete_row", "in_todays_terms",
    "measured_with", "now_utc", "num", "read_rows", "read_streams",
    "write_parquet",
]
