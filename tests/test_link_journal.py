"""The journal: every change recorded as it succeeds, undone newest first, from any process."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from linklab.errors import UsageError
from linklab.link.journal import Journal
from linklab.link.system import CommandFailed, Shell


def _append(log, text):
    return ["sh", "-c", f"echo {text} >> {log}"]


def test_undo_runs_newest_first_from_the_state_file_alone(tmp_path):
    log = tmp_path / "log"
    journal = Journal.claim("j1", Shell(), tmp_path)
    for name in ("a", "b", "c"):
        journal.change(f"make {name}", _append(log, f"+{name}"), _append(log, f"-{name}"))
    journal.change("inside c", _append(log, "+c.rule"), None)  # goes away with c
    # another process undoes it, knowing nothing but the state file
    code = ("import sys; from pathlib import Path; from linklab.link.journal import Journal;"
            "j = Journal.open(Path(sys.argv[1])); print(j.undo_all()); j.remove()")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "j1.json")],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    assert log.read_text().split() == ["+a", "+b", "+c", "+c.rule", "-c", "-b", "-a"]
    assert not (tmp_path / "j1.json").exists()


def test_a_failed_change_is_not_recorded_so_nothing_foreign_is_undone(tmp_path):
    log = tmp_path / "log"
    journal = Journal.claim("j2", Shell(), tmp_path)
    with pytest.raises(CommandFailed):
        journal.change("fails", ["sh", "-c", "exit 3"], _append(log, "-never"))
    assert json.loads((tmp_path / "j2.json").read_text())["steps"] == []
    assert journal.undo_all() == [] and not log.exists()


def test_a_run_name_can_be_claimed_once(tmp_path):
    Journal.claim("same", Shell(), tmp_path)
    with pytest.raises(UsageError, match="already up"):
        Journal.claim("same", Shell(), tmp_path)


def test_helper_processes_are_stopped_by_undo(tmp_path):
    journal = Journal.claim("j3", Shell(), tmp_path)
    pid = journal.spawn("sleeper", ["sleep", "60"])
    reopened = Journal.open(tmp_path / "j3.json")  # as `down` from another process would
    assert reopened.undo_all() == []
    journal.undo_all()  # reaps our child
    from linklab.link.journal import process_start_time
    assert process_start_time(pid) is None
