"""Where the broker/router runs (bench.broker_host): on a third host of its own -- seed
004's Router/Broker machine -- messages cross the link twice and the broker's host is
the one its listener binds; refused in one line where it cannot apply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import require_root
from linklab.cli import main

CELL = ("name: bh\nfixed: {link: wifi, topology: star, hosts: 2, type: Array1k, rate: 10Hz, "
        "count: 30, warmup: 0.5s}\n")


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(("fixed", "says"), [
    ("middleware: fastdds, broker_host: edge",
     "fixed.broker_host: edge: fastdds runs no broker or router, so there is nothing to "
     "place; broker_host applies to mqtt, zenoh-router, mqtt-tls, zenoh-router-tls, "
     "mqtt-bridge, zenoh-router-bridge"),
    ("middleware: mqtt, broker_host: robot2",
     "fixed.broker_host: host 'robot2' is not in the cell's pair topology; accepted: robot, "
     "edge (a third host: topology: star with hosts: one more than the robots the "
     "endpoints use)"),
    ("middleware: mqtt, topology: star, hosts: 2, broker_host: robot3",
     "host 'robot3' is not in the cell's star topology; accepted: robot1, robot2, edge "
     "(raise hosts: for a station of its own)"),
    ("middleware: mqtt, broker_host: [edge]",
     "fixed.broker_host: ['edge'] is not a host name; expected one host of the cell's "
     "topology"),
    ("middleware: mqtt, topology: cluster, flow: cross-host, broker_host: robot",
     "broker_host: robot: placed on linklab's namespace testbeds only; on a cluster"),
])
def test_a_broker_host_that_cannot_apply_is_refused_before_the_run(tmp_path, capsys, fixed,
                                                                  says):
    path = write(tmp_path, "name: bad\nfixed: {link: ethernet-1g, type: Array1k, rate: 10Hz, "
                 f"count: 10, {fixed}}}\n")
    assert main(["bench", path, "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err, err


@pytest.mark.integration
def test_a_broker_on_a_third_host_carries_every_message_across_the_link_twice(tmp_path,
                                                                              capsys):
    require_root()
    path = write(tmp_path, CELL + "axes:\n  middleware: [mqtt, zenoh-router]\n"
                 "  broker_host: [edge, robot2]\n")
    assert main(["bench", path, "--out", str(tmp_path / "runs"), "--json"]) == 0
    rows = {r["cell_id"]: r for r in json.loads(capsys.readouterr().out)["cells"]}
    assert set(rows) == {f"{m}-broker-on-{h}" for m in ("mqtt", "zenoh-router")
                         for h in ("edge", "robot2")}
    for row in rows.values():
        assert row["status"] == "ok" and row["received"] == 30, row["failure_reason"]
        assert row["broker_cpu_s"] > 0
    run = next((tmp_path / "runs").iterdir())

    def spoke_bytes(cell: str, link: str) -> int:
        """Bytes robot2's link carried during the cell (its delay stage, both ways)."""
        counters = json.loads((run / "records" / cell / "counters.json").read_text())
        return sum(after["passed_bytes"] - before["passed_bytes"]
                   for before, after in zip(counters["before"]["link"]["stages"],
                                            counters["after"]["link"]["stages"], strict=True)
                   if after["link"] == link and after["kind"] == "delay")

    payload = 30 * 1024
    for middleware in ("mqtt", "zenoh-router"):
        # publisher (robot1) -> broker (robot2) -> subscriber (edge): robot2's station
        # link carries every sample in and out; with the broker on edge, nothing of them
        assert spoke_bytes(f"{middleware}-broker-on-robot2", "robot2-ap") > 2 * payload
        assert spoke_bytes(f"{middleware}-broker-on-edge", "robot2-ap") < payload / 10
        # and each message takes one more hop through the link's 2 ms delay
        assert rows[f"{middleware}-broker-on-robot2"]["latency_p50_ms"] > \
            rows[f"{middleware}-broker-on-edge"]["latency_p50_ms"] + 2.0
    conf = (run / "records" / "mqtt-broker-on-robot2" / "mosquitto.conf").read_text()
    assert "listener 1883 10.77.0.2\n" in conf  # robot2's address in the star
    router = (run / "records" / "zenoh-router-broker-on-robot2" / "zenoh-router.json5")
    assert "10.77.0.2:7447" in router.read_text()


def test_seed_004s_two_mqtt_columns_are_where_the_broker_ran():
    from linklab.report import paper_004

    def row(broker_host, latency):
        return {"cell_id": f"mqtt-{broker_host}", "link": "ethernet-1g", "type": "Array1k",
                "middleware": "mqtt", "broker_host": broker_host, "status": "ok",
                "endpoints": "t: robot1->edge Array1k 1KiB @10Hz reliable",
                "latency_mean_ms": latency, "goodput_bit_s": 81920.0, "received": 100,
                "expected": 100}

    on_edge, own_host = row(None, 0.5), row("robot2", 1.5)
    assert [paper_004.column_of(r) for r in (on_edge, own_host)] == ["mqtt-nobroker", "mqtt"]
    text = paper_004.render([on_edge, own_host, dict(on_edge, middleware="fastdds",
                                                     cell_id="f", latency_mean_ms=0.3)])
    assert "| Array1k | 0.30 / 13.63 | not run / 1.29 | not run / 1.98 | not run / 1.78 | " \
           "0.50 / 89.74 | 1.50 / 91.01 |" in text
    # the Zenoh-broker column: the router on a host of its own where a cell ran it there
    # (the paper's), else on the edge host
    router_edge = dict(on_edge, middleware="zenoh-router", cell_id="z1", latency_mean_ms=0.7)
    router_own = dict(own_host, middleware="zenoh-router", cell_id="z2", latency_mean_ms=1.7)
    line = "| Array1k | not run / 13.63 | not run / 1.29 | not run / 1.98 | {} / 1.78 |"
    assert line.format("1.70") in paper_004.render([router_edge, router_own, on_edge])
    assert line.format("0.70") in paper_004.render([router_edge, on_edge])
