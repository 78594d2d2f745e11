"""Generated command lines for the real ``linklab`` (a subprocess of the console script;
tests/cli_fuzz_support.py says why): ``model``, ``tune``, ``bench --dry-run`` with
generated scenario and preset files, ``report`` on whole and damaged run directories.

Every command line ends in an exit status the command documents, never a traceback; a
refusal is one line ``linklab: error: ...`` and changes no file (the working directory,
the run directory and the link state directory are as they were: no run directory, no
profile, no state file); a success did what was asked (tune wrote both profiles, with
every --peer given). Seeded (``derandomize``), so a run is reproducible; each test starts
its processes two at a time, about 25 s for the file.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cli_fuzz_support import (
    FLAG,
    FUZZ,
    LINKLAB,
    REPO,
    argv,
    check,
    command_lines,
    odd,
    options,
    run,
    run_all,
    scratch,
    tree,
    value,
)
from conftest import examples
from test_properties_files import GOOD_PRESETS, GOOD_SCENARIO, documents, mutations, preset_docs


def test_the_entry_point_is_installed():
    assert LINKLAB.exists(), f"{LINKLAB} is missing: run scripts/setup.sh"


# --- model ----------------------------------------------------------------------------------

MODEL = {
    "--link": ("433Mbit/s", "10Mbit/s"), "--per": ("1%", "0.2", "0%"),
    "--max-message-size": ("65500", "1472"), "--heartbeat-rate": ("0.33Hz", "5Hz"),
    "--mtu": ("1500", "1400B"), "--fragmentation": ("paper", "ip"),
    "--utilization": ("0.65", "65%"), "--subscribers": ("1", "3"),
    "--overlay": ("none", "vxlan", "wireguard"),
    "--sweep": ("payload=32KiB..512KiB", "per=0..20%:5%", "rate=10Hz..60Hz:10Hz",
                "payload=32KiB,64KiB"),
    "--json": FLAG,
}


def model_line(mixed: bool) -> st.SearchStrategy[list[str]]:
    return st.builds(lambda rate, payload, rest: [*rate, *payload, *rest],
                     st.one_of(st.just([]), value("30Hz", "0.5Hz", mixed=mixed).map(
                         lambda v: ["--rate", v])) if mixed else st.just(["--rate", "30Hz"]),
                     value("256KiB", "1B", mixed=mixed).map(lambda v: ["--payload", v]),
                     options(MODEL, mixed))


@pytest.mark.slow
@settings(FUZZ, max_examples=examples(8, unit=2))
@given(lines=st.lists(command_lines(model_line), min_size=2, max_size=2))
def test_model_answers_any_command_line_or_refuses_in_one_line(lines):
    with scratch() as d:
        here = Path(d)
        outcomes = run_all((["model", *line], here, here / "state") for line in lines)
        for outcome in outcomes:
            check(outcome, {0, 2})
            if outcome.status == 0:
                assert outcome.stdout.strip(), str(outcome)
                if "--json" in outcome.args:
                    json.loads(outcome.stdout)
        assert tree(here) == {}, "linklab model wrote a file"


# --- tune -----------------------------------------------------------------------------------

TUNE = {
    "--utilization": ("0.65", "1"), "--mtu": ("1500", "9000"), "--overlay": ("none", "vxlan"),
    "--subscribers": ("1", "4"), "--ros": ("humble", "jazzy"), "--per": ("1%", "20%"),
    "--peer": ("10.0.0.2", "robot.local", "[fe80::1]:7400", "host-2:7410", "fd00::2"),
    "--outage-tolerance": ("60s", "2min"), "--delay": ("3ms", "0s"),
    "--history-memory": ("256MiB", "1MiB"), "--history-depth": ("47", "1"),
    "--strict": FLAG, "--json": FLAG,
}
# only refused: --verify itself would run a bench
VERIFY = {"--verify-outage": ("5s",), "--verify-middleware": ("fastdds",),
          "--verify-seconds": ("5s",), "--verify-out": ("v",)}


def tune_line(mixed: bool) -> st.SearchStrategy[list[str]]:
    return st.builds(
        lambda rate, payload, link, out, rest, verify: ["--rate", rate, "--payload", payload,
                                                        "--link", link, *out, *rest, *verify],
        value("30Hz", "10Hz", mixed=mixed), value("256KiB", "1KiB", mixed=mixed),
        value("433Mbit/s", "2Mbit/s", mixed=mixed),
        st.sampled_from([["--out", "profiles"], ["--out", "a/b"], []] + (
            [["--out", ""], ["--out", "/proc/linklab-x"], ["--out", "profiles/.."]]
            if mixed else [])),
        options(TUNE, mixed, repeatable=("--peer",)),
        options(VERIFY, mixed) if mixed else st.just([]))


def given_peers(args: list[str]) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--peer"]


def a_peer_address(text: str) -> bool:
    """What Cyclone DDS takes as Peer@Address: an IP address or host name, optionally
    with :port ([IPv6]:port) -- checked here independently of linklab's own check."""
    import ipaddress
    import re

    host, port = text, None
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        if rest:
            if not rest.startswith(":"):
                return False
            port = rest[1:]
    elif text.count(":") == 1:
        host, port = text.split(":")
    if port is not None and not (port.isdigit() and port.isascii() and
                                 1 <= int(port) <= 65535):
        return False
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    label = r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)"
    return not text.startswith("[") and len(host) <= 253 and \
        re.fullmatch(rf"{label}(\.{label})*\.?", host) is not None


@pytest.mark.slow
@settings(FUZZ, max_examples=examples(8, unit=2))
@given(lines=st.lists(command_lines(tune_line), min_size=2, max_size=2))
@example(lines=[["--rate", "30Hz", "--payload", "1KiB", "--link", "100Mbit/s", "--peer", ";rm"],
                ["--rate", "30Hz", "--payload", "1KiB", "--link", "100Mbit/s", "--peer",
                 "robot", "--peer", "10.0.0.2:99999"]])
@example(lines=[["--rate", "30Hz", "--payload", "1KiB", "--link", "100Mbit/s",
                 "--verify-seconds", "5s"],
                ["--rate", "30Hz", "--payload", "1KiB", "--link", "100Mbit/s",
                 "--verify-out", "v"]])
def test_tune_writes_both_profiles_as_asked_or_refuses_writing_nothing(lines):
    with scratch() as d:
        here = Path(d)
        dirs = [here / str(i) for i in range(len(lines))]
        for work in dirs:
            work.mkdir()
        outcomes = run_all((["tune", *line], work, here / "state")
                           for line, work in zip(lines, dirs, strict=True))
        for outcome, work in zip(outcomes, dirs, strict=True):
            check(outcome, {0, 2, 3}, one_line={2, 3})   # 3: --strict, the topic does not fit
            if any(a in VERIFY for a in outcome.args):   # never --verify: refused, not dropped
                assert outcome.status == 2, str(outcome)
            written = tree(work)
            if outcome.status != 0:
                assert written == {}, f"{outcome}\nleft {sorted(written)}"
                continue
            args = outcome.args
            out = work / (args[args.index("--out") + 1] if "--out" in args else
                          "linklab-profiles")
            cyclone = ET.parse(out / "cyclonedds.xml").getroot()
            ET.parse(out / "fastdds.xml")
            peers = [p.get("Address") for p in cyclone.iter()
                     if p.tag.split("}")[-1] == "Peer"]
            given = given_peers(args)
            assert peers == list(dict.fromkeys(given)) or peers == given, \
                f"{outcome}\npeers written: {peers}"
            assert all(a_peer_address(p) for p in peers), f"{outcome}\npeers: {peers}"


# --- bench --dry-run ------------------------------------------------------------------------

SCENARIOS = sorted(p.name for p in (REPO / "scenarios").glob("*.yaml"))
good_scenarios = st.one_of(
    st.sampled_from(SCENARIOS).map(lambda n: (REPO / "scenarios" / n).read_bytes()),
    st.just(GOOD_SCENARIO.encode()))
odd_scenarios = st.one_of(
    good_scenarios, documents.map(lambda d: yaml.safe_dump(d, allow_unicode=True).encode()),
    mutations(GOOD_SCENARIO), st.binary(max_size=60))
odd_presets = st.one_of(st.just(GOOD_PRESETS.encode()), mutations(GOOD_PRESETS),
                        preset_docs.map(lambda d: yaml.safe_dump(d).encode()))
BENCH = {
    "--quick": FLAG, "--json": FLAG, "--repeat": ("1", "3", "1000"),
    "--gate": ("reception_rate>=29Hz", "latency_mean<=80ms", "latency_p99 < 1s"),
    "--out": ("runs", "out/deeper"), "--presets": ("presets.yaml",),
}
ODD_BENCH = {
    "--repeat": st.one_of(st.integers(-3, 2000).map(str), st.sampled_from(
        ["99999999999999999999", "100000", "1.5", "0x10"])),
    "--gate": st.sampled_from(["nope>=1", "reception_rate>=", "cam:latency_mean<=80ms",
                               "reception_rate>=29Hz;rm", ">=", "latency_mean<=-1ms"]),
    "--out": st.sampled_from(["", "/proc/linklab-x", "scenario.yaml"]),
    "--resume": st.sampled_from(["nowhere", "", ".", "scenario.yaml", "/proc"]),
    "--presets": st.sampled_from(["missing.yaml", "", "."]),
}


def bench_case(mixed: bool):
    options_ = options(BENCH, mixed, repeatable=("--gate", "--presets"))
    if mixed:
        options_ = st.builds(lambda a, b: a + argv(b), options_,
                             st.fixed_dictionaries({}, optional=ODD_BENCH))
    return st.tuples(odd_scenarios if mixed else good_scenarios,
                     odd_presets if mixed else st.just(GOOD_PRESETS.encode()), options_,
                     st.sampled_from(["scenario.yaml", None, "missing.yaml", ""])
                     if mixed else st.just("scenario.yaml"))


@pytest.mark.slow
@settings(FUZZ, max_examples=examples(10, unit=2))
@given(cases=st.lists(command_lines(bench_case), min_size=2, max_size=2))
def test_bench_dry_run_answers_any_scenario_and_options_and_changes_nothing(cases):
    with scratch() as d:
        here = Path(d)
        commands = []
        for i, (scenario, presets, options_, positional) in enumerate(cases):
            work = here / str(i)
            work.mkdir()
            (work / "scenario.yaml").write_bytes(scenario)
            (work / "presets.yaml").write_bytes(presets)
            commands.append((["bench", *([positional] if positional is not None else []),
                              "--dry-run", *options_], work, work / "state"))
        before = [tree(work) for _, work, _ in commands]
        outcomes = run_all(commands)
        for outcome, (_, work, _), was in zip(outcomes, commands, before, strict=True):
            check(outcome, {0, 1, 2}, one_line={1, 2})   # 1: the environment (no probes)
            assert tree(work) == was, f"{outcome}\nthe dry run changed {work}"
            if outcome.status == 0 and "--json" in outcome.args:
                assert "cells" in json.loads(outcome.stdout), str(outcome)


@pytest.mark.slow
def test_bench_dry_run_refuses_a_huge_repeat_in_one_line():
    """--repeat beyond trials' own bound (1000) is refused at once, never expanded."""
    with scratch() as d:
        here = Path(d)
        (here / "s.yaml").write_text(GOOD_SCENARIO)
        for repeat in ("99999999999999999999", "100000", "1001", "0", "-1"):
            outcome = run(["bench", "s.yaml", "--dry-run", "--repeat", repeat], here,
                          here / "state", timeout=30)
            check(outcome, {2})
            assert "--repeat" in outcome.stderr, str(outcome)


# --- report ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def a_run(tmp_path_factory) -> Path:
    from report_rundirs import table_run

    return table_run(tmp_path_factory.mktemp("fuzz-report") / "run")


DAMAGE = ["none", "none", "run.json junk", "run.json list", "cells.jsonl junk line",
          "cells.jsonl truncated", "no cells.parquet", "no run.json", "records gone",
          "streams junk", "empty dir"]


def damage(run_dir: Path, how: str, junk: bytes) -> None:
    if how == "run.json junk":
        (run_dir / "run.json").write_bytes(junk)
    elif how == "run.json list":
        (run_dir / "run.json").write_text("[]")
    elif how == "cells.jsonl junk line":
        text = (run_dir / "cells.jsonl").read_bytes()
        (run_dir / "cells.jsonl").write_bytes(text + junk + b"\n")
    elif how == "cells.jsonl truncated":
        text = (run_dir / "cells.jsonl").read_bytes()
        (run_dir / "cells.jsonl").write_bytes(text[: len(text) // 2])
        (run_dir / "cells.parquet").unlink(missing_ok=True)
    elif how == "no cells.parquet":
        (run_dir / "cells.parquet").unlink(missing_ok=True)
    elif how == "no run.json":
        (run_dir / "run.json").unlink()
    elif how == "records gone":
        shutil.rmtree(run_dir / "records", ignore_errors=True)
    elif how == "streams junk":
        (run_dir / "streams.parquet").write_bytes(junk)
    elif how == "empty dir":
        shutil.rmtree(run_dir)
        run_dir.mkdir()


REPORT = {
    "--with": st.lists(st.sampled_from(["run", "other", "missing", "."]), min_size=1,
                       max_size=2),
    "--csv": st.sampled_from(["csv", "run", "/proc/linklab-x", "", "a/b"]),
    "--markdown": st.none(), "--json": st.none(),
    "--compare": st.sampled_from(["other", "run", "missing", ""]),
    "--fail-on-regression": st.none(),
    "--pool": st.lists(value("type", "payload", "profile", "link"), min_size=1, max_size=2),
    "--gate": st.lists(value("reception_rate>=29Hz", "latency_mean<=1ms", "x>=1"),
                       min_size=1, max_size=2),
}
report_cases = st.tuples(st.sampled_from(DAMAGE), st.binary(max_size=40),
                         st.fixed_dictionaries({}, optional=REPORT),
                         st.sampled_from([None, "page.html", "run/x.html", "/proc/x.html"]),
                         st.sampled_from(["run", "run", "missing", "other", ""]))


@pytest.mark.slow
@settings(FUZZ, max_examples=examples(8, unit=2))
@given(cases=st.lists(report_cases, min_size=2, max_size=2))
def test_report_reads_any_run_directory_or_refuses_writing_nothing(a_run, cases):
    with scratch() as d:
        here = Path(d)
        commands = []
        for i, (how, junk, options, html, positional) in enumerate(cases):
            work = here / str(i)
            work.mkdir()
            shutil.copytree(a_run, work / "run")
            shutil.copytree(a_run, work / "other")
            damage(work / "run", how, junk)
            html_args = [] if html is None else ["--html", html]
            commands.append((["report", positional, *argv(options), *html_args], work,
                             work / "state"))
        before = [tree(work) for _, work, _ in commands]
        outcomes = run_all(commands)
        for outcome, (_, work, _), was in zip(outcomes, commands, before, strict=True):
            check(outcome, {0, 1, 2, 70})
            now = tree(work)
            if outcome.status == 2:
                assert now == was, f"{outcome}\na refused report changed {work}"
            else:   # it may only add what was asked: the --csv files, the --html page
                changed = {k for k in set(was) | set(now) if was.get(k) != now.get(k)}
                asked = [a for a in (opt_value(outcome.args, "--csv"),
                                     opt_value(outcome.args, "--html")) if a]
                assert all(any(k == a or k.startswith(a.rstrip("/") + "/") for a in asked)
                           for k in changed), f"{outcome}\nchanged {sorted(changed)}"


def opt_value(args: list[str], option: str) -> str | None:
    return args[args.index(option) + 1] if option in args[:-1] else None


@pytest.mark.slow
@settings(FUZZ, max_examples=examples(3, unit=2))
@given(junk=odd, group=st.sampled_from(["", "link", "field", "k8s", "keystore"]))
@example(junk="x\ny", group="field")   # a value quoted in click's message
@example(junk=" ", group="")            # a command name that is not a letter or digit
def test_a_command_line_click_refuses_is_one_line_too(junk, group):
    """Click's own parsing (unknown commands and options, missing values, extra arguments)
    ends in linklab's one line too, in every command group."""
    with scratch() as d:
        here = Path(d)
        lines = [[*([group] if group else []), junk or "-"],
                 ["model", "--rate"], ["link", "up", "--no-such", junk],
                 ["bench", "a", "b", junk]]
        for outcome in run_all((line, here, here / "s") for line in lines):
            check(outcome, {2})
        assert tree(here) == {}
