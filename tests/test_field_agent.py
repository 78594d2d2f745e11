"""The pieces that run on the hosts, here on loopback (no root): the agent's exchanges,
the relay's stop and exit status, the keeper's clean-up."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from linklab.bench.host_address import HostSpec
from linklab.field import shell
from linklab.field.hosts import HostSet

HERE = Path(shell.__file__).resolve().parent
PY = sys.executable


def loopback_pair() -> HostSet:
    hosts = HostSet({"a": HostSpec("a", "local", address="127.0.0.1", text="local"),
                     "b": HostSpec("b", "local", address="127.0.0.1", text="local")})
    hosts.open()
    return hosts


@pytest.mark.slow
def test_agents_exchange_clock_probes_and_mtu_on_loopback():
    with loopback_pair() as hosts:
        a, b = hosts["a"], hosts["b"]
        assert a.agent.hello["boot_id"] == b.agent.hello["boot_id"]
        offset = hosts.offset("a", "b")
        assert offset.method == "same kernel" and offset.samples >= 40
        sent = a.agent.call("stream", peer=b.peer(), rate_hz=1000, duration_s=0.5, size=64,
                            drain_s=0.3)
        report = b.agent.call("probe_report")
        got = np.frombuffer(base64.b64decode(report["received"]), dtype=np.uint8)
        assert sent["sent"] == 500 and got.sum() == 500 and report["echoes_sent"] == 500
        assert report["reordered"] == 0 and report["socket_drops"] == 0
        rtt = np.frombuffer(base64.b64decode(sent["rtt_us"]), dtype="<u4")
        assert (rtt != 0xFFFFFFFF).all() and np.median(rtt) < 10_000   # µs, on loopback
        high = a.route["route_mtu"]
        assert a.agent.call("mtu", peer=b.peer(), high=high, tries=3, wait_s=0.3)["pmtu"] == high
        step = a.agent.call("send", peer=b.peer(), rate_bps=20e6, duration_s=0.3, size=1400,
                            step=1)
        time.sleep(0.2)
        counted = b.agent.call("step_report", step=1, skip_s=0.09)
        assert counted["received"] == step["sent"]
        assert abs(counted["rate_bps"] - 20e6) < 0.25 * 20e6


def relay(argv: list[str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen([PY, str(HERE / "relay.py"), "--", *argv], **kwargs)


def test_the_relay_turns_sigint_into_a_remote_stop_and_keeps_the_exit_status(tmp_path):
    (tmp_path / "pids").mkdir()
    usage = tmp_path / "u.json"
    ready = tmp_path / "probe.ready"
    probe = [PY, "-c", "import pathlib, signal, sys, time\n"
             "signal.signal(signal.SIGINT, lambda *a: (print('{\"stopped\": true}'), "
             f"sys.exit(0)))\npathlib.Path({str(ready)!r}).touch()\ntime.sleep(30)"]
    child = relay([PY, str(HERE / "procwrap.py"), "run", "--usage", str(usage), "--pids",
                   str(tmp_path / "pids"), "--", *probe], stdout=subprocess.PIPE)
    # the stop is sent once the probe answers SIGINT (three Pythons start first: on a busy
    # machine that took longer than the second this test used to wait, and the probe died
    # of the signal before its handler was in place)
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ready.exists(), "the probe did not start"
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=10)
    assert child.returncode == 0 and b'"stopped": true' in out
    assert json.loads(usage.read_text())["exit_code"] == 0
    assert os.listdir(tmp_path / "pids") == []
    # exit statuses: a code as it is; 128 + N (a probe killed by signal N) as that signal
    assert relay(["sh", "-c", "exit 3"]).wait(timeout=10) == 3
    assert relay(["sh", "-c", "exit 139"]).wait(timeout=10) == -signal.SIGSEGV
    killed = tmp_path / "k.json"
    wrapped = relay([PY, str(HERE / "procwrap.py"), "run", "--usage", str(killed), "--pids",
                     str(tmp_path / "pids"), "--", "sh", "-c", "kill -ABRT $$"])
    assert wrapped.wait(timeout=10) == -signal.SIGABRT
    assert json.loads(killed.read_text())["exit_code"] == -signal.SIGABRT


@pytest.mark.slow
def test_the_keeper_ends_what_is_left_and_removes_the_work_directory(tmp_path):
    work = tmp_path / "work"
    (work / "pids").mkdir(parents=True)
    sleeper = subprocess.Popen(["sleep", "30"])
    start = Path(f"/proc/{sleeper.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    (work / "pids" / str(sleeper.pid)).write_text(start)
    (work / "pids" / "1").write_text("not-its-start-time")   # a recycled pid: left alone
    keeper = subprocess.Popen([PY, str(HERE / "procwrap.py"), "keep", str(work)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert keeper.stdout.readline() == b"ready\n"
    keeper.stdin.close()
    assert keeper.wait(timeout=10) == 0
    assert sleeper.wait(timeout=5) == -signal.SIGINT
    assert not work.exists()


def test_the_discovery_gate_reaches_remote_probes_files_through_the_agents(tmp_path):
    """field/gate_files.py: a probe on a host writes its ready file in its directory there
    and looks for the start file there; the gate sees the one and creates the other only
    through that host's agent, and keeps this machine's paths for probes run here."""
    from linklab.bench import discovery_gate as G
    from linklab.field.gate_files import HostFiles

    cell, there_a, there_b = tmp_path / "cell", tmp_path / "on-a", tmp_path / "on-b"
    for d in (cell, there_a, there_b):
        d.mkdir()
    with loopback_pair() as hosts:
        files = HostFiles()
        files.place(G.ready_path(cell, "sub-up"), hosts["a"], str(there_a / "sub-up.ready"))
        files.place(G.start_path(cell), hosts["a"], str(there_a / "publishers.start"))
        files.place(G.start_path(cell), hosts["b"], str(there_b / "publishers.start"))
        names = ["sub-up", "pub-down"]                     # pub-down runs here
        assert files.ready([G.ready_path(cell, n) for n in names]) == set()
        (cell / "sub-up.ready").touch()                    # the runner's path means nothing
        G.ready_path(cell, "pub-down").touch()             # for sub-up; pub-down's does
        assert files.ready([G.ready_path(cell, n) for n in names]) == {
            G.ready_path(cell, "pub-down")}
        (there_a / "sub-up.ready").touch()
        waiting = G.open_when_ready(cell, names, 5.0, gave_up=lambda: False, files=files)
        assert waiting == []
        assert (there_a / "publishers.start").exists() and (there_b / "publishers.start").exists()
        assert G.start_path(cell).exists()                 # for the publishers run here


AGENT = str(HERE / "agent.py")


class Sink:
    """A UDP socket on loopback that counts what an agent streams to it."""

    def __init__(self):
        import socket

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.peer = list(self.sock.getsockname())

    def first(self, within_s: float) -> bool:
        """Whether a datagram arrives within ``within_s`` (it is consumed)."""
        end = time.monotonic() + within_s
        while time.monotonic() < end:
            try:
                self.sock.recv(2048)
                return True
            except OSError:
                pass
        return False

    def count(self, seconds: float) -> int:
        got, end = 0, time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                self.sock.recv(2048)
                got += 1
            except OSError:
                pass
        return got


def start_stream(send, sink: Sink) -> None:
    """bind, then a 30 s stream towards ``sink`` (its reply never comes: the agent ends)."""
    send({"op": "bind", "session": 7, "address": "127.0.0.1"})
    send({"op": "stream", "peer": sink.peer, "rate_hz": 1000, "duration_s": 30})
    # its first datagram, then its rate: the agent (a Python just started) may take longer
    # than half a second to begin on a busy machine, which says nothing of how it streams
    assert sink.first(30.0), "the agent does not stream"
    assert sink.count(0.5) > 100, "the agent does not stream at its rate"


def gone(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":        # ended, not yet reaped by its parent
            return True
        time.sleep(0.02)
    return False


@pytest.mark.slow
def test_a_streaming_agent_ends_at_once_on_eof_on_quit_and_on_the_loss_of_its_parent():
    sink = Sink()
    for stop in ("eof", "quit"):
        agent = subprocess.Popen([PY, "-u", AGENT], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE)

        def send(msg, agent=agent):
            agent.stdin.write((json.dumps(msg) + "\n").encode())
            agent.stdin.flush()

        start_stream(send, sink)
        if stop == "quit":
            send({"op": "quit"})
        else:
            agent.stdin.close()
        assert agent.wait(timeout=1.0) == 0, stop
        sink.count(0.1)                                     # what was in flight
        assert sink.count(0.5) == 0, stop
    # the parent (an SSH session, or linklab) killed while stdin stays open
    read_end, write_end = os.pipe()
    parent = subprocess.Popen(
        [PY, "-c", "import subprocess, sys\np = subprocess.Popen(sys.argv[1:])\n"
         "print(p.pid, flush=True)\np.wait()", PY, "-u", AGENT],
        stdin=read_end, stdout=subprocess.PIPE)
    os.close(read_end)
    pid = int(parent.stdout.readline())

    def send_piped(msg):
        os.write(write_end, (json.dumps(msg) + "\n").encode())

    try:
        start_stream(send_piped, sink)
        parent.kill()
        parent.wait()
        assert gone(pid, 1.0), "the agent outlived its parent"
        sink.count(0.1)
        assert sink.count(0.5) == 0
    finally:
        os.close(write_end)
        parent.stdout.close()


def test_the_keeper_makes_the_work_directory_and_stops_a_registered_agent():
    """keep --make (run from procwrap.py's text, as over SSH): the directory exists only
    while the keeper does; an agent started with --pids is ended by it (here its stdin
    stays open and its parent alive, so only the keeper can end it)."""
    keeper = subprocess.Popen(shell.keeper_command(), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    ready, _, work = keeper.stdout.readline().decode().partition(" ")
    work = work.strip()
    assert ready == "ready" and work.startswith("/tmp/linklab-field.")
    assert sorted(os.listdir(work)) == ["pids"] and (os.stat(work).st_mode & 0o777) == 0o700
    sink = Sink()
    agent = subprocess.Popen([PY, "-u", AGENT, "--pids", f"{work}/pids"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def send(msg):
        agent.stdin.write((json.dumps(msg) + "\n").encode())
        agent.stdin.flush()

    try:
        start_stream(send, sink)
        assert os.listdir(f"{work}/pids") == [str(agent.pid)]
        keeper.stdin.close()
        assert agent.wait(timeout=1) == -signal.SIGINT
        assert keeper.wait(timeout=5) == 0
        assert not Path(work).exists()
    finally:
        agent.kill()
        agent.wait()
