"""The run directory: incremental writes, reopening, and what resume skips."""

from __future__ import annotations

import json
import math

import pyarrow.parquet as pq
import pytest

from linklab.bench.matrix import expand
from linklab.bench.measure import cell_row_base as _cell_row_base
from linklab.bench.spec import parse_scenario
from linklab.errors import UsageError
from linklab.rundir import CELLS_JSONL, CELLS_PARQUET, RunStore, measured_with
from linklab.rundir import complete_row as _complete_row

SCENARIO = """\
name: store-test
fixed: {rate: 30Hz, link: wifi-ideal, count: 30}
axes:
  payload: [32KiB, 64KiB, 128KiB]
"""


def make_row(cell, status="ok", **metrics):
    row = _cell_row_base(cell)
    row.update(status=status, **metrics)
    return _complete_row(row)


@pytest.fixture
def store(tmp_path):
    scenario = parse_scenario(SCENARIO, "s.yaml")
    cells = expand(scenario)
    store = RunStore.create(tmp_path / "run", scenario=scenario.to_dict(), options={},
                            planned=[c.cell_id for c in cells], estimated_s=60.0,
                            versions={"kernel": "test"})
    return store, cells


def test_each_append_is_on_disk_at_once(store):
    store, cells = store
    store.append(make_row(cells[0], reception_rate_hz=30.1, received=30, published=30))
    table = pq.read_table(store.root / CELLS_PARQUET).to_pylist()
    assert [r["cell_id"] for r in table] == [cells[0].cell_id]
    assert table[0]["reception_rate_hz"] == pytest.approx(30.1)
    info = json.loads((store.root / "run.json").read_text())
    assert info["format_version"] == 2 and info["finished"] is False
    assert info["planned"] == [c.cell_id for c in cells]

    store.append(make_row(cells[1], status="failed", failure_reason="not completed: x"))
    reopened = RunStore.open(store.root)
    assert reopened.done_ids() == {cells[0].cell_id, cells[1].cell_id}
    failed = reopened.rows[1]
    assert failed["status"] == "failed" and failed["failure_reason"] == "not completed: x"
    assert math.isnan(failed["latency_mean_ms"])


def test_finished_is_set_when_every_planned_cell_has_a_row(store):
    store, cells = store
    for cell in cells:
        store.append(make_row(cell))
    assert json.loads((store.root / "run.json").read_text())["finished"] is True


def test_a_kill_between_the_two_writes_loses_nothing(store):
    store, cells = store
    store.append(make_row(cells[0]))
    # the jsonl line of cell 1 was written, then the process died before the parquet
    with open(store.root / CELLS_JSONL, "a") as out:
        out.write(json.dumps(make_row(cells[1], latency_mean_ms=float("nan")),
                             default=str).replace("NaN", "null") + "\n")
        out.write('{"cell_id": "half-writt')  # and a line cut in the middle
    reopened = RunStore.open(store.root)
    assert [r["cell_id"] for r in reopened.rows] == [cells[0].cell_id, cells[1].cell_id]


def test_a_directory_with_a_run_is_not_overwritten(store):
    store, cells = store
    with pytest.raises(UsageError, match="--resume"):
        RunStore.create(store.root, scenario={}, options={}, planned=[], estimated_s=0)


def test_opening_something_that_is_not_a_run_names_it(tmp_path):
    with pytest.raises(UsageError, match="not a run directory"):
        RunStore.open(tmp_path)


def test_a_damaged_parquet_falls_back_to_the_jsonl_rows_and_without_it_is_a_clear_error(store):
    from linklab.rundir import read_rows

    run, cells = store
    for cell in cells[:2]:
        run.append(make_row(cell, received=30))
    (run.root / CELLS_PARQUET).write_bytes(b"PAR1 not really parquet")
    rows = read_rows(run.root)
    assert [r["cell_id"] for r in rows] == [c.cell_id for c in cells[:2]]
    (run.root / CELLS_JSONL).unlink()
    with pytest.raises(UsageError, match="unreadable"):
        read_rows(run.root)


@pytest.mark.parametrize(("content", "needle"), [
    (b"[1, 2]", "not an object"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b'"a string"', "not an object"),
])
def test_a_run_json_that_is_not_a_json_object_in_utf8_is_one_line(tmp_path, content, needle):
    (tmp_path / "run.json").write_bytes(content)
    with pytest.raises(UsageError, match=needle) as caught:
        RunStore.open(tmp_path)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(("line", "needle"), [
    ('{"index": 0, "payload_bytes": 1024, "link": "l", "profile": "p"}', "no cell_id"),
    ("[1, 2, 3]", "not an object"),
    ('{"cell_id": "a", "index": null, "payload_bytes": 1, "link": "l", "profile": "p"}',
     "index None"),
    ('{"cell_id": "a", "index": 0, "payload_bytes": 1, "link": "l", "profile": "p", '
     '"latency_mean_ms": "fast"}', "not a number"),
])
def test_a_cells_jsonl_line_that_is_not_a_cell_names_the_file_and_line(tmp_path, line, needle):
    (tmp_path / "run.json").write_text(json.dumps({"format_version": 1, "planned": []}))
    (tmp_path / CELLS_JSONL).write_text(line + "\n")
    with pytest.raises(UsageError, match=needle) as caught:
        RunStore.open(tmp_path)
    assert f"{CELLS_JSONL}, line 1" in str(caught.value) and "\n" not in str(caught.value)


def test_out_into_a_directory_that_cannot_be_made_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="--out: cannot make the run directory"):
        RunStore.create(tmp_path / "file" / "run", scenario={}, options={}, planned=[],
                        estimated_s=0.0, versions={})


def test_each_session_records_where_and_at_which_commit_it_measured(store):
    """A study resumed on another machine or commit says which cells each session
    measured (run.json sessions); a report names every commit."""
    store, cells = store
    first = store.begin_session("b1", versions={"git_commit": "aaaaaaaaaaaa1"})
    store.append(make_row(cells[0]))
    store.end_session(first)
    assert measured_with(store.info) == "commit aaaaaaaaaa"

    reopened = RunStore.open(store.root)
    second = reopened.begin_session("b2", versions={"git_commit": "bbbbbbbbbbbb2",
                                                    "git_dirty": True})
    reopened.append(make_row(cells[1]))
    reopened.append(make_row(cells[2]))
    reopened.end_session(second)

    sessions = json.loads((store.root / "run.json").read_text())["sessions"]
    assert [(s["link_run_name"], s["cells_before"], s["cells_measured"])
            for s in sessions] == [("b1", 0, 1), ("b2", 1, 2)]
    assert all(s["started_utc"] <= s["ended_utc"] for s in sessions)
    assert all(s["host"] for s in sessions)
    assert measured_with(reopened.info) == \
        "commits aaaaaaaaaa, bbbbbbbbbb (dirty) (2 sessions)"


def test_measured_with_names_commits_once_and_counts_machines():
    def session(commit, host):
        return {"host": host, "versions": {"git_commit": commit}}
    assert measured_with({"versions": {"git_commit": "c0ffee"}}) == "commit c0ffee"
    assert measured_with({}) == "commit ?"
    info = {"sessions": [session("aaa", "m1"), session("aaa", "m2"), session("bbb", "m2")]}
    assert measured_with(info) == "commits aaa, bbb (3 sessions, 2 machines)"
    info = {"sessions": [session("aaa", "m1"), session("aaa", "m1")]}
    assert measured_with(info) == "commit aaa (2 sessions)"


def test_resuming_a_run_made_before_sessions_credits_its_earlier_cells(store):
    store, cells = store  # created with versions {"kernel": "test"}, no sessions
    store.append(make_row(cells[0], started_utc="2026-11-26T16:33:38+00:00"))
    store.append(make_row(cells[1], started_utc="2026-11-26T16:34:14+00:00"))
    reopened = RunStore.open(store.root)
    reopened.begin_session("b9", versions={"git_commit": "new"})
    earlier, now = json.loads((store.root / "run.json").read_text())["sessions"]
    assert earlier["cells_measured"] == 2 and earlier["host"] is None
    assert earlier["versions"] == {"kernel": "test"}
    assert earlier["started_utc"] == "2026-11-26T16:33:38+00:00"
    assert now["cells_before"] == 2 and now["link_run_name"] == "b9"
    assert measured_with(reopened.info) == "commits ?, new (2 sessions)"


def test_the_first_session_of_a_new_run_reuses_its_versions_a_resumed_one_collects(
        store, monkeypatch):
    """collect_versions (git and a dozen dpkg-query calls) runs once for a new run:
    create() has just collected what its first session measures with. A resumed run
    may be at another commit, so its session collects anew."""
    import linklab.rundir.store as store_module
    store, cells = store  # created with versions {"kernel": "test"}
    calls = []
    monkeypatch.setattr(store_module, "collect_versions",
                        lambda repo=None: calls.append(1) or {"git_commit": "later"})
    first = store.begin_session("b1")
    assert first["versions"] == {"kernel": "test"} and calls == []
    store.end_session(first)
    again = store.begin_session("b2")  # a second session in the same process collects
    assert again["versions"] == {"git_commit": "later"} and len(calls) == 1
    reopened = RunStore.open(store.root)
    assert reopened.begin_session("b3")["versions"] == {"git_commit": "later"}
    assert len(calls) == 2


def test_a_row_cut_by_a_kill_is_said_and_the_next_row_gets_a_line_of_its_own(store):
    """Issue 41 item 8: a kill cut the first cell's jsonl line (its parquet write never
    came); the second cell, appended after a --resume, must not join the cut line, and
    reading says which cell has no row instead of dropping it silently."""
    store, cells = store
    store.append(make_row(cells[0], received=30, published=30))
    line = (store.root / CELLS_JSONL).read_bytes()
    (store.root / CELLS_JSONL).write_bytes(line[:len(line) // 2])  # cut mid-line
    (store.root / CELLS_PARQUET).unlink()
    store.rows = []
    store.append(make_row(cells[1], received=30, published=30))
    (store.root / CELLS_PARQUET).unlink()  # only the jsonl file to read from
    reopened = RunStore.open(store.root)
    assert [r["cell_id"] for r in reopened.rows] == [cells[1].cell_id]
    (warning,) = reopened.warnings
    assert f"cell {cells[0].cell_id}" in warning and "line 1" in warning
    assert "--resume runs it again" in warning and "\n" not in warning
    # measured again: nothing to say any more
    store.append(make_row(cells[0], received=30, published=30))
    assert RunStore.open(store.root).warnings == []


def test_a_killed_session_still_counts_the_cells_it_measured(store):
    """Issue 41 item 8: after a SIGKILL (no end_session), run.json says how many cells
    the session measured, as of its last finished cell."""
    store, cells = store
    store.begin_session("killed")
    store.append(make_row(cells[0], received=30, published=30))
    info = json.loads((store.root / "run.json").read_text())
    assert info["sessions"][-1]["cells_measured"] == 1
    assert info["sessions"][-1]["ended_utc"] is None
