"""The two test tiers (tests/conftest.py) keep their promises: make test-unit runs what
needs neither root nor build/ nor setup.sh's apt tools, at a few examples per property
test; a test in it that reaches for one of those fails and names the marker it lacks."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest

import conftest
from conftest import BUILD, UNIT_EXAMPLES, examples, require_root, require_tool


@pytest.fixture
def a_unit_test():
    """What the tier checks see while a test with no tier marker runs."""
    unmarked = SimpleNamespace(nodeid="tests/test_x.py::test_x",
                               get_closest_marker=lambda name: None)
    running = conftest._running[0]
    conftest._running[0] = unmarked
    try:
        yield unmarked
    finally:
        conftest._running[0] = running
        conftest._crossed.clear()


def test_examples_are_the_full_count_in_make_test_and_capped_in_the_unit_tier(monkeypatch):
    monkeypatch.setattr(conftest, "_tier", "full")
    assert examples(2000) == 2000 and examples(8) == 8 and examples(8, unit=2) == 8
    monkeypatch.setattr(conftest, "_tier", "unit")
    assert examples(2000) == UNIT_EXAMPLES and examples(8) == 8 and examples(8, unit=2) == 2


def test_a_unit_test_that_needs_root_or_a_tool_fails_naming_its_marker(a_unit_test):
    with pytest.raises(pytest.fail.Exception, match="mark it integration"):
        require_root()
    with pytest.raises(pytest.fail.Exception, match=r"require_tool\('tc'\).*mark it native"):
        require_tool("tc")


def test_a_unit_test_that_opens_or_runs_build_or_ip_is_caught(a_unit_test):
    with pytest.raises(OSError):
        open(BUILD / "no-such-probe")  # the audit event comes before the open fails
    with pytest.raises(OSError):
        subprocess.run([str(BUILD / "no-such-probe")])
    with pytest.raises(OSError):
        subprocess.run(["/nonexistent/ip", "netns", "list"])
    crossed = list(conftest._crossed)
    assert crossed[0].startswith("open ") and crossed[0].endswith("(native)"), crossed
    assert crossed[1].startswith("runs ") and crossed[1].endswith("(native)"), crossed
    assert crossed[2] == "runs /nonexistent/ip netns list (integration)", crossed
    # what a unit test does every day is not
    conftest._crossed.clear()
    open(__file__).close()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert conftest._crossed == []


def test_a_marked_test_may_need_root(a_unit_test):
    conftest._running[0] = None   # what the tiers keep while a marked test runs
    conftest.not_in_unit_tier("calls require_root()", "integration")   # no failure


def test_the_unit_tier_runs_no_marked_test(request):
    if conftest._tier == "unit":
        assert [item.nodeid for item in request.session.items
                if not conftest._in_unit_tier(item)] == []
