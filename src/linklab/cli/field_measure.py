"""``linklab link measure A B``: measure a path, write a preset that replays it, compare."""

from __future__ import annotations

import json
import math
import shlex
import sys
from pathlib import Path

import typer

from linklab.cli.options import PROBE_RATE_OPTION, RAMP_STEP_OPTION
from linklab.errors import LinklabError, UsageError
from linklab.output import console, err_console, print_json

HOST_HELP = ("A host: ssh://[user@]host[:port] (OpenSSH, your ssh config applies), local, "
             "netns:NAME, or link:RUN/HOST (a host of linklab link up --name RUN).")


def _pct(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{100 * value:.2f} %"


def _num(value: float | None, fmt: str = ".4g", unit: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:{fmt}}{unit}"


def print_measurement(m) -> None:
    def line(text: str = "") -> None:
        console.print(text, markup=False, highlight=False, soft_wrap=True)

    line(f"path {m.a['name']} ({m.a['at']}, {m.a['address']}) -> {m.b['name']} "
         f"({m.b['at']}, {m.b['address']}), {m.started_utc}")
    r = m.rtt
    line(f"  RTT ms     min {_num(r.min_ms)}  p5 {_num(r.p5_ms)}  p50 {_num(r.p50_ms)}  "
         f"p95 {_num(r.p95_ms)}  p99 {_num(r.p99_ms)}  max {_num(r.max_ms)}  "
         f"(robust sigma {_num(r.sigma_ms, '.3g')}, {r.count} probes)")
    clock = m.clock
    line(f"  clock      {m.b['name']} - {m.a['name']} = {clock['offset_ns'] / 1e6:.3f} ms "
         f"+- {clock['uncertainty_ns'] / 1e6:.3f} ms ({clock['method']})")
    line(f"  {'':<10} {'up (A->B)':>24} {'down (B->A)':>24}")
    rows = [
        ("loss", lambda d: f"{_pct(d.loss.mean_loss)} +- {_pct(d.loss.se_loss)}"),
        ("mean burst", lambda d: (f"{d.loss.mean_burst:.3g} +- {d.loss.se_burst:.2g} pkt"
                                  if d.loss.bursts else "-")),
        ("Gilbert p/r", lambda d: f"{d.loss.p:.4g} / {d.loss.r:.4g}" if d.loss.lost else "-"),
        ("reordered", lambda d: _pct(d.reordered)),
        ("duplicates", lambda d: str(d.duplicates)),
        ("path MTU", lambda d: _num(d.pmtu, "d", " B")),
        ("carried", lambda d: ("-" if not d.carried_bps else
                               ("" if d.carried_bound == "saturated" else ">= ")
                               + f"{d.carried_bps / 1e6:.4g} Mbit/s")),
    ]
    for label, value in rows:
        line(f"  {label:<10} {value(m.up):>24} {value(m.down):>24}")
    for note in m.notes:
        line(f"  note: {note}")


def print_comparison(rows, gaps) -> None:
    def line(text: str = "") -> None:
        console.print(text, markup=False, highlight=False, soft_wrap=True)

    line("replay vs measured (tolerance; bound = 4.42 standard errors of the difference):")
    for row in rows:
        if row.unit == "points":
            diff, tol, bound = (f"{100 * row.difference:+.2f} pt", f"{100 * row.tolerance:.0f} pt",
                                f"{100 * row.bound:.2f} pt")
            values = f"{_pct(row.measured)} -> {_pct(row.replay)}"
        elif row.unit == "bytes":
            diff, tol, bound = f"{row.difference:+.0f} B", "0 B", "0 B"
            values = f"{row.measured:.0f} -> {row.replay:.0f}"
        else:
            diff, tol, bound = (f"{100 * row.difference:+.1f} %", f"{100 * row.tolerance:.0f} %",
                                f"{100 * row.bound:.1f} %")
            values = f"{row.measured:.4g} -> {row.replay:.4g}"
        verdict = "ok" if row.within else "OUTSIDE"
        if not row.enough:
            verdict += " (samples too small for this tolerance: measure longer)"
        line(f"  {row.quantity:<11} {row.direction:<5} {values:<26} {diff:>10}  tolerance "
             f"{tol:>6}  bound {bound:>8}  {verdict}")
    for gap in gaps:
        line(f"  not compared: {gap}")


def measure_command(
    a: str = typer.Argument(..., metavar="A", help=HOST_HELP + " Up is A -> B."),
    b: str = typer.Argument(..., metavar="B", help=HOST_HELP),
    duration: str = typer.Option("30s", "--duration",
                                 help="How long the loss and RTT probes run."),
    probe_rate: str = PROBE_RATE_OPTION, ramp_step: str = RAMP_STEP_OPTION,
    max_rate: str = typer.Option("1Gbit/s", "--max-rate",
                                 help="Where the ramp stops if the path carries it all."),
    out: Path = typer.Option(None, "--out", metavar="FILE.yaml",
                             help="Write a preset that replays the path (and the full "
                                  "measurement as FILE.measure.json). Default: print "
                                  "only."),
    name: str = typer.Option(None, "--name",
                             help="The preset's name (default: A's and B's names; "
                                  "letters, digits, _ . -, not a shipped preset's)."),
    compare_to: Path = typer.Option(None, "--compare", metavar="MEASUREMENT.json",
                                    help="Compare with an earlier measurement (a replay "
                                         "with its original); exit 1 if outside the "
                                         "tolerances."),
    as_json: bool = typer.Option(False, "--json", help="Print the measurement as JSON."),
) -> None:
    """Measure the path between two hosts, to replay it in the lab.

    Round-trip time, loss and how bursty it is (a two-state Gilbert model), the rate
    the path carries (a UDP ramp), path MTU and reordering. With --out, a preset file
    that `linklab link up --presets` and scenarios load, so the lab replays the
    path."""
    from linklab.bench.host_address import parse_host
    from linklab.field.compare import comparable_gaps, compare
    from linklab.field.measure import measure_path

    settings = measure_settings(duration, probe_rate, ramp_step, max_rate)
    spec_a = parse_host(_host_name(a, "robot"), a, "A")
    spec_b = parse_host(_host_name(b, "edge"), b, "B")
    reference = None if compare_to is None else _read_measurement(compare_to)
    # every argument is checked before anything starts (a measurement takes minutes)
    check_hosts(spec_a, spec_b)
    preset_name = check_preset_name(name, f"{spec_a.name}-{spec_b.name}")
    if out is not None:
        check_out(out)
    command = "linklab " + shlex.join(sys.argv[1:]) if sys.argv[1:] else ""

    def progress(text: str) -> None:
        err_console.print(text, markup=False, highlight=False)

    m = measure_path(spec_a, spec_b, settings, progress=progress, command=command)
    if out is not None:
        _write_preset(out, preset_name, m)
    rows = compare(reference, m) if reference is not None else []
    if as_json:
        print_json({"measurement": m.to_dict(), "comparison": [r.to_dict() for r in rows]})
    else:
        print_measurement(m)
        if out is not None:
            console.print(f"wrote {out} (preset {preset_name}) and "
                          f"{out.with_suffix('.measure.json')}", markup=False,
                          highlight=False)
        if reference is not None:
            print_comparison(rows, comparable_gaps(reference, m))
    if any(not r.within for r in rows):
        raise typer.Exit(1)


def _read_measurement(path: Path):
    """--compare: an earlier measurement (FILE.measure.json)."""
    from linklab.field.measure import Measurement

    try:
        return Measurement.from_dict(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UsageError(f"cannot read {path}: {error}", argument="--compare") from None


def _write_preset(out: Path, preset_name: str, m) -> None:
    """--out: the preset that replays the path, and the measurement beside it."""
    from linklab.field.preset_out import write_preset

    try:
        write_preset(out, preset_name, m)
        out.with_suffix(".measure.json").write_text(json.dumps(m.to_dict(), indent=1) + "\n")
    except OSError as error:
        raise LinklabError(f"cannot write {out}: {error.strerror}") from None


def add_measure(link: typer.Typer) -> None:
    link.command("measure")(measure_command)


def measure_settings(duration: str, probe_rate: str, ramp_step: str, max_rate: str):
    """The measurement's settings from the command line (``link measure``, ``field
    tune``), checked: a one-line error naming the option otherwise."""
    from linklab.field.measure import MeasureSettings
    from linklab.units import parse_bitrate, parse_duration, parse_frequency

    settings = MeasureSettings(
        duration_s=parse_duration(duration, "--duration"),
        probe_rate_hz=parse_frequency(probe_rate, "--probe-rate"),
        ramp_step_s=parse_duration(ramp_step, "--ramp-step"),
        max_rate_bps=parse_bitrate(max_rate, "--max-rate"))
    settings.check()
    return settings


def check_hosts(a, b) -> None:
    """A and B as far as they can be checked without connecting: not both this machine,
    each namespace there, the ssh configuration file readable."""
    from linklab.field.shell import ssh_options

    if a.kind == b.kind == "local":
        raise UsageError("A and B are both this machine; measure between two hosts",
                         argument="B")
    for spec, argument in ((a, "A"), (b, "B")):
        if spec.kind == "netns" and not Path("/run/netns", spec.target).exists():
            raise UsageError(f"no network namespace {spec.target!r} here (ip netns list; "
                             f"{spec.text})", argument=argument)
        if spec.kind == "ssh":
            ssh_options()


def check_preset_name(name: str | None, default: str) -> str:
    """The preset's name: a preset file's name that no shipped preset has (a user file with
    a shipped name does not load: link/presets.py)."""
    from linklab.link.preset_file import NAME, NAME_FORMS
    from linklab.link.presets import load_presets

    chosen = name if name is not None else default
    if not NAME.match(chosen):
        what = repr(chosen) if name is not None else f"the default name {chosen!r}"
        raise UsageError(f"{what} is not a preset name; use {NAME_FORMS}", argument="--name")
    if chosen in load_presets():
        raise UsageError(f"{chosen!r} is the name of a shipped preset (linklab link presets); "
                         f"give yours another name, e.g. {chosen}-measured", argument="--name")
    return chosen


def check_out(out: Path) -> None:
    """--out: a .yaml file, and FILE.measure.json beside it, that this process can write
    (each opened for appending, so nothing that exists changes; what did not exist is
    removed again)."""
    if out.suffix not in (".yaml", ".yml"):
        raise UsageError(f"{out}: a preset file ends in .yaml", argument="--out")
    for path in (out, out.with_suffix(".measure.json")):
        if not path.resolve().parent.is_dir():
            raise UsageError(f"{path.parent} is not a directory", argument="--out")
        if path.is_dir():
            raise UsageError(f"{path} is a directory; give a file (FILE.yaml)",
                             argument="--out")
        existed = path.exists()
        try:
            with open(path, "a"):
                pass
        except OSError as error:
            raise UsageError(f"cannot write {path}: {error.strerror}; give a file in a "
                             "directory you can write", argument="--out") from None
        if not existed:
            path.unlink(missing_ok=True)


def _host_name(text: str, default: str) -> str:
    """A readable name for a host given on the command line (the preset's name uses it)."""
    import re

    if text.startswith("link:") and "/" in text:
        return text.rsplit("/", 1)[1]
    match = re.match(r"^ssh://(?:[^@]+@)?([A-Za-z][A-Za-z0-9_-]*)", text)
    return match[1][:32] if match else default
