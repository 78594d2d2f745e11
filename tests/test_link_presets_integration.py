"""A link from the user's own preset file, with real packets, taken down by another
process that never sees the file. Needs root (namespaces, nft, tc, the emu wire)."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_root, require_tool
from linklab.link import open_run
from linklab.link.journal import process_start_time
from linklab.link.lifecycle import residue

# alone (make test runs it after the others, one at a time): it checks the root
# namespace is unchanged
pytestmark = [pytest.mark.integration, pytest.mark.alone]

PY = sys.executable
LINKLAB = [PY, "-m", "linklab.cli"]
PRESET = """\
# a user's preset file (linklab link up lab-lossy --presets FILE)
lab-lossy:
  description: a lossy lab link
  source: made up for this test
  rate: 50Mbit/s
  loss: 10%
  delay: 5ms
"""


@pytest.fixture(autouse=True)
def _needs(monkeypatch, tmp_path):
    require_root()
    for tool in ("ip", "tc", "nft", "ethtool", "nsenter", "ping"):
        require_tool(tool)
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))


def root_snapshot(run: str) -> dict[str, str]:
    """What must be byte-for-byte the same before up and after down: the root
    namespace, and the namespaces of this run (other engineers' runs come and go)."""
    commands = {"links": ["ip", "-d", "link", "show"],
                "routes": ["ip", "route", "show", "table", "all"],
                "nft": ["nft", "list", "ruleset"], "qdiscs": ["tc", "qdisc", "show"],
                "netns": ["ip", "netns", "list"]}
    out = {key: subprocess.run(argv, capture_output=True, text=True, check=True).stdout
           for key, argv in commands.items()}
    out["netns"] = "\n".join(n for n in out["netns"].splitlines() if f"-{run}-" in n)
    return out


def cli(*args: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*prefix, *LINKLAB, *args], capture_output=True, text=True,
                          timeout=90)


def udp_loss(bed, count: int) -> dict[str, tuple[int, int]]:
    """(sent, received) of a UDP flow in each direction, both at once."""
    ends = {"up": ("robot", "edge", 9101), "down": ("edge", "robot", 9102)}
    receivers = {}
    for direction, (_, dst, port) in ends.items():
        proc = bed.popen(dst, [PY, "-m", "linklab.link.udpflow", "recv", "--port", str(port),
                               "--idle", "1.0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stderr.readline().strip() == "ready"
        receivers[direction] = proc
    senders = {d: bed.popen(src, [PY, "-m", "linklab.link.udpflow", "send", "--to",
                                  bed.hosts[dst].address, "--port", str(port), "--pps", "2000",
                                  "--count", str(count), "--size", "200"],
                            stdout=subprocess.PIPE, text=True)
               for d, (src, dst, port) in ends.items()}
    out = {}
    for direction in ends:
        sent = json.loads(senders[direction].communicate(timeout=60)[0].splitlines()[-1])
        got = json.loads(receivers[direction].communicate(timeout=60)[0].splitlines()[-1])
        out[direction] = (sent["sent"], got["packets"])
    return out


def loss_drops(bed) -> dict[str, int]:
    return {s["direction"]: s["dropped_packets"] for s in bed.counters()["stages"]
            if s["kind"] == "loss"}


def test_a_user_preset_is_applied_and_a_process_without_the_file_takes_it_down(tmp_path):
    name = f"t{os.getpid()}upre"
    before = root_snapshot(name)
    preset_file = tmp_path / "my-presets.yaml"
    preset_file.write_text(PRESET)
    up = cli("link", "up", "lab-lossy", "--presets", str(preset_file), "--name", name,
             "--json")
    assert up.returncode == 0, up.stderr
    try:
        preset_file.unlink()  # from here on, nothing may need the user's file
        status = cli("link", "status", "--name", name, "--json")
        assert status.returncode == 0, status.stderr
        spec = json.loads(status.stdout)["spec"]
        assert spec["preset"] == "lab-lossy" and spec["source"] == "made up for this test"
        for direction in ("up", "down"):
            assert spec[direction] == {"loss": "10 %", "rate": "50 Mbit/s", "delay": "5 ms"}
        stages = json.loads(status.stdout)["counters"]["stages"]
        assert {(s["direction"], s["kind"]) for s in stages} == {
            (d, k) for d in ("up", "down") for k in ("rate", "loss", "delay")}
        bed = open_run(name)  # this process never saw the file either
        ping = bed.run("robot", ["ping", "-c", "10", "-i", "0.1", "-W", "2",
                                 bed.hosts["edge"].address])
        rtt_min = float(re.search(r"= ([\d.]+)/", ping.stdout).group(1))
        print(f"ping through lab-lossy: min RTT {rtt_min} ms (2 x 5 ms delay)")
        assert rtt_min >= 10.0, ping.stdout
        count, p = 4000, 0.10
        before_flow = loss_drops(bed)  # the pings above went through the loss stage too
        flows = udp_loss(bed, count)
        dropped = {d: n - before_flow[d] for d, n in loss_drops(bed).items()}
        bound = 5 * math.sqrt(count * p * (1 - p))  # 5 sigma of Binomial(4000, 0.1): 95
        for direction, (sent, received) in flows.items():
            lost = sent - received
            print(f"{direction}: {lost}/{sent} lost (expected {count * p:.0f} +- {bound:.0f})")
            assert sent == count
            assert abs(lost - count * p) <= bound, (direction, lost)
            assert dropped[direction] == lost  # the loss stage dropped exactly those
        relay_pids = [s["pid"] for s in json.loads(
            (tmp_path / "state" / f"{name}.json").read_text())["steps"]
            if s.get("kind") == "process"]
        assert relay_pids
    finally:
        down = cli("link", "down", "--name", name)
    assert down.returncode == 0, down.stderr
    assert residue(name) == []
    assert not list((tmp_path / "state").glob(f"{name}*"))
    assert all(process_start_time(pid) is None for pid in relay_pids)
    assert root_snapshot(name) == before


@pytest.fixture
def nobody_dir():
    # pytest's tmp_path is private to root; the user needs a directory it can use
    # the state directory of a normal user: its own, 0700 (linklab refuses any other)
    path = Path(f"/tmp/linklab-test-presets-{os.getpid()}")
    path.mkdir(mode=0o700, exist_ok=True)
    os.chown(path, 65534, 65534)
    os.chmod(path, 0o700)
    yield path
    as_nobody = _as_nobody(path)
    for leftover in path.glob("*.json"):  # only if the test failed half-way
        for command in ("down", "clean"):   # (clean leaves a `link up` run alone)
            subprocess.run([*as_nobody, *LINKLAB, "link", command, "--name", leftover.stem],
                           capture_output=True, timeout=60)
    subprocess.run(["rm", "-rf", str(path)], check=False)


def _as_nobody(state: Path) -> tuple[str, ...]:
    return (require_tool("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups",
            "env", f"LINKLAB_STATE_DIR={state}", "HOME=/tmp")


def test_a_normal_users_holder_gets_the_preset_not_the_file(nobody_dir):
    nobody = _as_nobody(nobody_dir)
    if subprocess.run([*nobody, "unshare", "--user", "--map-root-user", "--net", "true"],
                      capture_output=True).returncode != 0:
        pytest.skip("no unprivileged user namespaces here (test_link_integration covers "
                    "the one-line refusal)")
    name = f"t{os.getpid()}upuser"
    preset_file = nobody_dir / "mine.yaml"
    preset_file.write_text("lab-slow:\n  rate: 20Mbit/s\n  loss: up=5%,down=0%\n")
    os.chmod(preset_file, 0o644)
    up = cli("link", "up", "lab-slow", "--presets", str(preset_file), "--name", name,
             "--json", prefix=nobody)
    assert up.returncode == 0, up.stderr
    try:
        preset_file.unlink()
        status = cli("link", "status", "--name", name, "--json", prefix=nobody)
        assert status.returncode == 0, status.stderr
        spec = json.loads(status.stdout)["spec"]
        assert spec["preset"] == "lab-slow"
        assert spec["up"] == {"loss": "5 %", "rate": "20 Mbit/s"}
        assert spec["down"] == {"loss": "0 %", "rate": "20 Mbit/s"}
        ping = cli("link", "exec", "robot", "--name", name, "--", "ping", "-c", "3", "-i",
                   "0.2", "10.77.0.100", prefix=nobody)
        assert "3 packets transmitted" in ping.stdout, ping.stderr
    finally:
        down = cli("link", "down", "--name", name, prefix=nobody)
    assert down.returncode == 0, down.stderr
    assert not list(nobody_dir.glob(f"{name}*"))
    holders = subprocess.run(["pgrep", "-f", f"linklab.link.userns_holder hold .*{name}"],
                             capture_output=True, text=True).stdout.split()
    assert holders == []
