"""``linklab field check|tune``: real hosts, before a run and around the tuner.

(``linklab link measure`` is in field_measure.py; ``linklab bench`` takes a scenario with
``hosts:`` through field/host_environment.py.)
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import typer

from linklab.cli.field_measure import HOST_HELP
from linklab.cli.options import PRESET_FILES_OPTION, PROBE_RATE_OPTION, RAMP_STEP_OPTION
from linklab.errors import UsageError
from linklab.output import console, err_console


def _line(text: str) -> None:
    console.print(text, markup=False, highlight=False, soft_wrap=True)


field_app = typer.Typer(name="field", no_args_is_help=True,
                        help="Work with real hosts over SSH: check them before a run; "
                             "measure a path, tune profiles for it and verify them.")


@field_app.command("check")
def check_command(
    scenario_path: Path = typer.Argument(..., metavar="SCENARIO.yaml",
                                         help="A scenario with hosts: (real machines)."),
    presets: list[Path] = PRESET_FILES_OPTION,
) -> None:
    """Check the real hosts of a scenario before running it.

    Reaches every host, checks (or copies) the probes, and prints what each host's
    network settings (socket buffers, IP reassembly, MTU, multicast) and clock sync
    allow, with what to change. Runs nothing; exit 1 if a check warns."""
    from linklab.bench.matrix import expand
    from linklab.bench.spec import load_scenario
    from linklab.field.host_environment import FieldEnvironment

    scenario = load_scenario(scenario_path, preset_files=presets)
    if not scenario.hosts:
        raise UsageError(f"{scenario_path} names no hosts: (real machines); its links are "
                         "emulated, nothing to check", argument="SCENARIO.yaml")
    env = FieldEnvironment(scenario)
    try:
        env.check_ready(expand(scenario))
        for line in env.notes():
            _line(line)
    finally:
        env.close()
    if any(not f.ok for f in env.findings):
        raise typer.Exit(1)


@field_app.command("tune")
def tune_command(
    a: str = typer.Argument(..., metavar="A", help=HOST_HELP + " The publisher (robot)."),
    b: str = typer.Argument(..., metavar="B", help=HOST_HELP + " The subscriber (edge)."),
    rate: str = typer.Option("30Hz", "--rate", help="The topic's publish rate."),
    payload: str = typer.Option("256KiB", "--payload", help="The topic's sample size."),
    middleware: str = typer.Option("fastdds", "--middleware",
                                   help="fastdds or cyclonedds (the tuner's profiles)."),
    count: int = typer.Option(300, "--count", help="Samples each verification run publishes."),
    duration: str = typer.Option("20s", "--duration",
                                 help="How long the path's loss and RTT are measured."),
    probe_rate: str = PROBE_RATE_OPTION, ramp_step: str = RAMP_STEP_OPTION,
    max_rate: str = typer.Option("1Gbit/s", "--max-rate",
                                 help="Where the UDP rate ramp stops if the path carries it "
                                      "all."),
    out: Path = typer.Option(Path("linklab-field"), "--out", metavar="DIR",
                             help="Where the preset, profiles and run directory go."),
) -> None:
    """Tune a DDS profile for a real path and show the difference it makes.

    Measures the path A -> B, tunes a profile for it (linklab tune with the measured
    rate, loss and MTU), runs the real middleware on that path with the default and
    the tuned profile, and prints the before/after table."""
    from linklab.bench.host_address import parse_host
    from linklab.cli.field_measure import measure_settings
    from linklab.field.tuneloop import Verify, run
    from linklab.middleware import DDS_FAMILIES
    from linklab.units import parse_frequency, parse_size

    if middleware not in DDS_FAMILIES:
        raise UsageError(f"{middleware!r}: the tuner makes fastdds and cyclonedds "
                         "profiles", argument="--middleware")
    if not 10 <= count <= 1_000_000:
        raise UsageError(f"{count} is outside 10..1000000", argument="--count")
    settings = measure_settings(duration, probe_rate, ramp_step, max_rate)
    verify = Verify(middleware=middleware, rate_hz=parse_frequency(rate, "--rate"),
                    payload_bytes=parse_size(payload, "--payload"), count=count)
    spec_a, spec_b = parse_host("robot", a, "A"), parse_host("edge", b, "B")
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} is not a directory", argument="--out")

    def progress(text: str) -> None:
        err_console.print(text, markup=False, highlight=False, soft_wrap=True)

    result = run(spec_a, spec_b, settings, verify, out, progress=progress,
                 command="linklab " + shlex.join(sys.argv[1:]))
    _print_tuning(result, out, f"{spec_a.text} -> {spec_b.text}", verify)
    if any(r.get("status") == "error" for r in result.rows):
        raise typer.Exit(70)


def _print_tuning(result, out: Path, path: str, verify) -> None:
    """The measurement, the tuned settings and profiles written, the before/after table,
    the preset and the run directory."""
    from linklab.cli.field_measure import print_measurement
    from linklab.field.tuneloop import table
    from linklab.tune import write_profiles

    print_measurement(result.measurement)
    paths = write_profiles(result.tuning, out / "profiles")
    summary = result.tuning.explanation.summary
    settings = result.tuning.settings
    _line(f"tuned ({result.tuning.verdict}): maxMessageSize {settings.max_message_size} B, "
          f"heartbeat {settings.heartbeat_period_ns / 1e6:.4g} ms, history "
          f"{settings.history_depth}; {summary}".rstrip("; "))
    _line(f"profiles: {paths['fastdds']}, {paths['cyclonedds']}")
    rows = table(result.rows)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    _line(f"before/after on {path} ({verify.middleware}, "
          f"{verify.payload_bytes} B at {verify.rate_hz:g} Hz, {verify.count} samples):")
    for row in rows:
        _line("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths, strict=True))))
    for r in result.rows:
        if r.get("failure_reason"):
            _line(f"  {r.get('profile')}: {r['failure_reason']}")
    _line(f"preset: {result.preset_file} (link up {result.preset_name} --presets ...)")
    _line(f"run directory: {result.run_dir}  (linklab report {result.run_dir})")


def register(app: typer.Typer) -> None:
    app.add_typer(field_app, name="field")
