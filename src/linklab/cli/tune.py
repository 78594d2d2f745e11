"""``linklab tune``: write Fast DDS and Cyclone DDS profiles for one topic over one link."""

from __future__ import annotations

from pathlib import Path

import typer

from linklab.cli import topic_options as topic
from linklab.cli import tune_options as opt
from linklab.cli.options import FORMAT_OPTION, JSON_TEXT_OPTION, output_format
from linklab.errors import UsageError
from linklab.output import print_json
from linklab.tune import (
    TuningResult,
    render_markdown,
    render_text,
    tune,
    usage_lines,
    write_profiles,
)
from linklab.tune.input_text import parse_tuning_input
from linklab.tune.inputs import TuningInput
from linklab.tune.outcome import cpu_falls_short, tuning_document

CPU_SHORT = ("no tuned writer holds under the declared CPU contention (its CPU or its repair "
             "loop, above; --verify runs it to confirm)")


def tune_command(
    rate: str = topic.RATE, payload: str = topic.PAYLOAD, link: str = topic.link_option(...),
    utilization: str = opt.UTILIZATION, mtu: str = opt.MTU, overlay: str = topic.OVERLAY,
    subscribers: int = topic.SUBSCRIBERS, ros: str = opt.ROS, per: str = opt.PER,
    peer: list[str] = opt.PEER, outage_tolerance: str = opt.OUTAGE_TOLERANCE,
    delay: str = opt.DELAY, history_memory: str = opt.HISTORY_MEMORY,
    history_depth: int = opt.HISTORY_DEPTH, cpu_load: str = opt.CPU_LOAD,
    cpu_share: str = opt.CPU_SHARE, cpu_cores: str = opt.CPU_CORES,
    middleware: list[str] = opt.MIDDLEWARE, verify: bool = opt.VERIFY,
    verify_outage: str = opt.VERIFY_OUTAGE, verify_seconds: str = opt.VERIFY_SECONDS,
    verify_middleware: list[str] = opt.VERIFY_MIDDLEWARE, verify_out: Path = opt.VERIFY_OUT,
    out: Path = opt.OUT, strict: bool = opt.STRICT, json_output: bool = JSON_TEXT_OPTION,
    fmt: str = FORMAT_OPTION,
) -> None:
    """Write DDS profiles that carry one topic well over a given link.

    Fast DDS and Cyclone DDS profiles (XML) after the optimization of paper 000
    (Optimizing ROS 2 Communication for Wireless Robotic Systems): messages that fit
    one IP packet, heartbeats twice per publish period, a history deep enough to
    ride out link outages. Prints why each setting was chosen, what the loss of the
    link does with and without them, and how to use the files.

    Exit 3: the topic does not fit the link (with --strict), or the writer would not
    get the CPU it needs (with --cpu-load or --cpu-share); without --verify nothing
    is written then. Exit 4: a profile failed --verify."""
    fmt = output_format(fmt, json_flag=json_output)
    t = parse_tuning_input(rate, payload, link, utilization, mtu, overlay, subscribers, ros,
                           per, peer, outage_tolerance, delay, history_memory, history_depth,
                           cpu_load, cpu_share, cpu_cores, middleware)
    result = tune(t)  # validates everything before any file is touched
    given = [option for option, v in (("--verify-outage", verify_outage),
                                      ("--verify-seconds", verify_seconds),
                                      ("--verify-middleware", verify_middleware),
                                      ("--verify-out", verify_out)) if v not in (None, [], ())]
    if given and not verify:   # applied or refused, never dropped
        raise UsageError("needs --verify", argument=given[0])
    checks = None
    if verify:
        from linklab.cli.tune_verify import check_verify_options

        checks = check_verify_options(verify, verify_outage, verify_seconds or "10s",
                                      verify_middleware or list(t.middlewares))
    cpu_short = cpu_falls_short(result, t.middlewares)
    if cpu_short and not verify:   # the contention declared: the prediction is the answer
        _refuse(result, fmt, CPU_SHORT)
    if strict and result.verdict == "infeasible":
        _refuse(result, fmt, "--strict: the topic does not fit the link")
    paths = write_profiles(result, out)
    verdicts = None
    if checks is not None:
        from linklab.cli.tune_verify import run_verify

        verdicts = run_verify(result, paths, checks, verify_out or Path(out) / "verify")
    if fmt == "json":
        print_json(tuning_document(t, result, paths, verdicts))
    else:
        typer.echo("\n".join(_report_lines(t, result, paths, verdicts, fmt)))
    if cpu_short:
        raise typer.Exit(3)  # predicted before the run; --verify shows it beside
    if verdicts is not None and not all(v.passed for v in verdicts):
        raise typer.Exit(4)


def _refuse(result: TuningResult, fmt: str, why: str) -> None:
    """Exit 3 writing nothing: the tuning (JSON) or its summary, then ``why`` on stderr."""
    if fmt == "json":
        print_json({**result.to_dict(), "files": {}})
    else:
        typer.echo(result.explanation.summary)
    typer.echo(f"linklab: error: {why}; no files written", err=True)
    raise typer.Exit(3)


def _report_lines(t: TuningInput, result: TuningResult, paths: dict[str, Path],
                  verdicts: list | None, fmt: str) -> list[str]:
    """Why each setting, the latency model, the files written, how to use them and the
    --verify verdicts, as text or Markdown."""
    from linklab.tune.latencycheck import summary_line

    usage = usage_lines(t, result.settings, str(paths["fastdds"]), str(paths["cyclonedds"]))
    checked: list[str] = []
    if verdicts is not None:
        from linklab.tune.verify import render as render_verify

        checked = render_verify(verdicts)
    if fmt == "markdown":
        lines = render_markdown(t, result.settings, result.explanation)
        lines += ["", summary_line(t, result.settings)]
        lines += ["", f"Wrote {paths['fastdds']} and {paths['cyclonedds']}", "",
                  "```", *usage, "```"]
        return lines + (["", "```", *checked, "```"] if checked else [])
    lines = render_text(t, result.settings, result.explanation)
    lines += ["", summary_line(t, result.settings)]
    lines += ["", f"Wrote {paths['fastdds']}", f"      {paths['cyclonedds']}", ""]
    return lines + usage + checked


def register(app: typer.Typer) -> None:
    app.command("tune")(tune_command)
