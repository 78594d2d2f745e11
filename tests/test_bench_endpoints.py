"""Cells with many endpoints, links and QoS a user writes, gates and the throughput search,
run for real: namespaces, the four middlewares' probes, brokers (root)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import require_root

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[1]


def linklab(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "linklab.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, timeout=timeout,
                          env=dict(os.environ, COLUMNS="200"))


def bench(tmp_path: Path, text: str, *extra, expect: int = 0, timeout=300):
    require_root()
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(text)
    out = tmp_path / "runs"
    result = linklab("bench", scenario, "--out", out, *extra, timeout=timeout)
    assert result.returncode == expect, result.stderr[-3000:]
    (run_dir,) = [p for p in out.iterdir() if (p / "run.json").exists()]
    rows = {r["cell_id"]: r for r in pq.read_table(run_dir / "cells.parquet").to_pylist()}
    streams = pq.read_table(run_dir / "streams.parquet").to_pylist() \
        if (run_dir / "streams.parquet").exists() else []
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    names = json.loads((run_dir / "run.json").read_text())["link_run_names"]
    assert not [n for n in listed.split() if any(f"linklab-{r}-" in n for r in names)]
    return run_dir, rows, streams, result


def summaries(run_dir: Path, cell_id: str) -> dict[str, dict]:
    cell = run_dir / "records" / cell_id
    return {p.stem: json.loads(p.read_text()) for p in cell.glob("*.json")
            if p.stem not in ("counters", "endpoints")}


def test_one_publisher_to_four_subscribers_in_a_star(tmp_path):
    """Paper 002: one publisher in the middle, four subscribers around it; every sample
    reaches every subscriber, and unicast fan-out puts four copies on the centre's wire."""
    run_dir, rows, streams, result = bench(tmp_path, """\
name: fanout
fixed: {link: wifi-ideal, topology: star, subscribers: 4, payload: 4KiB, rate: 20Hz,
        count: 40, warmup: 0.5s, qos: reliable}
axes:
  middleware: [fastdds, cyclonedds]
""")
    assert list(rows) == ["fastdds", "cyclonedds"]
    for cell_id, row in rows.items():
        assert row["status"] == "ok", row["failure_reason"]
        assert (row["topics"], row["subscribers"], row["topology"]) == (1, 4, "star")
        assert row["published"] == 40 and row["expected"] == 160 and row["received"] == 160
        mine = [s for s in streams if s["cell_id"] == cell_id]
        assert sorted(s["subscriber"] for s in mine) == ["robot1", "robot2", "robot3",
                                                        "robot4"]
        assert {s["publisher"] for s in mine} == {"edge"}
        assert all(s["received"] == s["published"] == 40 for s in mine)
        assert all(17 < s["reception_rate_hz"] < 24 for s in mine)
        assert sorted(s["fanout_rank"] for s in mine) == [1, 2, 3, 4]
        assert not math.isnan(row["fanout_step_ms"]) and row["model_fanout_step_ms"] > 0
        # unicast to each subscriber in turn: the centre sent every sample four times
        edge_tx = sum(i["tx_bytes"] for i in row["interfaces"] if i["host"] == "edge"
                      and not i["interface"].endswith(("-ifb0",)))
        assert edge_tx >= 4 * row["bytes_published"], (edge_tx, row["bytes_published"])
        assert row["wire_amplification"] >= 4.0
        hosts = {e["host"] for e in json.loads(
            (run_dir / "records" / cell_id / "endpoints.json").read_text())}
        assert hosts == {"edge", "robot1", "robot2", "robot3", "robot4"}
    report = linklab("report", run_dir)
    assert report.returncode == 0, report.stderr
    assert "robot4" in report.stdout


def test_three_pairs_on_their_own_topics(tmp_path):
    """Paper 001 Fig. 11: three publisher/subscriber pairs between robot and edge."""
    run_dir, rows, streams, _ = bench(tmp_path, """\
name: pairs
fixed: {link: lan-2.5g, pairs: 3, payload: 1KiB, rate: 100Hz, count: 200, warmup: 0.5s}
""")
    (row,) = rows.values()
    assert row["status"] == "ok", row["failure_reason"]
    assert (row["topics"], row["subscribers"]) == (3, 3)
    assert row["published"] == 600 and row["received"] == 600
    assert sorted(s["topic"] for s in streams) == ["p1", "p2", "p3"]
    assert all(s["received"] == 200 and 85 < s["reception_rate_hz"] < 115 for s in streams)
    probes = summaries(run_dir, "cell")
    topics = {probes[f"pub-{t}"]["summary"]["topic"] for t in ("p1", "p2", "p3")}
    assert len(topics) == 3  # three DDS topics, not one


def test_a_traffic_mix_each_topic_its_own_type_payload_rate_and_qos(tmp_path):
    """Paper 001 Table I: what one robot publishes, all at once."""
    run_dir, rows, streams, _ = bench(tmp_path, """\
name: mix
fixed:
  link: ethernet-1g
  duration: 3s
  warmup: 0.5s
  topics:
    - {name: imu, payload: 300B, rate: 500Hz, qos: best_effort}
    - {name: camera, payload: 256KiB, rate: 10Hz, qos: reliable}
    - {name: scan, type: Array16k, rate: 40Hz, qos: reliable, history: keep_last:5}
""")
    (row,) = rows.values()
    assert row["status"] == "ok", row["failure_reason"]
    by_topic = {s["topic"]: s for s in streams}
    for topic, rate, size in (("imu", 500, 300), ("camera", 10, 262144), ("scan", 40, 16384)):
        stream = by_topic[topic]
        assert stream["published"] == 3 * rate, (topic, stream["published"])
        assert 0.85 * rate < stream["reception_rate_hz"] < 1.15 * rate, (topic, stream)
        assert stream["bytes_published"] == 3 * rate * size
    probes = summaries(run_dir, "cell")
    readers = {t: probes[f"sub-{t}-edge"]["summary"]["applied"]["reader"]
               for t in ("imu", "camera", "scan")}
    assert readers["imu"]["reliability"] == "BEST_EFFORT"
    assert readers["camera"]["reliability"] == "RELIABLE"
    assert (readers["camera"]["history"], readers["scan"]["history"]) == ("KEEP_ALL",
                                                                          "KEEP_LAST")
    assert readers["scan"]["depth"] == 5
    assert probes["pub-scan"]["summary"]["type"] == "performance_test_msgs::msg::dds_::Array16k_"


def test_an_inline_link_and_a_preset_file_of_ones_own(tmp_path):
    presets = tmp_path / "team-links.yaml"
    presets.write_text("""\
field-wifi:
  description: our robot's Wi-Fi, measured in the hall
  source: a team's own measurement
  rate: 40Mbit/s
  loss: 10%
""")
    run_dir, rows, streams, _ = bench(tmp_path, """\
name: links
fixed: {payload: 1KiB, rate: 100Hz, count: 300, warmup: 0.5s, qos: best_effort}
axes:
  link:
    - field-wifi
    - {name: hall-lan, rate: 50Mbit/s, loss: 30%}
""", "--presets", presets)
    assert list(rows) == ["field-wifi", "hall-lan"]
    info = json.loads((run_dir / "run.json").read_text())
    for label, loss in (("field-wifi", "10 %"), ("hall-lan", "30 %")):
        spec = info["links"][label]["spec"]
        assert spec["up"]["loss"] == loss and spec["down"]["loss"] == loss
        row = rows[label]
        # best effort over Bernoulli loss: once discovery (which crosses the same loss)
        # has matched the two, each one-packet sample is lost with p -- paper 002's
        # message loss rate (counter gaps) near p, 5 sigma of Binomial over the span
        p = float(loss.split()[0]) / 100
        span = row["received"] / (1 - row["message_loss_rate"])
        sigma = math.sqrt(p * (1 - p) / span)
        assert abs(row["message_loss_rate"] - p) < 5 * sigma, (label, row["message_loss_rate"],
                                                               span)
        assert row["link_dropped_packets"] > 0
    assert info["scenario"]["presets"]["field-wifi"]["rate"] == "40Mbit/s"


def test_gates_pass_and_fail_with_the_cells_and_targets_named(tmp_path):
    run_dir, rows, streams, result = bench(tmp_path, """\
name: gated
fixed: {link: wifi-ideal, payload: 8KiB, rate: 50Hz, count: 100, warmup: 0.5s}
gates:
  reception_rate: ">= 45Hz"
  delivery: ">= 100%"
""")
    (row,) = rows.values()
    assert row["status"] == "ok"
    assert "gate missed" not in result.stderr
    passed = linklab("report", run_dir, "--gate", "latency_p99<=2s")
    assert passed.returncode == 0, passed.stderr
    failed = linklab("report", run_dir, "--gate", "reception_rate>=500Hz",
                     "--gate", "t:latency_max<=1us")
    assert failed.returncode == 1
    lines = [ln for ln in failed.stderr.splitlines() if ln.startswith("gate missed")]
    assert len(lines) == 2, failed.stderr
    assert lines[0].startswith("gate missed: cell topic t subscriber edge: reception_rate "
                               ">= 500Hz (measured ")
    assert "latency_max <= 1us" in lines[1]
    gated = json.loads((run_dir / "gates.json").read_text())
    assert [g["text"] for g in gated["gates"]] == ["reception_rate >= 45Hz",
                                                  "delivery >= 100%"]
    assert gated["missed"] == []


def test_a_gate_missed_by_bench_itself_exits_1(tmp_path):
    _, rows, _, result = bench(tmp_path, """\
name: too-fast
fixed: {link: wifi-ideal, payload: 1KiB, rate: 20Hz, count: 20, warmup: 0.3s}
""", "--gate", "reception_rate>=1kHz", expect=1)
    assert "gate missed: cell topic t subscriber edge: reception_rate >= 1kHz" in result.stderr


def test_the_throughput_search_finds_the_payload_capacity_of_a_rate_limited_link(tmp_path):
    """Paper 001 Fig. 5 on a 20 Mbit/s link, best effort, 16 KiB: the answer lies within
    10 % of what 20 Mbit/s carries in 16 KiB samples once every header is counted; a cell
    at 75 % of it (Fig. 6) then delivers everything."""
    run_dir, rows, streams, _ = bench(tmp_path, """\
name: capacity
fixed: {link: {name: r20, rate: 20Mbit/s}, payload: 16KiB, qos: best_effort, warmup: 0.3s,
        duration: 3s}
axes:
  rate: [max, 75%]
search: {trial: 1.5s, precision: 3%, max_trials: 12}
""", timeout=400)
    search, share = rows["ratemax"], rows["rate75pct"]
    # what the link carries: payload + CDR (4 length + 8 seq + 8 stamp + 4 encapsulation)
    # + RTPS (20 header + 12 INFO_TS + 24 DATA) + UDP 8, in ceil(n / 1480) IP packets of
    # 20 B IPv4 and 14 B Ethernet each (tbf counts frames)
    udp_payload = 16384 + 24 + 56 + 8
    packets = math.ceil(udp_payload / 1480)
    capacity_hz = 20e6 / (8 * (udp_payload + packets * (20 + 14)))
    found = search["search_max_rate_hz"]
    assert abs(found - capacity_hz) / capacity_hz < 0.10, (found, capacity_hz)
    assert search["status"] == "ok" and search["delivery_ratio"] >= 0.999
    assert search["search_trials"] <= 12 and search["search_stop"]
    # what the best trial achieved (issue 37): the rate its publisher wrote and the
    # payload that arrived -- less than the link carries -- the rate asked beside them
    asked = search["search_asked_rate_hz"]
    assert found == search["publish_rate_hz"] == search["rate_hz"]
    assert 0.97 * asked <= found
    assert search["search_max_throughput_bit_s"] == search["goodput_bit_s"] < 20e6
    # the model counts the same bytes: the serialized sample, not only its payload
    assert search["model_capacity_hz"] == pytest.approx(capacity_hz, rel=1e-9)
    trials = json.loads((run_dir / "records" / "ratemax" / "search.json").read_text())
    assert any(not t["sustained"] and t["rate_hz"] > asked for t in trials["trials"])
    best = trials["trials"][trials["best_trial"] - 1]
    assert best["sustained"] and best["rate_hz"] == pytest.approx(asked)
    assert best["goodput_bit_s"] == pytest.approx(search["search_max_throughput_bit_s"])
    assert all(t["goodput_bit_s"] is not None for t in trials["trials"] if t["sustained"])
    assert share["rate_hz"] == pytest.approx(0.75 * found)
    assert share["search_max_rate_hz"] == pytest.approx(found)
    assert share["status"] == "ok" and share["delivery_ratio"] >= 0.999


def test_a_bug_in_linklab_is_an_error_row_not_a_link_failure(tmp_path):
    """A code bug inside one cell ends as a linklab error (its own status, reason and
    traceback); the other cells run and are measured."""
    require_root()
    from linklab.bench.matrix import expand
    from linklab.bench.namespace_environment import LinklabEnvironment
    from linklab.bench.runner import run_cells
    from linklab.bench.spec import parse_scenario
    from linklab.rundir import RunStore

    scenario = parse_scenario("""\
name: bug
fixed: {link: wifi-ideal, rate: 20Hz, count: 20, warmup: 0.3s}
axes:
  payload: [1KiB, 2KiB]
""", "bug.yaml")
    cells = expand(scenario)

    class BuggyEnvironment(LinklabEnvironment):
        def model_amplification(self, cell):
            if cell.payload_bytes == 2048:
                return 1 / 0  # the injected bug
            return super().model_amplification(cell)

    store = RunStore.create(tmp_path / "run", scenario=scenario.to_dict(), options={},
                            planned=[c.cell_id for c in cells], estimated_s=10.0)
    rows = run_cells(store, cells, BuggyEnvironment(), run_tag=f"bug{os.getpid() % 10000}")
    assert [r["status"] for r in rows] == ["ok", "error"]
    assert rows[1]["failure_reason"].startswith("linklab bug: ZeroDivisionError: division by "
                                                "zero (traceback in records/2KiB/error.txt)")
    assert "ZeroDivisionError" in (store.root / "records" / "2KiB" / "error.txt").read_text()
    assert math.isnan(rows[1]["reception_rate_hz"])  # no measurement is kept as a result


def test_ros2_qos_profiles_are_read_back_from_each_middleware(tmp_path):
    """rclcpp's named profiles, applied by all four middlewares and read back from them;
    what a middleware has no such policy for is said, not invented."""
    run_dir, rows, streams, _ = bench(tmp_path, """\
name: qos
fixed: {link: wifi-ideal, payload: 1KiB, rate: 20Hz, count: 20, warmup: 0.3s}
axes:
  middleware: [fastdds, cyclonedds, mqtt, zenoh-peer]
  qos: [sensor_data, default]
""")
    applied = {s["cell_id"]: json.loads(s["applied_qos"]) for s in streams}
    writers = {s["cell_id"]: json.loads(s["pub_applied_qos"]) for s in streams}
    for middleware in ("fastdds", "cyclonedds"):
        sensor = applied[f"{middleware}-sensor_data"]
        assert (sensor["reliability"], sensor["history"], sensor["depth"],
                sensor["durability"]) == ("best_effort", "keep_last", 5, "volatile")
        default = applied[f"{middleware}-default"]
        assert (default["reliability"], default["history"], default["depth"],
                default["durability"]) == ("reliable", "keep_last", 10, "volatile")
        assert sensor["unsupported"] == {}
    for middleware in ("mqtt", "zenoh-peer"):
        sensor, default = writers[f"{middleware}-sensor_data"], writers[f"{middleware}-default"]
        assert (sensor["reliability"], default["reliability"]) == ("best_effort", "reliable")
        assert sensor["history"] is None and sensor["depth"] is None
        assert "history" in sensor["unsupported"] and "depth" in sensor["unsupported"]
    # a zenoh subscriber has no reliability of its own: it says so rather than guess
    assert applied["zenoh-peer-default"]["reliability"] is None
    assert "reliability" in applied["zenoh-peer-default"]["unsupported"]
    assert applied["mqtt-default"]["reliability"] == "reliable"  # the QoS 1 it was granted
    assert all(r["status"] == "ok" for r in rows.values()), \
        {k: r["failure_reason"] for k, r in rows.items()}


def test_a_policy_a_middleware_cannot_take_is_refused_before_anything_runs(tmp_path):
    require_root()
    scenario = tmp_path / "s.yaml"
    scenario.write_text("""\
name: refuse
fixed: {link: wifi-ideal, payload: 1KiB, rate: 20Hz, count: 20, middleware: mqtt,
        durability: transient_local}
""")
    result = linklab("bench", scenario, "--out", tmp_path / "runs")
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "transient_local" in line and "mqtt" in line.lower()
    assert not (tmp_path / "runs").exists()
