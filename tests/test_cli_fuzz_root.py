"""Generated command lines for ``linklab link up`` and ``linklab link measure`` that hold at
least one bad value (the rest good or odd): each is refused in one line naming the
argument, before anything is made or started -- the root namespace's interfaces, nft
tables and qdiscs, the namespaces, the processes and the link state directory are as they
were, and no file was written. (A command line that is all good would build a link or
measure a path: those are tests/test_link_*.py's and tests/test_field_*.py's.)

Runs the real ``linklab`` as root, like the commands it checks (integration: run it under
the integration lock, nothing else may change the root namespace meanwhile). Seeded.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli_fuzz_support import FUZZ, LINKLAB, argv, check, odd, run_all, scratch, tree, value
from conftest import examples, require_root, require_tool

# alone (make test runs it after the others, one at a time):
# it checks the root namespace is unchanged
pytestmark = [pytest.mark.integration, pytest.mark.alone]


def root_snapshot() -> dict[str, str]:
    """The root namespace's interfaces, nft tables, qdiscs; the namespaces."""
    commands = {"links": ["ip", "-d", "link", "show"], "nft": ["nft", "list", "tables"],
                "qdiscs": ["tc", "qdisc", "show"], "netns": ["ip", "netns", "list"]}
    return {key: subprocess.run(command, capture_output=True, text=True, check=True).stdout
            for key, command in commands.items()}


def naming(token: str) -> list[str]:
    found = subprocess.run(["pgrep", "-af", token], capture_output=True, text=True).stdout
    return [line for line in found.splitlines() if "pytest" not in line]


@pytest.fixture(scope="module", autouse=True)
def _root():
    require_root()
    for tool in ("ip", "nft", "tc", "pgrep"):
        require_tool(tool)


def refused_cleanly(outcomes, works, before, token: str) -> None:
    for outcome, work, was in zip(outcomes, works, before, strict=True):
        check(outcome, {2})
        assert tree(work) == was, f"{outcome}\nchanged files in {work}"
    assert naming(token) == [], "a process of a refused command is still running"


# --- link up ----------------------------------------------------------------------------------

LINK_UP = {
    "--topology": ("pair", "star", "chain"), "--hosts": ("1", "3"),
    "--loss": ("1%", "up=1%,down=20%"), "--rate": ("433Mbit/s", "10Mbit/s"),
    "--outage": ("10s+20s", "5s+2s/30s"), "--mtu": ("1500", "1400"),
    "--tcp-congestion": ("cubic", "reno"), "--delay": ("30ms", "up=30ms,down=20ms"),
    "--jitter": ("5ms",), "--jitter-distribution": ("normal", "uniform"),
    "--loss-model": ("gemodel:1%,30%,100%,0%",), "--json": (),
}
# each of these is refused, whatever comes with it
BAD_UP = [("--loss", "150%"), ("--loss", "up=1%,sideways=2%"), ("--rate", "0bit/s"),
          ("--mtu", "10"), ("--mtu", "99999999"), ("--topology", "ring"), ("--hosts", "0"),
          ("--hosts", "99999"), ("--outage", "5s"), ("--outage", "1s+0s"),
          ("--tcp-congestion", "no-such-algorithm"), ("--delay", "-1ms"),
          ("--jitter-distribution", "cauchy"), ("--loss-model", "gemodel:150%"),
          ("--trace", "missing.trace"), ("--radio", "lte"), ("--distance", "-5m"),
          ("--tx-power", "1e9dBm"), ("--presets", "missing.yaml"), ("--nodes", "9"),
          ("--pods", "0"), ("--overlay", "gre"), ("--encryption", "ipsec"),
          ("--datapath", "xdp"), ("--name", "bad name"), ("--name", "../x"),
          ("--name", ""), ("PRESET", "no-such-preset")]


def up_line(mixed: bool):
    def build(rest: dict, bad: tuple[str, str], preset: str | None, odd_value: str):
        args = argv(rest)
        if mixed and args:
            args[-1] = odd_value   # one more odd value (or an extra argument)
        preset_args = [preset] if preset else []
        if bad[0] == "PRESET":
            preset_args = [bad[1]]
        else:
            args += [bad[0], bad[1]]
        return preset_args, args

    parts = {k: st.none() if v == () else value(*v, mixed=mixed) for k, v in LINK_UP.items()}
    return st.builds(build, st.fixed_dictionaries({}, optional=parts),
                     st.sampled_from(BAD_UP),
                     st.sampled_from([None, "wifi-mild", "ethernet-1g", "4g"]), odd)


@settings(FUZZ, max_examples=examples(10))
@given(lines=st.lists(st.booleans().flatmap(up_line), min_size=2, max_size=2))
def test_link_up_with_a_bad_value_is_refused_in_one_line_and_makes_nothing(lines):
    token = f"fz{os.getpid() % 10000}u"
    with scratch() as d:
        here = Path(d)
        commands, works = [], []
        for i, (preset, args) in enumerate(lines):
            work = here / str(i)
            work.mkdir()
            name = f"{token}{i}"
            named = args if "--name" in args else [*args, "--name", name]
            commands.append((["link", "up", *preset, *named], work, work / "state"))
            works.append(work)
        before_files = [tree(w) for w in works]
        before = root_snapshot()
        outcomes = run_all(commands)
        try:
            refused_cleanly(outcomes, works, before_files, token)
            assert root_snapshot() == before, "a refused link up changed the root namespace"
        finally:
            for outcome, (_, work, state) in zip(outcomes, commands, strict=True):
                if outcome.status == 0:   # (the test fails) never leave a link up
                    args = outcome.args
                    name = args[args.index("--name") + 1]
                    subprocess.run([str(LINKLAB), "link", "down", "--name", name], cwd=work,
                                   env={**os.environ, "LINKLAB_STATE_DIR": str(state)},
                                   capture_output=True, timeout=120)


# --- link measure -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def namespace():
    """A namespace of the test's own: ``netns:NAME`` passes measure's host check."""
    name = f"fzm{os.getpid() % 100000}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "delete", name], check=False)


BAD_MEASURE = [("--duration", "0s"), ("--duration", "-1s"), ("--duration", "1e9h"),
               ("--duration", "x"), ("--probe-rate", "0Hz"), ("--probe-rate", "1e12Hz"),
               ("--ramp-step", "0s"), ("--max-rate", "0bit/s"), ("--name", "bad name"),
               ("--name", "wifi-mild"), ("--name", ""), ("--out", "/proc/linklab-x.yaml"),
               ("--out", "dir.yaml"), ("--out", ""), ("--compare", "missing.json"),
               ("--compare", "junk.json"), ("A", "local"), ("A", "netns:fz-missing"),
               ("A", "ssh://"), ("A", "link:nope/robot"), ("A", ""), ("B", "ssh://a b"),
               ("B", "link:../x/robot"), ("B", "netns:../etc")]
MEASURE = {"--duration": ("1s", "2s"), "--probe-rate": ("2kHz", "500Hz"),
           "--ramp-step": ("0.5s",), "--max-rate": ("100Mbit/s",),
           "--name": ("lab-path", "measured"), "--out": ("path.yaml",), "--json": ()}


def measure_line(namespace: str, mixed: bool):
    def build(rest: dict, bad: tuple[str, str], swap: bool, odd_value: str):
        a, b = ("local", f"netns:{namespace}")
        if swap:
            a, b = b, a
        if bad[0] == "A":
            a = bad[1]
        elif bad[0] == "B":
            b = bad[1]
        args = argv(rest)
        if mixed and args:
            args[-1] = odd_value   # one more odd value (or an extra argument)
        if bad[0] not in ("A", "B"):
            args += [bad[0], bad[1]]
        return [a, b, *args]

    parts = {k: st.none() if v == () else value(*v, mixed=mixed) for k, v in MEASURE.items()}
    return st.builds(build, st.fixed_dictionaries({}, optional=parts),
                     st.sampled_from(BAD_MEASURE), st.booleans(), odd)


@settings(FUZZ, max_examples=examples(10))
@given(data=st.data())
def test_link_measure_with_a_bad_value_is_refused_in_one_line_before_it_starts(namespace,
                                                                              data):
    lines = data.draw(st.lists(st.booleans().flatmap(lambda m: measure_line(namespace, m)),
                               min_size=2, max_size=2), label="lines")
    with scratch() as d:
        here = Path(d)
        commands, works = [], []
        for i, line in enumerate(lines):
            work = here / str(i)
            work.mkdir()
            (work / "dir.yaml").mkdir()
            (work / "junk.json").write_text('{"not": "a measurement"}')
            commands.append((["link", "measure", *line], work, work / "state"))
            works.append(work)
        before_files = [tree(w) for w in works]
        before = root_snapshot()
        inside = subprocess.run(["ip", "-n", namespace, "-d", "link", "show"],
                                capture_output=True, text=True, check=True).stdout
        outcomes = run_all(commands)
        refused_cleanly(outcomes, works, before_files, namespace)
        assert root_snapshot() == before
        assert subprocess.run(["ip", "netns", "pids", namespace], capture_output=True,
                              text=True).stdout == "", "a process was left in the namespace"
        assert subprocess.run(["ip", "-n", namespace, "-d", "link", "show"],
                              capture_output=True, text=True).stdout == inside
        for outcome in outcomes:   # refused at its checks, not after a measurement
            assert outcome.seconds < 10, str(outcome)
