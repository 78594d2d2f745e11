"""The paper's steps one at a time: profiles/step1.xml and step1-2.xml."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import BUILD
from linklab.profiles import profile_path
from linklab.tune.steps import STEPS, partial_profile

CHECKER = BUILD / "probes" / "checks" / "linklab-check-fastdds-profile"


def test_shipped_step_profiles_are_the_generated_ones():
    base = profile_path("default").read_text()
    for name, steps in STEPS.items():
        assert profile_path(name).read_text() == partial_profile(base, steps, 30), name


def test_partial_profile_rejects_other_steps():
    base = profile_path("default").read_text()
    for steps in ((2,), (1, 3), ()):
        with pytest.raises(ValueError):
            partial_profile(base, steps, 30)


@pytest.mark.integration
@pytest.mark.parametrize(("name", "heartbeat_ns"), [("step1", 3_000_000_000),
                                                     ("step1-2", 16_666_667)])
def test_fast_dds_applies_exactly_the_steps(name, heartbeat_ns):
    if not CHECKER.is_file():
        pytest.fail(f"{CHECKER} is missing: run scripts/setup.sh")
    path: Path = profile_path(name)
    proc = subprocess.run([str(CHECKER), str(path), "--participant", f"linklab_{name}",
                           "--writer", f"linklab_{name}", "--reader", f"linklab_{name}",
                           "--domain", str(100 + os.getpid() % 100)],
                          capture_output=True, text=True, timeout=60)
    data = json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])
    assert proc.returncode == 0 and data["errors"] == [], proc.stderr[-1000:]
    (transport,) = data["participant"]["transports"]
    assert transport["max_message_size"] == 1472  # step 1
    assert data["writer"]["heartbeat_period_ns"] == heartbeat_ns  # step 2 only in step1-2
    assert data["writer"]["history_kind"] == "KEEP_ALL"  # the rest stays the default's
    assert data["defaults"]["writer"]["heartbeat_period_ns"] == heartbeat_ns
