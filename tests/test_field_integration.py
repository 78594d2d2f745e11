"""Field mode with real OpenSSH: Debian's sshd inside the host namespaces of an emulated
"field" path (10 ms each way, Gilbert burst loss, 20/10 Mbit/s, MTU 1400). linklab runs
inside the edge namespace, as on a base station: edge is ``local``, robot is reached
through its sshd over the path itself.

- a scenario runs "remotely": endpoints on both hosts, records brought back, one clock,
  the bench's run directory (linklab report reads it, --compare sets it beside a lab run
  of the measured preset);
- the path is measured, its preset replayed on a fresh link, the replay measured with the
  same command: loss within 1 point, mean burst within 20 %, RTT median within 10 %, rate
  within 10 % -- and the samples are shown large enough for those tolerances (compare.py:
  4.42 standard errors of each difference fit inside its tolerance);
- measure -> tune -> verify;
- killed with SIGKILL mid-cell, nothing is left on either host.
Needs root (namespaces, the emu wire, tc, nft).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import require_root, require_tool
from field_sshd import SshHosts
from linklab.link import testbed as make_testbed
from linklab.link.preset_file import read_preset_file
from linklab.probes.records import read_records

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[1]
LINKLAB = [sys.executable, "-m", "linklab.cli"]


def gilbert(loss: float, burst: float) -> dict[str, float]:
    r = 1 / burst
    return {"p": round(loss * r / (1 - loss), 6), "r": round(r, 6)}


# The simulated field path. Loss and burst are chosen so that 12 s of probes at 4 kHz are
# enough for the tolerances (see test_measure_and_replay): Var(mean loss) = pi (1 - pi) /
# n x (1 + lambda) / (1 - lambda), lambda = 1 - p - r (fit.py).
FIELD = {"description": "a simulated field path (tests)", "mtu": 1400, "delay": "10ms",
         "up": {"rate": "20Mbit/s", "burst_loss": gilbert(0.04, 1.5)},
         "down": {"rate": "10Mbit/s", "burst_loss": gilbert(0.03, 1.5)}}


def tmp_leftovers() -> set[str]:
    return {p for p in os.listdir("/tmp") if p.startswith(("linklab-field.", "llssh."))}


def processes_with(text: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                if text.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(int(pid))
            except OSError:
                pass
    return found


@pytest.fixture(scope="module")
def field(tmp_path_factory):
    require_root()
    for tool in ("ip", "tc", "nft", "ssh", "ssh-keygen", "/usr/sbin/sshd"):
        require_tool(tool)
    tmp = tmp_path_factory.mktemp("field")
    before = tmp_leftovers()
    with make_testbed("field-sim", preset_fields=FIELD, name=f"fd{os.getpid() % 100000}") as bed:
        ssh = SshHosts(bed, tmp / "ssh", ("robot",), f"f{os.getpid()}").start()

        def cli(*args: str, timeout: float = 240, env=None) -> subprocess.CompletedProcess:
            return subprocess.run(bed.argv("edge", [*LINKLAB, *args]), env=env or ssh.env(),
                                  capture_output=True, text=True, timeout=timeout, cwd=REPO)

        yield {"bed": bed, "ssh": ssh, "tmp": tmp, "cli": cli}
    assert tmp_leftovers() - before == set(), "a field session left a directory in /tmp"
    assert processes_with(str(ssh.config)) == [], "an ssh process outlived the tests"


MEASURE = ("--duration", "12s", "--probe-rate", "4kHz", "--ramp-step", "0.5s")


@pytest.fixture(scope="module")
def measured(field):
    """linklab link measure robot -> edge over the field path: path.yaml (+ .measure.json)."""
    tmp, cli, ssh = field["tmp"], field["cli"], field["ssh"]
    result = cli("link", "measure", ssh.url("robot"), "local", *MEASURE, "--out",
                 str(tmp / "path.yaml"), "--name", "field-replay")
    assert result.returncode == 0, result.stderr[-3000:]
    return tmp / "path.yaml"


@pytest.fixture(scope="module")
def field_run(field, measured):
    """One bench run over SSH: topics both ways, Fast DDS and Cyclone DDS; its link is the
    measured preset of the path (a description, not applied: the path is real).

    Best effort and one packet per sample, so the cells' outcome is the path's loss and
    nothing else: with RELIABLE on this bursty path the middlewares' defaults fail in ways
    that depend on where the bursts fall (Fast DDS repairs after its 3 s heartbeat, mean
    latency above 100 publish intervals; Cyclone's writes time out when its history fills
    during a burst) -- paper 000's finding, not what this test is about."""
    ssh, tmp = field["ssh"], field["tmp"]
    scenario = tmp / "field.yaml"
    scenario.write_text(
        f"name: field-bench\npresets: {measured}\n"
        f"hosts:\n  robot: {{at: {ssh.url('robot')}, clock: exchange}}\n  edge: local\n"
        "fixed:\n  link: field-replay\n  payload: 1KiB\n  rate: 50Hz\n  count: 100\n"
        "  qos: best_effort\n  topics:\n    - {name: up, from: robot, to: edge}\n"
        "    - {name: down, from: edge, to: robot}\n"
        "axes:\n  middleware: [fastdds, cyclonedds]\n")
    result = field["cli"]("bench", str(scenario), "--out", str(tmp / "runs"))
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir,) = (tmp / "runs").iterdir()
    return run_dir, result


def test_a_scenario_runs_on_the_hosts_over_ssh(field_run):
    run_dir, result = field_run
    assert "host robot: ssh://robot-" in result.stderr and "probe fastdds: copied from this " \
        "machine" in result.stderr
    # 1 KiB samples fit the MTU of 1400: no IP fragments, nothing held for reassembly
    frag = [line for line in result.stderr.splitlines()
            if "robot: net.ipv4.ipfrag_high_thresh" in line]
    assert frag and frag[0].startswith("preflight ok") and "no IP fragments" in frag[0]
    assert "multicast to edge" in result.stderr
    info = json.loads((run_dir / "run.json").read_text())
    hosts = info["links"]["field-replay"]["hosts"]
    assert hosts["robot"]["address"] == "10.77.0.1" and hosts["robot"]["interface_mtu"] == 1400
    assert hosts["robot"]["probes"]["cyclonedds"]["how"] == "copied from this machine"
    rows = [json.loads(line) for line in (run_dir / "cells.jsonl").read_text().splitlines()]
    assert [r["middleware"] for r in rows] == ["fastdds", "cyclonedds"]
    streams = [json.loads(line) for line in (run_dir / "streams.jsonl").read_text().splitlines()]
    for row in rows:
        assert row["status"] == "ok", row["failure_reason"]
        mine = [s for s in streams if s["cell_id"] == row["cell_id"]]
        assert {(s["publisher"], s["subscriber"]) for s in mine} == {("robot", "edge"),
                                                                     ("edge", "robot")}
        # every sample sent, ~96-97 % delivered (4 % / 3 % loss in bursts of 1.5: sd of
        # the count ~2.7, so 80 is more than 5 sd below)
        assert all(s["published"] == 100 and s["received"] >= 80 for s in mine), mine
        cell = run_dir / "records" / row["cell_id"]
        # the discovery gate held both publishers, on both hosts, until every reader had
        # matched (without it a reader whose copy of the writer's announcement was lost
        # matched seconds late and half the stream counted as loss: field/gate_files.py)
        for name in ("pub-up", "pub-down"):
            summary = json.loads((cell / f"{name}.json").read_text())["summary"]
            assert "start_wait_s" in summary, (name, summary)
        assert row["unmatched_subscribers"] == 0
        endpoints = json.loads((cell / "endpoints.json").read_text())
        remote = [e["name"] for e in endpoints if e["host"] == "robot"]
        for name in remote:   # the probe's own usage on its host, brought back
            usage = json.loads((cell / f"usage-{name}.json").read_text())
            assert usage["exit_code"] == 0 and usage["cpu_s"] > 0 and usage["rss_peak_bytes"]
    report = subprocess.run([*LINKLAB, "report", str(run_dir)], capture_output=True, text=True,
                            timeout=120, cwd=REPO)
    assert report.returncode == 0, report.stderr
    assert "field-bench" in report.stdout
    assert "measured between robot" in json.dumps(info["scenario"]["presets"])


def test_one_clock_by_the_exchange_checked_against_the_truth(field_run):
    """robot and edge share a kernel, so the true offset is 0; with clock: exchange the
    offset is measured anyway: it must contain 0 within its bound, and the records must be
    shifted by exactly the offset the exchange gave (field/ keeps them as recorded)."""
    run_dir, _ = field_run
    for cell in sorted((run_dir / "records").iterdir()):
        clock = json.loads((cell / "clock.json").read_text())
        robot = clock["hosts"]["robot"]
        for when in ("before", "after"):
            measured = robot[when]
            assert measured["method"].startswith("exchange")
            assert abs(measured["offset_ns"]) <= measured["uncertainty_ns"]
            # the bound is about half the smallest round trip (20 ms here), never below it
            assert 0.4 * measured["rtt_min_ns"] <= measured["uncertainty_ns"] <= \
                0.5 * measured["rtt_min_ns"] + 1
        for stream in clock["streams"]:
            unc = stream["uncertainty_ms"]
            share = unc / stream["latency_median_ms"]
            assert stream["basis"] == ("one-way" if share <= 0.10 else "round-trip")
            assert stream["path_rtt_ms"] == pytest.approx(20, abs=3)
            raw = read_records(cell / "field" / f"{stream['endpoint']}.bin").records
            now = read_records(cell / f"{stream['endpoint']}.bin").records
            shift_recv = now["t_recv_ns"].astype(np.int64) - raw["t_recv_ns"].astype(np.int64)
            shift_send = now["t_send_ns"].astype(np.int64) - raw["t_send_ns"].astype(np.int64)
            moved = shift_recv - shift_send   # what the latency moved by
            expected = (robot["reference_minus_host_ns"] if stream["subscriber"] == "robot"
                        else -robot["reference_minus_host_ns"])
            drift_ns = abs(robot["after"]["offset_ns"] - robot["before"]["offset_ns"])
            assert np.all(np.abs(moved - expected) <= drift_ns + 2)


def lab_run(field, preset_file: Path, preset: str) -> Path:
    """The same traffic in the lab, on an emulated link of the measured preset."""
    tmp = field["tmp"]
    scenario = tmp / "lab.yaml"
    scenario.write_text(
        f"name: lab-bench\npresets: {preset_file}\n"
        f"fixed:\n  link: {preset}\n  middleware: fastdds\n  payload: 1KiB\n  rate: 50Hz\n"
        "  count: 100\n  qos: best_effort\n  topics:\n    - {name: up, from: robot, to: edge}\n"
        "    - {name: down, from: edge, to: robot}\n")
    result = subprocess.run([*LINKLAB, "bench", str(scenario), "--out", str(tmp / "lab")],
                            capture_output=True, text=True, timeout=240, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir,) = (tmp / "lab").iterdir()
    return run_dir


def test_measure_and_replay(field, measured, field_run):
    """Measure the field path, replay its preset on a fresh link, measure the replay with
    the same command: within issue 16's tolerances, with samples large enough to say so.

    Sample size: 12 s at 4 kHz = 48 000 probes a direction. Up (4 %, bursts of 1.5):
    lambda = 0.31, se(loss) = sqrt(0.0384 x 1.88 / 48000) = 0.12 points, so the
    difference of two measurements has se 0.17 points and its 4.42-sigma bound is 0.77
    points < 1 point (a faithful replay fails by chance with probability 1e-5). Bursts:
    ~1280 bursts, se 2.3 % each, bound 14 % < 20 %. compare.py computes these bounds from
    each run's own numbers and the test asserts them ("enough") before the tolerances.
    Then the field run and a lab run of the measured preset, side by side."""
    tmp = field["tmp"]
    args = MEASURE
    preset = read_preset_file(tmp / "path.yaml")["field-replay"]
    assert preset.fields["mtu"] == 1400
    assert preset.fields["description"].startswith("measured between robot")

    with make_testbed("field-replay", preset_fields=preset.fields,
                      name=f"fr{os.getpid() % 100000}") as replay:
        rssh = SshHosts(replay, tmp / "ssh-replay", ("robot",), f"r{os.getpid()}").start()
        again = subprocess.run(
            replay.argv("edge", [*LINKLAB, "link", "measure", rssh.url("robot"), "local",
                                 *args, "--compare", str(tmp / "path.measure.json"),
                                 "--json"]),
            env=rssh.env(), capture_output=True, text=True, timeout=240, cwd=REPO)
    data = json.loads(again.stdout)
    rows = data["comparison"]
    assert {(r["quantity"], r["direction"]) for r in rows} == {
        ("loss", "up"), ("loss", "down"), ("mean burst", "up"), ("mean burst", "down"),
        ("RTT median", "both"), ("rate", "up"), ("rate", "down"), ("path MTU", "up"),
        ("path MTU", "down")}
    for row in rows:
        assert row["enough"], f"samples too small for the tolerance: {row}"
    for row in rows:
        assert row["within"], f"replay outside the tolerance: {row}"
    assert again.returncode == 0

    lab = lab_run(field, tmp / "path.yaml", "field-replay")
    field_dir, _ = field_run
    side = subprocess.run([*LINKLAB, "report", str(field_dir), "--compare", str(lab)],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert side.returncode == 0, side.stderr
    assert "field-bench" in side.stdout and "lab-bench" in side.stdout


def test_measure_tune_verify(field):
    tmp, cli, ssh = field["tmp"], field["cli"], field["ssh"]
    out = tmp / "tune"
    result = cli("field", "tune", ssh.url("robot"), "local", "--rate", "20Hz", "--payload",
                 "32KiB", "--count", "100", "--duration", "4s", "--probe-rate", "1kHz",
                 "--ramp-step", "0.4s", "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "before/after on" in result.stdout and "tuned (feasible)" in result.stdout
    xml = (out / "profiles" / "fastdds.xml").read_text()
    assert "<maxMessageSize>1372</maxMessageSize>" in xml   # the measured MTU 1400, tuned
    (run_dir,) = [p for p in out.iterdir() if p.name.startswith("field-tune-")]
    rows = {r["profile"]: r for r in map(json.loads,
                                         (run_dir / "cells.jsonl").read_text().splitlines())}
    assert set(rows) == {"default", "optimized"}
    assert rows["optimized"]["status"] == "ok"
    assert rows["optimized"]["received"] == rows["optimized"]["expected"] == 100
    info = json.loads((run_dir / "run.json").read_text())
    tuned = [m for m in info["profiles"].values() if m.get("profile") == "optimized"]
    assert tuned and tuned[0]["settings"]["max_message_size"] == 1372


def test_a_killed_run_leaves_nothing_on_the_hosts(field):
    """SIGKILL of linklab mid-cell: its ssh connections end with it (PR_SET_PDEATHSIG),
    the keeper on robot stops the probe and removes its work directory; the next session
    removes the local directories the killed one could not."""
    tmp, ssh, bed = field["tmp"], field["ssh"], field["bed"]
    scenario = tmp / "long.yaml"
    scenario.write_text(f"name: field-long\nhosts: {{robot: {ssh.url('robot')}, edge: local}}\n"
                        "fixed: {payload: 1KiB, rate: 20Hz, count: 2000}\n")
    before = tmp_leftovers()
    run = subprocess.Popen(bed.argv("edge", [*LINKLAB, "bench", str(scenario), "--out",
                                             str(tmp / "long")]),
                           env=ssh.env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           cwd=REPO)
    probe_pids: list[tuple[int, str]] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not probe_pids:
        for name in tmp_leftovers() - before:
            pids = Path("/tmp", name, "pids")
            if pids.is_dir():
                probe_pids += [(int(p.name), (pids / p.name).read_text())
                               for p in pids.iterdir()]
        time.sleep(0.2)
    assert probe_pids, "the remote probe never started"
    run.send_signal(signal.SIGKILL)
    run.wait(timeout=10)

    def gone() -> bool:
        alive = [pid for pid, start in probe_pids
                 if Path(f"/proc/{pid}").exists() and Path(f"/proc/{pid}/stat").read_text()
                 .rsplit(")", 1)[1].split()[19] == start]
        remote_dirs = [n for n in tmp_leftovers() - before if n.startswith("linklab-field.")
                       and not Path("/tmp", n, "owner").exists()]
        return not alive and not remote_dirs and not processes_with(str(scenario)) \
            and not processes_with(f"linklab_{run.pid}_")

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not gone():
        time.sleep(0.2)
    assert gone(), "the remote probe or its work directory outlived the killed run"
    # the local directories (owner: the killed process) go with the next session
    from linklab.field import leftovers

    leftovers.sweep()
    assert tmp_leftovers() - before == set()


def test_field_check_and_a_host_that_cannot_be_reached(field, measured):
    """linklab field check prints the preflight and runs nothing; a host ssh cannot reach is
    one line naming it, before anything runs, and nothing is left behind."""
    tmp, cli, ssh = field["tmp"], field["cli"], field["ssh"]
    before = tmp_leftovers()
    scenario = tmp / "check.yaml"
    scenario.write_text(f"name: field-check\npresets: {measured}\n"
                        f"hosts: {{robot: {ssh.url('robot')}, edge: local}}\n"
                        "fixed: {link: field-replay, profile: optimized, payload: 64KiB, "
                        "rate: 10Hz, count: 10}\n")
    checked = cli("field", "check", str(scenario))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    lines = checked.stdout.splitlines()
    assert any(line.startswith("preflight ok   robot: net.core.rmem_max = ") and
               "profile optimized asks for 4194304 B" in line for line in lines)
    assert any("multicast to edge" in line for line in lines)
    assert not (tmp / "runs-check").exists()

    scenario.write_text("name: unreachable\nhosts: {robot: ssh://nohost.invalid, edge: local}\n"
                        "fixed: {payload: 1KiB, rate: 10Hz, count: 10}\n")
    failed = cli("bench", str(scenario), "--out", str(tmp / "runs-bad"))
    assert failed.returncode != 0
    assert failed.stderr.count("\n") <= 2 and "Traceback" not in failed.stderr
    assert "robot: cannot reach ssh://nohost.invalid with ssh" in failed.stderr
    assert not (tmp / "runs-bad").exists()
    assert tmp_leftovers() - before == set()
