"""The relay on a core of its own, `link exec` on the others (issue 44)."""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import require_root
from linklab.errors import UsageError
from linklab.link.placement import Placement, plan_placement


def test_auto_gives_the_relay_the_highest_cpu_and_the_endpoints_the_rest():
    assert plan_placement("auto", {0, 1, 2, 3}) == Placement(3, (0, 1, 2))
    assert plan_placement("1", {0, 1}) == Placement(1, (0,))
    assert plan_placement("auto", {0}) is None     # one CPU: nothing to separate
    assert plan_placement("none", {0, 1}) is None
    assert plan_placement(None, {0, 1}) is None


@pytest.mark.parametrize(("choice", "says"), [
    ("7", "CPU 7 is not one this process may use"), ("fast", "auto (a CPU of its own)"),
    ("-1", "auto (a CPU of its own)"),
])
def test_a_cpu_that_cannot_be_used_is_refused(choice, says):
    with pytest.raises(UsageError) as error:
        plan_placement(choice, {0, 1})
    assert str(error.value).startswith("--relay-cpu") and says in str(error.value)


@pytest.mark.integration
def test_a_link_up_pins_its_relay_and_link_exec_runs_off_that_cpu():
    require_root()
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: nothing to separate")
    from linklab.link.lifecycle import down, up

    name = f"pin{os.getpid() % 100000}"
    bed = up(None, name=name, delay="5ms", relay_cpu="auto")
    try:
        status = bed.status()
        placement = status["placement"]
        (relay,) = bed.journal.state["emu"].values()   # a pair: one link, one relay
        relay_pid = relay["pid"]
        relay_cpus = os.sched_getaffinity(relay_pid)
        out = subprocess.run(bed.argv("robot", ["grep", "Cpus_allowed_list", "/proc/self/status"]),
                             capture_output=True, text=True, check=True).stdout
        exec_cpus = out.split(":")[1].strip()
    finally:
        assert down(name) == []
    assert relay_cpus == {placement["relay_cpu"]}
    assert str(placement["relay_cpu"]) not in exec_cpus.replace("-", ",").split(",")
    assert placement["endpoint_cpus"] and placement["relay_cpu"] not in placement["endpoint_cpus"]
