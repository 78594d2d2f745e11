"""What the CLI-level fuzz (tests/test_cli_fuzz*.py) shares: the real ``linklab`` entry
point run in a subprocess, the outcome every command line must have, a snapshot of the
files a refused command must leave as they were, and the odd values tried on every
option.

Why a subprocess and not typer's CliRunner: the properties are about what a user of the
installed command sees -- the status the OS reports, every line on the real stderr (a
traceback the interpreter prints, a warning at exit, rich's wrapping on a pipe), files
and namespaces left behind, and signals, which only a process of its own receives and
answers as linklab does (its handlers are installed by the entry point before the
imports). CliRunner calls the click command inside pytest: none of that is the same. The
cost is the start-up of each process (about 0.4 s of imports), so the example counts are
small and each test runs its processes two at a time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, Phase, event, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from conftest import examples

REPO = Path(__file__).resolve().parents[1]
# the console script pip made from pyproject's [project.scripts]: the real entry point
LINKLAB = Path(sys.executable).with_name("linklab")

# no "explain" phase: it reruns a failing example hundreds of times (minutes here)
FUZZ = settings(derandomize=True, deadline=None, database=None, max_examples=examples(20),
                phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                       HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])


@dataclass
class Outcome:
    args: list[str]
    status: int
    stdout: str
    stderr: str
    seconds: float

    def lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]

    def __str__(self) -> str:
        return (f"linklab {' '.join(map(repr, self.args))} -> exit {self.status} in "
                f"{self.seconds:.1f} s\nstderr: {self.stderr[-3000:]}")


def run(args: list[str], cwd: Path, state: Path, timeout: float = 60) -> Outcome:
    """``linklab ARGS`` in ``cwd``, its link state in ``state``; a plain terminal width."""
    env = {**os.environ, "LINKLAB_STATE_DIR": str(state), "COLUMNS": "100",
           "NO_COLOR": "1", "PYTHONWARNINGS": ""}
    started = time.monotonic()
    done = subprocess.run([str(LINKLAB), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, errors="replace", timeout=timeout,
                          stdin=subprocess.DEVNULL)
    return Outcome(args, done.returncode, done.stdout, done.stderr,
                   time.monotonic() - started)


def run_all(commands: Iterable[tuple[list[str], Path, Path]]) -> list[Outcome]:
    """Several command lines, two at a time (the machine has two cores)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda c: run(*c), commands))


def check(outcome: Outcome, allowed: set[int], one_line: set[int] = frozenset({2})) -> None:
    """The outcome every command line must have: an exit status the command documents,
    never a traceback or an exception reported at exit; a refusal (2, and the statuses in
    ``one_line``) is one line ``linklab: error: ...``. Other failures print what they
    print (a report's gate misses, one line each)."""
    if currently_in_test_context():   # (--hypothesis-show-statistics counts them)
        event(f"{outcome.args[0]}: exit {outcome.status}")
    assert outcome.status in allowed, str(outcome)
    assert "Traceback" not in outcome.stderr, str(outcome)
    assert "Exception ignored" not in outcome.stderr, str(outcome)
    if outcome.status in one_line:
        lines = outcome.lines()
        assert len(lines) == 1 and lines[0].startswith("linklab: error: "), str(outcome)


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and directory under ``root``: (size, mtime in ns); directories (-1, 0)."""
    found: dict[str, tuple[int, int]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        key = str(path.relative_to(root))
        found[key] = (-1, 0) if path.is_dir() else (info.st_size, info.st_mtime_ns)
    return found


def scratch() -> tempfile.TemporaryDirectory:
    """A directory of one example's own (hypothesis reuses a test's fixtures)."""
    return tempfile.TemporaryDirectory(prefix="linklab-fuzz-")


def argv(options: dict[str, object]) -> list[str]:
    """An option dict as arguments: None is a flag, a list repeats the option."""
    out: list[str] = []
    for option, value in options.items():
        if value is None:
            out.append(option)
        elif isinstance(value, list):
            for item in value:
                out += [option, str(item)]
        else:
            out += [option, str(value)]
    return out


# --- values ----------------------------------------------------------------------------------

# what a command line can carry (no NUL; valid UTF-8)
text = st.text(alphabet=st.characters(blacklist_categories=("Cs",),
                                      blacklist_characters="\x00"), max_size=12)
ODD_WORDS = ["", " ", "-1", "0", "-0", "1e308", "1e-400", "nan", "inf", "-inf", "NaN",
             "99999999999999999999999", "1_000", "0x10", "1,2", "a=b", "../x", "/dev/null",
             "~", "%s", "{}", "[]", "null", "true", "é", "∞", "1e3", "3.", ".5", "\t", "-",
             "--", "1 2", "x" * 200, "0.0000001", "18446744073709551616"]
odd = st.one_of(st.sampled_from(ODD_WORDS), text)
UNITS = ["Hz", "kHz", "B", "KiB", "MiB", "KB", "GiB", "bit/s", "Mbit/s", "Gbit/s", "ms", "s",
         "min", "h", "%", ""]
quantities = st.builds(lambda n, u: f"{n}{u}",
                       st.one_of(st.integers(-5, 10**12), st.floats(allow_nan=True,
                                                                   allow_infinity=True),
                                 st.sampled_from(["1e308", "0.5", "-0", "1e-9"])),
                       st.sampled_from(UNITS))


def value(*good: str, mixed: bool = True) -> st.SearchStrategy[str]:
    """An option's value: one of its good values; ``mixed``, as often an odd one or a
    quantity of any unit."""
    if not mixed:
        return st.sampled_from(good)
    return st.one_of(st.sampled_from(good), st.sampled_from(good), odd, quantities) if good \
        else st.one_of(odd, quantities)


FLAG = ()   # an option without a value


def options(spec: dict[str, tuple[str, ...]], mixed: bool,
            repeatable: tuple[str, ...] = ()) -> st.SearchStrategy[list[str]]:
    """Some of ``spec``'s options as arguments, each with a value (``value``); a
    repeatable one once to three times."""
    parts = {}
    for option, good in spec.items():
        if good == FLAG:
            parts[option] = st.none()
        elif option in repeatable:
            parts[option] = st.lists(value(*good, mixed=mixed), min_size=1, max_size=3)
        else:
            parts[option] = value(*good, mixed=mixed)
    return st.fixed_dictionaries({}, optional=parts).map(argv)


def command_lines(build) -> st.SearchStrategy[list[str]]:
    """``build(mixed)``'s command lines, half of them from good values only (they should
    succeed: the properties of a success get examples too), half mixed with odd ones."""
    return st.booleans().flatmap(build)
