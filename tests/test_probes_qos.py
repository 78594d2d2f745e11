"""ROS 2 QoS on the real Fast DDS 2.9 and Cyclone DDS 0.10 probes, across a namespace pair:
rclcpp's named profiles as probe flags (linklab.probes.qos), the summary's
``applied.ros_qos`` read back from the entities, and TRANSIENT_LOCAL durability giving a
late-joining subscriber the history (which VOLATILE does not).

MQTT and Zenoh pairs with named profiles are in test_mqtt_probe.py / test_zenoh_probe.py.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conftest import require_root
from linklab.probes import binary_path
from linklab.probes.qos import ROS2_PROFILES, QosRequest, probe_qos_args
from middleware_pair import finish, namespace_pair, read_records, start, wait_for_line

pytestmark = pytest.mark.integration

DDS = ("fastdds", "cyclonedds")


@pytest.fixture(scope="module")
def pair():
    require_root()
    for mw in DDS:
        binary_path(mw)  # fails naming scripts/setup.sh when not built
    with namespace_pair("qd") as p:
        yield p


def ros_qos(reliability: str, history: str, depth: int | None, durability: str) -> dict:
    return {"reliability": reliability, "history": history, "depth": depth,
            "durability": durability, "unsupported": {}}


# What each middleware applies (read back) for each named profile: rclcpp's values where
# the profile sets them; for system_default each middleware's own defaults, which differ
# between Fast DDS and Cyclone and between reader and writer.
EXPECTED = {
    ("fastdds", "default"): (ros_qos("reliable", "keep_last", 10, "volatile"),) * 2,
    ("cyclonedds", "default"): (ros_qos("reliable", "keep_last", 10, "volatile"),) * 2,
    ("fastdds", "sensor_data"): (ros_qos("best_effort", "keep_last", 5, "volatile"),) * 2,
    ("cyclonedds", "sensor_data"): (ros_qos("best_effort", "keep_last", 5, "volatile"),) * 2,
    ("fastdds", "system_default"): (ros_qos("reliable", "keep_last", 1, "transient_local"),
                                    ros_qos("best_effort", "keep_last", 1, "volatile")),
    ("cyclonedds", "system_default"): (ros_qos("reliable", "keep_last", 1, "volatile"),
                                       ros_qos("best_effort", "keep_last", 1, "volatile")),
}


@pytest.mark.parametrize("middleware, profile", sorted(EXPECTED))
def test_named_profile_is_applied_and_read_back(pair, tmp_path: Path, middleware: str,
                                                profile: str) -> None:
    qos = probe_qos_args(ROS2_PROFILES[profile], middleware)
    exe = binary_path(middleware)
    topic = f"qos_{profile}"
    sub = start(pair.edge, [exe, "sub", "--topic", topic, "--type", "Array1k", "--count", 20,
                            "--idle-timeout", 5, "--records", tmp_path / "s.bin", *qos])
    pub = start(pair.robot, [exe, "pub", "--topic", topic, "--type", "Array1k", "--rate", 50,
                             "--count", 20, "--warmup", 0.3, "--records", tmp_path / "p.bin",
                             *qos])
    pub_summary, sub_summary = finish(pub), finish(sub)
    assert pub_summary["_exit"] == 0 and sub_summary["_exit"] == 0, (
        pub_summary["_stderr"][-1500:], sub_summary["_stderr"][-1500:])
    writer, reader = EXPECTED[(middleware, profile)]
    assert pub_summary["applied"]["ros_qos"] == writer
    assert sub_summary["applied"]["ros_qos"] == reader
    # the detailed read-back agrees with the uniform one
    detail = pub_summary["applied"]["writer"]
    assert (detail["reliability"], detail["durability"]) == (
        writer["reliability"].upper(), writer["durability"].upper())
    # a clean link: the pair works with what was applied
    _, received = read_records(tmp_path / "s.bin")
    assert sorted(r[0] for r in received) == list(range(20))
    if middleware == "fastdds":
        assert sub_summary["polled_samples"] == 0 and "notes" not in sub_summary, sub_summary


def late_joiner(pair, tmp_path: Path, middleware: str, durability: str) -> tuple[int, list]:
    """The publisher sends 60 samples at 20 Hz with nobody listening; a subscriber joins
    about 1 s in. Returns the time it started (CLOCK_MONOTONIC ns) and its records."""
    request = QosRequest("reliable", "keep_last", 100, durability)
    qos = probe_qos_args(request, middleware, frozenset({"history", "depth", "durability"}))
    exe = binary_path(middleware)
    topic = f"late_{durability}"
    pub = start(pair.robot, [exe, "pub", "--topic", topic, "--type", "Array1k", "--rate", 20,
                             "--count", 60, "--subscribers", 0, "--linger", 10,
                             "--records", tmp_path / "p.bin", *qos])
    wait_for_line(pub, "publishing")
    time.sleep(1.0)
    t_join = time.monotonic_ns()
    sub = start(pair.edge, [exe, "sub", "--topic", topic, "--type", "Array1k", "--count", 60,
                            "--idle-timeout", 5, "--records", tmp_path / "s.bin", *qos])
    sub_summary, pub_summary = finish(sub), finish(pub)
    assert pub_summary["_exit"] == 0 and sub_summary["_exit"] == 0, (
        pub_summary["_stderr"][-1500:], sub_summary["_stderr"][-1500:])
    for summary in (pub_summary, sub_summary):
        assert summary["applied"]["ros_qos"] == ros_qos("reliable", "keep_last", 100, durability)
    _, sent = read_records(tmp_path / "p.bin")
    assert len(sent) == 60
    sent_before_join = [seq for seq, t_send, _, _ in sent if t_send < t_join]
    assert len(sent_before_join) >= 10, "the subscriber did not join late"
    return t_join, read_records(tmp_path / "s.bin")[1]


@pytest.mark.parametrize("middleware", DDS)
def test_transient_local_gives_a_late_joiner_the_history(pair, tmp_path: Path,
                                                         middleware: str) -> None:
    t_join, received = late_joiner(pair, tmp_path, middleware, "transient_local")
    # everything, including the samples written before the subscriber process existed
    assert sorted(r[0] for r in received) == list(range(60))
    assert sum(1 for r in received if r[1] < t_join) >= 10


@pytest.mark.parametrize("middleware", DDS)
def test_volatile_gives_a_late_joiner_nothing_from_before(pair, tmp_path: Path,
                                                          middleware: str) -> None:
    t_join, received = late_joiner(pair, tmp_path, middleware, "volatile")
    assert received, "the late joiner got nothing at all"
    assert all(r[1] >= t_join for r in received)  # nothing sent before it started
    assert min(r[0] for r in received) >= 10
