"""Emulated links with real packets: loss, rate, outage, cleanup, bad input.

Needs root (network namespaces, nft, tc). Every test uses its own run names (with the
pid) and its own state directory, and cleans only what it made.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import require_root, require_tool
from linklab.link import testbed as open_testbed
from linklab.link.journal import process_start_time
from linklab.link.lifecycle import residue

# alone (make test runs it after the others, one at a time):
# it checks the root namespace is unchanged
pytestmark = [pytest.mark.integration, pytest.mark.alone]

PY = sys.executable
LINKLAB = [PY, "-m", "linklab.cli"]
RECORD = struct.Struct("<Qqq")


@pytest.fixture(autouse=True)
def _needs(monkeypatch, tmp_path):
    require_root()
    for tool in ("ip", "tc", "nft", "ethtool", "nsenter"):
        require_tool(tool)
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))


def run_name(tag: str) -> str:
    return f"t{os.getpid()}{tag}"


def root_snapshot() -> dict[str, str]:
    """What must be byte-for-byte the same before up and after down."""
    commands = {"links": ["ip", "-d", "link", "show"], "routes": ["ip", "route", "show",
                                                                  "table", "all"],
                "nft": ["nft", "list", "ruleset"], "qdiscs": ["tc", "qdisc", "show"]}
    return {key: subprocess.run(argv, capture_output=True, text=True, check=True).stdout
            for key, argv in commands.items()}


def cli(*args: str, env: dict[str, str] | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LINKLAB, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


# --- flows --------------------------------------------------------------------------------

def start_receiver(bed, host: str, port: int, records: Path | None = None,
                   idle: float = 1.0) -> subprocess.Popen[str]:
    argv = [PY, "-m", "linklab.link.udpflow", "recv", "--port", str(port), "--idle", str(idle)]
    if records:
        argv += ["--records", str(records)]
    proc = bed.popen(host, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert line.strip() == "ready", line
    return proc


def start_sender(bed, host: str, to: str, port: int, **opts: float) -> subprocess.Popen[str]:
    argv = [PY, "-m", "linklab.link.udpflow", "send", "--to", to, "--port", str(port)]
    for key, value in opts.items():
        argv += [f"--{key}", str(value)]
    return bed.popen(host, argv, stdout=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> dict:
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out
    return json.loads(out.strip().splitlines()[-1])


def both_directions(bed, **opts: float) -> dict[str, tuple[dict, dict]]:
    """A flow robot -> edge ("up") and one edge -> robot ("down"), at the same time."""
    robot, edge = bed.hosts["robot"].address, bed.hosts["edge"].address
    rx_up = start_receiver(bed, "edge", 9001)
    rx_down = start_receiver(bed, "robot", 9002)
    tx_up = start_sender(bed, "robot", edge, 9001, **opts)
    tx_down = start_sender(bed, "edge", robot, 9002, **opts)
    return {"up": (finish(tx_up), finish(rx_up)), "down": (finish(tx_down), finish(rx_down))}


# --- loss -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("loss", "tolerance_pp"), [("1%", 0.5), ("20%", 1.5)])
def test_loss_measured_with_udp_matches_the_setting(loss, tolerance_pp):
    want = float(loss.rstrip("%"))
    with open_testbed(None, name=run_name("loss"), loss=loss) as bed:
        flows = both_directions(bed, pps=10000, count=20000, size=200)
        counters = {(s["direction"], s["kind"]): s for s in bed.counters()["stages"]}
    for direction, (sent, received) in flows.items():
        assert sent["sent"] == 20000
        measured = 100.0 * (1 - received["packets"] / sent["sent"])
        print(f"loss {loss} {direction}: measured {measured:.2f} % over {sent['sent']} packets")
        assert abs(measured - want) <= tolerance_pp, (direction, measured)
        # the packets that did not arrive are the ones the loss stage dropped
        stage = counters[(direction, "loss")]
        assert stage["dropped_packets"] == sent["sent"] - received["packets"]


# --- rate ------------------------------------------------------------------------------------

def test_rate_limit_holds_in_both_directions():
    rate = 100e6
    size = 1472  # one full 1500-byte IP packet per datagram
    with open_testbed(None, name=run_name("rate"), rate="100Mbit/s") as bed:
        results = {}
        for direction, (src, dst) in {"up": ("robot", "edge"),
                                      "down": ("edge", "robot")}.items():
            rx = start_receiver(bed, dst, 9003, idle=0.5)
            tx = start_sender(bed, src, bed.hosts[dst].address, 9003, pps=1.4 * rate / 8 / size,
                              seconds=4, size=size)
            finish(tx)
            results[direction] = finish(rx)
    for direction, received in results.items():
        goodput = received["goodput_bps"]
        print(f"rate 100 Mbit/s {direction}: UDP goodput {goodput / 1e6:.1f} Mbit/s")
        assert abs(goodput - rate) <= 0.05 * rate, (direction, goodput)


# --- outage ------------------------------------------------------------------------------------

def read_records(path: Path) -> list[tuple[int, int, int]]:
    data = path.read_bytes()
    return [RECORD.unpack_from(data, i) for i in range(0, len(data), RECORD.size)]


def test_outage_drops_everything_inside_the_window_and_nothing_outside(tmp_path):
    start_s, length_s, pps, margin = 1.0, 2.0, 1000, 100e6
    with open_testbed(None, name=run_name("out"), outage="1s+2s", arm_outage=False) as bed:
        assert bed.outage_t0 is None
        robot, edge = bed.hosts["robot"].address, bed.hosts["edge"].address
        rx = [start_receiver(bed, "edge", 9004, tmp_path / "up.rx", idle=3.0),
              start_receiver(bed, "robot", 9005, tmp_path / "down.rx", idle=3.0)]
        tx = [start_sender(bed, "robot", edge, 9004, pps=pps, seconds=4.5,
                           records=tmp_path / "up.tx"),
              start_sender(bed, "edge", robot, 9005, pps=pps, seconds=4.5,
                           records=tmp_path / "down.tx")]
        time.sleep(0.3)  # senders running
        t0 = bed.arm_outage()
        assert bed.outage_t0 == t0
        for p in tx + rx:
            finish(p)
        events = bed.outage_events()
    on_at = t0 + int(start_s * 1e9)
    off_at = on_at + int(length_s * 1e9)
    assert [e["edge"] for e in events] == ["on", "off"]
    for event, planned in zip(events, (on_at, off_at), strict=True):
        assert event["ok"] and abs(event["after_ns"] - planned) < margin, event
    for direction in ("up", "down"):
        sent = {seq: t for seq, t, _ in read_records(tmp_path / f"{direction}.tx")}
        received = {seq for seq, _, _ in read_records(tmp_path / f"{direction}.rx")}
        lost = sorted(sent[seq] for seq in set(sent) - received)
        inside = [t for t in sent.values() if on_at + margin < t < off_at - margin]
        outside = [t for t in sent.values() if t < on_at - margin or t > off_at + margin]
        assert inside and outside
        lost_inside = sum(1 for t in lost if on_at + margin < t < off_at - margin)
        lost_outside = sum(1 for t in lost if t < on_at - margin or t > off_at + margin)
        print(f"outage {direction}: lost {lost_inside}/{len(inside)} inside, "
              f"{lost_outside}/{len(outside)} outside; first loss "
              f"{(lost[0] - on_at) / 1e6:+.1f} ms, last loss {(lost[-1] - off_at) / 1e6:+.1f} ms"
              " from plan")
        assert lost_inside == len(inside)          # 100 % inside the window
        assert lost_outside == 0                   # 0 % outside it (no loss stage)
        assert abs(lost[0] - on_at) < margin and abs(lost[-1] - off_at) < margin


# --- cleanup ---------------------------------------------------------------------------

def test_cli_session_and_down_leave_the_root_namespace_as_it_was(tmp_path):
    before = root_snapshot()
    name = run_name("cli")
    up = cli("link", "up", "wifi-mild", "--name", name, "--rate", "50Mbit/s",
             "--outage", "30s+1s", "--json")
    assert up.returncode == 0, up.stderr
    status = json.loads(up.stdout)
    assert status["hosts"]["edge"]["address"] == "10.77.0.100"
    kinds = {(s["direction"], s["kind"]) for s in status["counters"]["stages"]}
    assert kinds == {(d, k) for d in ("up", "down") for k in ("outage", "loss", "rate")}
    ping = cli("link", "exec", "robot", "--name", name, "--", "ping", "-c", "3", "-i", "0.2",
               "10.77.0.100")
    # ping exits 0 when at least one reply came back: with 1 % loss each way, all three
    # are lost with probability ~1e-5 -- a failure here means `exec` or the link is broken
    assert ping.returncode == 0, ping.stdout + ping.stderr
    assert "3 packets transmitted" in ping.stdout
    again = cli("link", "status", "--name", name, "--json")
    assert again.returncode == 0
    scheduler_pid = next(s["pid"] for s in json.loads(
        Path(again and json.loads(again.stdout)["state_file"]).read_text())["steps"]
        if s["kind"] == "process")
    down = cli("link", "down", "--name", name)
    assert down.returncode == 0, down.stderr
    assert residue(name) == []
    assert not Path(status["state_file"]).exists()
    assert process_start_time(scheduler_pid) is None
    assert root_snapshot() == before


HOLDER = """
import sys, time
from linklab.link import testbed as open_testbed
from linklab.link.journal import process_start_time
with open_testbed("wifi-mild", name=sys.argv[1], rate="50Mbit/s", outage="30s+5s") as bed:
    print("ready", bed.hosts["edge"].netns, flush=True)
    time.sleep(120)
"""


def start_holder(name: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([PY, "-c", HOLDER, name], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("ready"), line
    return proc


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_to_a_process_holding_a_testbed_tears_it_down(sig):
    before = root_snapshot()
    name = run_name(f"sig{int(sig)}")
    holder = start_holder(name)
    assert len(residue(name)) == 2
    holder.send_signal(sig)
    holder.wait(timeout=30)
    assert residue(name) == []
    assert not list(Path(os.environ["LINKLAB_STATE_DIR"]).glob(f"{name}*"))
    assert root_snapshot() == before


SIGNAL_IN_TEARDOWN = """
import os, signal, sys, threading, time
from linklab.link import testbed as open_testbed
from linklab.link.journal import Journal
# a second thread, as a bench has (its progress bar's): a process-directed signal may be
# taken by it, whatever the main thread's mask (held_signals.py)
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
undo, sent = Journal._undo, []
def undo_after_a_sigterm(self, step):
    if not sent:
        sent.append(step["what"])
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.3)
    return undo(self, step)
Journal._undo = undo_after_a_sigterm
with open_testbed("wifi-mild", name=sys.argv[1], rate="50Mbit/s") as bed:
    print("ready", bed.hosts["edge"].netns, flush=True)
print("the SIGTERM was lost", flush=True)
"""


def test_a_sigterm_during_teardown_takes_effect_after_it():
    """A SIGTERM that comes while the testbed is being taken down (``kill -TERM`` of a
    bench between two cells) lets the teardown finish, then ends the process."""
    before = root_snapshot()
    name = run_name("tdsig")
    proc = subprocess.run([PY, "-c", SIGNAL_IN_TEARDOWN, name], capture_output=True,
                          text=True, timeout=60)
    assert proc.stdout.startswith("ready") and "lost" not in proc.stdout, proc.stdout
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr[-2000:]
    assert residue(name) == []
    assert not list(Path(os.environ["LINKLAB_STATE_DIR"]).glob(f"{name}*"))
    assert root_snapshot() == before


CTRL_C_IN_TEARDOWN = """
import os, signal, sys, threading, time
from linklab.link import testbed as open_testbed
from linklab.link.journal import Journal
from linklab.link.system import Shell
run, undoing, sent = Shell.run, [], []
def slow_run(self, argv, netns=None, **kw):
    # the first command of the teardown runs for a second; a Ctrl-C at the terminal
    # (SIGINT to the whole foreground process group) comes while it runs
    if undoing and not sent:
        sent.append(list(argv))
        argv = ["sh", "-c", 'sleep 1; exec "$@"', "sh", *argv]
        threading.Timer(0.3, os.killpg, (os.getpgrp(), signal.SIGINT)).start()
    return run(self, argv, netns, **kw)
Shell.run = slow_run
undo = Journal._undo
def undo_step(self, step):
    if step["kind"] not in ("process", "files"):
        undoing.append(step["what"])
    return undo(self, step)
Journal._undo = undo_step
with open_testbed("wifi-mild", name=sys.argv[1], rate="50Mbit/s") as bed:
    print("ready", flush=True)
print("the Ctrl-C was lost", sent, flush=True)
"""


def test_a_ctrl_c_at_the_terminal_during_teardown_does_not_cut_its_commands():
    """A Ctrl-C at the terminal reaches the whole foreground process group: the `ip`/`tc`
    command a teardown is running must not die of it (it runs in its own session), and
    the interrupt takes effect once the teardown is done."""
    before = root_snapshot()
    name = run_name("tdint")
    proc = subprocess.run([PY, "-c", CTRL_C_IN_TEARDOWN, name], capture_output=True,
                          text=True, timeout=60, start_new_session=True)
    assert proc.stdout.startswith("ready") and "lost" not in proc.stdout, proc.stdout
    assert proc.returncode in (-signal.SIGINT, 128 + signal.SIGINT), proc.stderr[-2000:]
    assert "teardown incomplete" not in proc.stderr, proc.stderr[-2000:]
    assert residue(name) == []
    assert not list(Path(os.environ["LINKLAB_STATE_DIR"]).glob(f"{name}*"))
    assert root_snapshot() == before


def test_sigkill_then_clean_removes_what_was_left(tmp_path):
    before = root_snapshot()
    name = run_name("kill")
    holder = start_holder(name)
    holder.kill()
    holder.wait(timeout=10)
    assert len(residue(name)) == 2  # SIGKILL leaves the run behind ...
    state = json.loads((Path(os.environ["LINKLAB_STATE_DIR"]) / f"{name}.json").read_text())
    scheduler = next(s["pid"] for s in state["steps"] if s["kind"] == "process")
    # ... and the unscoped, journal-driven clean (over this test's own state directory)
    cleaned = cli("link", "clean", "--journals-only", "--json")
    assert cleaned.returncode == 0, cleaned.stderr
    assert json.loads(cleaned.stdout)["runs_removed"] == [name]
    assert residue(name) == []
    assert process_start_time(scheduler) is None
    assert root_snapshot() == before


CHILD_HOLDER = """
import sys, time
from linklab.link import testbed as open_testbed
with open_testbed(None, name=sys.argv[1]) as bed:
    child = bed.popen("edge", ["sleep", "300"])
    done = bed.run("robot", ["true"])
    print("ready", child.pid, done.returncode, flush=True)
    time.sleep(120)
"""


def test_sigkill_then_clean_ends_the_processes_the_testbed_started_and_nothing_else():
    name = run_name("kchild")
    bystander = subprocess.Popen(["sleep", "300"])  # not started through the testbed
    holder = subprocess.Popen([PY, "-c", CHILD_HOLDER, name], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None
        _, pid, code = holder.stdout.readline().split()
        child = int(pid)
        start = process_start_time(child)
        assert start is not None and code == "0"
        holder.kill()
        holder.wait(timeout=10)
        assert process_start_time(child) == start  # SIGKILL leaves the child running ...
        state = json.loads((Path(os.environ["LINKLAB_STATE_DIR"]) / f"{name}.json").read_text())
        hosted = [s for s in state["steps"] if s["kind"] == "process" and s["role"] == "host"]
        assert [s["pid"] for s in hosted] == [child]  # (the finished `true` was dropped)
        cleaned = cli("link", "clean", "--name", name, "--json")
        assert cleaned.returncode == 0, cleaned.stderr
        assert json.loads(cleaned.stdout)["runs_removed"] == [name]
        assert process_start_time(child) is None  # ... clean ends it
        assert residue(name) == []
        assert bystander.poll() is None  # and nothing else
    finally:
        bystander.kill()
        bystander.wait()


def test_clean_sweeps_an_unrecorded_run_by_name_and_only_that(tmp_path):
    name, other = run_name("orph"), run_name("keep")
    holder = start_holder(name)
    holder.kill()
    holder.wait(timeout=10)
    state = Path(os.environ["LINKLAB_STATE_DIR"]) / f"{name}.json"
    steps = json.loads(state.read_text())["steps"]
    for step in steps:  # the state file is lost (e.g. deleted by hand): stop its scheduler
        if step["kind"] == "process":
            os.kill(step["pid"], signal.SIGKILL)
    state.unlink()
    keep = open_testbed(None, name=other)
    bed = keep.__enter__()
    try:
        # scoped to this test's runs, from another state directory: the orphan goes, the
        # live run (recorded in its own state directory) stays
        cleaned = cli("link", "clean", "--prefix", run_name(""), "--json",
                      env={"LINKLAB_STATE_DIR": str(tmp_path / "elsewhere")})
        assert cleaned.returncode == 0, cleaned.stderr
        assert sorted(json.loads(cleaned.stdout)["namespaces_removed"]) == sorted(
            [f"linklab-{name}-robot", f"linklab-{name}-edge"])
        assert residue(name) == []
        assert len(residue(other)) == 2 and bed.run("robot", ["true"]).returncode == 0
    finally:
        keep.__exit__(None, None, None)
    assert residue(other) == []


# --- bad input ------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["wifi-nope"],
    ["--loss", "150%"],
    ["--rate", "-5Mbit/s"],
    ["--outage", "20s"],
    ["--outage", "ten+20s"],
    ["--topology", "ring"],
    ["--tcp-congestion", "no_such_cc"],
    ["--tcp-congestion", "Cubic!"],
])
def test_bad_input_is_one_line_exit_2_and_builds_nothing(args):
    name = run_name("bad")
    result = cli("link", "up", *args, "--name", name)
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("linklab: error:"), result.stderr
    assert residue(name) == []
    assert not list(Path(os.environ["LINKLAB_STATE_DIR"]).glob(f"{name}*"))


def test_second_up_with_the_same_name_is_refused_and_the_first_survives():
    name = run_name("dup")
    first = cli("link", "up", "--name", name)
    assert first.returncode == 0, first.stderr
    try:
        second = cli("link", "up", "wifi-mild", "--name", name)
        assert second.returncode == 2
        assert len(second.stderr.strip().splitlines()) == 1
        assert "already" in second.stderr
        assert len(residue(name)) == 2
        ping = cli("link", "exec", "robot", "--name", name, "--", "ping", "-c", "1",
                   "10.77.0.100")
        assert ping.returncode == 0, ping.stdout
    finally:
        assert cli("link", "down", "--name", name).returncode == 0
    assert residue(name) == []


# --- TCP congestion control -------------------------------------------------------------

def _host_congestion() -> str:
    return Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()


def _in_netns(bed, host: str) -> str:
    out = bed.run(host, ["cat", "/proc/sys/net/ipv4/tcp_congestion_control"])
    return out.stdout.strip()


def test_a_pinned_congestion_control_is_set_in_every_namespace_and_recorded():
    # a child namespace may take any algorithm of the host's allowed list (reno always is)
    allowed = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read_text().split()
    host_before = _host_congestion()
    wanted = next((cc for cc in allowed if cc != host_before), host_before)
    with open_testbed(None, name=run_name("cc"), topology="chain",
                      tcp_congestion=wanted) as bed:
        for host in ("robot", "ap", "edge"):
            assert _in_netns(bed, host) == wanted
        recorded = bed.status()["tcp_congestion"]
        assert set(recorded) == {"robot", "ap", "edge"}
        assert all(r == {"wanted": wanted, "effective": wanted, "source": "pinned by the link"}
                   for r in recorded.values())
        assert bed.status()["spec"]["tcp_congestion"] == wanted
    assert _host_congestion() == host_before   # the host's own setting is not touched


def test_without_a_pin_the_hosts_default_is_recorded():
    with open_testbed(None, name=run_name("ccd")) as bed:
        recorded = bed.status()["tcp_congestion"]
        for host in ("robot", "edge"):
            assert recorded[host] == {"wanted": None, "effective": _in_netns(bed, host),
                                      "source": "the host's default"}
        assert "tcp_congestion" not in bed.status()["spec"]


# --- topologies ------------------------------------------------------------------------

def test_star_robots_share_one_channel():
    with open_testbed(None, topology="star", hosts=3, name=run_name("star"),
                      rate="30Mbit/s", loss="1%") as bed:
        assert set(bed.hosts) == {"robot1", "robot2", "robot3", "ap", "edge"}
        for robot in ("robot1", "robot2", "robot3"):
            ping = bed.run(robot, ["ping", "-c", "2", "-i", "0.2", "-W", "1",
                                   bed.hosts["edge"].address])
            assert " 0 received" not in ping.stdout, ping.stdout
        kinds = {(s["link"], s["kind"]) for s in bed.counters()["stages"]}
        assert ("ap-edge", "rate") in kinds and ("robot2-ap", "loss") in kinds
        # two robots, each offering 30 Mbit/s, share the 30 Mbit/s channel to the edge.
        # Poisson senders (exponential gaps): even ones lock into phase with the tbf's
        # departures and split the channel by phase, not by load (udpflow docstring).
        edge = bed.hosts["edge"].address
        rx = [start_receiver(bed, "edge", port, idle=0.5) for port in (9011, 9012)]
        tx = [start_sender(bed, robot, edge, port, pps=30e6 / 8 / 1472, seconds=3, size=1472,
                           gaps="exponential", seed=seed)
              for robot, port, seed in (("robot1", 9011, 1), ("robot2", 9012, 2))]
        sent = [finish(p) for p in tx]
        received = [finish(p) for p in rx]
    shares = [r["goodput_bps"] for r in received]
    offered = [s["bytes"] * 8 / ((s["end_ns"] - s["start_ns"]) / 1e9) for s in sent]
    total = sum(shares)
    print(f"star: offered {[round(x / 1e6, 1) for x in offered]} Mbit/s, got "
          f"{[round(x / 1e6, 1) for x in shares]} Mbit/s, total {total / 1e6:.1f} Mbit/s "
          "of a 30 Mbit/s channel")
    assert sum(offered) > 1.2 * 30e6  # the channel was overloaded (else nothing to share)
    assert 0.85 * 30e6 <= total <= 1.05 * 30e6
    # FIFO drop-tail with Poisson arrivals: every packet meets the same chance of a full
    # queue, so each robot keeps its share of what was offered. Over ~7600 packets the
    # binomial spread of a share is 0.6 percentage points; 5 leaves room for the senders'
    # catch-up bursts after a scheduling stall (which are not Poisson).
    for got, wanted in zip(shares, offered, strict=True):
        assert abs(got / total - wanted / sum(offered)) < 0.05, (shares, offered)


def test_chain_routes_through_ap_with_different_up_and_down_rates():
    with open_testbed(None, topology="chain", name=run_name("chain"), mtu=1400,
                      rate="up=20Mbit/s,down=50Mbit/s") as bed:
        edge = bed.hosts["edge"].address
        ping = bed.run("robot", ["ping", "-c", "2", "-i", "0.2", edge])
        assert ping.returncode == 0, ping.stdout
        # MTU 1400 on the path: 1372 B of ICMP payload + 28 B of headers fit, 1373 do not
        fits = bed.run("robot", ["ping", "-c", "1", "-M", "do", "-s", "1372", edge])
        too_big = bed.run("robot", ["ping", "-c", "1", "-M", "do", "-s", "1373", edge])
        assert fits.returncode == 0 and too_big.returncode != 0
        up = _goodput_mtu(bed, "robot", "edge", 9013, 20e6)
        down = _goodput_mtu(bed, "edge", "robot", 9014, 50e6)
    print(f"chain: up {up / 1e6:.1f} Mbit/s (20 set), down {down / 1e6:.1f} Mbit/s (50 set)")
    assert 0.9 * 20e6 <= up <= 1.05 * 20e6
    assert 0.9 * 50e6 <= down <= 1.05 * 50e6


def _goodput_mtu(bed, src: str, dst: str, port: int, rate_bps: float) -> float:
    rx = start_receiver(bed, dst, port, idle=0.5)
    tx = start_sender(bed, src, bed.hosts[dst].address, port, pps=1.3 * rate_bps / 8 / 1372,
                      seconds=3, size=1372)
    finish(tx)
    return finish(rx)["goodput_bps"]


def _as_nobody(state: Path) -> list[str]:
    return [require_tool("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups",
            "env", f"LINKLAB_STATE_DIR={state}", "HOME=/tmp"]


def _holders(name: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", f"linklab.link.userns_holder hold .*{name}"],
                           capture_output=True, text=True)
    return found.stdout.split()


@pytest.fixture
def nobody_state():
    # pytest's tmp_path is private to root; the user needs a state directory of its own
    # (owned by it, 0700: linklab refuses any other)
    state = Path(f"/tmp/linklab-test-nobody-{os.getpid()}")
    state.mkdir(mode=0o700, exist_ok=True)
    os.chown(state, 65534, 65534)
    os.chmod(state, 0o700)
    yield state
    for leftover in state.glob("*.json"):  # only if a test failed half-way
        for command in ("down", "clean"):   # (clean leaves a `link up` run alone)
            subprocess.run([*_as_nobody(state), *LINKLAB, "link", command, "--name",
                            leftover.stem], capture_output=True, timeout=60)
    subprocess.run(["rm", "-rf", str(state)], check=False)


def test_a_normal_user_runs_a_testbed_in_a_user_namespace(nobody_state):
    if subprocess.run([*_as_nobody(nobody_state), "unshare", "--user", "--map-root-user",
                       "--net", "true"], capture_output=True).returncode != 0:
        # no unprivileged user namespaces here: the error must be one line and say why
        result = subprocess.run([*_as_nobody(nobody_state), *LINKLAB, "link", "up"],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
        assert "CAP_NET_ADMIN" in result.stderr
        return
    name = run_name("user")
    user = [*_as_nobody(nobody_state), *LINKLAB, "link"]
    up = subprocess.run([*user, "up", "wifi-mild", "--name", name, "--rate", "50Mbit/s",
                         "--outage", "0.2s+0.2s", "--tcp-congestion", "reno", "--json"],
                        capture_output=True, text=True, timeout=60)
    assert up.returncode == 0, up.stderr
    assert len(_holders(name)) == 1
    # the namespaces belong to the user's namespace: its root may pin TCP there
    assert {h: c["effective"] for h, c in json.loads(up.stdout)["tcp_congestion"].items()} \
        == {"robot": "reno", "edge": "reno"}
    ping = subprocess.run([*user, "exec", "robot", "--name", name, "--", "ping", "-c", "2",
                           "-i", "0.2", "10.77.0.100"], capture_output=True, text=True,
                          timeout=60)
    assert "2 packets transmitted" in ping.stdout, ping.stderr
    status = json.loads(subprocess.run([*user, "status", "--name", name, "--json"],
                                       capture_output=True, text=True, timeout=60).stdout)
    rate = next(s for s in status["counters"]["stages"]
                if s["kind"] == "rate" and s["direction"] == "up")
    assert rate["passed_packets"] >= 2
    assert [(e["edge"], e["ok"]) for e in status["outage"]["events"]] == [("on", True),
                                                                          ("off", True)]
    down = subprocess.run([*user, "down", "--name", name], capture_output=True, text=True,
                          timeout=60)
    assert down.returncode == 0, down.stderr
    assert _holders(name) == [] and not list(nobody_state.glob(f"{name}*"))


def test_a_normal_users_testbed_goes_away_when_its_owner_is_killed(nobody_state):
    if subprocess.run([*_as_nobody(nobody_state), "unshare", "--user", "--map-root-user",
                       "--net", "true"], capture_output=True).returncode != 0:
        pytest.skip("no unprivileged user namespaces (covered by the test above)")
    name = run_name("userkill")
    holder = subprocess.Popen([*_as_nobody(nobody_state), PY, "-c", HOLDER, name],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().startswith("ready")
    assert len(_holders(name)) == 1
    holder.kill()
    holder.wait(timeout=10)
    deadline = time.monotonic() + 15
    while (_holders(name) or list(nobody_state.glob(f"{name}*"))) and \
            time.monotonic() < deadline:
        time.sleep(0.2)
    assert _holders(name) == [] and not list(nobody_state.glob(f"{name}*"))
