"""``linklab link measure`` checks every argument before it starts anything.

A measurement takes its --duration and a ramp (minutes on a field link); a --name that is
no preset name, or an --out it cannot write, must be one line naming the argument before
any host is reached -- not after the whole measurement. The hosts here are real (the two
namespaces of a testbed, ``link:RUN/HOST``), and shown to measure with good arguments, so
only the bad argument can stop the command. Needs root (namespaces).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import require_root
from linklab.link import testbed as make_testbed

# alone (make test runs it after the others, one at a time): it checks /tmp for what a
# field session leaves, as test_field_integration (on the other worker) does
pytestmark = [pytest.mark.integration, pytest.mark.alone]

REPO = Path(__file__).resolve().parents[1]
LINKLAB = [sys.executable, "-m", "linklab.cli"]
WORK_S = 1.0     # the time a failing command may take beyond one that fails at its first check


def test_a_bad_name_or_an_unwritable_out_fails_before_anything_starts(tmp_path):
    require_root()
    name = f"ma{os.getpid() % 100000}"
    with make_testbed("measure-args", preset_fields={"description": "measure args test",
                                                     "delay": "1ms"}, name=name):
        hosts = [f"link:{name}/robot", f"link:{name}/edge"]

        def measure(*extra: str) -> tuple[subprocess.CompletedProcess, float]:
            started = time.monotonic()
            result = subprocess.run([*LINKLAB, "link", "measure", *hosts, "--duration", "5s",
                                     *extra], capture_output=True, text=True, timeout=120,
                                    cwd=REPO)
            return result, time.monotonic() - started

        # these hosts measure: with good arguments the command reaches its probes
        good = subprocess.Popen([*LINKLAB, "link", "measure", *hosts, "--duration", "5s",
                                 "--name", "measured-here", "--out", str(tmp_path / "p.yaml")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                cwd=REPO)
        seen = ""
        for line in good.stderr:
            seen += line
            if line.startswith("probes:"):
                break
        good.send_signal(signal.SIGINT)
        good.communicate(timeout=30)
        assert "probes:" in seen, seen
        assert sorted(os.listdir(tmp_path)) == []

        first, baseline = measure("--duration", "0s")   # refused at the first check
        assert first.returncode == 2 and "--duration" in first.stderr
        (tmp_path / "dir.yaml").mkdir()
        out = str(tmp_path / "named.yaml")
        (tmp_path / "json.measure.json").mkdir()
        cases = {
            ("--name", "bad name", "--out", out): "linklab: error: --name: 'bad name' is not "
                                                 "a preset name",
            ("--name", "wifi-mild"): "linklab: error: --name: 'wifi-mild' is the name of a "
                                     "shipped preset",
            ("--out", "/proc/linklab-measure.yaml"): "linklab: error: --out: cannot write "
                                                     "/proc/linklab-measure.yaml",
            ("--out", str(tmp_path / "dir.yaml")): f"linklab: error: --out: {tmp_path}/dir.yaml "
                                                   "is a directory",
            ("--out", str(tmp_path / "json.yaml")): f"linklab: error: --out: {tmp_path}/"
                                                    "json.measure.json is a directory",
        }
        for args, error in cases.items():
            result, took = measure(*args)
            assert result.returncode == 2, (args, result.stderr[-1000:])
            assert result.stderr.startswith(error) and result.stderr.count("\n") == 1, \
                (args, result.stderr[-1000:])
            assert "connecting" not in result.stderr
            assert took < baseline + WORK_S, (args, took, baseline)
        assert sorted(os.listdir(tmp_path)) == ["dir.yaml", "json.measure.json"]
