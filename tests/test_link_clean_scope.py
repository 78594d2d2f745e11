"""`linklab link clean` takes down only what was left behind (issue 41, item 2).

A run whose owning process was killed is left behind and goes; a run whose owner is alive
(a process holding a testbed, as a bench does) and a link made by `linklab link up` (it
lives until `linklab link down`, with or without a `link exec` inside it) stay -- for an
unscoped clean and for a --prefix that matches them. Needs root; every test uses its own
run names (with the pid) and its own state directory.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_root, require_tool
from linklab.link.lifecycle import residue

# alone (make test runs it after the others, one at a time):
# it cleans and checks every run left behind
pytestmark = [pytest.mark.integration, pytest.mark.alone]

PY = sys.executable
LINKLAB = [PY, "-m", "linklab.cli"]

HOLD = """
import sys, time
from linklab.link import testbed
with testbed(None, name=sys.argv[1]) as bed:
    print("ready", flush=True)
    time.sleep(300)
"""


@pytest.fixture(autouse=True)
def _needs(monkeypatch, tmp_path):
    require_root()
    for tool in ("ip", "tc", "nft", "ethtool", "nsenter"):
        require_tool(tool)
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))


def run_name(tag: str) -> str:
    return f"c{os.getpid()}{tag}"


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LINKLAB, *args], capture_output=True, text=True, timeout=timeout)


def hold(name: str) -> subprocess.Popen[str]:
    """A process holding a testbed (what a bench does), once it is up."""
    proc = subprocess.Popen([PY, "-c", HOLD, name], stdout=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def clean(*args: str) -> dict:
    result = cli("link", "clean", *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_clean_removes_a_killed_run_and_leaves_live_and_link_up_runs(tmp_path):
    dead, live, made = run_name("dead"), run_name("live"), run_name("up")
    killed = hold(dead)
    killed.kill()                       # its owner is gone: left behind
    killed.wait(timeout=10)
    owner = hold(live)                  # its owner is alive
    up = cli("link", "up", "wifi-mild", "--name", made, "--json")   # no owner, on purpose
    assert up.returncode == 0, up.stderr
    inside = subprocess.Popen([*LINKLAB, "link", "exec", "edge", "--name", made, "--",
                               "sleep", "300"])
    try:
        # unscoped (over this test's state directory), then by a prefix matching them all,
        # with the sweep of unrecorded namespaces
        first = clean("--journals-only")
        assert first["runs_removed"] == [dead], first
        assert residue(dead) == []
        second = clean("--prefix", run_name(""))
        assert second["runs_removed"] == [] and second["namespaces_removed"] == [], second
        for report in (first, second):
            skipped = " | ".join(report["skipped"])
            assert f"{live}: owned by live process {owner.pid}" in skipped
            assert f"{made}: made by linklab link up" in skipped
        for name in (live, made):
            assert len(residue(name)) == 2
            assert (Path(os.environ["LINKLAB_STATE_DIR"]) / f"{name}.json").exists()
        assert inside.poll() is None    # a command running inside the link goes on
        ping = cli("link", "exec", "robot", "--name", made, "--", "ping", "-c", "1", "-W",
                   "2", "10.77.0.100")
        assert ping.returncode == 0, ping.stdout + ping.stderr
        listed = cli("link", "status", "--json")
        assert {s["name"] for s in json.loads(listed.stdout)} == {live, made}
    finally:
        down = cli("link", "down", "--name", made)
        inside.wait(timeout=10)
        owner.send_signal(signal.SIGINT)   # the holder takes its testbed down
        owner.wait(timeout=30)
    assert down.returncode == 0, down.stderr
    assert residue(made) == [] and residue(live) == []
    assert clean("--journals-only")["skipped"] == []


def test_a_link_up_killed_while_building_is_left_behind_for_clean():
    """`link up` owns its run until the run is up: killed half-way, clean removes it."""
    name = run_name("kup")
    proc = subprocess.Popen([PY, "-c", PAUSE_MID_BUILD, "link", "up", "wifi-mild",
                             "--name", name], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None and proc.stderr.readline().strip() == "pause"
        state = json.loads((Path(os.environ["LINKLAB_STATE_DIR"]) / f"{name}.json")
                           .read_text())
        assert (state["owner"] or {}).get("pid") == proc.pid, state["owner"]
        assert not state.get("detached")
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert len(residue(name)) == 2
    assert clean("--name", name)["runs_removed"] == [name]
    assert residue(name) == []


# `linklab ARGS`, pausing for a kill after the build's 10th change
PAUSE_MID_BUILD = """
import sys, time
from linklab.cli import main
from linklab.link.journal import Journal
real, count = Journal.change, [0]
def change(self, *args, **kwargs):
    count[0] += 1
    if count[0] == 10:
        print("pause", file=sys.stderr, flush=True)
        time.sleep(60)
    return real(self, *args, **kwargs)
Journal.change = change
raise SystemExit(main(sys.argv[1:]))
"""
