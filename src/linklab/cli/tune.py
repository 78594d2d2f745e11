"""``linklab tune``: write Fast DDS and Cyclone DDS profiles for one topic over one link."""

from __future__ import annotations

import ipaddress
import math
import os
import re
from pathlib import Path

import typer

from linklab.cli.options import FORMAT_OPTION, output_format
from linklab.errors import UsageError
from linklab.model.scenario import DEFAULT_UTILIZATION
from linklab.model.sweep import parse_count_bytes
from linklab.output import print_json
from linklab.tune import (
    TuningInput,
    render_markdown,
    render_text,
    tune,
    usage_lines,
    write_profiles,
)
from linklab.tune.inputs import DEFAULT_OUTAGE_TOLERANCE_S
from linklab.units import (
    parse_bitrate,
    parse_duration,
    parse_fraction,
    parse_frequency,
    parse_size,
)

DEFAULT_OUT = "linklab-profiles"


def build_input(rate: str, payload: str, link: str, utilization: str, mtu: str, overlay: str,
                subscribers: int, ros: str, per: str | None, peers: list[str],
                outage_tolerance: str = f"{DEFAULT_OUTAGE_TOLERANCE_S:g}s",
                delay: str = "0s", history_memory: str = "256MiB",
                history_depth: int | None = None, cpu_load: str | None = None,
                cpu_share: str | None = None, cpu_cores: str | None = None,
                middlewares: list[str] | None = None) -> TuningInput:
    omega = parse_fraction(utilization, "--utilization")
    if omega <= 0:
        raise UsageError(f"{utilization!r} is outside (0, 1]; e.g. 0.65 or 65%",
                         argument="--utilization")
    if cpu_load is not None and cpu_share is not None:
        raise UsageError("give --cpu-load or --cpu-share, not both", argument="--cpu-share")
    cores = None if cpu_cores is None else parse_cores(cpu_cores, "--cpu-cores")
    if cpu_load is not None and cores is None:
        cores = float(os.cpu_count() or 1)  # the writer runs here
    return TuningInput(
        rate_hz=parse_frequency(rate, "--rate"),
        payload_bytes=parse_size(payload, "--payload"),
        link_bits_per_s=parse_bitrate(link, "--link"),
        utilization=omega,
        mtu=parse_count_bytes(mtu, "--mtu"),
        overlay=overlay,
        subscribers=subscribers,
        ros=ros,
        per=None if per is None else parse_fraction(per, "--per"),
        peers=tuple(parse_peer(p) for p in peers or ()),
        outage_tolerance_s=parse_duration(outage_tolerance, "--outage-tolerance"),
        delay_s=parse_delay(delay),
        history_memory_bytes=parse_size(history_memory, "--history-memory"),
        history_depth=history_depth,
        cpu_competitors=None if cpu_load is None else parse_cpu_load(cpu_load, cores or 1.0),
        cpu_cores=cores,
        cpu_share=None if cpu_share is None else parse_cpu_share(cpu_share),
        middlewares=tuple(dict.fromkeys(middlewares)) if middlewares else
        ("fastdds", "cyclonedds"),
    )


CPU_LOAD_ACCEPTED = "N/core (CPU-bound tasks per core, e.g. 2/core) or a count N, e.g. 4"
CPU_SHARE_ACCEPTED = "a share of one core (e.g. 50%) or cores (e.g. 1.5cores)"


def parse_cores(text: str, argument: str) -> float:
    try:
        value = float(str(text).strip().removesuffix("cores").removesuffix("core"))
    except ValueError:
        raise UsageError(f"{text!r} is not a number of cores; e.g. 4", argument=argument) \
            from None
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{text!r} is not a positive number of cores; e.g. 4",
                         argument=argument)
    return value


def parse_cpu_load(text: str, cores: float) -> float:
    """--cpu-load: the CPU-bound tasks beside the middleware on the writer's machine."""
    value = str(text).strip()
    per_core = value.endswith("/core")
    try:
        number = float(value.removesuffix("/core"))
    except ValueError:
        raise UsageError(f"{text!r}: expected {CPU_LOAD_ACCEPTED}", argument="--cpu-load") \
            from None
    if not math.isfinite(number) or number < 0:
        raise UsageError(f"{text!r}: expected {CPU_LOAD_ACCEPTED}", argument="--cpu-load")
    return number * cores if per_core else number


def parse_cpu_share(text: str) -> float:
    """--cpu-share: the cores the middleware can count on (50% = half of one core)."""
    value = str(text).strip()
    if value.endswith("%"):
        share = parse_fraction(value, "--cpu-share")
    elif value.endswith(("cores", "core")):
        share = parse_cores(value, "--cpu-share")
    else:
        raise UsageError(f"{text!r}: expected {CPU_SHARE_ACCEPTED}", argument="--cpu-share")
    if share <= 0:
        raise UsageError(f"{text!r}: expected {CPU_SHARE_ACCEPTED}", argument="--cpu-share")
    return share


_LABEL = r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)"
_HOST_NAME = re.compile(rf"{_LABEL}(\.{_LABEL})*\.?")


def parse_peer(text: str) -> str:
    """A --peer as Cyclone DDS takes it (Discovery/Peers/Peer@Address): an IP address or a
    host name (RFC 1123 labels), optionally with :port, an IPv6 address with a port in
    brackets; anything else is refused, not written into the profile."""
    host, port = text, None
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else (rest or None)
        bracketed = rest == "" or rest.startswith(":")
    else:
        bracketed = True
        if text.count(":") == 1:
            host, port = text.split(":")
    ok = bracketed and (port is None or (port.isascii() and port.isdigit()
                                         and 1 <= int(port) <= 65535))
    if ok:
        try:
            address = ipaddress.ip_address(host)
            ok = not text.startswith("[") or address.version == 6
        except ValueError:
            ok = not text.startswith("[") and len(host) <= 253 and \
                _HOST_NAME.fullmatch(host) is not None
    if not ok:
        raise UsageError(f"{text!r} is not an address; expected an IP address or host name, "
                         "optionally with :port, e.g. 10.0.0.2, robot.local:7410, "
                         "[fe80::1]:7400", argument="--peer")
    return text


def parse_delay(text: str) -> float:
    if str(text).strip() in ("0", "0s"):
        return 0.0
    return parse_duration(text, "--delay")


def register(app: typer.Typer) -> None:
    @app.command("tune")
    def tune_command(
        rate: str = typer.Option(..., "--rate", help="How often the topic publishes, "
                                 "e.g. 30Hz."),
        payload: str = typer.Option(..., "--payload", help="Size of one sample, e.g. 256KiB."),
        link: str = typer.Option(..., "--link",
                                 help="What the link carries, e.g. 433Mbit/s (measure it if "
                                      "you can: linklab link measure)."),
        utilization: str = typer.Option(str(DEFAULT_UTILIZATION), "--utilization",
                                        help="Share of the link DDS may use, in (0, 1]; "
                                             "0.6-0.7 for a link nothing else uses."),
        mtu: str = typer.Option("1500", "--mtu", help="Largest IP packet on the physical "
                                "link, in bytes."),
        overlay: str = typer.Option("none", "--overlay",
                                    help="Tunnel around the traffic, its header added to "
                                         "every packet: none, vxlan (a Kubernetes pod "
                                         "network) or wireguard."),
        subscribers: int = typer.Option(1, "--subscribers",
                                        help="Subscribers each sample is sent to, one "
                                             "unicast copy each."),
        ros: str = typer.Option("humble", "--ros", help="ROS 2 distribution the profiles "
                                "are for: humble or jazzy."),
        per: str = typer.Option(None, "--per",
                                help="Packet error rate to explain the profiles for, e.g. "
                                     "5%. Default: 1% and 20%, the losses paper 000 "
                                     "evaluates."),
        peer: list[str] = typer.Option(None, "--peer",
                                       help="A peer to reach by unicast (Cyclone DDS; turns "
                                            "multicast discovery off): an IP address or host "
                                            "name, optionally with :port. Repeatable."),
        outage_tolerance: str = typer.Option(
            f"{DEFAULT_OUTAGE_TOLERANCE_S:g}s", "--outage-tolerance",
            help="Longest link outage the session must survive, e.g. 60s or 2min: a peer "
                 "is given up after 1.5 times this, and announces itself every sixth of "
                 "that."),
        delay: str = typer.Option("0s", "--delay",
                                  help="One-way delay of the link, e.g. 3ms (Cyclone DDS "
                                       "waits this long before repairing; also the link "
                                       "--verify emulates)."),
        history_memory: str = typer.Option(
            "256MiB", "--history-memory",
            help="Most memory the history may take to keep samples through an outage "
                 "(--outage-tolerance)."),
        history_depth: int = typer.Option(
            None, "--history-depth",
            help="Keep exactly this many samples in the history (readers' limits follow). "
                 "Default: enough to cover --outage-tolerance where the link share and "
                 "--history-memory allow (paper 000, Eq. 6)."),
        cpu_load: str = typer.Option(
            None, "--cpu-load",
            help="CPU-bound work beside the middleware on the publishing machine, per core "
                 "(e.g. 2/core) or a number of tasks (e.g. 4): the tuner then says whether "
                 "the writer gets the CPU it needs and whether Cyclone DDS's repair loop "
                 "keeps up (exit 3 if no middleware does). Default: no CPU verdict."),
        cpu_share: str = typer.Option(
            None, "--cpu-share",
            help="Instead of --cpu-load: the CPU the middleware can count on, a share of "
                 "one core (50%) or cores (1.5cores). Default: no CPU verdict."),
        cpu_cores: str = typer.Option(
            None, "--cpu-cores",
            help="Cores of the publishing machine, for --cpu-load. Default: this "
                 "machine's."),
        middleware: list[str] = typer.Option(
            None, "--middleware",
            help="Middleware to write a profile for: fastdds and/or cyclonedds "
                 "(repeatable). Default: both. The CPU verdict (exit 3) asks whether one of "
                 "them holds; --verify runs these unless --verify-middleware says "
                 "otherwise."),
        verify: bool = typer.Option(
            False, "--verify",
            help="Then run the written profiles through a short benchmark with the real "
                 "middlewares over an emulated link as stated (--link, --per or else 20%, "
                 "--delay) and print pass/fail beside the prediction. Needs root. Exit 4 if "
                 "one fails."),
        verify_outage: str = typer.Option(
            None, "--verify-outage",
            help="With --verify: also cut the link for this long, 1 s into each run, "
                 "e.g. 5s. Default: no outage."),
        verify_seconds: str = typer.Option(None, "--verify-seconds",
                                           help="With --verify: how long each run "
                                                "publishes. Default: 10s."),
        verify_middleware: list[str] = typer.Option(
            None, "--verify-middleware",
            help="With --verify: fastdds and/or cyclonedds (repeatable). Default: those of "
                 "--middleware."),
        verify_out: Path = typer.Option(None, "--verify-out",
                                        help="With --verify: where its run directories go. "
                                             "Default: OUT/verify."),
        out: Path = typer.Option(Path(DEFAULT_OUT), "--out",
                                 help="Directory to write fastdds.xml and cyclonedds.xml "
                                      "into."),
        strict: bool = typer.Option(False, "--strict",
                                    help="Exit 3, writing nothing, when the topic needs more "
                                         "than the link share DDS may use."),
        json_output: bool = typer.Option(False, "--json", help="Print JSON instead of text."),
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
        json_output = fmt == "json"
        t = build_input(rate, payload, link, utilization, mtu, overlay, subscribers, ros, per,
                        peer, outage_tolerance, delay, history_memory, history_depth,
                        cpu_load, cpu_share, cpu_cores, middleware)
        result = tune(t)  # validates everything before any file is touched
        checks = None
        given = [option for option, v in (("--verify-outage", verify_outage),
                                          ("--verify-seconds", verify_seconds),
                                          ("--verify-middleware", verify_middleware),
                                          ("--verify-out", verify_out)) if v not in (None, [], ())]
        if given and not verify:   # applied or refused, never dropped
            raise UsageError("needs --verify", argument=given[0])
        if verify:
            from linklab.cli.tune_verify import check_verify_options

            checks = check_verify_options(verify, verify_outage, verify_seconds or "10s",
                                          verify_middleware or list(t.middlewares))
        cpu = result.explanation.cpu
        cpu_short = cpu is not None and not any(cpu.fits(m) for m in t.middlewares)
        if cpu_short and not verify:   # the contention declared: the prediction is the answer
            if json_output:
                print_json({**result.to_dict(), "files": {}})
            else:
                typer.echo(result.explanation.summary)
            typer.echo("linklab: error: no tuned writer holds under the declared CPU "
                       "contention (its CPU or its repair loop, above; --verify runs it to "
                       "confirm); no files written", err=True)
            raise typer.Exit(3)
        if strict and result.verdict == "infeasible":
            if json_output:
                print_json({**result.to_dict(), "files": {}})
            else:
                typer.echo(result.explanation.summary)
            typer.echo("linklab: error: --strict: the topic does not fit the link; "
                       "no files written", err=True)
            raise typer.Exit(3)
        paths = write_profiles(result, out)
        verdicts = None
        if checks is not None:
            from linklab.cli.tune_verify import run_verify

            verdicts = run_verify(result, paths, checks, verify_out or Path(out) / "verify")
        if json_output:
            from linklab.tune.latencycheck import MIDDLEWARES, for_tuning

            data = {**result.to_dict(), "files": {k: str(v) for k, v in paths.items()}}
            data["latency_model"] = {m: for_tuning(t, result.settings, m).to_dict()
                                     for m in t.middlewares if m in MIDDLEWARES}
            if verdicts is not None:
                data["verify"] = [v.__dict__ for v in verdicts]
            print_json(data)
        else:
            from linklab.tune.latencycheck import summary_line

            usage = usage_lines(t, result.settings, str(paths["fastdds"]),
                                str(paths["cyclonedds"]))
            checked: list[str] = []
            if verdicts is not None:
                from linklab.tune.verify import render as render_verify

                checked = render_verify(verdicts)
            if fmt == "markdown":
                lines = render_markdown(t, result.settings, result.explanation)
                lines += ["", summary_line(t, result.settings)]
                lines += ["", f"Wrote {paths['fastdds']} and {paths['cyclonedds']}", "",
                          "```", *usage, "```"]
                lines += ["", "```", *checked, "```"] if checked else []
            else:
                lines = render_text(t, result.settings, result.explanation)
                lines += ["", summary_line(t, result.settings)]
                lines += ["", f"Wrote {paths['fastdds']}", f"      {paths['cyclonedds']}",
                          ""]
                lines += usage + checked
            typer.echo("\n".join(lines))
        if cpu_short:
            raise typer.Exit(3)  # predicted before the run; --verify shows it beside
        if verdicts is not None and not all(v.passed for v in verdicts):
            raise typer.Exit(4)
