"""`linklab bench --dry-run` makes every check the run makes before its first cell, and
exits as the run would; unreasonable counts, durations, repeats and matrices are refused
with the limit named (issue 37 items 3-4, issue 41 item 6).

Each test drives the real command line (a subprocess, as a user runs it); none needs
root: a dry run changes nothing, and a refused run stops before it does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def bench(*args, cwd=REPO, timeout=60):
    return subprocess.run([sys.executable, "-m", "linklab.cli", "bench", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd)


def scenario(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def one_line_error(result) -> str:
    """The refusal: exit 2, nothing on stdout, one `linklab: error:` line on stderr."""
    assert result.returncode == 2, (result.returncode, result.stdout[-500:], result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("linklab: error: "), result.stderr
    return lines[0].removeprefix("linklab: error: ")


BASE = "name: s\nfixed:\n  link: wifi-ideal\n  payload: 1KiB\n  rate: 30Hz\n  count: 10\n"


# --- --dry-run runs the run's checks ------------------------------------------------------

@pytest.mark.native
@pytest.mark.parametrize("extra, expected", [
    # a profile the middleware cannot take: the line of the axis value
    ("axes:\n  middleware: [fastdds, mqtt]\n  profile: [default, optimized]\n",
     "s.yaml:9: axes.profile[1]: cell mqtt-optimized: profile 'optimized': MQTT takes "
     "default only"),
    # an unknown profile name
    ("  profile: nosuch\n",
     "s.yaml:7: fixed.profile: unknown profile 'nosuch'; shipped Fast DDS profiles: "),
    # a QoS policy the middleware has no such thing for
    ("  middleware: mqtt\n  history: keep_last:5\n",
     "s.yaml:8: fixed.history: mqtt cannot take it: MQTT has no history cache"),
    # ... set by a topic entry itself: that entry's line
    ("  middleware: mqtt\n  topics:\n    - {name: cam}\n    - {name: imu, history: 5}\n",
     "s.yaml:10: fixed.topics[1].history: mqtt cannot take it: MQTT has no history cache"),
    # a link the link layer cannot design (a radio link on a chain)
    ("  topology: chain\naxes:\n  link: [wifi-ideal, wifi-80211a-curve]\n",
     "s.yaml:8: axes.link[1]: cell wifi-80211a-curve: link wifi-80211a-curve: --topology: "
     "a radio link places robots around the edge: topology pair or star, not chain"),
])
def test_dry_run_refuses_what_the_run_refuses_with_the_fields_line(tmp_path, extra, expected):
    """Each passed --dry-run with exit 0 before: the dry run returned before check_ready.
    The real run (no --dry-run) prints the same line, exits 2 and makes no run directory."""
    text = BASE + extra
    if "axes:\n  link:" in extra:
        text = text.replace("  link: wifi-ideal\n", "")
    scenario(tmp_path, text)
    dry = one_line_error(bench("s.yaml", "--dry-run", cwd=tmp_path))
    assert dry.startswith(expected), dry
    out = tmp_path / "runs"
    real = one_line_error(bench("s.yaml", "--out", out, cwd=tmp_path))
    assert real == dry
    assert not out.exists()


@pytest.mark.native
def test_dry_run_reaches_no_field_host_but_refuses_what_the_field_run_refuses(tmp_path):
    """hosts: scenarios: the dry run makes the field environment's refusals, profile and
    QoS checks, and never connects (an unreachable ssh:// host costs nothing)."""
    path = scenario(tmp_path, name="fld.yaml", text="""\
        name: fld
        hosts:
          robot: ssh://nobody@192.0.2.1
          edge: local
        fixed:
          payload: 1KiB
          rate: 30Hz
          count: 10
        axes:
          profile: [default, large_data]
        """)
    result = bench("fld.yaml", "--dry-run", "--json", cwd=tmp_path, timeout=30)
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["cells"]) == 2
    path.write_text(path.read_text().replace("large_data", "nosuch"))
    error = one_line_error(bench("fld.yaml", "--dry-run", cwd=tmp_path, timeout=30))
    assert error.startswith("fld.yaml:10: axes.profile[1]: cell nosuch: unknown profile "
                            "'nosuch'"), error


# --- limits -------------------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    ("1e20", "--repeat: '1e20' is not a whole number; expected 1 to 1000"),
    ("99999999999999999999", "--repeat: 99999999999999999999 is more than 1000, the most "
                             "trials a cell takes (as trials:)"),
    ("100000", "--repeat: 100000 is more than 1000"),
    ("0", "--repeat: 0 must be 1 or more (at most 1000)"),
])
def test_repeat_is_refused_beyond_its_limit(value, expected):
    """Before: an OverflowError traceback (99999999999999999999), > 10 min and 636 MB
    with no output (100000, here a 60 s timeout), a message without the limit (1e20)."""
    error = one_line_error(bench("scenarios/demo.yaml", "--dry-run", "--repeat", value))
    assert error.startswith(expected), error


@pytest.mark.parametrize("extra, expected", [
    ("  count: 10000000000000000000000000\n",
     "s.yaml:6: fixed.count: 10000000000000000000000000 is more than 100000000, the most "
     "messages a topic publishes in one cell"),
    ("  count: 3000000\n",
     "s.yaml:6: fixed.count: count 3000000 at 30 Hz publishes for 27.8 h; one cell publishes "
     "at most 24 h"),
    ("  duration: 25h\n",
     "s.yaml:6: fixed.duration: '25h' is longer than 24 h, the most linklab takes for one "
     "cell"),
    ("  count: 10\n  warmup: 1000000s\n",
     "s.yaml:7: fixed.warmup: '1000000s' is longer than 24 h"),
    ("  count: 10\n  topics:\n    - {name: a, count: 5000000}\n",
     "s.yaml:8: fixed.topics[0]: count 5000000 at 30 Hz publishes for 46.3 h; one cell "
     "publishes at most 24 h"),
])
def test_absurd_counts_and_durations_are_refused_with_the_limit(tmp_path, extra, expected):
    """Before: count 1e25 ran a dry run to an estimate of ~1e20 hours, exit 0."""
    scenario(tmp_path, BASE.replace("  count: 10\n", "") + extra)
    error = one_line_error(bench("s.yaml", "--dry-run", cwd=tmp_path))
    assert error == expected or error.startswith(expected), error


def test_a_search_trial_longer_than_an_hour_is_refused(tmp_path):
    scenario(tmp_path, BASE.replace("rate: 30Hz", "rate: max").replace("  count: 10\n", "")
             + "search: {trial: 2h}\n")
    error = one_line_error(bench("s.yaml", "--dry-run", cwd=tmp_path))
    assert error == ("s.yaml:6: search.trial: '2h' is longer than 60 min, the longest search "
                     "trial linklab takes")


@pytest.mark.slow
def test_a_matrix_too_large_is_refused_before_it_is_expanded(tmp_path):
    """60 cells x 1000 trials: the product is checked before any cell is made (the old
    code expanded every cell first: --repeat 100000 took > 10 min and 636 MB)."""
    result = bench("scenarios/paper-000-table2.yaml", "--dry-run", "--repeat", "1000",
                   timeout=30)
    assert one_line_error(result) == (
        "scenarios/paper-000-table2.yaml:1: the matrix has 60000 cells (4 link x 3 profile "
        "x 5 payload x 1000 trials); a run takes at most 10000 cells: use fewer axis values "
        "or trials (--repeat), or split it into several scenarios")
    axes = "axes:\n  payload: [" + ", ".join(f"{k}B" for k in range(1, 102)) + \
        "]\n  rate: [" + ", ".join(f"{k}Hz" for k in range(1, 101)) + "]\n"
    scenario(tmp_path, BASE.replace("  payload: 1KiB\n  rate: 30Hz\n", "") + axes)
    error = one_line_error(bench("s.yaml", "--dry-run", cwd=tmp_path))
    assert error.startswith("s.yaml:1: the matrix has 10100 cells (101 payload x 100 rate); "
                            "a run takes at most 10000 cells"), error


def test_the_limits_leave_the_shipped_scenarios_alone():
    """The largest shipped study (1200 cells) and its trials stay well inside."""
    from linklab.bench.fields import MAX_CELLS
    from linklab.bench.matrix import matrix_size
    from linklab.bench.spec import load_scenario

    sizes = []
    for path in sorted((REPO / "scenarios").glob("*.yaml")):
        try:
            sizes.append(matrix_size(load_scenario(path)))
        except Exception:  # noqa: BLE001 -- scenarios for other commands or hosts
            continue
    assert max(sizes) == 1200 and max(sizes) * 5 < MAX_CELLS


@pytest.mark.slow
def test_dry_run_refuses_a_probe_that_is_not_built(tmp_path):
    """linklab from a tree whose probes are not built (a fresh clone before
    scripts/setup.sh): the dry run says so, as the run does (exit 1) -- before, it printed
    the matrix and exited 0."""
    import os
    import shutil

    shutil.copytree(REPO / "src", tmp_path / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "src"))
    runs = []
    for extra in (["--dry-run"], ["--out", tmp_path / "runs"]):
        runs.append(subprocess.run(
            [sys.executable, "-m", "linklab.cli", "bench", REPO / "scenarios/demo.yaml",
             *map(str, extra)], capture_output=True, text=True, timeout=60, env=env,
            cwd=tmp_path))
    for result in runs:
        assert result.returncode == 1 and result.stdout == "", result.stderr
        assert "linklab-probe-fastdds is not built" in result.stderr
        assert str(tmp_path / "build" / "probes") in result.stderr  # the copy's, not ours
    assert runs[0].stderr == runs[1].stderr
    assert not (tmp_path / "runs").exists()
