"""Bad or incomplete input to `linklab report --html`: a one-line error, or a partial
report that says plainly what is missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from report_checks import linklab
from report_rundirs import table_run


def one_line_error(result, exit_code: int = 2) -> str:
    assert result.returncode == exit_code, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("linklab: error: ")
    assert "Traceback" not in result.stderr
    return lines[0]


def test_missing_run_directory(tmp_path):
    out = tmp_path / "r.html"
    line = one_line_error(linklab("report", tmp_path / "nope", "--html", out))
    assert "RUN_DIR" in line and "not a run directory" in line
    assert not out.exists()


def test_directory_that_is_not_a_run(tmp_path):
    line = one_line_error(linklab("report", tmp_path, "--html"))
    assert "no run.json" in line
    assert not (tmp_path / "report.html").exists()


def test_run_of_an_older_format(tmp_path):
    run = table_run(tmp_path / "old", skip=lambda c: c.index > 0)
    info = json.loads((run / "run.json").read_text())
    info["format_version"] = 0
    (run / "run.json").write_text(json.dumps(info))
    line = one_line_error(linklab("report", run, "--html"))
    assert "format version 0" in line and "reads 1" in line
    assert not (run / "report.html").exists()


def test_unreadable_run_json(tmp_path):
    run = tmp_path / "broken"
    run.mkdir()
    (run / "run.json").write_text('{"format_version": 1, "scenario": ')
    line = one_line_error(linklab("report", run, "--html"))
    assert "unreadable" in line


def test_html_into_a_missing_directory_writes_nothing(tmp_path):
    run = table_run(tmp_path / "run", skip=lambda c: c.index > 1)
    csv_dir = tmp_path / "csv"
    line = one_line_error(linklab("report", run, "--csv", csv_dir, "--html",
                                  tmp_path / "no" / "such" / "r.html"))
    assert "--html" in line
    assert not csv_dir.exists()  # nothing half-written


@pytest.mark.slow
def test_partial_run_says_which_cells_are_missing(tmp_path):
    # a run killed after 5 of 8 cells, with the 6th in flight (records, no row)
    run = table_run(tmp_path / "partial", skip=lambda c: c.index >= 5)
    info = json.loads((run / "run.json").read_text())
    info["interrupted"] = True
    (run / "run.json").write_text(json.dumps(info))
    in_flight = info["planned"][5]
    (run / "records" / in_flight).mkdir(parents=True)
    (run / "records" / in_flight / "sub.bin").write_bytes(b"LLREC1\0\0")  # cut short
    result = linklab("report", run, "--html")
    assert result.returncode == 0, result.stderr
    assert "run not finished" in result.stdout  # the terminal says so too
    page = (run / "report.html").read_text()
    assert "3 of 8 planned cells have no result" in page
    assert "the run was interrupted" in page
    for cell_id in info["planned"][5:]:
        assert f"<code>{cell_id}</code>" in page
    assert "in flight when the run stopped" in page
    assert "linklab bench --resume" in page
    assert "data-done=5 data-planned=8" in page


@pytest.mark.slow
def test_run_with_no_finished_cell(tmp_path):
    run = table_run(tmp_path / "empty", skip=lambda c: True)
    assert not (run / "cells.parquet").exists()
    result = linklab("report", run, "--html")
    assert result.returncode == 0, result.stderr
    page = (run / "report.html").read_text()
    assert "No cell has finished yet" in page
    assert "8 of 8 planned cells have no result" in page
    assert "<img" not in page


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["missing", "bad magic", "publisher file"])
def test_missing_or_unreadable_records_are_named(tmp_path, damage):
    run = table_run(tmp_path / "damaged", skip=lambda c: c.index > 1)
    cell_id = json.loads((run / "run.json").read_text())["planned"][0]
    sub = run / "records" / cell_id / "sub.bin"
    if damage == "missing":
        sub.unlink()
    elif damage == "bad magic":
        sub.write_bytes(b"NOTAREC!" + sub.read_bytes()[8:])
    else:
        sub.write_bytes((run / "records" / cell_id / "pub.bin").read_bytes())
    (run / "profiles" / "optimized.xml").unlink(missing_ok=True)
    result = linklab("report", run, "--html")
    assert result.returncode == 0, result.stderr
    page = (run / "report.html").read_text()
    assert "What is missing" in page and f"{cell_id}:" in page
    assert {"missing": "no records/", "bad magic": "not a linklab record file",
            "publisher file": "publisher file"}[damage] in page
    assert "id=fig-latency_cdf" in page  # the other cell is still drawn


@pytest.mark.slow
def test_a_missing_profile_file_is_said(tmp_path):
    run = table_run(tmp_path / "noprofile", skip=lambda c: c.index > 0)
    (run / "profiles" / "default.xml").unlink()
    result = linklab("report", run, "--html", tmp_path / "r.html")
    assert result.returncode == 0, result.stderr
    assert "profiles/default.xml is missing from the run directory" in \
        (tmp_path / "r.html").read_text()


def test_fail_on_regression_needs_compare(tmp_path):
    line = one_line_error(linklab("report", tmp_path, "--fail-on-regression"))
    assert "--fail-on-regression" in line and "--compare" in line


def test_html_without_run_dir_is_a_usage_error(tmp_path):
    result = linklab("report", "--html", tmp_path / "x")
    assert result.returncode == 2
    assert "RUN_DIR" in result.stderr


@pytest.mark.slow
def test_paths_are_taken_as_given(tmp_path):
    run = table_run(tmp_path / "rel", skip=lambda c: c.index > 0)
    result = linklab("report", "rel", "--html", "out.html", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out.html").is_file() and Path(run).is_dir()


@pytest.mark.slow
def test_an_unwritable_html_target_is_a_one_line_error(tmp_path):
    run = table_run(tmp_path / "ro", skip=lambda c: c.index > 0)
    target = tmp_path / "taken.html"
    target.mkdir()  # a directory named like the file: writing there fails
    (target / "report.html").mkdir()
    line = one_line_error(linklab("report", run, "--html", target))
    assert "--html" in line and "cannot write" in line


@pytest.mark.slow
def test_exit_notes_are_shown_but_not_as_failures(tmp_path):
    import pyarrow.parquet as pq

    from linklab.rundir import write_parquet

    run = table_run(tmp_path / "noted", skip=lambda c: c.index > 0)
    rows = pq.read_table(run / "cells.parquet").to_pylist()
    rows[0]["exit_note"] = "subscriber aborted after its summary (signal 6)"
    write_parquet(run / "cells.parquet", rows)
    result = linklab("report", run, "--html")
    assert result.returncode == 0, result.stderr
    page = (run / "report.html").read_text()
    assert "subscriber aborted after its summary (signal 6)" in page
    assert "id=failed>" not in page  # the cell is ok
