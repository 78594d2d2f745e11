"""Zenoh probe across a namespace pair: peer mode over TCP (scouting off, explicit
endpoints) and client mode through a zenoh router started by linklab on the edge host."""

from __future__ import annotations

import pytest

from conftest import require_root
from linklab.brokers import ZenohRouterConfig, render_router_config, start_zenoh_router
from linklab.probes.qos import ROS2_PROFILES, probe_qos_args, unsupported_policies
from linklab.probes.zenoh_probe import ProbeUsageError, _publisher_qos, parse_options
from middleware_pair import (
    ZENOH_PROBE,
    finish,
    link_rx_bytes,
    namespace_pair,
    read_records,
    start,
    wait_for_line,
)


def test_command_line_matches_the_probe_protocol():
    options = parse_options(["pub", "--topic", "chatter", "--type", "Array4k", "--rate", "10",
                             "--count", "5", "--peer", "10.0.0.2", "--records", "x.bin"])
    assert options.size == 4096 and options.peers == ["tcp/10.0.0.2:7447"]
    assert options.key == "rt/chatter"
    # no --qos: ROS 2's default (reliable + BLOCK), unless --system-default leaves it to zenoh
    assert options.reliable is None and not options.system_default
    assert {k: str(v) for k, v in _publisher_qos(options).items()} == {
        "reliability": "Reliability.RELIABLE", "congestion_control": "CongestionControl.BLOCK"}
    options = parse_options(["sub", "--topic", "t", "--type", "Array1k", "--system-default",
                             "--durability", "volatile", "--records", "x.bin"])
    assert options.system_default and options.durability == "volatile"
    assert _publisher_qos(options) == {}
    with pytest.raises(ProbeUsageError, match="client mode"):
        parse_options(["sub", "--topic", "t", "--mode", "client", "--type", "Array1k",
                       "--records", "x.bin"])
    with pytest.raises(ProbeUsageError, match="--size: Array1k carries exactly 1024"):
        parse_options(["sub", "--topic", "t", "--type", "Array1k", "--size", "8",
                       "--records", "x.bin"])
    with pytest.raises(ProbeUsageError, match="--count N or --duration"):
        parse_options(["pub", "--topic", "t", "--type", "Array1k", "--rate", "10",
                       "--records", "x.bin"])
    with pytest.raises(ProbeUsageError, match="without slashes"):
        parse_options(["sub", "--topic", "/a/b", "--type", "Array1k", "--records", "x.bin"])


def test_router_config_has_scouting_off_and_explicit_listen():
    document = render_router_config(ZenohRouterConfig(listen=["tcp/10.0.0.2:7447"]))
    assert document["mode"] == "router"
    assert document["listen"]["endpoints"] == ["tcp/10.0.0.2:7447"]
    assert document["scouting"]["multicast"]["enabled"] is False


def _check_delivery(pub, sub, pub_file, sub_file, count, size):
    assert pub["errors"] == [] and sub["errors"] == [], (pub["_stderr"], sub["_stderr"])
    _, sent = read_records(pub_file)
    _, received = read_records(sub_file)
    assert len(sent) == count
    assert [r[0] for r in received] == list(range(count))
    for _, t_send, t_recv, nbytes in received:
        assert nbytes == size and 0 < t_recv - t_send < 1_000_000_000


@pytest.mark.integration
def test_peer_mode_over_tcp_across_the_pair(tmp_path):
    require_root()
    with namespace_pair("zp") as pair:
        endpoint = f"tcp/{pair.edge_addr}:7447"
        common = ["--topic", "zenoh_peer", "--type", "Array64k", "--mode", "peer"]
        sub = start(pair.edge, [*ZENOH_PROBE, "sub", *common, "--listen", endpoint,
                                "--count", 30, "--duration", 40, "--records", tmp_path / "s.bin"])
        wait_for_line(sub, "subscribed")
        before = link_rx_bytes(pair.edge)
        pub = start(pair.robot, [*ZENOH_PROBE, "pub", *common, "--peer", endpoint,
                                 "--count", 30, "--rate", 30, "--records", tmp_path / "p.bin"])
        pub_summary, sub_summary = finish(pub), finish(sub)
        crossed = link_rx_bytes(pair.edge) - before
    _check_delivery(pub_summary, sub_summary, tmp_path / "p.bin", tmp_path / "s.bin", 30, 65536)
    # every sample crossed the link (zenoh's shared memory between the namespaces is off)
    assert crossed > 30 * 65536 and pub_summary["applied"]["shared_memory"] is False
    applied = pub_summary["applied"]
    assert applied["mode"] == "peer" and applied["scouting_multicast"] is False
    assert applied["links"][0]["dst"] == endpoint  # the pub dialled the sub directly
    assert applied["routers"] == 0 and applied["peers"] == 1
    assert applied["congestion_control"] == "BLOCK"


@pytest.mark.integration
def test_client_mode_through_a_router_on_the_edge_host(tmp_path):
    require_root()
    with namespace_pair("zr") as pair:
        endpoint = f"tcp/{pair.edge_addr}:7447"
        router = start_zenoh_router(ZenohRouterConfig(listen=[endpoint]), tmp_path,
                                    netns=pair.edge)
        try:
            # reliable: zenoh's BLOCK congestion control, so every sample is routed even
            # when the router is starved of CPU (best effort's DROP may then drop one,
            # as it should: seen once under a loaded machine, sample 7 of 10)
            common = ["--topic", "zenoh_router", "--type", "Array1m", "--mode", "client",
                      "--peer", endpoint, "--qos", "reliable"]
            sub = start(pair.edge, [*ZENOH_PROBE, "sub", *common, "--count", 10,
                                    "--duration", 40, "--records", tmp_path / "s.bin"])
            wait_for_line(sub, "subscribed")
            router.mark_cpu()
            before = link_rx_bytes(pair.edge)
            pub = start(pair.robot, [*ZENOH_PROBE, "pub", *common, "--count", 10,
                                     "--rate", 10, "--records", tmp_path / "p.bin"])
            pub_summary, sub_summary = finish(pub), finish(sub)
            usage = router.cpu_since_mark()
            crossed = link_rx_bytes(pair.edge) - before
        finally:
            router.stop()
    _check_delivery(pub_summary, sub_summary, tmp_path / "p.bin", tmp_path / "s.bin", 10,
                    1 << 20)
    applied = pub_summary["applied"]
    assert applied["mode"] == "client" and applied["routers"] == 1
    assert applied["congestion_control"] == "BLOCK" and applied["reliability"] == "RELIABLE"
    # 10 MiB were routed, across the link: the router process did measurable work
    assert usage.cpu_seconds > 0 and crossed > 10 * (1 << 20)


# What the zenoh publisher applies for rclcpp's named profiles (reliability, congestion
# control); system_default leaves both to zenoh: RELIABLE with DROP.
ZENOH_PROFILES = {"default": ("reliable", "BLOCK"), "sensor_data": ("best_effort", "DROP"),
                  "system_default": ("reliable", "DROP")}


@pytest.fixture(scope="module")
def zenoh_pair():
    require_root()
    with namespace_pair("zq") as pair:
        yield pair


@pytest.mark.integration
@pytest.mark.parametrize("profile", sorted(ZENOH_PROFILES))
def test_named_ros2_profile_is_applied_and_read_back(zenoh_pair, tmp_path, profile):
    pair = zenoh_pair
    qos = probe_qos_args(ROS2_PROFILES[profile], "zenoh")  # history/depth left out
    assert "--history" not in qos
    endpoint = f"tcp/{pair.edge_addr}:7447"
    common = ["--topic", f"zenoh_{profile}", "--type", "Array1k", "--mode", "peer", *qos]
    sub = start(pair.edge, [*ZENOH_PROBE, "sub", *common, "--listen", endpoint,
                            "--count", 20, "--duration", 30, "--records", tmp_path / "s.bin"])
    wait_for_line(sub, "subscribed")
    pub = start(pair.robot, [*ZENOH_PROBE, "pub", *common, "--peer", endpoint, "--count", 20,
                             "--rate", 50, "--records", tmp_path / "p.bin"])
    pub_summary, sub_summary = finish(pub), finish(sub)
    _check_delivery(pub_summary, sub_summary, tmp_path / "p.bin", tmp_path / "s.bin", 20, 1024)
    reliability, congestion = ZENOH_PROFILES[profile]
    assert pub_summary["applied"]["ros_qos"] == {
        "reliability": reliability, "history": None, "depth": None, "durability": "volatile",
        "unsupported": unsupported_policies("zenoh", "pub")}
    assert pub_summary["applied"]["congestion_control"] == congestion
    # a zenoh subscriber has no reliability of its own: null, and the summary says why
    assert sub_summary["applied"]["ros_qos"] == {
        "reliability": None, "history": None, "depth": None, "durability": "volatile",
        "unsupported": unsupported_policies("zenoh", "sub")}
    assert set(sub_summary["applied"]["ros_qos"]["unsupported"]) == {"reliability", "history",
                                                                     "depth"}
