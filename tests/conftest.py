"""Shared test fixtures, and the two test tiers.

``make test-unit`` (``pytest --tier=unit``): the unit tier -- no root, nothing from
``build/`` or another step of scripts/setup.sh beyond the venv, every property test at
no more than UNIT_EXAMPLES generated examples; about a minute. ``make test`` (``pytest``,
``--tier=full`` by default): every test, each property test at its own count.

Markers take a test out of the unit tier (never a skip at run time):
``integration`` (root, network namespaces, the real middlewares; with ``alone`` too when
it times something, loads the CPU or checks machine-wide state, so make test runs it
after the others, one at a time), ``native`` (what
scripts/setup.sh builds or installs besides the venv: the probes, the emulator, ns-3,
cargo, apt tools such as chromium, llvm-mc, openssl) and ``slow`` (over ~2 s alone: most
run the linklab command line several times). The unit tier checks itself: a test in it
that calls require_root or require_tool, opens a headless Chromium, or opens or runs
anything under ``build/``, fails and says which marker it lacks. There is no silent skip
for a missing install step: a missing tool is a failure that names it.
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


# --- the tiers ------------------------------------------------------------------------------

UNIT_EXAMPLES = 25          # the unit tier's most generated examples per property test
OUT_OF_UNIT = ("integration", "native", "slow")
_tier = "full"              # --tier, set in pytest_configure (before test modules import)


def examples(full: int, unit: int = UNIT_EXAMPLES) -> int:
    """A property test's example count: ``full`` in make test, at most ``unit`` in the
    unit tier. Hypothesis lets an explicit ``@settings(max_examples=...)`` win over the
    loaded profile, so a test that states its count states it through this."""
    return min(full, unit) if _tier == "unit" else full


def pytest_addoption(parser):
    parser.addoption(
        "--tier", choices=("unit", "full"), default="full",
        help=f"unit (make test-unit): leave out tests marked {' or '.join(OUT_OF_UNIT)}, "
             f"property tests at most {UNIT_EXAMPLES} examples; full (make test, the "
             "default): every test at its own count")


def pytest_configure(config):
    global _tier
    _tier = config.getoption("tier")
    from hypothesis import settings
    settings.register_profile("unit", max_examples=UNIT_EXAMPLES, deadline=None)
    if _tier == "unit":
        settings.load_profile("unit")


def pytest_report_header(config):
    if _tier == "unit":
        return (f"tier: unit (no test marked {' or '.join(OUT_OF_UNIT)}; property tests at "
                f"most {UNIT_EXAMPLES} examples)")
    return "tier: full (every test; property tests at their own counts)"


def _in_unit_tier(item) -> bool:
    return not any(item.get_closest_marker(name) for name in OUT_OF_UNIT)


def pytest_collection_modifyitems(config, items):
    if _tier != "unit":
        return
    keep = [item for item in items if _in_unit_tier(item)]
    if len(keep) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if not _in_unit_tier(item)])
        items[:] = keep
    # a property test whose own @settings asks for more than the tier allows (hypothesis
    # keeps an explicit count over the profile's): it states its count through examples()
    too_many = sorted({
        f"{item.nodeid.split('[')[0]} ({count})" for item in items
        for count in [getattr(getattr(item.obj, "_hypothesis_internal_use_settings", None),
                              "max_examples", 0)]
        if count > UNIT_EXAMPLES})
    if too_many:
        raise pytest.UsageError(
            f"the unit tier allows at most {UNIT_EXAMPLES} examples per property test; these "
            f"ask for more (use max_examples=examples(N) from conftest): {', '.join(too_many)}")


# The unit tier keeps itself honest: the test running now (with its fixtures' set-up) is
# known, and what a unit test may not do -- need root or a tool setup.sh installs, open
# or run anything under build/ (the native build), run the namespace and traffic-control
# tools -- makes it fail with the marker it lacks, whether or not the machine has root
# and build/ (make test runs as root with everything built: such a test would pass there
# and fail only on a newcomer's make test-unit).
_running: list = [None]
_crossed: list[str] = []
_BUILD_PREFIXES = tuple({str(BUILD) + os.sep, str(BUILD.resolve()) + os.sep})
_ROOT_TOOLS = frozenset({"ip", "tc", "nft", "iptables", "unshare", "nsenter", "ethtool"})
_AUDITED = frozenset({"open", "os.listdir", "os.scandir", "subprocess.Popen", "os.exec",
                      "os.posix_spawn"})


def _under_build(value) -> bool:
    try:
        path = os.fsdecode(os.fspath(value))
    except TypeError:
        return False
    return os.path.join(os.path.abspath(path), "").startswith(_BUILD_PREFIXES)


def _audit(event: str, args: tuple) -> None:
    if event not in _AUDITED or _running[0] is None:
        return
    try:
        if event in ("open", "os.listdir", "os.scandir"):
            if args and args[0] is not None and not isinstance(args[0], int) \
                    and _under_build(args[0]):
                _crossed.append(f"{event} {os.fsdecode(os.fspath(args[0]))} (native)")
            return
        command = args[1]   # (executable or path, argv, ...) for the three
        if isinstance(command, (str, bytes, os.PathLike)):
            command = [command]
        words = [os.fsdecode(os.fspath(word)) for word in command or ()
                 if isinstance(word, (str, bytes, os.PathLike))]
        if args[0] is not None and not isinstance(args[0], int):
            program = os.fsdecode(os.fspath(args[0]))
            if not words or words[0] != program:
                words.insert(0, program)
        # a command-line word is a path under build/ only if it names one ("build" alone
        # is mkdocs' subcommand, not the directory)
        if any(os.sep in word and _under_build(word) for word in words):
            _crossed.append(f"runs {' '.join(words)[:200]} (native)")
        elif words and os.path.basename(words[0].split()[0] if words[0].strip() else "") \
                in _ROOT_TOOLS:
            _crossed.append(f"runs {' '.join(words)[:200]} (integration)")
    except Exception:   # an audit hook must never break what it watches
        pass


sys.addaudithook(_audit)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _running[0] = item if _in_unit_tier(item) else None
    _crossed.clear()
    try:
        return (yield)
    finally:
        _running[0] = None


@pytest.fixture(autouse=True)
def _unit_tests_stay_unit(request):
    yield
    if _crossed:
        crossed = list(dict.fromkeys(_crossed))
        _crossed.clear()
        pytest.fail(f"{request.node.nodeid} is in the unit tier but "
                    f"{'; '.join(crossed[:5])}: mark it (make test-unit runs it without "
                    "root, build/ or setup.sh's apt tools)", pytrace=False)


def not_in_unit_tier(what: str, marker: str) -> None:
    """Fail a unit-tier test that is about to do ``what`` (needs the ``marker``)."""
    item = _running[0]
    if item is not None:
        pytest.fail(f"{item.nodeid} is in the unit tier but {what}: mark it {marker} "
                    "(make test-unit runs it without root, build/ or setup.sh's apt tools)",
                    pytrace=False)


# --- helpers -------------------------------------------------------------------------------

def one_line_usage_error(call) -> str:
    """The UsageError ``call`` raises (it must raise one), whose text is one line."""
    from linklab.errors import UsageError

    with pytest.raises(UsageError) as info:
        call()
    text = str(info.value)
    assert "\n" not in text
    return text


def require_root() -> None:
    not_in_unit_tier("calls require_root()", "integration")
    if os.geteuid() != 0:
        pytest.fail("integration tests need root (network namespaces, nftables, tc)")


def require_tool(name: str) -> str:
    not_in_unit_tier(f"calls require_tool({name!r})", "native (or integration)")
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
