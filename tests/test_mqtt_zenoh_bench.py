"""The benchmark runs the seed-004 middlewares end to end: linklab bench starts the
broker/router on the edge host, the MQTT and Zenoh probes in the hosts, and records
their CPU and the broker's."""

from __future__ import annotations

import json
import math

import pytest

from conftest import require_root
from linklab.bench.matrix import expand
from linklab.bench.spec import load_scenario
from linklab.cli import main


def test_paper_004_scenario_expands_to_the_papers_matrix(repo_root):
    scenario = load_scenario(repo_root / "scenarios" / "paper-004-middlewares.yaml")
    cells = expand(scenario)
    assert len(cells) == 3 * 5 * 10
    assert {c.middleware for c in cells} == {"fastdds", "cyclonedds", "zenoh-peer",
                                             "zenoh-router", "mqtt"}
    sizes = {c.type: c.payload_bytes for c in cells}
    assert sizes["Array1k"] == 1024 and sizes["PointCloud2m"] == 2 * 1024 * 1024
    assert {c.rate_hz for c in cells} == {10.0}


@pytest.mark.integration
def test_bench_runs_mqtt_and_zenoh_with_broker_and_router(tmp_path, capsys):
    require_root()
    scenario = tmp_path / "mw.yaml"
    scenario.write_text("""
name: mw-check
fixed:
  link: ethernet-1g
  type: Array64k
  rate: 20Hz
  count: 40
  warmup: 0.5s
axes:
  middleware: [mqtt, zenoh-peer, zenoh-router, fastdds-secure, mqtt-tls, zenoh-peer-tls]
""")
    assert main(["bench", str(scenario), "--out", str(tmp_path / "runs"), "--json"]) == 0
    rows = {row["middleware"]: row for row in json.loads(capsys.readouterr().out)["cells"]}
    for name, row in rows.items():
        assert row["status"] == "ok", (name, row["failure_reason"])
        assert row["received"] == 40 and row["delivery_ratio"] == 1.0
        assert row["pub_cpu_s"] > 0 and row["sub_cpu_s"] > 0
    # a broker/router ran on the edge host and its CPU time was measured
    # (the kernel's nanosecond run time: relaying 40 x 64 KiB takes a few ms, below the
    # 10 ms tick, and a broker that is gone reads NaN, not 0)
    assert rows["mqtt"]["broker_cpu_s"] > 0 and rows["zenoh-router"]["broker_cpu_s"] > 0
    peer_broker = rows["zenoh-peer"]["broker_cpu_s"]
    assert peer_broker is None or math.isnan(peer_broker)
    # the secured variants really ran secured: TLS transports, a DDS-Security profile
    run = next((tmp_path / "runs").iterdir())
    mqtt_tls = json.loads((run / "records" / "mqtt-tls" / "pub.json").read_text())
    assert mqtt_tls["summary"]["applied"]["transport"] == "tls"
    zenoh_tls = json.loads((run / "records" / "zenoh-peer-tls" / "pub.json").read_text())
    assert zenoh_tls["summary"]["applied"]["transport"] == ["tls"]
    secure_xml = run / "records" / "fastdds-secure" / "keystore" / \
        "fastdds-default-secure-pub.xml"
    assert "builtin.AES-GCM-GMAC" in secure_xml.read_text()


def test_paper_004_report_marks_missing_links_pending_and_failed_cells():
    from linklab.report import paper_004

    ok = {"cell_id": "a", "link": "ethernet-1g", "type": "Array1k", "middleware": "mqtt",
          "status": "ok", "latency_mean_ms": 0.5, "goodput_bit_s": 81920.0,
          "broker_cpu_s": 0.1,
          "_pub": {"cpu_s": 1.2, "wall_s": 10.0, "summary": {"startup_cpu_s": 1.0}},
          "_sub": {"cpu_s": 0.1, "wall_s": 10.0, "summary": {}}}
    failed = dict(ok, cell_id="b", middleware="fastdds", status="failed")
    text = paper_004.render([ok, failed])
    # the broker on the edge host (the default): the paper's MQTT-nobroker column
    assert "| Array1k | — [0.50] / 13.63 | not run / 1.29 | not run / 1.98 | not run / 1.78 | " \
           "0.50 / 89.74 | not run / 91.01 |" in text
    assert "_4g: pending — needs the `4g` preset" in text
    # the Python probe's start-up CPU is not counted against the middleware
    assert "| 2.00 / 1.00 / 1.00 (0.05) |" in text


def test_paper_004_report_shows_every_trial_of_a_repeated_cell():
    from linklab.report import paper_004

    def row(middleware, trial, latency, status="ok"):
        return {"cell_id": f"{middleware}-t{trial}", "link": "ethernet-1g", "type": "Array1k",
                "middleware": middleware, "trial": trial, "status": status,
                "latency_mean_ms": latency, "goodput_bit_s": 81920.0, "received": 100,
                "expected": 100, "delivery_ratio": 1.0}

    # trials out of order in the run's rows: shown in trial order, none dropped
    rows = [row("mqtt", 2, 0.7), row("mqtt", 1, 0.5), row("cyclonedds", 1, 2.0),
            row("cyclonedds-secure", 2, 9.0, "failed"), row("cyclonedds-secure", 1, 8.0)]
    text = paper_004.render(rows[:3])
    assert "| Array1k | not run / 13.63 | 2.00 / 1.29 | not run / 1.98 | not run / 1.78 | " \
           "0.50 · 0.70 / 89.74 | not run / 91.01 |" in text
    assert "one value each, in trial order" in text
    table4 = [[str(getattr(c, "text", c)) for c in r[:4]]
              for r in paper_004.table4(rows).rows]
    assert table4[:3] == [["ethernet", "cyclonedds", "off", "2.00"],
                          ["ethernet", "cyclonedds", "on (trial 1)", "8.00"],
                          ["ethernet", "cyclonedds", "on (trial 2)", "—"]]
