"""Shared test fixtures.

Unit tests are plain and fast. Tests marked ``integration`` use root, network
namespaces and the real middlewares; ``make test`` runs both. There is no silent
skip for a missing install step: a missing tool is a failure that names it.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "build"

# Tests stop what they start with SIGINT (Ctrl-C) and expect its default action or the
# program's handler. A test run started in the background of a non-interactive shell
# (``make test &``, nohup) inherits SIGINT ignored, Python then keeps it ignored, and an
# ignored signal stays ignored across fork and exec: every process a test starts would
# shrug off the test's SIGINT. A handler here is reset to the default in each child.
signal.signal(signal.SIGINT, signal.default_int_handler)


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.fail("integration tests need root (network namespaces, nftables, tc)")


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed: run scripts/setup.sh")
    return path


def load_script(name: str):
    """scripts/<name>.py as a module (the scripts are not a package)."""
    import importlib.util
    path = Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py"
    # a fresh module on every call, registered under its own name as an import would be
    # (dataclasses look their module up in sys.modules)
    module_name = f"linklab_scripts_{name}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def artifacts_dir() -> Path:
    """Where tests keep things a person may want to look at (screenshots, reports)."""
    path = REPO / "test-artifacts"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(autouse=True, scope="session")
def _private_state_dir(tmp_path_factory):
    """Link runs of this test session keep their state in a directory of their own
    (owned by the user, 0700, as linklab requires), never in the machine's /run/linklab,
    which other sessions on the same machine use."""
    if os.environ.get("LINKLAB_STATE_DIR"):
        yield
        return
    state = tmp_path_factory.mktemp("linklab-state")
    os.chmod(state, 0o700)
    os.environ["LINKLAB_STATE_DIR"] = str(state)
    try:
        yield
    finally:
        del os.environ["LINKLAB_STATE_DIR"]


def _cpu_competitors() -> set[tuple[int, str]]:
    """(pid, start time) of every CPU-bound competitor linklab's cpu_load starts
    (link/competitors.py) for this test session running now: those with the session's
    LINKLAB_STATE_DIR (_private_state_dir), never those of a linklab run beside it."""
    from linklab.link.competitors import TAG
    from linklab.link.journal import process_start_time

    found = set()
    ours = b"LINKLAB_STATE_DIR=" + os.environ.get("LINKLAB_STATE_DIR", "").encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")[-2:-1] != \
                    [TAG.encode()]:
                continue
            if ours not in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                continue
        except OSError:
            continue
        start = process_start_time(int(entry))
        if start is not None:
            found.add((int(entry), start))
    return found


@pytest.fixture(autouse=True)
def _no_cpu_competitor_outlives_its_test(request):
    """A CPU-bound competitor a test leaves behind slows every later test and makes the
    busy-CPU tests measure a load no one declared: the test that left it fails (an error
    naming it) and the competitor is stopped here, so it does not reach the next test.
    Only integration tests start competitors (they run linklab on namespaces)."""
    if request.node.get_closest_marker("integration") is None:
        yield
        return
    from linklab.link.journal import stop_process

    before = _cpu_competitors()
    yield
    left = _cpu_competitors() - before
    for pid, start in left:
        stop_process(pid, start, grace_s=1.0)
    if left:
        pytest.fail(f"{len(left)} CPU competitor(s) outlived the test (pids "
                    f"{sorted(p for p, _ in left)}); stopped them", pytrace=False)
