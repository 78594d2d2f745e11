"""SIGINT or SIGTERM to `linklab link up` at any moment: either exit 0 with the link up and
listed, or exit 130/143 with nothing left (issue 41, item 3).

The real command runs with one pause hooked in at a known moment (it says "pause" on
stderr, then sleeps); the test sends the signal during the pause. Before the run is
recorded as up, the interrupt undoes everything: no namespace, no interface, nft table or
qdisc in the root namespace, no state file, no helper process. From then on (while the
status is taken, after it is printed) the command ignores it and exits 0 with the link up.
A normal user's `link up` (its link is built and kept by a holder process in a user
namespace) answers the same way. Needs root; own run names and state directories.
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
# it checks the root namespace is unchanged
pytestmark = [pytest.mark.integration, pytest.mark.alone]

PY = sys.executable
LINKLAB = [PY, "-m", "linklab.cli"]

# `linklab ARGS` with a pause at MOMENT (argv[1])
HOOKED = """
import sys, time
from linklab.cli import main
from linklab.cli import link as link_cli
from linklab.link import lifecycle
from linklab.link.namespace_bed import Testbed
from linklab.link.journal import Journal

def pause():
    print("pause", file=sys.stderr, flush=True)
    time.sleep(3)

def hook(owner, attr, before=True, nth=1):
    real, calls = getattr(owner, attr), [0]
    def hooked(*args, **kwargs):
        calls[0] += 1
        if before and calls[0] == nth:
            pause()
        result = real(*args, **kwargs)
        if not before and calls[0] == nth:
            pause()
        return result
    setattr(owner, attr, hooked)

moment = sys.argv[1]
if moment == "start":        # checked everything, made nothing yet
    hook(Journal, "claim")
elif moment == "claimed":    # the state file exists, nothing in it
    hook(Journal, "claim", before=False)
elif moment == "building":   # namespaces made, stages not yet
    hook(Journal, "change", nth=10)
elif moment == "built":      # everything made, not yet recorded as up
    hook(lifecycle, "_build", before=False)
elif moment == "status":     # recorded as up, status not yet taken
    hook(Testbed, "status")
elif moment == "printed":    # the status is printed
    hook(link_cli, "print_json", before=False)
elif moment == "holder":     # (a normal user) its holder is started, not yet heard from
    import subprocess
    class Popen(subprocess.Popen):
        def __init__(self, args, *more, **kwargs):
            super().__init__(args, *more, **kwargs)
            if "linklab.link.userns_holder" in args:
                pause()
    subprocess.Popen = Popen
raise SystemExit(main(sys.argv[2:]))
"""

UNDONE = ("start", "claimed", "building", "built")
KEPT = ("status", "printed")


@pytest.fixture(autouse=True)
def _needs(monkeypatch, tmp_path):
    require_root()
    for tool in ("ip", "tc", "nft", "ethtool", "nsenter", "pgrep"):
        require_tool(tool)
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))


def root_snapshot() -> dict[str, str]:
    """The root namespace's interfaces, routes, nft ruleset and qdiscs."""
    commands = {"links": ["ip", "-d", "link", "show"], "routes": ["ip", "route", "show",
                                                                  "table", "all"],
                "nft": ["nft", "list", "ruleset"], "qdiscs": ["tc", "qdisc", "show"]}
    return {key: subprocess.run(argv, capture_output=True, text=True, check=True).stdout
            for key, argv in commands.items()}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LINKLAB, *args], capture_output=True, text=True, timeout=60)


def processes_naming(name: str) -> list[str]:
    """Processes whose command line names the run (its outage scheduler's names the state
    file), this test's own command aside."""
    found = subprocess.run(["pgrep", "-f", f"{name}[.]json"], capture_output=True, text=True)
    return found.stdout.split()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("moment", UNDONE + KEPT)
def test_a_signal_to_link_up_undoes_it_all_or_changes_nothing(moment, sig):
    name = f"s{os.getpid()}{moment}{int(sig)}"
    state = Path(os.environ["LINKLAB_STATE_DIR"])
    before = root_snapshot()
    proc = subprocess.Popen(
        [PY, "-c", HOOKED, moment, "link", "up", "wifi-mild", "--outage", "100s+1s",
         "--name", name, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stderr is not None
    paused = proc.stderr.readline()
    assert paused.strip() == "pause", paused + proc.stderr.read()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    try:
        if moment in UNDONE:
            assert proc.returncode == 128 + sig, err[-2000:]   # 130 SIGINT, 143 SIGTERM
            assert "Traceback" not in err, err[-2000:]
            assert residue(name) == []
            assert not list(state.glob(f"{name}*"))
            assert processes_naming(name) == []
            assert root_snapshot() == before
        else:
            assert proc.returncode == 0, err[-2000:]
            assert json.loads(out)["name"] == name
            listed = cli("link", "status", "--json")
            assert [s["name"] for s in json.loads(listed.stdout)] == [name]
            recorded = json.loads((state / f"{name}.json").read_text())
            assert recorded["detached"] is True and recorded["owner"] is None
            assert len(residue(name)) == 2 and processes_naming(name)
    finally:
        if (state / f"{name}.json").exists():
            down = cli("link", "down", "--name", name)
            assert down.returncode == 0, down.stderr
    assert residue(name) == [] and processes_naming(name) == []
    assert root_snapshot() == before


# --- a normal user: the link lives in a holder's user namespace --------------------------

def as_nobody(state: Path) -> list[str]:
    return [require_tool("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups",
            "env", f"LINKLAB_STATE_DIR={state}", "HOME=/tmp"]


def holders(name: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", f"linklab.link.userns_holder hold .*{name}"],
                           capture_output=True, text=True)
    return found.stdout.split()


@pytest.fixture
def nobody_state():
    # pytest's tmp_path is private to root; the user needs a state directory of its own
    state = Path(f"/tmp/linklab-test-upsig-{os.getpid()}")
    state.mkdir(mode=0o700, exist_ok=True)
    os.chown(state, 65534, 65534)
    os.chmod(state, 0o700)
    if subprocess.run([*as_nobody(state), "unshare", "--user", "--map-root-user", "--net",
                       "true"], capture_output=True).returncode != 0:
        pytest.skip("no unprivileged user namespaces here (test_link_integration covers "
                    "the one-line refusal)")
    yield state
    for leftover in state.glob("*.json"):   # only if the test failed half-way
        subprocess.run([*as_nobody(state), *LINKLAB, "link", "down", "--name",
                        leftover.stem], capture_output=True, timeout=60)
    subprocess.run(["rm", "-rf", str(state)], check=False)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("moment", ["holder", "printed"])
def test_a_normal_users_link_up_answers_a_signal_the_same_way(nobody_state, moment, sig):
    name = f"u{os.getpid()}{moment}{int(sig)}"
    user = as_nobody(nobody_state)
    proc = subprocess.Popen(
        [*user, PY, "-c", HOOKED, moment, "link", "up", "wifi-mild", "--name", name,
         "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stderr is not None
    paused = proc.stderr.readline()
    assert paused.strip() == "pause", paused + proc.stderr.read()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=90)
    try:
        if moment == "holder":
            assert proc.returncode == 128 + sig, err[-2000:]   # 130 SIGINT, 143 SIGTERM
            assert holders(name) == []   # it took its link down, and is gone
            assert not list(nobody_state.glob(f"{name}*"))
        else:
            assert proc.returncode == 0, err[-2000:]
            assert json.loads(out)["name"] == name
            recorded = json.loads((nobody_state / f"{name}.json").read_text())
            assert recorded["detached"] is True and recorded["owner"] is None
            assert len(holders(name)) == 1
            cleaned = subprocess.run([*user, *LINKLAB, "link", "clean", "--json"],
                                     capture_output=True, text=True, timeout=60)
            assert json.loads(cleaned.stdout)["runs_removed"] == [], cleaned.stderr
            status = subprocess.run([*user, *LINKLAB, "link", "status", "--json"],
                                    capture_output=True, text=True, timeout=60)
            assert [s["name"] for s in json.loads(status.stdout)] == [name]
    finally:
        if (nobody_state / f"{name}.json").exists():
            down = subprocess.run([*user, *LINKLAB, "link", "down", "--name", name],
                                  capture_output=True, text=True, timeout=60)
            assert down.returncode == 0, down.stderr
    assert holders(name) == [] and not list(nobody_state.glob(f"{name}*"))
