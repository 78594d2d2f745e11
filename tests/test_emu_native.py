"""The relay's own unit tests (emu/src: RNG, stage timing, trace accounting, loss
chains), run through cargo so ``make test`` covers them."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.native   # cargo, and the relay's build directory


def test_relay_unit_tests_pass():
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    if not os.access(cargo, os.X_OK):
        pytest.fail("cargo is not installed: run scripts/setup.sh")
    result = subprocess.run(
        [cargo, "test", "--quiet", "--release", "--manifest-path", str(REPO / "emu/Cargo.toml"),
         "--target-dir", str(REPO / "build/emu")],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "test result: ok" in result.stdout
