"""Scenarios as a team writes them: endpoints, inline links, link axes, ROS 2 QoS names,
gates and searched rates -- parsed, expanded, and every mistake a one-line file:line error."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest

from linklab.bench import gates as G
from linklab.bench import search as S
from linklab.bench.matrix import expand
from linklab.bench.spec import load_scenario, parse_scenario
from linklab.errors import UsageError
from linklab.model.overhead import WirePath


def cells_of(text: str):
    return expand(parse_scenario(textwrap.dedent(text), "s.yaml"))


def error_of(text: str) -> str:
    with pytest.raises(UsageError) as info:
        expand(parse_scenario(textwrap.dedent(text), "s.yaml"))
    message = str(info.value)
    assert "\n" not in message
    return message


BASE = textwrap.dedent("""\
    name: t
    fixed:
      link: wifi-ideal
      payload: 1KiB
      rate: 50Hz
      count: 10
    """)


# --- endpoints ---------------------------------------------------------------------------

def test_a_cell_without_endpoints_is_one_topic_from_robot_to_edge():
    (cell,) = cells_of(BASE)
    (topic,) = cell.topics
    assert (topic.publisher, topic.subscribers) == ("robot", ("edge",))
    assert (topic.payload_bytes, topic.rate_hz, topic.count) == (1024, 50.0, 10)
    assert topic.history == "keep_all" and topic.qos == "reliable"


def test_pairs_are_independent_topics_on_the_same_hosts():
    (cell,) = cells_of(BASE + "  pairs: 3\n")
    assert [t.name for t in cell.topics] == ["p1", "p2", "p3"]
    assert {(t.publisher, t.subscribers) for t in cell.topics} == {("robot", ("edge",))}
    assert cell.streams == 3


def test_k_subscribers_in_a_star_listen_around_one_publisher_on_edge():
    (cell,) = cells_of(BASE + "  topology: star\n  subscribers: 4\n")
    (topic,) = cell.topics
    assert topic.publisher == "edge"
    assert topic.subscribers == ("robot1", "robot2", "robot3", "robot4")
    assert cell.hosts == 4 and cell.topology == "star" and cell.streams == 4


def test_subscribers_as_an_axis_gives_one_cell_per_count():
    cells = cells_of(BASE + "  topology: star\naxes:\n  subscribers: [1, 4]\n")
    assert [c.streams for c in cells] == [1, 4]
    assert [c.cell_id for c in cells] == ["subscribers1", "subscribers4"]


def test_k_subscribers_on_a_pair_is_an_error_naming_the_line():
    message = error_of(BASE + "  subscribers: 4\n")
    assert message.startswith("s.yaml:7: fixed.subscribers: subscribers: 4 needs 4 "
                              "subscriber hosts; a pair has one")


def test_a_traffic_mix_inherits_what_a_topic_does_not_set():
    cells = cells_of("""\
        name: mix
        fixed:
          link: ethernet-1g
          duration: 2s
          rate: 20Hz
          topics:
            - {name: imu, payload: 300B, rate: 1kHz, qos: best_effort}
            - {name: camera, type: Array1m, qos: default}
            - {name: cmd, from: edge, to: robot, history: keep_last:3}
            - {name: ctl, pairs: 2, durability: transient_local}
        axes:
          payload: [1KiB, 4KiB]
        """)
    assert len(cells) == 2
    topics = {t.name: t for t in cells[1].topics}
    assert list(topics) == ["imu", "camera", "cmd", "ctl_1", "ctl_2"]
    assert topics["imu"].payload_bytes == 300 and topics["imu"].rate_hz == 1000.0
    assert topics["imu"].messages == 2000 and topics["imu"].qos == "best_effort"
    assert topics["camera"].payload_bytes == 1024 * 1024  # the type's own size
    assert topics["camera"].history == "keep_last:10"  # ROS 2's default profile
    assert topics["cmd"].payload_bytes == 4 * 1024  # from the axis
    assert (topics["cmd"].publisher, topics["cmd"].subscribers) == ("edge", ("robot",))
    assert topics["cmd"].history == "keep_last:3" and "history" in topics["cmd"].explicit
    assert topics["ctl_2"].durability == "transient_local"
    assert cells[0].publish_s == 2.0


@pytest.mark.parametrize("topics, where", [
    ("    - {name: a, from: robot7}\n", "s.yaml:8: fixed.topics[0]: host 'robot7' is not "
                                        "in the pair topology"),
    ("    - {name: a}\n    - {name: a}\n", "topic name 'a' is used twice"),
    ("    - {name: 1a}\n", "s.yaml:8: fixed.topics[0].name: '1a' is not a topic name"),
    ("    - {name: a, colour: red}\n", "s.yaml:8: fixed.topics[0].colour: unknown key"),
    ("    - {name: a, to: []}\n", "fixed.topics[0].to: needs at least one subscriber host"),
    ("    - {name: a, qos: loud}\n", "fixed.topics[0].qos: 'loud' is not one of reliable, "
                                     "best_effort, default, sensor_data"),
    ("    - {name: a, depth: 3, history: keep_all}\n", "depth: 3 needs a KEEP_LAST history"),
    ("    - {name: a, durability: forever}\n", "'forever' is not one of volatile, "
                                               "transient_local"),
    ("    - {name: a, from: ap}\n", "host 'ap' is not in the pair topology"),
    ("    - name: a\n      gates: {speed: '>= 3'}\n", "unknown metric 'speed'"),
])
def test_a_malformed_endpoint_list_is_one_line_naming_file_and_line(topics, where):
    text = BASE + "  topics:\n" + textwrap.indent(topics, "  ")
    assert where in error_of(text)


def test_topics_and_shorthands_do_not_mix():
    message = error_of(BASE + "  pairs: 2\n  topics:\n    - {name: a}\n")
    assert "give either topics: or the subscribers:/pairs: shorthands" in message


# --- links ---------------------------------------------------------------------------------

def test_inline_links_and_presets_with_overrides_get_labels_and_ids():
    cells = cells_of("""\
        name: l
        fixed: {payload: 1KiB, rate: 10Hz, count: 5}
        axes:
          link:
            - wifi-ideal
            - {preset: wifi-severe, loss: 10%}
            - {name: lossy-lan, rate: 100Mbit/s, loss: 2%, delay: 2ms}
        """)
    assert [c.link for c in cells] == ["wifi-ideal", "wifi-severe+loss=10%", "lossy-lan"]
    assert [c.cell_id for c in cells] == ["wifi-ideal", "wifi-severe_loss_10pct", "lossy-lan"]
    assert cells[1].link_choice.overrides_dict() == {"loss": "10%"}
    assert cells[2].link_choice.preset is None


def test_a_link_field_swept_as_an_axis():
    cells = cells_of(BASE.replace("  link: wifi-ideal\n", "") +
                     "axes:\n  link: [wifi-ideal]\n  link.loss: [0%, 5%, 20%]\n")
    assert [c.link for c in cells] == ["wifi-ideal+loss=0%", "wifi-ideal+loss=5%",
                                       "wifi-ideal+loss=20%"]
    assert [c.cell_id for c in cells] == ["wifi-ideal-loss0pct", "wifi-ideal-loss5pct",
                                          "wifi-ideal-loss20pct"]


@pytest.mark.parametrize("link, where", [
    ("{loss: 10%, colour: red}", "s.yaml:3: fixed.link.colour: unknown key"),
    ("{preset: wifi-nowhere}", "s.yaml:3: fixed.link.preset: unknown link preset "
                               "'wifi-nowhere'"),
    ("{loss: 300%}", "s.yaml:3: fixed.link.loss:"),
    ("{rate: fast}", "s.yaml:3: fixed.link.rate:"),
    ("{name: x}", "s.yaml:3: fixed.link: an inline link needs a preset or at least one"),
    ("[1, 2]", "s.yaml:3: fixed.link: expected a preset name or a mapping"),
    ("wifi-nowhere", "unknown link preset 'wifi-nowhere'"),
    ("{preset: wifi-severe, tcp_congestion: Cubic!}", "s.yaml:3: fixed.link.tcp_congestion: "
                                                      "expected a TCP congestion control"),
    ("{preset: wifi-severe, tcp_congestion: no_such_cc}",
     "tcp_congestion: 'no_such_cc' is not available in this kernel; available: "),
])
def test_a_malformed_inline_link_is_one_line_naming_file_and_line(link, where):
    text = BASE.replace("link: wifi-ideal", f"link: {link}")
    assert where in error_of(text)


def test_a_link_can_pin_tcp_congestion_control():
    cells = cells_of("""\
        name: l
        fixed: {payload: 1KiB, rate: 10Hz, count: 5}
        axes:
          link: [{preset: wifi-severe, tcp_congestion: reno}]
        """)   # reno: built into every Linux kernel
    assert cells[0].link == "wifi-severe+tcp_congestion=reno"
    assert cells[0].link_choice.overrides_dict() == {"tcp_congestion": "reno"}


def test_an_unknown_link_field_axis_is_an_error():
    assert "unknown link field 'colour'" in error_of(BASE + "axes:\n  link.colour: [red]\n")


# --- QoS -----------------------------------------------------------------------------------

@pytest.mark.parametrize("qos, history, explicit", [
    ("default", "keep_last:10", set()),
    ("sensor_data", "keep_last:5", set()),
    ("parameters", "keep_last:1000", set()),
    ("services_default", "keep_last:10", set()),
    ("system_default", "system_default", set()),
    ("reliable", "keep_all", {"reliability"}),
    ("best_effort", "keep_all", {"reliability"}),
])
def test_ros2_qos_profiles_bring_rmw_histories(qos, history, explicit):
    (cell,) = cells_of(BASE + f"  qos: {qos}\n")
    assert cell.topics[0].history == history
    assert set(cell.topics[0].explicit) == explicit


def test_explicit_depth_and_durability_win_over_the_profile():
    (cell,) = cells_of(BASE + "  qos: sensor_data\n  depth: 1\n  durability: transient_local\n")
    topic = cell.topics[0]
    assert topic.history == "keep_last:1" and topic.durability == "transient_local"
    assert {"history", "durability"} <= set(topic.explicit)


# --- gates ---------------------------------------------------------------------------------

def test_gates_in_a_scenario_and_on_the_command_line():
    scenario = parse_scenario(BASE + textwrap.dedent("""\
        axes:
          profile: [default, optimized]
        gates:
          - reception_rate: ">= 29Hz"
            latency_p99: "<= 80ms"
          - where: {profile: optimized}
            topic: t
            delivery: ">= 100%"
        """), "s.yaml")
    texts = [(g.text, g.topic, g.where) for g in scenario.gates]
    assert texts == [("reception_rate >= 29Hz", None, ()), ("latency_p99 <= 80ms", None, ()),
                     ("delivery >= 100%", "t", (("profile", "optimized"),))]
    gate = G.parse_cli_gate("camera:latency_p99<=50ms")
    assert (gate.metric, gate.op, gate.target, gate.topic) == ("latency_p99", "<=", 50.0,
                                                               "camera")


@pytest.mark.parametrize("gates, where", [
    ("  speed: '>= 3'\n", "s.yaml:8: gates.speed: unknown metric 'speed'"),
    ("  reception_rate: 30Hz\n", "s.yaml:8: gates.reception_rate: '30Hz' is not a target"),
    ("  reception_rate: '>= fast'\n", "s.yaml:8: gates.reception_rate: reception_rate:"),
    ("  - where: {profile: optimized}\n", "no targets"),
    ("  - where: {payload: 12}\n    delivery: '>= 1%'\n", "gates[0].where.payload: '12' has "
                                                           "no unit"),
])
def test_a_malformed_gate_is_one_line_naming_file_and_line(gates, where):
    assert where in error_of(BASE + "gates:\n" + gates)


@pytest.mark.parametrize("text", ["reception_rate", "rate>=3Hz", "reception_rate=>3Hz",
                                  "latency_p99<=soon"])
def test_a_malformed_cli_gate_is_a_usage_error(text):
    with pytest.raises(UsageError) as info:
        G.parse_cli_gate(text)
    assert str(info.value).startswith("--gate:")


def test_gates_are_checked_per_subscriber_and_per_cell():
    rows = [{"cell_id": "a", "status": "ok", "wire_amplification": 1.8, "profile": "x"},
            {"cell_id": "b", "status": "failed", "failure_reason": "not completed: x",
             "profile": "x"}]
    streams = [
        {"cell_id": "a", "topic": "cam", "subscriber": "robot1", "reception_rate_hz": 30.0,
         "pub_cpu_fraction": 0.2, "sub_cpu_fraction": 0.1},
        {"cell_id": "a", "topic": "cam", "subscriber": "robot2", "reception_rate_hz": 12.5,
         "pub_cpu_fraction": 0.2, "sub_cpu_fraction": 0.9},
    ]
    gates = [G.make_gate("reception_rate", ">= 29Hz"), G.make_gate("cpu", "<= 50%"),
             G.make_gate("wire_amplification", "<= 1.5"),
             G.make_gate("reception_rate", ">= 1Hz", topic="other")]
    misses = [m.line() for m in G.evaluate(gates, rows, streams)]
    assert misses == [
        "gate missed: a topic cam subscriber robot2: reception_rate >= 29Hz "
        "(measured 12.50 Hz)",
        "gate missed: a topic cam subscriber robot2: cpu <= 50% "
        "(measured 90.00 % by the subscriber)",
        "gate missed: a: wire_amplification <= 1.5 (measured 1.800)",
        "gate missed: b: reception_rate >= 29Hz (measured cell failed: not completed: x)",
        "gate missed: b: cpu <= 50% (measured cell failed: not completed: x)",
        "gate missed: b: wire_amplification <= 1.5 (measured cell failed: not completed: x)",
        "gate missed: b topic other: reception_rate >= 1Hz (measured cell failed: "
        "not completed: x)",
    ]


# --- searched rates ------------------------------------------------------------------------

def test_rate_max_and_shares_of_it():
    cells = cells_of(BASE.replace("  rate: 50Hz\n", "") + "axes:\n  rate: [max, 75%]\n")
    assert [c.rate for c in cells] == ["max", "75%"]
    assert cells[0].search and cells[1].rate_fraction == 0.75
    assert [c.cell_id for c in cells] == ["ratemax", "rate75pct"]
    assert "'150%' is outside 0..100%" in error_of(BASE.replace("50Hz", "150%"))


def test_the_search_brackets_then_bisects_to_the_precision():
    capacity = 148.3

    def trial(rate):
        return S.Trial(rate, rate <= capacity, None if rate <= capacity else "lost")

    result = S.search(trial, S.start_rate(16384, capacity), precision=0.03, max_trials=12)
    assert 0.97 * capacity <= result.bracket_hz <= capacity
    assert result.asked_rate_hz == result.bracket_hz
    assert result.stop == "bracket within 3%"
    assert len(result.trials) <= 8 and result.next_failure == "lost"
    nothing = S.search(lambda r: S.Trial(r, False, "no"), 10.0, precision=0.03,
                       max_trials=20)
    assert nothing.max_rate_hz == 0.0 and nothing.best is None
    assert nothing.max_throughput_bit_s == 0.0 and nothing.asked_rate_hz == 0.0


def test_a_trial_is_judged_by_rate_kept_delivery_and_latency_growth():
    ok = {"status": "ok", "publish_rate_hz": 100.0, "delivery_ratio": 1.0,
          "goodput_bit_s": 819200.0, "latency_growth_ms": 0.5, "latency_first_third_ms": 1.0}
    assert S.judge(ok, [], 100.0, reliable=True) is None
    assert "publisher wrote 90.0 Hz" in S.judge(dict(ok, publish_rate_hz=90.0), [], 100.0,
                                                reliable=True)
    assert "latency grew 30.0 ms" in S.judge(dict(ok, latency_growth_ms=30.0), [], 100.0,
                                             reliable=True)
    assert "99.8000% of the samples" in S.judge(dict(ok, delivery_ratio=0.998), [], 100.0,
                                                reliable=False)
    assert S.judge(dict(ok, delivery_ratio=0.9995), [], 100.0, reliable=False) is None
    # best effort over TCP (MQTT QoS 0): everything arrives, later and later -- not sustained
    queued = dict(ok, latency_growth_ms=800.0, latency_first_third_ms=40.0)
    assert "latency grew 800.0 ms" in S.judge(queued, [], 100.0, reliable=False)
    # one subscriber of several falling behind fails the trial
    behind = [{"latency_growth_ms": 0.1, "latency_first_third_ms": 1.0},
              {"latency_growth_ms": 9.0, "latency_first_third_ms": 1.0}]
    assert "latency grew 9.0 ms" in S.judge(ok, behind, 100.0, reliable=False)


def test_a_search_that_sustains_nothing_keeps_what_its_lowest_trial_measured(monkeypatch):
    from linklab.bench import search_cells

    cell = cells_of(BASE.replace("50Hz", "max") + "  qos: best_effort\n")[0]
    lowest = {"status": "ok", "received": 10, "expected": 20, "delivery_ratio": 0.5,
              "sub_udp_rcvbuf_errors": 26}
    trials = [S.Trial(40.0, False, "best effort: 60.0000% ...", {"received": 48}),
              S.Trial(0.5, False, "best effort: 50.0000% ...", lowest, [{"topic": "t"}])]
    monkeypatch.setattr(search_cells, "run_search", lambda *a, **k: S.SearchResult(
        None, trials, "nothing sustained down to 0.5 Hz"))
    monkeypatch.setattr(search_cells, "model_columns", lambda cell, env: {})

    class Store:
        def record_search(self, *args):
            pass

    streams: list = []
    row = search_cells.search_cell(Store(), cell, None, None, None, Path("."), print, streams)
    assert row["status"] == "failed" and row["rate_hz"] == 0.0
    assert row["search_max_rate_hz"] == row["search_max_throughput_bit_s"] == 0.0
    assert row["search_asked_rate_hz"] == 0.0
    assert row["received"] == 10 and row["sub_udp_rcvbuf_errors"] == 26
    assert row["failure_reason"] == ("search: nothing sustained down to 0.5 Hz; lowest "
                                     "trial (0.5 Hz asked): best effort: 50.0000% ...")
    assert row["completion_rule"].startswith("rate: max")
    assert "99.9%" in row["completion_rule"] and streams == [{"topic": "t"}]


def test_the_models_capacity_counts_headers_and_ethernet_frames():
    # the serialized Bytes sample: 16 KiB + CDR encapsulation 4 + seq, send time, length 20
    model = S.model_overhead(16384, 65500, "best_effort", WirePath(1500), 20e6,
                             sample_bytes=16384 + 24)
    assert model["model_ip_packets_per_sample"] == 12
    # one RTPS message (56 B) in one UDP datagram (8 B), 12 IPv4 packets of 20 B
    assert model["model_wire_bytes_per_sample"] == 16384 + 24 + 56 + 8 + 12 * 20
    assert model["model_efficiency"] == 16384 / model["model_wire_bytes_per_sample"]
    frames = model["model_wire_bytes_per_sample"] + 14 * 12
    assert math.isclose(model["model_capacity_hz"], 20e6 / (8 * frames))
    assert math.isclose(model["model_capacity_bit_s"], model["model_capacity_hz"] * 16384 * 8)


def test_the_search_model_counts_the_serialized_sample_of_the_cells_type():
    """The bench's model columns take the serialized sample of the topic's type (a
    PointCloud2 sample carries 153 B besides its points, a Bytes sample 24 B)."""
    from linklab.bench import search_cells

    class Env:
        def link_rate_bits(self, cell):
            return 1e9

        def wire_path(self, cell):
            return WirePath(1500)

    def wire(type_name: str) -> float:
        (cell,) = cells_of(BASE.replace("1KiB", "256B").replace("50Hz", "max")
                           + f"  type: {type_name}\n  middleware: fastdds\n  qos: best_effort\n")
        assert cell.topics[0].type == type_name
        return search_cells.model_columns(cell, Env())["model_wire_bytes_per_sample"]
    assert wire("PointCloud2") - wire("Bytes") == 153 - 24
    assert wire("Bytes") == 256 + 24 + 56 + 8 + 20  # + RTPS, UDP, IPv4


def test_the_model_counts_a_clusters_overlay_and_not_a_path_that_misses_the_link():
    sample = 65536 + 24
    plain = S.model_overhead(65536, 14720, "best_effort", WirePath(1500), 1e9,
                             sample_bytes=sample)
    vxlan = S.model_overhead(65536, 14720, "best_effort", WirePath(1450, vxlan=True), 1e9,
                             sample_bytes=sample)
    # 001 V-A: 50 B per packet, and more packets at the pod MTU 1450 (49 against 45)
    assert (plain["model_ip_packets_per_sample"], vxlan["model_ip_packets_per_sample"]) \
        == (45, 49)
    # five RTPS messages (4 x 14 664 B of the sample + the rest), each RTPS 56 + UDP 8;
    # every packet IPv4 20 + VXLAN 50
    assert vxlan["model_wire_bytes_per_sample"] == sample + 5 * (56 + 8) + 49 * (20 + 50)
    assert vxlan["model_capacity_hz"] < plain["model_capacity_hz"]
    inside = S.model_overhead(65536, 14720, "best_effort", WirePath(1450, bounded=False), 1e9,
                              sample_bytes=sample)
    assert math.isnan(inside["model_capacity_hz"]) and inside["model_wire_bytes_per_sample"]


# --- the file itself -----------------------------------------------------------------------

def test_yaml_tags_and_non_utf8_files_are_one_line_errors(tmp_path):
    assert "s.yaml:5: fixed.rate: the YAML tag '!foo' is not accepted" in error_of(
        BASE.replace("rate: 50Hz", "rate: !foo 50Hz"))
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: t\n# caf\xe9\nfixed: {}\n")
    with pytest.raises(UsageError) as info:
        load_scenario(path)
    assert str(info.value) == f"{path}:2: not UTF-8 text (byte 13); save the scenario as UTF-8"
