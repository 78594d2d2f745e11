"""``linklab link up|status|exec|down|clean|presets``: a thin shell over ``linklab.link``;
``linklab link measure`` is linklab.field's (a real path, measured)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import typer

from linklab.cli import link_options as opt
from linklab.cli.link_status import print_presets, print_status, status_markdown
from linklab.cli.options import FORMAT_OPTION, output_format
from linklab.errors import LinklabError, UsageError
from linklab.output import console, print_json


def register(app: typer.Typer) -> None:
    link = typer.Typer(name="link", no_args_is_help=True,
                       help="Emulate hosts joined by an impaired link on this machine (network "
                            "namespaces): bring it up, inspect it, run commands on its "
                            "hosts, take it down; measure a real path to replay it.")
    app.add_typer(link, name="link")
    link.command("up")(up_command)
    link.command("presets")(presets_command)
    link.command("status")(status_command)
    link.command("exec", context_settings={"allow_extra_args": True,
                                           "ignore_unknown_options": True})(exec_command)
    link.command("down")(down_command)
    link.command("clean")(clean_command)
    from linklab.cli.field_measure import add_measure

    add_measure(link)   # linklab link measure A B (the field package: hosts over SSH)


def up_command(
    preset: str = opt.PRESET,
    presets: list[Path] = opt.PRESETS,
    topology: str = opt.TOPOLOGY,
    hosts: int = opt.HOSTS,
    nodes: str = opt.NODES,
    pods: str = opt.PODS,
    overlay: str = opt.OVERLAY,
    encryption: str = opt.ENCRYPTION,
    datapath: str = opt.DATAPATH,
    loss: str = opt.LOSS,
    rate: str = opt.RATE,
    outage: str = opt.OUTAGE,
    mtu: str = opt.MTU,
    tcp_congestion: str = opt.TCP_CONGESTION,
    delay: str = opt.DELAY,
    jitter: str = opt.JITTER,
    jitter_distribution: str = opt.JITTER_DISTRIBUTION,
    loss_model: str = opt.LOSS_MODEL,
    trace: str = opt.TRACE,
    queue: str = opt.QUEUE,
    queue_limit: str = opt.QUEUE_LIMIT,
    trace_start: str = opt.TRACE_START,
    relay_cpu: str = opt.RELAY_CPU,
    medium: str = opt.MEDIUM,
    radio: str = opt.RADIO,
    distance: str = opt.DISTANCE,
    tx_power: str = opt.TX_POWER,
    name: str = opt.NAME,
    as_json: bool = opt.UP_JSON,
) -> None:
    """Bring up emulated hosts joined by an impaired link.

    They stay up until `linklab link down` (`linklab link clean` leaves them alone).

    Options replace the preset's values. A preset from --presets FILE is recorded
    with the run: status, exec and down do not need the file. Ctrl-C (or SIGTERM)
    before the link is up and recorded undoes everything (exit 130/143); after that
    it is ignored: the status is printed and the exit status is 0.
    """
    from linklab.link.impairments import emulator_overrides
    from linklab.link.radio import radio_overrides

    fields = _preset_fields(preset, presets)
    overrides = {**radio_overrides(radio=radio, distance=distance, tx_power=tx_power),
                 **emulator_overrides(delay=delay, jitter=jitter,
                                      jitter_distribution=jitter_distribution,
                                      loss_model=loss_model, trace=trace),
                 **({"medium": medium} if medium is not None else {})}
    status = _bring_up(preset, fields, topology=topology, hosts=hosts, name=name,
                       loss=loss, rate=rate, outage=outage, mtu=mtu,
                       tcp_congestion=tcp_congestion, nodes=nodes, pods=pods,
                       overlay=overlay, encryption=encryption, datapath=datapath,
                       **overrides, queue=queue, queue_limit=queue_limit,
                       trace_start=trace_start, relay_cpu=relay_cpu)
    if as_json:
        print_json(status)
    else:
        print_status(status)


def _preset_fields(preset: str | None, presets: list[Path] | None) -> Any:
    """The fields of the preset named (None: no preset), from --presets FILEs too."""
    from linklab.link.presets import resolve_preset

    if presets and not preset:
        raise UsageError("given without a PRESET to take from it; name one of its "
                         "presets (list them: linklab link presets --presets FILE)",
                         argument="--presets")
    return resolve_preset(preset, presets or ()) if preset else None


def _bring_up(preset: str | None, fields: Any, **settings: Any) -> dict[str, Any]:
    """Bring the link up (the up command's signals: linklab.link.lifecycle.up)."""
    from linklab.link.lifecycle import up

    return up(preset, preset_fields=fields, **settings, finish_once_up=True).status()


def presets_command(
    presets: list[Path] = opt.PRESETS,
    as_json: bool = opt.JSON,
) -> None:
    """List the link presets: name, description, settings, source and where each is
    defined (those shipped, and those of --presets FILE, each file checked whole).

    A preset file is YAML, one entry per preset (linklab link up NAME --presets FILE):

    \b
        my-wifi:                    # letters, digits, _ . - (not a shipped name)
          description: the lab's access point   # optional
          source: iperf3 -u, robot to edge       # optional
          rate: 50Mbit/s
          loss: 2%                  # or up=2%,down=5%, or {up: 2%, down: 5%}
          delay: 3ms                # emulator fields: delay, jitter,
          up: {loss: 5%}            #   jitter_distribution, burst_loss, trace
          mtu: 1500

    Fields: description, source, mtu, tcp_congestion, rate, loss, outage, delay,
    jitter, jitter_distribution, burst_loss, trace, up, down (robot -> edge / back).
    Trace paths are relative to the file. A problem is one line: FILE:LINE: preset
    NAME: FIELD: what is wrong; what is accepted.
    """
    from linklab.link.presets import catalogue

    entries = catalogue(presets or ())
    if as_json:
        print_json(entries)
    else:
        print_presets(entries)

def status_command(
    name: str = typer.Option(None, "--name", help="Only the link of this name. Default: "
                             "every link that is up."),
    as_json: bool = opt.JSON,
    fmt: str = FORMAT_OPTION,
) -> None:
    """Show the links that are up: hosts, addresses, the impairments applied and how
    many packets each passed and dropped."""
    from linklab.link.lifecycle import list_runs, open_run

    fmt = output_format(fmt, json_flag=as_json)
    names = [name] if name else list_runs()
    statuses = [open_run(n).status() for n in names]
    if fmt == "json":
        print_json(statuses[0] if name else statuses)
        return
    if not statuses:
        console.print("no linklab link is up")
    for status in statuses:
        if fmt == "markdown":
            typer.echo(status_markdown(status))
        else:
            print_status(status)


def exec_command(
    host: str = typer.Argument(..., help="Host: robot, edge, ap, robot1..N; in a "
                               "cluster also its pods (robotpod1, edgepod2, ...) and their "
                               "second containers (robotpod1c2)."),
    command: list[str] = typer.Argument(..., help="The command and its arguments, "
                                        "after --."),
    name: str = opt.NAME,
) -> None:
    """Run a command on one of the link's hosts, e.g. linklab link exec edge -- ping
    10.77.0.1; exits with the command's status."""
    from linklab.link.lifecycle import open_run

    bed = open_run(name)
    argv = bed.argv(host, command)
    try:
        code = subprocess.call(argv)
    except FileNotFoundError as error:
        raise LinklabError(f"cannot run {command[0]!r}: {error}") from None
    raise typer.Exit(code)

def down_command(
    name: str = opt.NAME,
) -> None:
    """Take a link down: undo every change it made, newest first."""
    from linklab.link.lifecycle import down

    problems = down(name)
    if problems:
        raise LinklabError("; ".join(problems))
    console.print(f"link {name} is down")

def clean_command(
    name: str = typer.Option(None, "--name", help="Only the run of this name. Default: "
                             "every run."),
    prefix: str = typer.Option(None, "--prefix", help="Only runs whose name starts with "
                               "this."),
    journals_only: bool = typer.Option(
        False, "--journals-only",
        help="Only undo runs linklab recorded; do not look for linklab namespaces "
             "it has no record of."),
    as_json: bool = opt.JSON,
) -> None:
    """Remove whatever linklab left behind, and only that.

    Runs whose process was killed (a bench, a `link up` killed before its link was
    up) and namespaces of runs whose record is gone are removed. A run whose process
    is alive, and a link made by `linklab link up` (it stays until `linklab link
    down`), are left alone."""
    from linklab.link.lifecycle import clean

    report = clean(name=name, prefix=prefix, sweep=not journals_only)
    if as_json:
        print_json(report)
    else:
        for key in ("runs_removed", "namespaces_removed", "skipped", "problems"):
            for item in report[key]:
                console.print(f"{key.replace('_', ' ')}: {item}", markup=False,
                              highlight=False, soft_wrap=True)
        if not any(report.values()):
            console.print("nothing to clean")
    if report["problems"]:
        raise typer.Exit(1)
