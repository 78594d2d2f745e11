"""MQTT probe through a mosquitto broker started by linklab on the edge host."""

from __future__ import annotations

import psutil
import pytest

from conftest import require_root, require_tool
from linklab.brokers import MosquittoConfig, render_mosquitto_conf, start_mosquitto
from linklab.errors import UsageError
from linklab.probes.qos import ROS2_PROFILES, probe_qos_args, unsupported_policies
from middleware_pair import (
    MQTT_PROBE,
    finish,
    link_rx_bytes,
    namespace_pair,
    read_records,
    start,
    wait_for_line,
)


def test_broker_config_allows_large_payloads():
    text = render_mosquitto_conf(MosquittoConfig(address="10.0.0.2", port=1883))
    assert "max_packet_size 16777216" in text
    assert "listener 1883 10.0.0.2" in text
    with pytest.raises(UsageError, match="max_packet_size"):
        render_mosquitto_conf(MosquittoConfig(max_packet_size=0))


@pytest.fixture(scope="module")
def pair_with_broker(tmp_path_factory):
    require_root()
    require_tool("mosquitto")
    if not MQTT_PROBE.exists():
        pytest.fail(f"{MQTT_PROBE} is not built: run scripts/setup.sh")
    workdir = tmp_path_factory.mktemp("mqtt")
    with namespace_pair("q") as pair:
        broker = start_mosquitto(MosquittoConfig(address=pair.edge_addr), workdir,
                                 netns=pair.edge)
        try:
            yield pair, broker, workdir
        finally:
            broker.stop()


def _run(pair, broker, workdir, *, qos: str, type_: str, count: int, rate: int):
    sub_file, pub_file = workdir / f"sub-{qos}-{type_}.bin", workdir / f"pub-{qos}-{type_}.bin"
    common = ["--topic", f"mqtt_{qos}", "--type", type_, "--qos", qos,
              "--peer", f"{pair.edge_addr}:{broker.port}"]
    sub = start(pair.edge, [MQTT_PROBE, "sub", *common, "--count", count,
                            "--duration", 30, "--records", sub_file])
    wait_for_line(sub, "subscribed")
    broker.mark_cpu()
    pub = start(pair.robot, [MQTT_PROBE, "pub", *common, "--count", count, "--rate", rate,
                             "--records", pub_file])
    pub_summary, sub_summary = finish(pub), finish(sub)
    return pub_summary, sub_summary, read_records(pub_file), read_records(sub_file)


@pytest.mark.integration
@pytest.mark.parametrize("qos,mqtt_qos", [("best_effort", 0), ("reliable", 1)])
def test_pub_to_sub_through_broker_on_edge(pair_with_broker, qos, mqtt_qos):
    pair, broker, workdir = pair_with_broker
    pub, sub, (pub_role, sent), (sub_role, received) = _run(
        pair, broker, workdir, qos=qos, type_="Array1k", count=50, rate=50)
    assert pub["errors"] == [] and sub["errors"] == [], (pub, sub)
    assert (pub_role, sub_role) == (1, 0)
    assert pub["applied"]["qos"] == mqtt_qos and sub["applied"]["granted_qos"] == mqtt_qos
    assert pub["applied"]["broker"] == f"{pair.edge_addr}:1883"
    assert len(sent) == 50
    # an ideal link: every sample arrives, in order, once, with its send time
    assert [r[0] for r in received] == list(range(50))
    sent_times = {seq: t for seq, t, _, _ in sent}
    for seq, t_send, t_recv, size in received:
        assert t_send == sent_times[seq] and size == 1024
        assert 0 < t_recv - t_send < 1_000_000_000
    # the CPU linklab measures is the broker's own process, not the `ip netns exec` wrapper
    assert psutil.Process(broker.pid).name() == "mosquitto"


@pytest.mark.integration
def test_one_mebibyte_samples_are_delivered(pair_with_broker):
    pair, broker, workdir = pair_with_broker
    before = link_rx_bytes(pair.edge)
    pub, sub, _, (_, received) = _run(pair, broker, workdir, qos="reliable", type_="Array1m",
                                      count=10, rate=10)
    assert link_rx_bytes(pair.edge) - before > 10 * (1 << 20)  # through the link
    assert sub["errors"] == [], sub
    assert sub["applied"]["broker_maximum_packet_size"] == 16 * 1024 * 1024
    assert [r[0] for r in received] == list(range(10))
    assert {r[3] for r in received} == {1024 * 1024}
    # 10 MiB went through the broker: its CPU time is visible (seed 004 Table 3 counts it)
    usage = broker.cpu_since_mark()
    assert usage.cpu_seconds > 0 and usage.wall_seconds > 0.5


# What MQTT applies for rclcpp's named profiles: the QoS level (1 reliable, 0 best effort;
# system_default leaves it to MQTT: 0); no history; volatile.
MQTT_PROFILES = {"default": ("reliable", 1), "sensor_data": ("best_effort", 0),
                 "system_default": ("best_effort", 0)}


@pytest.mark.integration
@pytest.mark.parametrize("profile", sorted(MQTT_PROFILES))
def test_named_ros2_profile_is_applied_and_read_back(pair_with_broker, profile):
    pair, broker, workdir = pair_with_broker
    qos = probe_qos_args(ROS2_PROFILES[profile], "mqtt")  # history/depth left out
    assert "--history" not in qos
    sub_file, pub_file = workdir / f"sub-{profile}.bin", workdir / f"pub-{profile}.bin"
    common = ["--topic", f"mqtt_{profile}", "--type", "Array1k",
              "--peer", f"{pair.edge_addr}:{broker.port}", *qos]
    sub = start(pair.edge, [MQTT_PROBE, "sub", *common, "--count", 20, "--duration", 30,
                            "--records", sub_file])
    wait_for_line(sub, "subscribed")
    pub = start(pair.robot, [MQTT_PROBE, "pub", *common, "--count", 20, "--rate", 50,
                             "--records", pub_file])
    pub_summary, sub_summary = finish(pub), finish(sub)
    assert pub_summary["errors"] == [] and sub_summary["errors"] == [], (pub_summary,
                                                                         sub_summary)
    reliability, level = MQTT_PROFILES[profile]
    for summary, role in ((pub_summary, "pub"), (sub_summary, "sub")):
        assert summary["applied"]["ros_qos"] == {
            "reliability": reliability, "history": None, "depth": None,
            "durability": "volatile", "unsupported": unsupported_policies("mqtt", role)}
    assert pub_summary["applied"]["qos"] == level
    assert sub_summary["applied"]["granted_qos"] == level
    assert [r[0] for r in read_records(sub_file)[1]] == list(range(20))

