"""``linklab tune --verify``: the scenario it runs, how a cell is judged, and real runs."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import require_root
from linklab.bench.spec import parse_scenario
from linklab.tune import TuningInput, tune
from linklab.tune.verify import judge, recovery_s, scenario_text

KIB = 1024
REPO = Path(__file__).resolve().parents[1]
T = TuningInput(rate_hz=30, payload_bytes=64 * KIB, link_bits_per_s=100e6, per=0.05,
                delay_s=0.002)


def test_scenario_is_the_stated_link_with_the_written_profile(tmp_path):
    result = tune(T)
    s = result.settings
    profile = tmp_path / "cyclonedds.xml"
    profile.write_text(result.cyclonedds_xml)
    text = scenario_text(T, s, "cyclonedds", str(profile), 0.05, 10, 3.0, 1.5)
    data = yaml.safe_load(text)
    assert data["fixed"]["profile"] == str(profile)
    assert data["fixed"]["history"] == f"keep_last:{s.history_depth}"
    steady, outage = data["axes"]["link"]
    assert steady == {"name": "verify", "rate": "1e+08bit/s", "loss": "5%", "mtu": 1500,
                      "delay": "2ms"}
    assert outage["outage"] == "0s+3s" and outage["name"] == "verify-outage"
    # long enough for 10 s, the outage, the predicted recovery and the slack
    assert data["fixed"]["count"] == math.ceil(30 * (10 + 3 + 1.5 + 2))
    parsed = parse_scenario(text, "<verify>")  # the bench accepts it as written
    assert parsed.fixed["middleware"] == "cyclonedds"


def row(**kw):
    base = {"cell_id": "verify", "middleware": "fastdds", "status": "ok", "received": 300,
            "published": 300, "reception_rate_hz": 30.0, "latency_mean_ms": 40.0,
            "wire_amplification": 1.2, "rate_bins_hz": [30] * 10, "outage_at_s": None}
    return {**base, **kw}


def test_judge_steady():
    assert judge(row(), rate_hz=30, predicted_wire=1.2, outage_s=None, covers_outage=False,
                 recovery=0).passed
    lost = judge(row(received=299), rate_hz=30, predicted_wire=1.2, outage_s=None,
                 covers_outage=False, recovery=0)
    assert not lost.passed and "299/300" in lost.why
    slow = judge(row(reception_rate_hz=27.0), rate_hz=30, predicted_wire=1.2, outage_s=None,
                 covers_outage=False, recovery=0)
    assert not slow.passed and "27" in slow.why
    failed = judge(row(status="failed", failure_reason="latency"), rate_hz=30,
                   predicted_wire=1.2, outage_s=None, covers_outage=False, recovery=0)
    assert not failed.passed and "latency" in failed.why


def test_judge_outage_wants_the_rate_back_in_time():
    bins = [30, 30, 0, 0, 0, 12, 30, 30, 30, 30]  # outage 1.5-4.5 s, back at 6 s
    ok = judge(row(cell_id="verify-outage", rate_bins_hz=bins, outage_at_s=1.5,
                   received=210), rate_hz=30, predicted_wire=1.2, outage_s=3.0,
               covers_outage=False, recovery=1.0)
    assert ok.passed, ok.why
    stuck = [30, 30, 0, 0, 0, 0, 0, 0, 0, 30]
    late = judge(row(cell_id="verify-outage", rate_bins_hz=stuck, outage_at_s=1.5),
                 rate_hz=30, predicted_wire=1.2, outage_s=3.0, covers_outage=False,
                 recovery=1.0)
    assert not late.passed and "not back" in late.why
    lost = judge(row(cell_id="verify-outage", rate_bins_hz=bins, outage_at_s=1.5,
                     received=210), rate_hz=30, predicted_wire=1.2, outage_s=3.0,
                 covers_outage=True, recovery=1.0)
    assert not lost.passed and "covers the outage" in lost.why


def test_rows_name_their_middleware_and_profile(tmp_path):
    """Both middlewares run a cell named after the link ("verify"): each row of the
    table says which middleware and which written profile it is (issue 37); the model
    column is "∞" with the reason where the model says the stream cannot complete."""
    from linklab.tune.verify import render

    verdicts = [judge(row(middleware=mw, profile=str(tmp_path / f"{mw}.xml")), rate_hz=30,
                      predicted_wire=wire, outage_s=None, covers_outage=False, recovery=0,
                      model_note=note)
                for mw, wire, note in (("fastdds", 1.2, None),
                                       ("cyclonedds", math.inf, "cannot complete: why"))]
    lines = render(verdicts)
    assert lines[2].split()[:3] == ["middleware", "profile", "cell"]
    assert lines[3].split()[:4] == ["fastdds", "fastdds.xml", "verify", "PASS"]
    assert lines[3].split()[-3] == "1.2"  # the model's wire, then CPU ms/sample and model
    assert lines[4].split()[:4] == ["cyclonedds", "cyclonedds.xml", "verify", "PASS"]
    assert lines[4].split()[-3] == "∞"
    assert lines[5].strip() == "model: cannot complete: why"
    assert verdicts[1].profile == "cyclonedds.xml" and verdicts[1].middleware == "cyclonedds"


def test_recovery_is_the_backlog_over_the_spare_pacing_ceiling():
    s = tune(T).settings
    backlog = min(s.history_depth, 90)
    spare = s.pacing_bytes_per_s - 30 * 64 * KIB * 1.2
    assert recovery_s(T, s, 3.0, 1.2) == pytest.approx(backlog * 64 * KIB * 1.2 / spare)
    heavy = TuningInput(rate_hz=30, payload_bytes=512 * KIB, link_bits_per_s=150e6)
    assert recovery_s(heavy, tune(heavy).settings, 3.0, 1.5) == math.inf


def run(*args):
    return subprocess.run([sys.executable, "-m", "linklab.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, timeout=240)


@pytest.mark.integration
def test_verify_passes_a_fitting_profile_and_fails_one_that_cannot_fit(tmp_path):
    require_root()
    good = run("tune", "--rate", "30Hz", "--payload", "64KiB", "--link", "100Mbit/s",
               "--per", "5%", "--out", tmp_path / "good", "--verify", "--verify-seconds",
               "3s", "--verify-middleware", "fastdds", "--json")
    assert good.returncode == 0, good.stderr[-2000:]
    (verdict,) = json.loads(good.stdout)["verify"]
    assert verdict["passed"] and verdict["delivered"] == "90/90", verdict
    assert verdict["predicted_wire"] > 1.0
    # 512 KiB at 30 Hz (126 Mbit/s) through 100 Mbit/s cannot keep up: FAIL, exit 4
    bad = run("tune", "--rate", "30Hz", "--payload", "512KiB", "--link", "100Mbit/s",
              "--per", "1%", "--out", tmp_path / "bad", "--verify", "--verify-seconds",
              "2s", "--verify-middleware", "cyclonedds")
    assert bad.returncode == 4, bad.stderr[-2000:]
    assert "FAIL" in bad.stdout and "INFEASIBLE" in bad.stdout
    # the row names its middleware and profile; the wire model gives no figure it cannot
    # reach (the two last columns are the CPU per sample, measured and modelled)
    (failed,) = [line.split() for line in bad.stdout.splitlines() if "FAIL" in line.split()]
    assert failed[:3] == ["cyclonedds", "cyclonedds.xml", "verify"] and failed[-3] == "∞"
    assert float(failed[-1]) > 0  # model/cpu.py's writer CPU per sample, in ms
    assert "model: cannot complete: " in bad.stdout


@pytest.mark.slow
def test_verify_options_need_verify_and_are_checked_first(tmp_path):
    out = tmp_path / "never"
    for args, argument in ((["--verify-outage", "5s"], "--verify-outage"),
                           (["--verify", "--verify-middleware", "zenoh"],
                            "--verify-middleware"),
                           (["--verify", "--verify-seconds", "0.1s"], "--verify-seconds")):
        result = run("tune", "--rate", "30Hz", "--payload", "64KiB", "--link", "100Mbit/s",
                     "--out", out, *args)
        assert result.returncode == 2, result.stderr
        assert argument in result.stderr and "Traceback" not in result.stderr
        assert not out.exists()


def test_the_latency_model_stands_beside_the_measured_latency():
    """verify's table: the measured mean latency, then the latency model's (issue 38);
    "—" where the model has none (an outage cell)."""
    from linklab.tune.verify import render

    steady = judge(row(profile="p/fastdds.xml"), rate_hz=30, predicted_wire=1.2,
                   outage_s=None, covers_outage=False, recovery=0,
                   predicted_latency_ms=123.4)
    outage = judge(row(cell_id="verify-outage", outage_at_s=1.5, profile="p/fastdds.xml"),
                   rate_hz=30,
                   predicted_wire=1.2, outage_s=3.0, covers_outage=False, recovery=1.0,
                   predicted_latency_ms=123.4)
    assert math.isnan(outage.predicted_latency_mean_ms)
    lines = render([steady, outage])
    assert lines[2].split()[6:8] == ["latency", "model"]
    assert lines[3].split()[6:8] == ["40.0ms", "123.4ms"]
    assert "—" in lines[4].split()
