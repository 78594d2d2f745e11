"""The journal: every change recorded (as data) as it succeeds, undone newest first from
any process; the state directory and files are checked before anything is acted on."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_root
from linklab.errors import LinklabError, UsageError
from linklab.link import made
from linklab.link.journal import (
    Journal,
    StateFileError,
    process_start_time,
    processes_in_netns,
)
from linklab.link.statedir import StateDir, UnsafeStateDir
from linklab.link.system import CommandFailed, Shell


def _state(tmp_path):
    directory = tmp_path / "state"
    directory.mkdir(mode=0o700)
    os.chmod(directory, 0o700)
    return directory


def _netns(name):
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout \
        .split().count(name)


@pytest.fixture
def netns_name():
    require_root()
    name = f"linklab-jt{os.getpid()}-robot"
    yield name
    subprocess.run(["ip", "netns", "delete", name], capture_output=True)


@pytest.mark.integration
def test_undo_from_the_state_file_alone_removes_what_was_made_newest_first(tmp_path,
                                                                          netns_name):
    directory = _state(tmp_path)
    journal = Journal.claim("j1", Shell(), directory)
    journal.change("namespace", ["ip", "netns", "add", netns_name], made.netns(netns_name))
    journal.change("a bridge", ["ip", "-n", netns_name, "link", "add", "br0", "type", "bridge"],
                   made.link(netns_name, "br0"))
    journal.change("an address", ["ip", "-n", netns_name, "addr", "add", "10.9.9.1/24", "dev",
                                  "br0"], made.address(netns_name, "br0", "10.9.9.1/24"))
    journal.change("mtu", ["ip", "-n", netns_name, "link", "set", "br0", "mtu", "1400"], None)
    state = json.loads((directory / "j1.json").read_text())
    # the file holds what was made -- data, never a command
    assert [s["kind"] for s in state["steps"]] == ["netns", "link", "address", "inside"]
    assert not any("undo" in s or "argv" in s for s in state["steps"])
    assert stat.S_IMODE((directory / "j1.json").stat().st_mode) == 0o600
    # another process undoes it, knowing nothing but the state file
    code = ("import sys; from pathlib import Path; from linklab.link.journal import Journal;"
            "j = Journal.open(Path(sys.argv[1])); print(j.undo_all()); j.remove()")
    done = subprocess.run([sys.executable, "-c", code, str(directory / "j1.json")],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    assert _netns(netns_name) == 0
    assert not (directory / "j1.json").exists()


@pytest.mark.integration
def test_a_failed_change_is_not_recorded_so_nothing_foreign_is_undone(tmp_path, netns_name):
    directory = _state(tmp_path)
    subprocess.run(["ip", "netns", "add", netns_name], check=True)  # not ours
    journal = Journal.claim("j2", Shell(), directory)
    with pytest.raises(CommandFailed):
        journal.change("exists", ["ip", "netns", "add", netns_name], made.netns(netns_name))
    assert json.loads((directory / "j2.json").read_text())["steps"] == []
    assert journal.undo_all() == []
    assert _netns(netns_name) == 1


def test_a_run_name_can_be_claimed_once(tmp_path):
    directory = _state(tmp_path)
    Journal.claim("same", Shell(), directory)
    with pytest.raises(UsageError, match="already up"):
        Journal.claim("same", Shell(), directory)


def test_helper_processes_are_stopped_by_undo(tmp_path):
    directory = _state(tmp_path)
    journal = Journal.claim("j3", Shell(), directory)
    pid = journal.spawn("sleeper", ["sleep", "60"])
    reopened = Journal.open(directory / "j3.json")  # as `down` from another process would
    assert reopened.undo_all() == []
    journal.undo_all()  # reaps our child
    assert process_start_time(pid) is None


def test_undo_never_signals_a_recycled_pid(tmp_path):
    directory = _state(tmp_path)
    journal = Journal.claim("j4", Shell(), directory)
    other = subprocess.Popen(["sleep", "60"])
    try:
        # a record of the same pid with another start time: not that process
        journal.record("not this one", made.process(other.pid, "1", "host"))
        assert Journal.open(directory / "j4.json").undo_all() == []
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


@pytest.mark.integration
def test_undo_ends_processes_still_inside_the_runs_namespace(tmp_path, netns_name):
    directory = _state(tmp_path)
    journal = Journal.claim("j5", Shell(), directory)
    journal.change("namespace", ["ip", "netns", "add", netns_name], made.netns(netns_name))
    inside = subprocess.Popen(["ip", "netns", "exec", netns_name, "sleep", "60"],
                              start_new_session=True)
    outside = subprocess.Popen(["sleep", "60"])
    try:
        for _ in range(200):
            if processes_in_netns(netns_name):
                break
        assert [p for p, _ in processes_in_netns(netns_name)] == [inside.pid]
        assert Journal.open(directory / "j5.json").undo_all() == []
        assert inside.wait(timeout=10) is not None
        assert outside.poll() is None and _netns(netns_name) == 0
    finally:
        for proc in (inside, outside):
            proc.kill()
            proc.wait()


# --- the state directory and the state file are checked, not assumed -----------------------

@pytest.mark.parametrize("mode", [0o777, 0o770, 0o755, 0o711])
def test_a_state_directory_others_can_use_is_refused(tmp_path, mode):
    directory = tmp_path / "state"
    directory.mkdir()
    os.chmod(directory, mode)
    with pytest.raises(UnsafeStateDir) as caught:
        Journal.claim("j6", Shell(), directory)
    message = str(caught.value)
    assert len(message.splitlines()) == 1
    assert str(directory) in message and f"mode {mode:04o}" in message and "0700" in message
    assert os.listdir(directory) == []


@pytest.mark.integration
def test_a_state_directory_of_another_user_is_refused(tmp_path):
    require_root()
    directory = _state(tmp_path)
    os.chown(directory, 65534, 65534)
    with pytest.raises(UnsafeStateDir, match="owned by uid 65534 with mode 0700.*owned by root"):
        StateDir.open(directory)


def test_a_symlinked_state_directory_or_file_is_refused(tmp_path):
    real = _state(tmp_path)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(UnsafeStateDir, match="symlink"):
        StateDir.open(tmp_path / "link")
    with pytest.raises(UnsafeStateDir, match="symlink"):
        StateDir.open(tmp_path / "link" / "below")  # a symlink on the way, too
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("{}")
    (real / "j7.json").symlink_to(elsewhere)
    with StateDir.open(real) as store, pytest.raises(UnsafeStateDir, match="symlink"):
        Journal.load(store, "j7")


def test_a_state_file_others_can_write_is_refused(tmp_path):
    directory = _state(tmp_path)
    journal = Journal.claim("j8", Shell(), directory)
    os.chmod(journal.path, 0o666)
    with pytest.raises(UnsafeStateDir, match="not writable by group or others"):
        Journal.open(journal.path)


def test_a_missing_state_directory_is_made_0700_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        with StateDir.open(tmp_path / "new") as store:
            assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o700
    finally:
        os.umask(old)


@pytest.mark.integration
def test_root_honours_linklab_state_dir_only_when_it_is_safe(tmp_path, monkeypatch):
    require_root()
    unsafe = tmp_path / "shared"
    unsafe.mkdir()
    os.chmod(unsafe, 0o1777)  # like /tmp itself: not a state directory
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(unsafe))
    result = subprocess.run([sys.executable, "-m", "linklab.cli", "link", "clean", "--json"],
                            capture_output=True, text=True, env=os.environ.copy())
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert "linklab: error: state directory" in result.stderr and "1777" in result.stderr


@pytest.mark.parametrize(("content", "match"), [
    (b'{"version": 2, "name": "j9", "ste', "damaged"),
    (b"\xff\xfe garbage", "damaged"),
    (b"[1, 2]", "holds a list"),
    (b'{"version": 2, "name": "j9", "steps": [{"kind": "shell", "argv": ["rm"]}]}',
     "unknown step kind"),
    (b'{"version": 2, "name": "j9", "steps": [{"kind": "netns", "netns": "-rf /"}]}',
     "namespace"),
    (b'{"version": 2, "name": "other", "steps": []}', "names run"),
])
def test_a_damaged_state_file_is_one_line_and_nothing_is_undone(tmp_path, content, match):
    directory = _state(tmp_path)
    with StateDir.open(directory) as store:
        store.write("j9.json", content)
        with pytest.raises(StateFileError, match=match) as caught:
            Journal.load(store, "j9")
    assert len(str(caught.value).splitlines()) == 1
    assert "remove it by hand" in str(caught.value)


def test_an_old_format_state_file_is_refused_naming_what_it_holds(tmp_path):
    directory = _state(tmp_path)
    old = {"version": 1, "name": "j10", "shell_prefix": [], "steps": [
        {"what": "namespace", "netns": None, "undo": ["ip", "netns", "delete", "linklab-x-a"]},
        {"what": "outage scheduler", "netns": None, "process": 4242, "start": "99"},
        {"what": "evil", "netns": None, "undo": ["sh", "-c", "touch /tmp/pwned"]}]}
    with StateDir.open(directory) as store:
        store.write("j10.json", json.dumps(old).encode())
        with pytest.raises(LinklabError) as caught:
            Journal.load(store, "j10")
    message = str(caught.value)
    assert "older linklab" in message and "linklab-x-a" in message and "4242" in message
    assert len(message.splitlines()) == 1


def test_records_are_checked_field_by_field():
    assert made.check(made.route("ns1", "10.0.0.0/24", None, "eth0"), "r")["destination"] == \
        "10.0.0.0/24"
    for bad in (made.link("ns1", "a b"), made.sysctl("ns1", "net.x", "1; reboot"),
                made.address("ns1", "eth0", "10.0.0.1"), made.process(1, None),
                made.files(["../etc/passwd"]), made.files(["other.json"]),
                {"kind": "qdisc", "netns": "n", "dev": "e", "parent": "1:"}):
        with pytest.raises(made.BadRecord):
            made.check(bad, "r")


def test_linklab_loads_no_kernel_module_and_says_how_to_load_ifb(tmp_path):
    from linklab.link.netops import ifb_unavailable

    sys_module, proc_modules, builtin = tmp_path / "sys", tmp_path / "modules", tmp_path / "b"
    sys_module.mkdir()
    proc_modules.write_text("veth 40960 0 - Live 0x0\n")
    builtin.write_text("kernel/drivers/net/veth.ko\n")
    reason = ifb_unavailable(sys_module, proc_modules, builtin)
    assert reason is not None and "modprobe ifb numifbs=0" in reason
    assert len(reason.splitlines()) == 1
    (sys_module / "ifb").mkdir()                                   # loaded
    assert ifb_unavailable(sys_module, proc_modules, builtin) is None
    (sys_module / "ifb").rmdir()
    builtin.write_text("kernel/drivers/net/ifb.ko\n")              # built in
    assert ifb_unavailable(sys_module, proc_modules, builtin) is None
    builtin.write_text("")
    proc_modules.unlink()                                          # no module support
    assert ifb_unavailable(sys_module, proc_modules, builtin) is None
    source = (Path(__file__).parents[1] / "src/linklab/link").rglob("*.py")
    assert not any("modprobe\"" in p.read_text() or "'modprobe'" in p.read_text()
                   for p in source)


def test_a_run_is_kept_by_a_live_owner_or_by_being_detached_and_nothing_else():
    from linklab.link.runs import kept_by

    ended = subprocess.Popen(["true"])
    ended.wait()
    me = {"pid": os.getpid(), "start": process_start_time(os.getpid())}
    gone = {"pid": ended.pid, "start": "1"}
    assert kept_by("r", {"owner": me}) == f"r: owned by live process {os.getpid()}"
    assert kept_by("r", {"owner": gone}) is None             # its owner was killed
    assert kept_by("r", {"owner": {**me, "start": "1"}}) is None   # (a recycled pid)
    detached = "r: made by linklab link up, it stays until linklab link down --name r"
    assert kept_by("r", {"owner": None, "detached": True}) == detached
    assert kept_by("r", {}) == detached          # an older linklab's `link up` run
    # a normal user's link up: kept while its holder (the user namespace) lives
    assert kept_by("r", {"owner": None, "detached": True, "holder": me}) == detached
    assert kept_by("r", {"owner": None, "detached": True, "holder": gone}) is None


def test_the_detached_mark_is_true_or_false_or_refused(tmp_path):
    directory = _state(tmp_path)
    with StateDir.open(directory) as store:
        for value, accepted in ((True, True), (False, True), ("yes", False), (1, False)):
            store.write("j11.json", json.dumps({"version": 2, "name": "j11", "steps": [],
                                                "detached": value}).encode())
            if accepted:
                assert Journal.load(store, "j11").state["detached"] is value
            else:
                with pytest.raises(StateFileError, match="detached is not true or false"):
                    Journal.load(store, "j11")
