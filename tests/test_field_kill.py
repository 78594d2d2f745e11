"""A field measurement killed at any moment leaves nothing running on its hosts.

``linklab link measure ssh://robot local`` runs over real OpenSSH (Debian's sshd in the
robot namespace of a testbed, field_sshd.py); linklab runs in the edge namespace. It is
killed -- SIGKILL and SIGINT (Ctrl-C) at each moment, SIGTERM at two -- while the work
directory is set up on robot, as soon as robot's agent has started (preflight), during
the clock exchange, 1 s and 5 s into the probes, and 1 s into a ramp step. Within 2 s of
the signal there must be no agent.py left in robot's namespace, no traffic from it
(robot's interface counters stand still in the second after) and no work directory of
the run on robot (the keeper removed it); the local directories go with linklab's own
clean-up (a signal it handles) or the next session (one it dies of, leftovers.py).
Needs root (namespaces, tc, nft, sshd).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import require_root, require_tool
from field_sshd import SshHosts
from linklab.link import testbed as make_testbed

# alone (make test runs it after the others, one at a time):
# it checks /tmp and every process for what a field run leaves
pytestmark = [pytest.mark.integration, pytest.mark.alone]

REPO = Path(__file__).resolve().parents[1]
LINKLAB = [sys.executable, "-m", "linklab.cli"]
GRACE_S = 2.0          # the agent must be gone this long after the signal
QUIET_PACKETS = 5      # robot's packets in the second after GRACE_S (agent: ~2,000 /s)


def tmp_leftovers() -> set[str]:
    return {p for p in os.listdir("/tmp") if p.startswith(("linklab-field.", "llssh."))}


def cmdlines() -> dict[int, list[bytes]]:
    found = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                found[int(pid)] = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                pass
    return found


def cmdline_pids(text: str) -> list[int]:
    return [pid for pid, argv in cmdlines().items() if text.encode() in b"\0".join(argv)]


@pytest.fixture(scope="module")
def field(tmp_path_factory):
    require_root()
    for tool in ("ip", "tc", "nft", "ssh", "ssh-keygen", "/usr/sbin/sshd"):
        require_tool(tool)
    tmp = tmp_path_factory.mktemp("fieldkill")
    with make_testbed("field-kill", preset_fields={"description": "field kill tests",
                                                   "delay": "2ms"},
                      name=f"fk{os.getpid() % 100000}") as bed:
        ssh = SshHosts(bed, tmp / "ssh", ("robot",), f"k{os.getpid()}").start()
        robot = bed.hosts["robot"]
        netns_inode = os.stat(f"/run/netns/{robot.netns}").st_ino

        def in_robot(pid: int) -> bool:
            try:
                return os.stat(f"/proc/{pid}/ns/net").st_ino == netns_inode
            except OSError:
                return False

        def agents() -> list[int]:
            """agent.py processes (python3 .../agent.py) in robot's network namespace."""
            return [pid for pid, argv in cmdlines().items()
                    if os.path.basename(argv[0]).startswith(b"python")
                    and any(a.endswith(b"/agent.py") for a in argv[1:3]) and in_robot(pid)]

        def setting_up() -> bool:
            """A command of the run's set-up on robot (copying the agent there) runs."""
            return any(b"/tmp/linklab-field." in b" ".join(argv) and in_robot(pid)
                       for pid, argv in cmdlines().items())

        def tx_packets() -> int:
            out = bed.run("robot", ["cat", f"/sys/class/net/{robot.interface}/statistics/"
                                           "tx_packets"], check=True)
            return int(out.stdout)

        def remote_dirs(before: set[str]) -> set[str]:
            """Work directories made on robot by ssh (no owner file: not a local one)."""
            return {n for n in tmp_leftovers() - before if n.startswith("linklab-field.")
                    and not Path("/tmp", n, "owner").exists()}

        yield {"bed": bed, "ssh": ssh, "tmp": tmp, "agents": agents, "tx": tx_packets,
               "remote_dirs": remote_dirs, "setting_up": setting_up}
    assert cmdline_pids(str(ssh.config)) == [], "an ssh process outlived the tests"


class Progress(threading.Thread):
    """linklab's progress lines (stderr), each with the monotonic time it came."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream = stream
        self.lines: list[tuple[float, str]] = []
        self.text = ""

    def run(self) -> None:
        for line in self.stream:
            self.lines.append((time.monotonic(), line))
            self.text += line

    def seen(self, prefix: str) -> float | None:
        return next((t for t, line in self.lines if line.startswith(prefix)), None)


# moment: (command-line settings, the progress line it waits for (or "set-up": the first
# command on robot with the work directory in it; "agent": robot's agent started),
# seconds after it)
MOMENTS = {
    "set-up": (("--duration", "20s"), "set-up", 0.0),
    "agent-started": (("--duration", "20s"), "agent", 0.0),
    "clock": (("--duration", "20s"), "clock:", 0.0),
    "probes+1s": (("--duration", "20s"), "probes:", 1.0),
    "probes+5s": (("--duration", "20s"), "probes:", 5.0),
    "ramp+1s": (("--duration", "1s", "--ramp-step", "10s"), "rate up:", 1.0),
}


CASES = [(moment, sig) for moment in MOMENTS for sig in (signal.SIGKILL, signal.SIGINT)]
CASES += [(moment, signal.SIGTERM) for moment in ("probes+1s", "ramp+1s")]


@pytest.mark.parametrize(("moment", "sig"), CASES,
                         ids=[f"{moment}-{sig.name}" for moment, sig in CASES])
def test_a_killed_measurement_leaves_no_agent_and_no_traffic(field, moment, sig):
    ssh, bed = field["ssh"], field["bed"]
    settings, line, after = MOMENTS[moment]
    before = tmp_leftovers()
    assert field["agents"]() == []
    run = subprocess.Popen(bed.argv("edge", [*LINKLAB, "link", "measure", ssh.url("robot"),
                                             "local", "--probe-rate", "2kHz", *settings]),
                           env=ssh.env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True, cwd=REPO)
    progress = Progress(run.stderr)
    progress.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and run.poll() is None:
            if line == "set-up" and field["setting_up"]() or line == "agent" and \
                    field["agents"]():
                break
            seen = progress.seen(line)
            if seen is not None and time.monotonic() >= seen + after:
                break
            time.sleep(0.01)
        assert run.poll() is None, f"linklab ended before {moment}: {progress.text[-2000:]}"
        assert time.monotonic() < deadline, f"{moment} never came: {progress.text[-2000:]}"
        if line in ("agent", "clock:"):   # the moment's work really ran on robot
            assert field["agents"](), "robot's agent is not running at the moment of the kill"
        killed = time.monotonic()
        run.send_signal(sig)
        while time.monotonic() < killed + GRACE_S and field["agents"]():
            time.sleep(0.05)
        left = field["agents"]()
        waited = time.monotonic() - killed
        code = run.wait(timeout=10)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        progress.join(timeout=5)
        for pid in field["agents"]():   # a failed case must not leave its agent to the next
            os.kill(pid, signal.SIGKILL)
    assert left == [], (f"robot's agent {left} still runs {waited:.1f} s after {sig.name} "
                        f"at {moment}")
    time.sleep(max(0.0, killed + GRACE_S - time.monotonic()))
    first = field["tx"]()
    time.sleep(1.0)
    sent = field["tx"]() - first
    assert sent <= QUIET_PACKETS, f"robot sent {sent} packets in the second after the grace"
    assert field["remote_dirs"](before) == set(), "the run's work directory is left on robot"
    assert cmdline_pids(str(ssh.config)) == [], "an ssh process outlived the killed run"
    assert "Traceback" not in progress.text, progress.text[-2000:]
    if sig == signal.SIGINT:
        assert code == 130, progress.text[-2000:]
    if code >= 0:      # linklab handled the signal: it cleaned up itself
        assert tmp_leftovers() - before == set(), "linklab did not clean its own directories"
    else:              # killed by it: the next session removes the local directories
        assert code == -sig
        from linklab.field import leftovers

        leftovers.sweep()
        assert tmp_leftovers() - before == set()
