"""linklab.probes.qos (pure) and the probes' QoS command lines (no middleware traffic)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from linklab.errors import UsageError
from linklab.probes import ProbeCommand, binary_path
from linklab.probes.qos import (
    ROS2_PROFILES,
    QosRequest,
    probe_qos_args,
    refusal,
    ros2_profile,
    unsupported_policies,
)

ALL = frozenset({"reliability", "history", "depth", "durability"})


def test_named_profiles_are_rmw_qos_profiles_h() -> None:
    # ros2/rmw rmw/include/rmw/qos_profiles.h, field by field
    assert ROS2_PROFILES == {
        "default": QosRequest("reliable", "keep_last", 10, "volatile"),
        "sensor_data": QosRequest("best_effort", "keep_last", 5, "volatile"),
        "parameters": QosRequest("reliable", "keep_last", 1000, "volatile"),
        "services_default": QosRequest("reliable", "keep_last", 10, "volatile"),
        "system_default": QosRequest(None, None, None, None, system_default=True),
    }
    assert ros2_profile("sensor_data").depth == 5
    with pytest.raises(UsageError, match="unknown ROS 2 QoS profile 'sensors'.*sensor_data"):
        ros2_profile("sensors")


@pytest.mark.parametrize("probe", ["fastdds", "cyclonedds"])
def test_dds_probes_get_every_policy(probe: str) -> None:
    assert probe_qos_args(ROS2_PROFILES["sensor_data"], probe) == [
        "--qos", "best_effort", "--history", "keep_last:5", "--durability", "volatile"]
    assert probe_qos_args(ROS2_PROFILES["system_default"], probe) == ["--system-default"]
    tl = QosRequest("reliable", "keep_all", None, "transient_local", system_default=True)
    assert probe_qos_args(tl, probe, ALL - {"depth"}) == [
        "--qos", "reliable", "--history", "keep_all", "--durability", "transient_local",
        "--system-default"]
    assert unsupported_policies(probe) == {}


@pytest.mark.parametrize("probe", ["mqtt", "zenoh"])
def test_history_from_a_named_profile_is_left_out_where_there_is_none(probe: str) -> None:
    assert probe_qos_args(ROS2_PROFILES["sensor_data"], probe) == [
        "--qos", "best_effort", "--durability", "volatile"]
    assert probe_qos_args(ROS2_PROFILES["default"], probe, frozenset({"reliability"})) == [
        "--qos", "reliable", "--durability", "volatile"]
    assert set(unsupported_policies(probe, "pub")) == {"history", "depth"}


@pytest.mark.parametrize("probe, name", [("mqtt", "MQTT"), ("zenoh", "zenoh")])
@pytest.mark.parametrize("explicit", ["history", "depth"])
def test_an_explicit_history_is_refused_naming_policy_middleware_and_why(
        probe: str, name: str, explicit: str) -> None:
    request = QosRequest("reliable", "keep_last", 10, "volatile")
    with pytest.raises(UsageError) as error:
        probe_qos_args(request, probe, frozenset({explicit}))
    text = str(error.value)
    assert "\n" not in text and text.startswith(f"{explicit}: {probe} cannot take it: ")
    assert f"{name} pub/sub has no history cache" in text or f"{name} has no history" in text


@pytest.mark.parametrize("probe", ["mqtt", "zenoh"])
def test_transient_local_is_refused_where_nothing_is_kept_for_late_joiners(probe: str) -> None:
    request = QosRequest(durability="transient_local")
    for explicit in (frozenset(), frozenset({"durability"})):
        with pytest.raises(UsageError, match=f"^durability: transient_local on {probe}: .*"
                                             "late-joining subscribers"):
            probe_qos_args(request, probe, explicit)
    assert refusal(probe, "durability", "volatile") is None
    assert refusal("fastdds", "durability", "transient_local") is None


def test_zenoh_subscriber_has_no_reliability_setting() -> None:
    sub = unsupported_policies("zenoh", "sub")
    assert sub["reliability"].startswith("A zenoh 1.x subscriber has no reliability setting")
    assert "reliability" not in unsupported_policies("zenoh", "pub")
    assert "reliability" in unsupported_policies("zenoh")  # either end
    assert "reliability" not in unsupported_policies("mqtt", "sub")


@pytest.mark.parametrize("kwargs, message", [
    ({"reliability": "sometimes"}, "reliability: expected reliable or best_effort"),
    ({"history": "keep_last"}, "depth: keep_last needs a depth"),
    ({"history": "keep_last", "depth": 0}, "depth: keep_last needs a depth 1..1000000"),
    ({"history": "keep_all", "depth": 3}, "depth: a depth goes with history keep_last"),
    ({"depth": 3}, "depth: a depth goes with history keep_last"),
    ({"durability": "transient"}, "durability: expected volatile or transient_local"),
])
def test_bad_requests_are_one_line_usage_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        QosRequest(**kwargs)


def test_bad_probe_and_explicit_names() -> None:
    with pytest.raises(UsageError, match="unknown probe 'zenoh-peer'"):
        probe_qos_args(QosRequest(), "zenoh-peer")
    with pytest.raises(UsageError, match="unknown QoS policy 'lifespan'"):
        probe_qos_args(QosRequest(), "fastdds", frozenset({"lifespan"}))
    with pytest.raises(UsageError, match="durability is named explicit but the request"):
        probe_qos_args(QosRequest(), "fastdds", frozenset({"durability"}))
    with pytest.raises(UsageError, match="role: expected pub or sub"):
        unsupported_policies("mqtt", "both")


def test_probe_command_carries_durability_and_system_default(tmp_path: Path) -> None:
    exe = tmp_path / "probe"
    cmd = ProbeCommand("cyclonedds", "sub", "t", tmp_path / "s.bin", durability="transient_local",
                       system_default=True)
    assert cmd.argv(exe)[-3:] == ["--durability", "transient_local", "--system-default"]


def run_probe(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=30)


def native(probe: str):
    """The built C++ probes (build/probes) are make test's; the Zenoh probe is Python."""
    return probe if probe == "zenoh" else pytest.param(probe, marks=pytest.mark.native)


def probe_argv(probe: str) -> list[str]:
    if probe == "zenoh":
        return [sys.executable, "-m", "linklab.probes.zenoh_probe"]
    return [str(binary_path(probe))]


@pytest.mark.parametrize("probe", [native(p) for p in ["fastdds", "cyclonedds", "mqtt", "zenoh"]])
@pytest.mark.parametrize("args, message", [
    (["--durability", "sometimes"], "--durability: expected 'volatile' or 'transient_local'"),
    (["--system-default=yes"], "--system-default takes no value"),
])
def test_bad_qos_flags_on_every_probe(probe: str, args: list[str], message: str) -> None:
    result = run_probe([*probe_argv(probe), "sub", "--topic", "t", "--type", "Bytes",
                        "--records", "x.bin", *args])
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"linklab-probe-{probe}: error: {message}")


@pytest.mark.parametrize("probe, why", [
    pytest.param("mqtt", "MQTT has no history cache", marks=pytest.mark.native),
    ("zenoh", "zenoh pub/sub has no history cache")])
@pytest.mark.parametrize("history", ["keep_last:10", "keep_all"])
@pytest.mark.parametrize("role", ["pub", "sub"])
def test_mqtt_and_zenoh_refuse_an_explicit_history(probe: str, why: str, history: str,
                                                   role: str) -> None:
    result = run_probe([*probe_argv(probe), role, "--topic", "t", "--type", "Array1k",
                        "--rate", "10", "--count", "5", "--records", "x.bin",
                        "--history", history])
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"linklab-probe-{probe}: error: --history: {why}")


@pytest.mark.parametrize("probe", [native(p) for p in ["mqtt", "zenoh"]])
@pytest.mark.parametrize("role", ["pub", "sub"])
def test_mqtt_and_zenoh_refuse_transient_local(probe: str, role: str) -> None:
    result = run_probe([*probe_argv(probe), role, "--topic", "t", "--type", "Array1k",
                        "--rate", "10", "--count", "5", "--records", "x.bin",
                        "--durability", "transient_local"])
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"linklab-probe-{probe}: error: --durability transient_local: ")
    assert "late-joining subscribers" in lines[0] and "only volatile is possible" in lines[0]
