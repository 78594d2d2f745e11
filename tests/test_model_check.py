"""``linklab model-check``: model/wire_traffic.py against the rows of a bench run."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from linklab.cli.model import link_infos
from linklab.rundir import RunStore
from linklab.tune.wirecheck import LinkInfo, compare, predicted_for

KIB = 1024
REPO = Path(__file__).resolve().parents[1]
SEVERE = {"spec": {"mtu": 1500, "up": {"loss": "20 %", "rate": "300 Mbit/s"}}}


def row(cell_id, middleware, profile, measured, status="ok", **kw):
    return {"index": ord(cell_id[0]) - ord("a"), "cell_id": cell_id,
            "middleware": middleware, "profile": profile,
            "link": "wifi-severe", "payload_bytes": 512 * KIB, "rate_hz": 30.0, "topics": 1,
            "status": status, "wire_amplification": measured, **kw}


def test_link_infos_read_run_json():
    infos = link_infos({"links": {"wifi-severe": SEVERE, "broken": {"spec": {}}}})
    assert infos == {"wifi-severe": LinkInfo(300e6, 0.2, 1500)}
    # a link on the 802.11 medium has no rate field: its PHY rate is what it carries at most
    medium = {"spec": {"mtu": 1500, "up": {"loss": "20 %"},
                       "medium": {"standard": "ac", "phy_rate": "433.3 Mbit/s"}}}
    infos = link_infos({"links": {"severe-medium": medium}})
    assert infos == {"severe-medium": LinkInfo(433.3e6, 0.2, 1500)}


def test_compare_predicts_default_and_optimized_and_skips_the_rest():
    links = {"wifi-severe": LinkInfo(300e6, 0.2)}
    tuned = predicted_for("fastdds", "optimized", 512 * KIB, 30.0, links["wifi-severe"])
    rows = [row("a", "fastdds", "optimized", tuned * 1.10),
            row("b", "cyclonedds", "optimized", 1.0),
            row("c", "fastdds", "default", 5.0, status="failed"),
            row("d", "zenoh", "default", 1.0),
            row("e", "fastdds", "large_data", 1.0),
            row("f", "fastdds", "optimized", 1.0, link="unknown")]
    out = {c.cell_id: c for c in compare(rows, links)}
    assert set(out) == {"a", "b", "c"}
    assert out["a"].within and math.isclose(out["a"].error, 1 / 1.1 - 1)
    assert not out["b"].within  # 1.0 measured vs ~1.37 predicted
    assert not out["c"].completed


@pytest.mark.slow
def test_model_check_command_exits_1_when_a_completed_cell_is_off(tmp_path):
    store = RunStore.create(tmp_path / "run", scenario={"name": "x"}, options={},
                            planned=["a", "b"], estimated_s=1.0, versions={})
    store.info["links"] = {"wifi-severe": SEVERE}
    store.save_info()
    links = {"wifi-severe": LinkInfo(300e6, 0.2)}
    good = predicted_for("cyclonedds", "optimized", 512 * KIB, 30.0, links["wifi-severe"])
    store.append(row("a", "cyclonedds", "optimized", good))
    result = subprocess.run([sys.executable, "-m", "linklab.cli", "model-check",
                             str(tmp_path / "run"), "--json"], capture_output=True, text=True,
                            cwd=REPO, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["cells"][0]["within"] is True
    store.append(row("b", "cyclonedds", "optimized", good * 2))
    result = subprocess.run([sys.executable, "-m", "linklab.cli", "model-check",
                             str(tmp_path / "run")], capture_output=True, text=True, cwd=REPO,
                            timeout=60)
    assert result.returncode == 1, result.stderr
    assert "OUTSIDE 15 %" in result.stdout and "1/2 completed cells within 15%" in result.stdout


def test_the_prediction_counts_the_serialized_sample_of_the_rows_type():
    """A PointCloud2 sample carries 153 B besides its points (Bytes 24): the model puts
    them on the wire, and compare() takes the type from the row."""
    link = LinkInfo(300e6, 0.0)
    small = {t: predicted_for("fastdds", "default", 1024, 30.0, link, type_name=t)
             for t in ("Bytes", "PointCloud2")}
    # one datagram either way: 129 B more per 1024 B of payload (and a share of a
    # Heartbeat more: Fast DDS piggybacks one every so many data bytes)
    assert 129 / 1024 <= small["PointCloud2"] - small["Bytes"] < 130 / 1024
    rows = [row("a", "fastdds", "default", 1.0, type="PointCloud2", payload_bytes=1024),
            row("b", "fastdds", "default", 1.0, payload_bytes=1024)]
    out = {c.cell_id: c for c in compare(rows, {"wifi-severe": link})}
    assert out["a"].predicted == small["PointCloud2"] and out["b"].predicted == small["Bytes"]


def test_a_completed_cell_without_a_measured_wire_ratio_is_listed_not_failed():
    """A cell whose publisher left no summary has no wire / payload (its warm-up is
    unknown): model-check names it and neither counts it as within nor as off."""
    from linklab.tune.wirecheck import render
    links = {"wifi-severe": LinkInfo(300e6, 0.2)}
    good = predicted_for("cyclonedds", "optimized", 512 * KIB, 30.0, links["wifi-severe"])
    rows = [row("a", "cyclonedds", "optimized", good),
            row("b", "cyclonedds", "optimized", None),
            row("c", "fastdds", "default", None, status="failed")]
    out = {c.cell_id: c for c in compare(rows, links)}
    assert out["a"].checked and not out["a"].missed
    assert out["b"].completed and not out["b"].checked and not out["b"].missed
    assert not out["c"].checked and not out["c"].missed
    lines = render(list(out.values()))
    assert lines[2].rstrip().endswith("no wire / payload")
    assert lines[-1] == ("1/1 completed cells within 15% (largest error 0.0%); 1 not "
                         "completed; 1 completed without a measured wire / payload; 1 the "
                         "model says cannot complete (not compared)")


@pytest.mark.slow
def test_model_check_latency_compares_the_tuned_cells_mean_and_p95(tmp_path):
    """``--latency``: the tuned cells' measured mean and p95 one-way latency against the
    latency model (issue 38): exit 0 when every completed one is within 15 % on both, 1
    when one is off, 2 (one line) when the run has no tuned cell."""
    from linklab.tune.latencycheck import predicted_for as latency_for

    store = RunStore.create(tmp_path / "run", scenario={"name": "x"}, options={},
                            planned=["a", "b", "c"], estimated_s=1.0, versions={})
    store.info["links"] = {"wifi-severe": SEVERE}
    store.save_info()
    model = latency_for("cyclonedds", 64 * KIB, 30.0, LinkInfo(300e6, 0.2))
    near = dict(payload_bytes=64 * KIB, latency_mean_ms=model.mean_s * 1e3 * 1.05,
                latency_p95_ms=model.p95_s * 1e3 * 0.95)
    store.append(row("a", "cyclonedds", "optimized", 1.4, **near))
    store.append(row("b", "fastdds", "default", 1.4, **near))  # not a tuned cell
    command = [sys.executable, "-m", "linklab.cli", "model-check", "--latency",
               str(tmp_path / "run"), "--json"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    cells = json.loads(result.stdout)["cells"]
    assert [c["cell_id"] for c in cells] == ["a"] and cells[0]["within"] is True
    store.append(row("c", "cyclonedds", "optimized", 1.4, payload_bytes=64 * KIB,
                     latency_mean_ms=model.mean_s * 1e3 * 2,
                     latency_p95_ms=model.p95_s * 1e3))
    result = subprocess.run(command[:-1], capture_output=True, text=True, cwd=REPO,
                            timeout=120)
    assert result.returncode == 1
    assert "OUTSIDE 15 %" in result.stdout and "1/2 completed cells within 15%" in result.stdout

    empty = RunStore.create(tmp_path / "empty", scenario={"name": "x"}, options={},
                            planned=["b"], estimated_s=1.0, versions={})
    empty.info["links"] = {"wifi-severe": SEVERE}
    empty.save_info()
    empty.append(row("b", "fastdds", "default", 1.4))
    result = subprocess.run(command[:-2] + [str(tmp_path / "empty")], capture_output=True,
                            text=True, cwd=REPO, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "RUN_DIR" in result.stderr
