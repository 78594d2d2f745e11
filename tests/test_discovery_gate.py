"""The discovery gate (bench/discovery_gate.py): a subscriber says when its reader matched,
a publisher holds its first sample until the runner says go.

- the runner's side: subscribers not ready by the timeout are named, and the start file
  is created either way (the publishers never wait forever);
- the probes' side, with the real middlewares between two namespaces: the sub's ready
  file appears once it matched, the pub's once it matched, the pub sends nothing before
  the start file exists and starts within a tick of it (an outage is timed from the go).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from conftest import require_root
from linklab.bench import discovery_gate as G
from linklab.bench.metrics import read_records
from linklab.bench.probe_driver import ProbeArgs, probe_binary


def test_the_runner_names_the_subscribers_not_ready_and_opens_the_gate_anyway(tmp_path):
    G.ready_path(tmp_path, "sub1").touch()
    started = time.monotonic()
    waiting = G.open_when_ready(tmp_path, ["sub1", "sub2"], 0.3, gave_up=lambda: False)
    assert waiting == ["sub2"]
    assert 0.3 <= time.monotonic() - started < 2
    assert G.start_path(tmp_path).exists()
    G.clear(tmp_path)
    assert not list(tmp_path.iterdir())


def test_the_gate_opens_at_once_when_a_probe_ended(tmp_path):
    started = time.monotonic()
    waiting = G.open_when_ready(tmp_path, ["sub"], 30, gave_up=lambda: True)
    assert waiting == ["sub"] and time.monotonic() - started < 1
    assert G.start_path(tmp_path).exists()


def test_only_probes_on_this_machine_with_the_flags_are_gated():
    class Local:
        shares_local_files = True

    class Remote:
        pass

    assert G.applies("fastdds", Local()) and G.applies("cyclonedds", Local())
    assert G.applies("fastdds-secure", Local()) and G.applies("mqtt", Local())
    assert not G.applies("zenoh", Local())
    assert not G.applies("fastdds", Remote())


def test_probe_arguments_carry_the_gate_files(tmp_path):
    base = dict(topic="t", type="Bytes", size=8, rate_hz=10, count=1, duration_s=None,
                warmup_s=0, qos_flags=(), profile=None, records=tmp_path / "r.bin")
    sub = ProbeArgs(role="sub", ready_file=tmp_path / "s.ready", **base).argv(Path("p"))
    pub = ProbeArgs(role="pub", start_file=tmp_path / "go", **base).argv(Path("p"))
    assert sub[sub.index("--ready-file") + 1] == str(tmp_path / "s.ready")
    assert pub[pub.index("--start-file") + 1] == str(tmp_path / "go")
    assert "--start-file" not in sub and "--ready-file" not in pub


@pytest.mark.integration
@pytest.mark.parametrize("middleware", ["fastdds", "cyclonedds"])
def test_a_publisher_waits_for_the_go_and_a_subscriber_says_it_matched(tmp_path, middleware):
    require_root()
    from probes_netns import link_pair

    binary = probe_binary(middleware)
    ready, go = tmp_path / "sub.ready", tmp_path / "go"
    pub_ready = tmp_path / "pub.ready"
    with link_pair(f"gate{os.getpid() % 100000}{middleware[0]}") as pair:
        common = dict(topic=f"gate{os.getpid()}", type="Bytes", size=64, rate_hz=100,
                      count=20, duration_s=None, warmup_s=0, qos_flags=("--qos", "reliable"),
                      profile=None)
        sub_args = ProbeArgs(role="sub", records=tmp_path / "sub.bin", ready_file=ready,
                             peers=(pair.robot.address,), idle_timeout_s=20,
                             **common).argv(binary)
        pub_args = ProbeArgs(role="pub", records=tmp_path / "pub.bin", start_file=go,
                             ready_file=pub_ready,
                             peers=(pair.edge.address,), linger_s=1,
                             **common).argv(binary)
        with open(tmp_path / "sub.out", "w") as sub_out, \
                open(tmp_path / "pub.out", "w") as pub_out:
            sub = pair.bed.popen("edge", sub_args, stdout=sub_out)
            time.sleep(0.3)
            pub = pair.bed.popen("robot", pub_args, stdout=pub_out)
            try:
                end = time.monotonic() + 15
                while not ready.exists() and time.monotonic() < end:
                    time.sleep(0.05)
                assert ready.exists(), "the subscriber never said it matched"
                # without the gate 20 samples at 100 Hz and a 1 s linger end in ~2.5 s
                time.sleep(4)
                assert pub.poll() is None, "the publisher did not wait for the go"
                assert pub_ready.exists(), "the publisher never said it matched"
                go_ns = time.monotonic_ns()
                go.touch()
                assert pub.wait(timeout=20) == 0
                assert sub.wait(timeout=20) == 0
            finally:
                for child in (pub, sub):
                    if child.poll() is None:
                        child.kill()
                        child.wait()
        pub_summary = json.loads((tmp_path / "pub.out").read_text().splitlines()[-1])
        sub_summary = json.loads((tmp_path / "sub.out").read_text().splitlines()[-1])
    # held 4 s after the sub matched; the pub waits from its own match (no settle with a
    # gate), which is within a few hundred ms of the sub's
    assert pub_summary["start_wait_s"] >= 3.0
    assert sub_summary["max_matched"] == 1 and sub_summary["match_wait_s"] < 15
    assert sub_summary["unique_samples"] == 20
    received = read_records(tmp_path / "sub.bin")[1]
    first_send = int(received["t_send_ns"].min())
    # every sample was sent after the go: the records' send times (CLOCK_MONOTONIC) span
    # 20 samples at 100 Hz, not the 4 s the publisher was held
    span_s = (int(received["t_send_ns"].max()) - first_send) / 1e9
    assert span_s < 1.0
    # and the first left within a tick of the go: the pub polls the file every 5 ms, then
    # waits for its next 10 ms publish deadline (CLOCK_MONOTONIC, the probes' clock)
    assert 0 <= first_send - go_ns < 50_000_000, (first_send - go_ns) / 1e6
