"""The native Zenoh probe (probes/zenoh, Rust) against the Python one it replaces for
measurements: the same cell run with each gives records and summaries with the same
fields, the same delivered samples and sequence numbers, and latencies of the same order.
Also: LINKLAB_ZENOH_PROBE is applied or refused, and the Rust probe's refusals and policy
reasons are the Python table's, word for word."""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest

from conftest import require_root
from linklab.cli import main
from linklab.errors import UsageError
from linklab.middleware.families import ZENOH
from linklab.probes import zenoh_choice
from linklab.probes.qos import unsupported_policies
from middleware_pair import read_records


def _rust_text(repo_root, name: str) -> str:
    """A probes/zenoh source with Rust's string line continuations (a backslash, the line
    break and the next line's indent) joined as the compiler joins them."""
    text = (repo_root / "probes" / "zenoh" / "src" / name).read_text()
    return re.sub(r"\\\n\s*", "", text)


def test_the_rust_probe_gives_the_python_tables_reasons(repo_root):
    session = _rust_text(repo_root, "session.rs")
    for role in ("pub", "sub"):
        for why in unsupported_policies("zenoh", role).values():
            assert f'"{why}"' in session
    options = _rust_text(repo_root, "options.rs")
    for why in ZENOH.refused.values():
        assert f'"{why}"' in options


def test_the_choice_is_applied_or_refused(monkeypatch):
    monkeypatch.delenv(zenoh_choice.ENV, raising=False)
    assert zenoh_choice.zenoh_probe_choice() == "native"
    monkeypatch.setenv(zenoh_choice.ENV, "python")
    assert zenoh_choice.zenoh_probe_choice() == "python"
    assert zenoh_choice.zenoh_probe_argv()[1:] == ["-m", "linklab.probes.zenoh_probe"]
    monkeypatch.setenv(zenoh_choice.ENV, "rust")
    with pytest.raises(UsageError, match="LINKLAB_ZENOH_PROBE: expected one of native, "
                                         "python, got 'rust'"):
        zenoh_choice.zenoh_probe_binary()


@pytest.mark.native
def test_the_native_probes_own_unit_tests_pass(repo_root):
    """probes/zenoh/src's tests (CDR layouts, options, pacing), in the build cache's target
    (make test builds the probe first, so only the test harness is compiled here)."""
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    if not os.access(cargo, os.X_OK):
        pytest.fail("cargo is not installed: run scripts/setup.sh")
    cache = Path(os.environ.get("LINKLAB_ZENOH_PROBE_CACHE",
                                Path.home() / ".cache" / "linklab" / "probe-zenoh"))
    result = subprocess.run(
        [cargo, "test", "--quiet", "--release", "--locked", "--manifest-path",
         str(repo_root / "probes" / "zenoh" / "Cargo.toml"), "--target-dir",
         str(cache / "target")], capture_output=True, text=True, timeout=540)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "test result: ok" in result.stdout


SCENARIO = """
name: zenoh-probes
fixed:
  link: ethernet-1g
  type: Array64k
  rate: 10Hz
  count: 20
  warmup: 0.5s
axes:
  middleware: [zenoh-peer, zenoh-router]
"""


def _run(tmp_path, capsys, monkeypatch, probe: str) -> tuple[dict, object]:
    """The cells' rows by middleware and the run's directory, measured by ``probe``."""
    monkeypatch.setenv(zenoh_choice.ENV, probe)
    scenario = tmp_path / "zenoh.yaml"
    scenario.write_text(SCENARIO)
    out = tmp_path / probe
    assert main(["bench", str(scenario), "--out", str(out), "--json"]) == 0
    rows = {row["middleware"]: row for row in json.loads(capsys.readouterr().out)["cells"]}
    return rows, next(out.iterdir())


def _fields(value, prefix: str = "") -> set[str]:
    """Every key path of a summary (applied's nested maps too; list items as one)."""
    if isinstance(value, dict):
        return {p for k, v in value.items() for p in {f"{prefix}{k}",
                                                       *_fields(v, f"{prefix}{k}.")}}
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return _fields(value[0], f"{prefix}[].")
    return set()


@pytest.mark.integration
@pytest.mark.native
def test_native_and_python_probes_agree_on_the_same_cell(tmp_path, capsys, monkeypatch):
    require_root()
    native_rows, native_run = _run(tmp_path, capsys, monkeypatch, "native")
    python_rows, python_run = _run(tmp_path, capsys, monkeypatch, "python")
    for middleware in ("zenoh-peer", "zenoh-router"):
        native, python = native_rows[middleware], python_rows[middleware]
        assert native["status"] == python["status"] == "ok", (native["failure_reason"],
                                                              python["failure_reason"])
        assert set(native) == set(python)  # the same columns
        assert native["received"] == python["received"] == 20
        for role in ("pub", "sub"):
            reports = [json.loads((run / "records" / middleware / f"{role}.json").read_text())
                       for run in (native_run, python_run)]
            assert "(Rust probe)" in reports[0]["summary"]["version"]
            assert "(Python probe)" in reports[1]["summary"]["version"]
            assert _fields(reports[0]["summary"]) == _fields(reports[1]["summary"]), role
        latencies = []
        for run in (native_run, python_run):
            _, received = read_records(run / "records" / middleware / "sub.bin")
            assert [r[0] for r in received] == list(range(20))
            assert {r[3] for r in received} == {65536}
            latencies.append(statistics.median(r[2] - r[1] for r in received))
        # the same order: both well under a millisecond's tenfold of the other
        assert max(latencies) < 10 * min(latencies), (middleware, latencies)
