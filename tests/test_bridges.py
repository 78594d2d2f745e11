"""Seed 004's bridged architecture (§3.1: "the communication within one host used DDS, and
communication between two hosts used Zenoh or MQTT"): middlewares ``mqtt-bridge``,
``zenoh-bridge``, ``zenoh-router-bridge``. Cyclone DDS probes whose domain stays on their
own host, a bridge on each endpoint host (probes/cyclonedds/bridge_mqtt.cpp with
mosquitto; probes/zenoh/src/bridge, peer to peer or through a zenoh router). Proven by
capture: RTPS only on each host's loopback, MQTT or Zenoh on the link; refused in one line
where it cannot apply."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import require_root, require_tool
from linklab.bench.bridges import history_of
from linklab.bench.namespace_environment import LinklabEnvironment
from linklab.cli import main

COUNT = 40


@pytest.mark.parametrize(("fixed", "says"), [
    ("middleware: mqtt-bridge, topics: [{name: t, from: robot, to: [robot, edge]}]",
     "mqtt-bridge: topic 't' has a subscriber on its publisher's host robot; a bridged "
     "middleware carries DDS between hosts only"),
    ("middleware: zenoh-router-bridge, topology: cluster, flow: cross-host",
     "zenoh-router-bridge: its bridges run on linklab's namespace testbeds only, not on a "
     "cluster"),
    ("middleware: zenoh-bridge, broker_host: edge",
     "fixed.broker_host: edge: zenoh-bridge runs no broker or router"),
])
def test_a_bridge_that_cannot_apply_is_refused_before_the_run(tmp_path, capsys, fixed, says):
    path = tmp_path / "s.yaml"
    path.write_text("name: bad\nfixed: {link: ethernet-1g, type: Array1k, rate: 10Hz, "
                    f"count: 10, {fixed}}}\n")
    assert main(["bench", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err, err


@pytest.mark.native
def test_a_missing_bridge_program_is_found_by_the_dry_run(tmp_path, capsys, monkeypatch):
    """--dry-run checks what the run needs: the probes, and a bridged middleware's bridge
    (here a probes directory with the Cyclone DDS probe but without linklab-bridge-mqtt)."""
    from linklab.probes.binaries import binary_path

    probes = tmp_path / "probes" / "cyclonedds"
    probes.mkdir(parents=True)
    (probes / "linklab-probe-cyclonedds").symlink_to(binary_path("cyclonedds"))
    monkeypatch.setenv("LINKLAB_PROBES_DIR", str(tmp_path / "probes"))
    path = tmp_path / "s.yaml"
    path.write_text("name: nobridge\nfixed: {link: ethernet-1g, type: Array1k, rate: 10Hz, "
                    "count: 10}\naxes: {middleware: [cyclonedds, mqtt-bridge]}\n")
    assert main(["bench", str(path), "--dry-run"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "linklab-bridge-mqtt is not built" in err, err


def test_the_bridge_takes_the_topics_reliability_and_history():
    assert history_of(("--qos", "reliable", "--history", "keep_last:7")) == (True, 7)
    assert history_of(("--qos", "best_effort", "--history", "keep_all")) == (False, 0)
    assert history_of(("--qos", "reliable")) == (True, 10)           # ROS 2's default
    assert history_of(("--system-default",)) == (True, 1)            # Cyclone's own


class Capturing(LinklabEnvironment):
    """The bench's own environment with tshark on the link interface and the loopback of
    both hosts, for the length of each cell."""

    def __init__(self, presets, out: Path):
        super().__init__(presets)
        self.out = out

    @contextlib.contextmanager
    def link(self, cell, run_tag):
        with super().link(cell, run_tag) as bed:
            captures = []
            for host in ("robot", "edge"):
                for iface in (bed.bed.hosts[host].interface, "lo"):
                    out = self.out / f"{host}-{'lo' if iface == 'lo' else 'link'}.pcapng"
                    argv = bed.bed.argv(host, ["tshark", "-q", "-i", iface, "-s", "256",
                                               "-w", str(out)])
                    captures.append((subprocess.Popen(
                        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        start_new_session=True), out))
            for tshark, out in captures:
                deadline = time.monotonic() + 10
                while not out.exists() and time.monotonic() < deadline:
                    assert tshark.poll() is None, "tshark ended before capturing"
                    time.sleep(0.05)
            time.sleep(0.5)  # each tshark has opened its interface once its file exists
            try:
                yield bed
            finally:
                for tshark, _ in captures:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(tshark.pid, signal.SIGINT)
                    tshark.wait(timeout=10)


def frames(capture: Path, display_filter: str) -> int:
    out = subprocess.run(["tshark", "-r", str(capture), "-Y", display_filter, "-T", "fields",
                          "-e", "frame.number"], capture_output=True, text=True, check=True)
    return len(out.stdout.split())


# the far side's port on the link: mosquitto's, the zenoh router's or the listening bridge's
FAR_PORT = {"mqtt-bridge": 1883, "zenoh-bridge": 7447, "zenoh-router-bridge": 7447}


@pytest.mark.integration
@pytest.mark.parametrize("bridged", list(FAR_PORT))
def test_a_bridged_cell_carries_dds_between_hosts_and_no_rtps_crosses_the_link(tmp_path,
                                                                                bridged):
    require_root()
    require_tool("tshark")
    from linklab.bench.matrix import expand
    from linklab.bench.runner import run_cells
    from linklab.bench.spec import load_scenario
    from linklab.rundir import RunStore

    (path := tmp_path / "s.yaml").write_text(
        f"name: bridged\nfixed: {{link: ethernet-1g, middleware: {bridged}, "
        f"type: Array64k, rate: 20Hz, count: {COUNT}, warmup: 0.5s}}\n")
    scenario = load_scenario(path)
    cells = expand(scenario)
    store = RunStore.create(tmp_path / "run", scenario=dict(scenario.to_dict(),
                                                            text=scenario.text),
                            options={}, planned=[c.cell_id for c in cells], estimated_s=0.0)
    [row] = run_cells(store, cells, Capturing(scenario.presets, tmp_path),
                      run_tag=f"br{os.getpid() % 10000}", search_settings=scenario.search)
    assert row["status"] == "ok" and row["received"] == COUNT, row["failure_reason"]
    assert row["bridge_cpu_s"] > 0
    assert (row["broker_cpu_s"] > 0) is (bridged != "zenoh-bridge")  # no router peer to peer

    # each host's DDS stays on its loopback; the link carries the far side (TCP) and no RTPS
    for host in ("robot", "edge"):
        assert frames(tmp_path / f"{host}-link.pcapng", "rtps || udp.port == 7400") == 0
        assert frames(tmp_path / f"{host}-lo.pcapng", "rtps") > COUNT
        assert frames(tmp_path / f"{host}-link.pcapng",
                      f"tcp.port == {FAR_PORT[bridged]}") > COUNT

    # the two bridges forwarded every sample (warm-up and end of stream included), whole
    cell = store.root / "records" / row["cell_id"]
    summaries = [json.loads(p.read_text()) for p in sorted(cell.glob("bridge-*.json"))]
    far = "mqtt" if bridged == "mqtt-bridge" else "zenoh"
    assert sorted(s["direction"] for s in summaries) == [f"dds-to-{far}", f"{far}-to-dds"]
    for summary in summaries:
        assert summary["forwarded"] > COUNT and summary["dropped"] == 0
        assert summary["forwarded_bytes"] > COUNT * 64 * 1024


def test_seed_004s_bridged_columns_stand_beside_the_native_ones():
    from linklab.report import paper_004

    def row(middleware, broker_host, latency):
        return {"cell_id": f"{middleware}-{broker_host}", "link": "ethernet-1g",
                "type": "Array1k", "middleware": middleware, "broker_host": broker_host,
                "status": "ok", "endpoints": "t: robot1->edge Array1k 1KiB @10Hz reliable",
                "latency_mean_ms": latency, "goodput_bit_s": 81920.0, "received": 100,
                "expected": 100, "bridge_cpu_s": 0.05, "broker_cpu_s": 0.02,
                "_sub": {"wall_s": 10.0}}

    rows = [row("mqtt", None, 0.5), row("mqtt-bridge", None, 1.5),
            row("mqtt-bridge", "robot2", 2.5), row("zenoh-bridge", None, 3.5)]
    assert [paper_004.column_of(r) for r in rows] == [
        "mqtt-nobroker", "mqtt-bridge-nobroker", "mqtt-bridge", "zenoh-bridge"]
    assert list(paper_004.columns_of(rows).values())[-3:] == [
        "Zenoh-TCP (bridged)", "MQTT-nobroker (bridged)", "MQTT-broker (bridged)"]
    # the paper's values beside the bridged columns (§3.1: its Zenoh and MQTT were bridged)
    text = paper_004.render(rows)
    assert ("| 0.50 / 89.74 | not run / 91.01 | 3.50 / 1.98 | 1.50 / 89.74 | 2.50 / 91.01 |"
            in text)
    # Table 3: the bridges' CPU beside the broker's (% of one core over the cell)
    assert "/ 0.20 + bridges 0.50" in text
    # without bridged cells, the paper's six columns only
    assert "(bridged)" not in paper_004.render(rows[:1])
