"""The discovery gate (bench/discovery_gate.py): a subscriber says when its reader matched,
a publisher holds its first sample until the runner says go.

- the runner's side: subscribers not ready by the timeout are named, and the start file
  is created either way (the publishers never wait forever);
- the probes' side, with the real middlewares between two namespaces: the sub's ready
  file appears once it matched, the pub's once it matched, the pub sends nothing before
  the start file exists and starts within a tick of it (an outage is timed from the go);
  a go before every reader matched starts the pub with those it has;
- the runner waits past the end of an endpoint the gate named (it never matched), so the
  matched subscribers of a cell are measured.
"""

from __future__ import annotations

import contextlib
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
    class Local:   # linklab's namespace testbeds
        gate_files = G.LOCAL

    class Remote:  # a cluster: no gate
        gate_files = None

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


def _plan(**subscribers_of):
    """A cell's endpoints: per topic name, its subscribers' hosts."""
    from linklab.bench.endpoints import Endpoint
    from linklab.bench.topics import Topic

    plan = []
    for name, hosts in subscribers_of.items():
        topic = Topic(name, "edge", tuple(hosts), "Bytes", 64, 10.0, 10.0, "best_effort",
                      "keep_all", None, 10, None)
        plan += [Endpoint("sub", topic, h, f"sub-{name}-{h}", (), (), ()) for h in hosts]
        plan.append(Endpoint("pub", topic, "edge", f"pub-{name}", (), (), ()))
    return plan


def test_a_subscriber_that_never_matched_does_not_end_the_others_streams():
    from linklab.bench.cellrun import unmatched_endpoints

    plan = _plan(t=["robot1", "robot2", "robot3"], u=["robot1"])
    # the gate's list holds publishers not ready too: only subscribers count, and a
    # publisher only when every subscriber of its topic is unmatched
    assert unmatched_endpoints(plan, ["sub-t-robot2", "pub-t"]) == ["sub-t-robot2"]
    assert unmatched_endpoints(plan, ["sub-u-robot1", "sub-t-robot3", "pub-u"]) == [
        "sub-t-robot3", "sub-u-robot1", "pub-u"]
    assert unmatched_endpoints(plan, []) == []


class _Ended:
    """A probe process already ended with ``code`` (None: still running)."""

    def __init__(self, code):
        self.code = code

    def poll(self):
        return self.code

    def sample_memory(self):
        pass


def test_the_cell_waits_past_a_foretold_failure_but_not_past_a_crash():
    from linklab.bench.cellrun import _wait

    pub, matched, lost = _Ended(None), _Ended(None), _Ended(1)
    started = time.monotonic()
    _wait([pub], [matched, lost], time.monotonic() + 0.5, expected_to_fail=[lost])
    assert time.monotonic() - started >= 0.5   # the deadline, not the lost sub's exit
    started = time.monotonic()
    _wait([pub], [matched, lost], time.monotonic() + 5)
    assert time.monotonic() - started < 1      # any other failure ends the cell at once
    crashed = _Ended(2)
    started = time.monotonic()
    _wait([pub], [crashed, lost], time.monotonic() + 5, expected_to_fail=[lost])
    assert time.monotonic() - started < 1


@contextlib.contextmanager
def _sub_then_pub(pair, tmp_path, sub_args, pub_args, ready):
    """Start the sub on edge, then the pub on robot; wait for the sub's ready file; yield
    (pub, sub); kill whatever is still running on the way out. Outputs: sub.out, pub.out."""
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
            yield pub, sub
        finally:
            for child in (pub, sub):
                if child.poll() is None:
                    child.kill()
                    child.wait()


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
        with _sub_then_pub(pair, tmp_path, sub_args, pub_args, ready) as (pub, sub):
            # without the gate 20 samples at 100 Hz and a 1 s linger end in ~2.5 s
            time.sleep(4)
            assert pub.poll() is None, "the publisher did not wait for the go"
            assert pub_ready.exists(), "the publisher never said it matched"
            go_ns = time.monotonic_ns()
            go.touch()
            assert pub.wait(timeout=20) == 0
            assert sub.wait(timeout=20) == 0
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


@pytest.mark.integration
@pytest.mark.parametrize("middleware", ["fastdds", "cyclonedds"])
def test_at_the_go_a_publisher_serves_the_readers_it_matched(tmp_path, middleware):
    """Two subscribers expected, one there: the runner's go (it gave up on the other) starts
    the publisher with the one it matched, which receives every sample; with none matched
    the go ends the publisher at once (no_match), not at its own timeout."""
    require_root()
    from probes_netns import link_pair

    binary = probe_binary(middleware)
    go = tmp_path / "go"
    ready = tmp_path / "sub.ready"
    with link_pair(f"gatp{os.getpid() % 100000}{middleware[0]}") as pair:
        common = dict(topic=f"gatp{os.getpid()}", type="Bytes", size=64, rate_hz=100,
                      count=20, duration_s=None, warmup_s=0, qos_flags=("--qos", "reliable"),
                      profile=None, match_timeout_s=30)
        sub_args = ProbeArgs(role="sub", records=tmp_path / "sub.bin", ready_file=ready,
                             peers=(pair.robot.address,), idle_timeout_s=20,
                             **common).argv(binary)
        pub_args = ProbeArgs(role="pub", records=tmp_path / "pub.bin", start_file=go,
                             ready_file=tmp_path / "pub.ready", subscribers=2,
                             peers=(pair.edge.address,), linger_s=1, **common).argv(binary)
        with _sub_then_pub(pair, tmp_path, sub_args, pub_args, ready) as (pub, sub):
            time.sleep(2)   # the writer has matched its one reader by now
            assert pub.poll() is None, "the publisher left before the go"
            assert not (tmp_path / "pub.ready").exists(), "1 of 2 readers is not ready"
            go.touch()
            assert pub.wait(timeout=20) == 0
            assert sub.wait(timeout=20) == 0
        pub_summary = json.loads((tmp_path / "pub.out").read_text().splitlines()[-1])
        sub_summary = json.loads((tmp_path / "sub.out").read_text().splitlines()[-1])
        assert pub_summary["matched_readers"] == 1 and not pub_summary["errors"]
        assert sub_summary["unique_samples"] == 20

        # nobody there: the go ends the publisher with its error at once
        go.unlink()
        alone_args = ProbeArgs(role="pub", records=tmp_path / "alone.bin", start_file=go,
                               subscribers=2, peers=(pair.edge.address,), linger_s=1,
                               **dict(common, topic=f"gatq{os.getpid()}")).argv(binary)
        with open(tmp_path / "alone.out", "w") as alone_out:
            alone = pair.bed.popen("robot", alone_args, stdout=alone_out)
            try:
                time.sleep(1)
                go.touch()
                went = time.monotonic()
                assert alone.wait(timeout=10) != 0
                assert time.monotonic() - went < 2
            finally:
                if alone.poll() is None:
                    alone.kill()
                    alone.wait()
        summary = json.loads((tmp_path / "alone.out").read_text().splitlines()[-1])
    assert summary["end_reason"] == "no_match"
    assert "before the runner's go" in " ".join(summary["errors"])
