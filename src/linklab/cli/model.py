"""``linklab model``: what DDS does to one topic's traffic over a lossy link (000 IV)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from linklab.cli import topic_options as topic
from linklab.cli.options import FORMAT_OPTION, JSON_TEXT_OPTION, options_from, output_format
from linklab.errors import UsageError
from linklab.middleware.families import FASTDDS_DEFAULT_MAX_MESSAGE_SIZE
from linklab.model.input_text import evaluate_sweep, parse_model_input
from linklab.model.scenario import DEFAULT_UTILIZATION, ModelInput, ModelResult, evaluate
from linklab.model.sweep import Sweep, parse_sweep
from linklab.output import markdown_table, print_json, print_lines, print_text, to_markdown
from linklab.units import format_bitrate, format_duration, format_percent, format_size


def rows(r: ModelResult) -> list[tuple[str, str, str]]:
    m = r.inputs
    return [
        ("R_pub = r*u", format_bitrate(r.r_pub_bytes_per_s * 8), "000 Eq. 1"),
        ("T_max = T_OS->Link", format_bitrate(r.t_max_bytes_per_s * 8), "000 Eq. 2"),
        ("DDS share T*omega", format_bitrate(r.dds_budget_bytes_per_s * 8),
         f"000 Eq. 6, omega {m.utilization:g}"),
        ("N_RT = ceil(u/M)", str(r.n_rt), f"000 IV-C, M = {m.max_message_size} B"),
        ("N_IP", str(r.n_ip), f"000 IV-C, {m.fragmentation} count, MTU {m.mtu}"),
        ("IP packets per sample", str(r.ip_packets_per_sample), "000 IV-C"),
        ("p = 1 - PER", f"{r.p:.4g}", ""),
        ("q = p^N_IP", f"{r.q:.4g}", "000 IV-C"),
        ("Delta S_k (k = 1..6)", ", ".join(map(str, r.staircase)),
         f"000 IV-C, r/n = {m.rate_hz / m.heartbeat_hz:.4g}"),
        ("X (backlog per round)", format_size(r.backlog_bytes_per_round), "000 Eq. 3"),
        ("R_DDS", format_bitrate(r.r_dds_bytes_per_s * 8), "000 Eq. 4"),
        ("R_DDS / R_pub", f"{r.amplification:.4g}", "000 Eq. 4 (one repair per round)"),
        ("wire / payload, every loss repaired", wire_text(r),
         "model/wire_traffic.py; ∞: the link cannot carry it (000 Eq. 2)"),
        ("B_DDS (burst)", f"{r.burst_bytes * 8 / 1e6:.4g} Mbit ({format_size(r.burst_bytes)})",
         f"000 Eq. 5, n = {m.heartbeat_hz:.4g} Hz"),
        ("N_HC", str(r.n_hc), "000 Eq. 6"),
        ("best-effort delivery", format_percent(r.best_effort_delivery), "000 Table I model"),
        ("wire bytes per sample", f"{r.wire_bytes_per_sample} B", f"001 V-A, {m.overlay}"),
        ("payload share of wire", format_percent(r.wire_efficiency), "001 V-A"),
        ("wire rate with headers", format_bitrate(r.wire_rate_bits_per_s),
         f"{format_percent(r.link_load)} of link, {m.subscribers} sub(s)"),
        ("fan-out, all subscribers", format_duration(r.fanout_time_s), "002 Table III"),
        ("held for IP reassembly", format_size(r.reassembly_held_bytes),
         "kernel limit 4 MiB, model/reassembly.py"),
        ("repair of a lost message", format_duration(r.repair_delay_s), "1/(n p^2 q), from Eq. 3"),
        ("verdict", r.verdict, "see below"),
    ]


def wire_text(r: ModelResult) -> str:
    """model/wire_traffic.py's figure for a strictly reliable stream, "∞" when it cannot
    complete."""
    return "∞" if r.wire_note else f"{r.wire_amplification:.4g}"


def narrative(r: ModelResult) -> list[str]:
    """The table in words: what each failure cause of 000 IV does to this topic."""
    m = r.inputs
    lines = [
        f"Fragmentation (000 IV-C): each {format_size(m.payload_bytes)} sample becomes {r.n_rt} "
        f"RTPS message(s) of up to {m.max_message_size} B, each {r.n_ip} IP packet(s) that must "
        f"all arrive: at PER {format_percent(m.per)} a message survives with q = {r.q:.3g}.",
        f"Load (Eq. 4): retransmissions raise R_pub {format_bitrate(r.r_pub_bytes_per_s * 8)} "
        f"to R_DDS {format_bitrate(r.r_dds_bytes_per_s * 8)} (x{r.amplification:.3g}); with "
        f"headers {format_percent(r.link_load)} of the link. Eq. 4 repairs a lost message once "
        f"per round; repairing every loss until it arrives (model/wire_traffic.py) the wire "
        f"carries "
        + ("more than the link can: the stream cannot complete (∞)." if r.wire_note else
           f"x{r.wire_amplification:.3g} of R_pub with headers."),
        f"Bursts (Eq. 5): with a heartbeat every {format_duration(1 / m.heartbeat_hz)}, a round's "
        f"backlog leaves with a fresh sample: B_DDS = {r.burst_bytes * 8 / 1e6:.4g} Mbit, "
        f"{format_duration(r.burst_drain_s)} of the DDS share (publish interval "
        f"{format_duration(1 / m.rate_hz)}).",
        f"Repair: a lost message waits {format_duration(r.repair_delay_s)} on average "
        f"(1/(n p^2 q)).",
    ]
    lines += [f"Verdict: {r.verdict}: {reason}" for reason in r.reasons] or \
        [f"Verdict: {r.verdict}."]
    if m.max_message_size > m.mtu - 28 or m.heartbeat_hz < 2 * m.rate_hz:
        lines.append("The paper's fix (1472 B messages, heartbeat n = 2r, N_HC from Eq. 6): "
                     "linklab tune with the same --rate, --payload and --link.")
    return lines


SWEEP_COLUMNS = ("R_pub Mb/s", "N_IP", "q", "R_DDS Mb/s", "x R_pub", "wire x", "B_DDS Mbit",
                 "N_HC", "BE deliv.", "verdict")


def sweep_row(r: ModelResult) -> list[str]:
    return [f"{r.r_pub_bytes_per_s * 8e-6:.4g}", str(r.n_ip), f"{r.q:.3g}",
            f"{r.r_dds_bytes_per_s * 8e-6:.4g}", f"{r.amplification:.3g}",
            "∞" if r.wire_note else f"{r.wire_amplification:.3g}",
            f"{r.burst_bytes * 8e-6:.4g}", str(r.n_hc), f"{r.best_effort_delivery:.1%}",
            r.verdict]


def format_swept(name: str, value: float) -> str:
    if name == "payload":
        return format_size(value)
    if name == "per":
        return format_percent(value)
    if name == "rate":
        return f"{value:g} Hz"
    if name == "link":
        return format_bitrate(value)
    return f"{value:g} B"


def link_infos(info: dict) -> dict:
    """run.json's links -> {label: LinkInfo} (robot -> edge rate and loss, MTU; a medium
    link's PHY rate); links without a rate are left out (tune/wirecheck.py link_infos)."""
    from linklab.tune.wirecheck import link_infos as read_links

    return read_links(info)


# The options only linklab model takes (those it shares with linklab tune: cli/topic_options.py).
# Each option's help, as --help shows it.
OPTION_HELP = {
    "--per": "Packet error rate: the share of IP packets the link loses, e.g. 1% or 0.01.",
    "--max-message-size": "Largest DDS (RTPS) message in bytes; a larger sample is sent as "
                          "several. Fast DDS sends up to 65500 by default; the tuned profiles use "
                          "1472 (one IP packet).",
    "--heartbeat-rate": "How often the writer asks its readers what they miss (the DDS heartbeat, "
                        "which paces retransmissions), e.g. 0.33Hz. Default: Fast DDS's, 1/3 Hz "
                        "(every 3 s).",
    "--mtu": "Largest IP packet on the link, in bytes.",
    "--fragmentation": "How IP packets per message are counted: 'paper' = message size / MTU "
                       "rounded up, as paper 000 counts them; 'ip' = the IPv4 fragments really "
                       "sent (1480 B of payload each, headers counted).",
    "--utilization": "Share of the link DDS may use (the rest is headroom), e.g. 0.65 or 65%.",
    "--sweep": "A table over one input instead of one point: payload=32KiB..512KiB, per=0..20%, "
               "per=0..20%:5% (with a step), rate=10Hz..60Hz:10Hz, or a list payload=32KiB,64KiB.",
    "--latency": "Check the predicted one-way latency (mean and 95th percentile) of the cells "
                 "with optimized profiles instead of the bytes on the wire.",
    "--with": "With --latency, another run of the same scenario whose trials of each cell are "
              "pooled with this run's (repeatable): the mean and p95 over all their samples, "
              "with how far one trial was from them. A run's own trials (trials: N) are "
              "always pooled.",
    "--machine": "With --latency, the machine the latency is replayed on: 'run' fits its "
                 "sending, receiving and wake-up values on the run's loss-free optimized "
                 "cells (marked 'fitted') and predicts every other cell with them; 'stored' "
                 "uses the values linklab tune uses (fitted on the project's machine).",
}
_option = options_from(OPTION_HELP)

PER = _option("0%", "--per")
MAX_MESSAGE_SIZE = _option(str(FASTDDS_DEFAULT_MAX_MESSAGE_SIZE), "--max-message-size")
HEARTBEAT_RATE = _option(None, "--heartbeat-rate")
MTU = _option("1500", "--mtu")
FRAGMENTATION = _option("paper", "--fragmentation")
UTILIZATION = _option(str(DEFAULT_UTILIZATION), "--utilization")
SWEEP = _option(None, "--sweep")
LATENCY = _option(False, "--latency")
MACHINE = _option("run", "--machine")
WITH = _option([], "--with", metavar="RUN_DIR")
MACHINES = ("run", "stored")


def model_check_command(
    run_dir: str = typer.Argument(..., metavar="RUN_DIR",
                                  help="A run directory made by linklab bench."),
    latency: bool = LATENCY, machine: str = MACHINE, with_runs: list[str] = WITH,
    json_output: bool = JSON_TEXT_OPTION, fmt: str = FORMAT_OPTION,
) -> None:
    """Check the models' predictions against a finished bench run, cell by cell.

    By default: the bytes on the wire per byte of payload (headers and
    retransmissions included), predicted against measured, for Fast DDS and Cyclone
    DDS with the default and the optimized profiles; for one-to-many cells also the
    delay each extra subscriber adds. With --latency: the predicted mean and 95th
    percentile of the one-way latency of every optimized-profile cell (a replay of
    the middleware's repair protocol, under the CPU load the cell declared), on the
    machine fitted on the run's loss-free cells (--machine).

    Exit 1 when a completed cell is more than 15 % off. A cell without a
    measurement is listed but not counted, and so is one the model says cannot
    complete because its traffic exceeds the link (shown as "∞", with the reason)."""
    from linklab.rundir import RunStore

    fmt = output_format(fmt, json_flag=json_output)
    if machine not in MACHINES:
        raise UsageError(f"{machine!r} is not a machine; accepted: {', '.join(MACHINES)}",
                         argument="--machine")
    store = RunStore.open(Path(run_dir))
    links = link_infos(store.info)
    if with_runs and not latency:
        raise UsageError("pools the trials of the latency check: give it with --latency",
                         argument="--with")
    if latency:
        rows = pooled_rows(run_dir, store, links, with_runs)
        check_latency(run_dir, rows, links, fmt, fit=machine == "run")
        return
    from linklab.tune.wirecheck import compare, fanout

    comparisons = compare(store.rows, links)
    fanouts = fanout(store.rows, links)
    if not comparisons:
        raise UsageError(f"{run_dir} has no cell the wire model predicts (Fast DDS or "
                         "Cyclone DDS, profile default or optimized)", argument="RUN_DIR")
    if fmt == "json":
        print_json({"run_dir": run_dir, "cells": [c.to_dict() for c in comparisons],
                    "fanout": [f.to_dict() for f in fanouts]})
    elif fmt == "markdown":
        typer.echo("\n".join(_wire_markdown(comparisons, fanouts)))
    else:
        from linklab.tune.wirecheck import render, render_fanout

        print_lines(render(comparisons) + (render_fanout(fanouts) if fanouts else []))
    if any(c.missed for c in comparisons):
        raise typer.Exit(1)


def _wire_markdown(comparisons: list, fanouts: list) -> list[str]:
    """``model-check --format markdown``: the wire table, its summary, the fan-out table."""
    from linklab.tune import wirecheck

    lines = markdown_table(wirecheck.COLUMNS, wirecheck.rows(comparisons), (2, 3, 4))
    for line in wirecheck.summary(comparisons):   # one paragraph each
        lines += ["", line.strip()]
    if fanouts:
        lines += ["", f"**{wirecheck.FANOUT_TITLE}**", ""]
        lines += markdown_table(wirecheck.FANOUT_COLUMNS,
                                wirecheck.fanout_rows(fanouts), (1, 2, 3, 4, 5))
    return lines


def pooled_rows(run_dir: str, store, links: dict, with_runs: list[str]) -> list[dict]:
    """The run's rows the latency model predicts, each cell's trials (its own and those
    of the --with runs of the same scenario) pooled (bench/pooling.py)."""
    from linklab.bench.pooling import pool
    from linklab.rundir import RunStore
    from linklab.tune.latencycheck import predictable

    def mine(rows: list[dict]) -> list[dict]:
        return [row for row in rows if predictable(row, links)]

    runs = [(Path(run_dir), mine(store.rows))]
    name = (store.info.get("scenario") or {}).get("name")
    for other in with_runs:
        more = RunStore.open(Path(other))
        other_name = (more.info.get("scenario") or {}).get("name")
        if other_name != name:
            raise UsageError(f"{other} is a run of scenario {other_name!r}, not {name!r}: "
                             "only trials of the same cells pool", argument="--with")
        runs.append((Path(other), mine(more.rows)))
    return pool(runs) if runs[0][1] else []


def check_latency(run_dir: str, rows: list[dict], links: dict, fmt: str,
                  fit: bool = True) -> None:
    """``model-check --latency``: the latency model against the run's tuned cells, on the
    machine fitted on its loss-free cells (``fit``) or the stored one."""
    from linklab.tune import latencycheck
    from linklab.tune.latencycheck import compare, predictable, render
    from linklab.tune.latencyfit import calibrate, loss_free
    from linklab.tune.latencymachine import STORED

    if not any(predictable(row, links) for row in rows):
        raise UsageError(f"{run_dir} has no cell the latency model predicts (Fast DDS or "
                         "Cyclone DDS, profile optimized, one topic to one subscriber over "
                         "a link with a rate)", argument="RUN_DIR")
    found = None
    if fit and any(loss_free(row, links) for row in rows):
        typer.echo("fitting the machine on the run's loss-free optimized cells (up to a "
                   "minute) ...", err=True)
        found = calibrate(rows, links, Path(run_dir).name)
    calibration = found.calibration if found else STORED
    comparisons = compare(rows, links, calibration, found.fitted_cells if found else ())
    if fmt == "json":
        print_json({"run_dir": run_dir, "machine": calibration.describe(),
                    "cells": [c.to_dict() for c in comparisons]})
    elif fmt == "markdown":
        lines = markdown_table(latencycheck.COLUMNS, latencycheck.rows(comparisons),
                               (2, 3, 4, 5, 6, 7))
        lines += [""] + latencycheck.summary(comparisons) + ["", calibration.describe()]
        typer.echo("\n".join(lines))
    else:
        print_lines(render(comparisons) + [calibration.describe()])
    if any(c.missed for c in comparisons):
        raise typer.Exit(1)


def model_command(
    rate: str = topic.RATE, payload: str = topic.PAYLOAD,
    link: str = topic.link_option("433Mbit/s"), per: str = PER,
    max_message_size: str = MAX_MESSAGE_SIZE, heartbeat_rate: str = HEARTBEAT_RATE,
    mtu: str = MTU, fragmentation: str = FRAGMENTATION, utilization: str = UTILIZATION,
    subscribers: int = topic.SUBSCRIBERS, overlay: str = topic.OVERLAY, sweep: str = SWEEP,
    json_output: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    fmt: str = FORMAT_OPTION,
) -> None:
    """Predict what DDS does to one topic's traffic over a lossy link.

    The analytic model of paper 000 (Optimizing ROS 2 Communication for Wireless
    Robotic Systems, Eq. 1-6) with the header overhead of paper 001 (Communication
    Bottlenecks in ROS 2 Deployments on Kubernetes): how a sample is split into IP
    packets, the bandwidth retransmissions add, the bursts after each heartbeat, the
    history the link share allows, what best effort delivers, and a verdict. Each
    row of the table names the paper's equation it comes from."""
    fmt = output_format(fmt, json_flag=json_output)
    base = parse_model_input(rate, payload, link, per, max_message_size, heartbeat_rate, mtu,
                             fragmentation, utilization, subscribers, overlay)
    if sweep is None:
        _print_point(base, fmt)
    else:
        _print_sweep(base, parse_sweep(sweep), fmt)


def _print_point(base: ModelInput, fmt: str) -> None:
    """The model at one point: its quantities with their sources, then in words."""
    result = evaluate(base)
    if fmt == "json":
        print_json(result.to_dict())
        return
    table = Table(box=box.SIMPLE, pad_edge=False,
                  title=f"linklab model: {format_size(base.payload_bytes)} at "
                        f"{base.rate_hz:g} Hz over {format_bitrate(base.link_bits_per_s)}, "
                        f"PER {format_percent(base.per)}")
    table.add_column("quantity", no_wrap=True)
    table.add_column("value", no_wrap=True)
    table.add_column("source")
    for row in rows(result):
        table.add_row(*row)
    if fmt == "markdown":
        typer.echo(to_markdown(table, *(Text(line) for line in narrative(result))))
        return
    print_text(table)
    print_lines(narrative(result))


def _print_sweep(base: ModelInput, spec: Sweep, fmt: str) -> None:
    """The model over the values of one input: one row each."""
    results = evaluate_sweep(base, spec)
    if fmt == "json":
        print_json({"sweep": spec.name, "rows": [
            {spec.name: v, **r.to_dict()} for v, r in results]})
        return
    table = Table(title=f"linklab model sweep over {spec.name}", box=box.SIMPLE,
                  pad_edge=False)
    table.add_column(spec.name, no_wrap=True)
    for column in SWEEP_COLUMNS:
        table.add_column(column, justify="right", no_wrap=True)
    for value, r in results:
        table.add_row(format_swept(spec.name, value), *sweep_row(r))
    if fmt == "markdown":
        typer.echo(to_markdown(table))
    else:
        print_text(table)


def register(app: typer.Typer) -> None:
    app.command("model-check")(model_check_command)
    app.command("model")(model_command)
