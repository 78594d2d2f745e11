"""tune/latencyfit.py: the latency replay's machine, fitted on a run's loss-free cells."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from linklab.rundir import RunStore
from linklab.tune.latencycheck import compare, predicted_for, summary
from linklab.tune.latencyfit import calibrate
from linklab.tune.latencymachine import STORED, Machine
from linklab.tune.wirecheck import LinkInfo

KIB = 1024
REPO = Path(__file__).resolve().parents[1]
LINKS = {"clean": LinkInfo(300e6, 0.0), "lossy": LinkInfo(300e6, 0.05)}
# a machine unlike the stored one: a slower reader with a longer hand-over
TRUE = replace(STORED, fastdds=Machine(150e6, 80e6, 0.0001, 0.0002), reader_wake_s=0.00005)


def cell(cell_id: str, payload: int, link: str, **kw) -> dict:
    model = predicted_for("fastdds", payload, 30.0, LINKS[link], calibration=TRUE)
    return {"cell_id": cell_id, "middleware": "fastdds", "profile": "optimized",
            "link": link, "payload_bytes": payload, "rate_hz": 30.0, "topics": 1,
            "status": "ok", "latency_mean_ms": model.mean_s * 1e3,
            "latency_p95_ms": model.p95_s * 1e3, **kw}


def test_the_fit_finds_the_machine_that_made_the_loss_free_cells():
    rows = [cell(f"clean-{p}", p * KIB, "clean") for p in (32, 64, 128)]
    rows.append(cell("lossy-64", 64 * KIB, "lossy"))
    stored = compare(rows, LINKS)
    assert not all(c.within for c in stored[:3])  # the stored machine is another one

    fit = calibrate(rows, LINKS, "run")
    assert fit is not None
    assert fit.fitted_cells == ("clean-32", "clean-64", "clean-128")  # never a lossy cell
    assert fit.calibration.fastdds.receive_bytes_per_s == 80e6
    assert "fitted on run's 3 loss-free cells of Fast DDS" in fit.calibration.describe()
    checked = compare(rows, LINKS, fit.calibration, fit.fitted_cells)
    assert all(c.within for c in checked)
    assert [c.fitted for c in checked] == [True, True, True, False]
    assert "1/1 predicted, 3/3 of the loss-free cells" in summary(checked)[0]


def test_no_fit_without_two_loss_free_idle_cells_of_a_middleware():
    one = [cell("clean-32", 32 * KIB, "clean"), cell("lossy-64", 64 * KIB, "lossy")]
    assert calibrate(one, LINKS, "run") is None
    busy = [cell(f"busy-{p}", p * KIB, "clean", cpu_load="1/core", cpu_load_processes=2)
            for p in (32, 64)]
    assert calibrate(busy, LINKS, "run") is None  # busy cells fit only beside idle ones
    failed = [cell(f"clean-{p}", p * KIB, "clean", status="failed") for p in (32, 64)]
    assert calibrate(failed, LINKS, "run") is None


def test_model_check_says_which_machine_and_refuses_an_unknown_one(tmp_path):
    store = RunStore.create(tmp_path / "run", scenario={"name": "x"}, options={},
                            planned=["a", "b"], estimated_s=1.0, versions={})
    store.info["links"] = {"clean": {"spec": {"mtu": 1500, "up": {"rate": "300 Mbit/s"}}}}
    store.save_info()
    for index, row in enumerate((cell("a", 32 * KIB, "clean"), cell("b", 64 * KIB, "clean"))):
        store.append({"index": index, **row})
    command = [sys.executable, "-m", "linklab.cli", "model-check", "--latency",
               str(tmp_path / "run")]
    result = subprocess.run(command + ["--json"], capture_output=True, text=True, cwd=REPO,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert "fitted on run's 2 loss-free cells" in out["machine"]
    assert all(c["fitted"] and c["within"] for c in out["cells"])
    stored = subprocess.run(command + ["--machine", "stored", "--json"], capture_output=True,
                            text=True, cwd=REPO, timeout=120)
    assert json.loads(stored.stdout)["machine"].startswith("machine (stored")
    bad = subprocess.run(command + ["--machine", "mine"], capture_output=True, text=True,
                         cwd=REPO, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "--machine" in bad.stderr
    assert "run, stored" in bad.stderr
