"""The emulator as a wire of ``linklab link``: flags, presets, status, teardown."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import require_root
from linklab.emu.relay import pid_is_relay, relay_binary
from linklab.errors import UsageError
from linklab.link import testbed as link_testbed
from linklab.link.blueprint import design
from linklab.link.impairments import emulator_overrides
from linklab.link.journal import state_dir
from linklab.link.presets import load_presets

# alone (make test runs it after the others, one at a time):
# it times the delay stage (median RTT within 0.3 ms)
pytestmark = pytest.mark.alone


def _linklab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "linklab.cli", *args], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.native
def test_emu_presets_cite_sources_and_choose_the_emu_wire():
    presets = load_presets()
    for name in ("4g", "wifi", "cloud"):  # (wifi-far is the ns-3 medium's: test_radio_spec)
        assert len(presets[name]["source"]) > 80, name
        assert design(name, name="presetcheck").wires["robot-edge"].name == "emu"
    # a preset without emulator fields keeps the kernel veth wire
    assert design("wifi-mild", name="presetcheck").wires["robot-edge"].name == "veth"
    spec = design("4g", name="presetcheck").spec
    assert spec.up.rate_bps == 5.64e6 and spec.down.rate_bps == 12.74e6
    assert spec.up.delay_s == 0.035 and spec.up.jitter_distribution == "normal"


@pytest.mark.native
def test_emu_flags_parse_per_direction(tmp_path):
    trace = tmp_path / "up.trace"
    trace.write_text("1\n")
    got = emulator_overrides(delay="up=30ms,down=20ms", jitter="5ms",
                        loss_model="up=gemodel:1%,30%,down=gemodel:2%,20%",
                        trace=f"{trace},{trace}")
    assert got["delay"] == {"up": "30ms", "down": "20ms"}
    assert got["burst_loss"] == {"up": "gemodel:1%,30%", "down": "gemodel:2%,20%"}
    spec = design(None, name="flagcheck", **got).spec
    assert spec.up.delay_s == 0.030 and spec.down.delay_s == 0.020
    assert spec.down.burst_loss.p == 0.02 and spec.down.burst_loss.loss_bad == 1.0
    assert spec.up.trace == str(trace.resolve())
    with pytest.raises(UsageError, match="--loss-model"):
        emulator_overrides(loss_model="bernoulli:1%")


def test_bad_emu_flag_is_one_line_exit_2_and_builds_nothing():
    name = f"emubad{os.getpid()}"
    result = _linklab("link", "up", "--name", name, "--loss-model", "gemodel:150%")
    assert result.returncode == 2
    assert result.stderr.startswith("linklab: error: --loss-model")
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (state_dir() / f"{name}.json").exists()


@pytest.mark.integration
def test_link_with_delay_and_burst_loss_then_relay_death_means_down():
    require_root()
    relay_binary()
    name = f"emulink{os.getpid()}"
    with link_testbed(None, name=name, delay="20ms", jitter="up=0ms,down=2ms",
                 burst_loss="gemodel:1%,50%,100%,0%") as bed:
        edge = bed.hosts["edge"].address
        out = bed.run("robot", ["ping", "-n", "-i", "0.005", "-c", "1000", "-W", "1",
                                edge]).stdout
        rtts = np.array([float(x) for x in re.findall(r"time=([\d.]+) ms", out)])
        assert 38.0 < np.median(rtts) < 44.0, out[-200:]
        sent, got = map(int, re.search(r"(\d+) packets transmitted, (\d+) received",
                                       out).groups())
        time.sleep(0.3)  # the relay rewrites its counters every 0.1 s
        status = bed.status()
        assert status["links"][0]["wire"] == "emu" and status["links"][0]["state"] == "up"
        kinds = {(s["direction"], s["kind"]): s for s in status["counters"]["stages"]}
        up, down = kinds[("up", "burst_loss")], kinds[("down", "burst_loss")]
        # Gilbert loss p=1 %, r=50 %, all lost in the bad state: ~2 % per direction. Over
        # 1000 pings each direction enters the bad state with probability 1 - 0.99^1000
        # (> 0.9999), and only ICMP crosses the link (static neighbours, no IPv6): every
        # ping lost is one drop the relay counted, requests up, replies down
        assert up["dropped_packets"] > 0 and down["dropped_packets"] > 0
        assert up["dropped_packets"] + down["dropped_packets"] == sent - got
        assert up["passed_packets"] == sent - up["dropped_packets"]
        assert down["passed_packets"] == got
        for direction in ("up", "down"):
            assert kinds[(direction, "delay")]["passed_packets"] > 0
        # kill the relay: the link is down and status says so
        pid = bed.journal.state["emu"]["robot-edge"]["pid"]
        os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            if not pid_is_relay(pid):
                break
            time.sleep(0.02)
        status = bed.status()
        assert status["links"][0]["state"].startswith("down: the link emulator is not running")
        assert bed.run("robot", ["ping", "-c", "2", "-W", "1", edge]).returncode != 0
        cli = _linklab("link", "status", "--name", name)
        assert "down: the link emulator is not running" in " ".join(cli.stdout.split())
    assert not (state_dir() / f"{name}.json").exists()
    assert not list(state_dir().glob(f"{name}.emu-*"))


@pytest.mark.integration
def test_4g_preset_round_trip_time():
    require_root()
    relay_binary()
    with link_testbed("4g", name=f"emu4g{os.getpid()}") as bed:
        edge = bed.hosts["edge"].address
        out = bed.run("robot", ["ping", "-n", "-i", "0.01", "-c", "300", "-W", "1", edge]).stdout
    rtts = np.array([float(x) for x in re.findall(r"time=([\d.]+) ms", out)])
    # 35 ms each way plus normal jitter (sigma 5 ms) each way, order kept
    assert len(rtts) >= 295
    assert 68.0 < np.median(rtts) < 76.0
