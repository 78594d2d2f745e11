"""``linklab link up|status|exec|down|clean|presets``: a thin shell over ``linklab.link``;
``linklab link measure`` is linklab.field's (a real path, measured)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import typer

from linklab.errors import LinklabError, UsageError
from linklab.output import console, print_json

NAME_HELP = "Run name (namespaces are linklab-NAME-HOST)."
PRESETS_HELP = ("A YAML file of your own presets (format: linklab link presets --help); "
                "may be given more than once.")


def _settings(fields: dict[str, Any]) -> str:
    """{rate: 5Mbit/s, loss: {up: 1%}, up: {delay: 3ms}} -> 'rate 5Mbit/s, loss up=1%;
    up: delay 3ms'."""
    def one(key: str, value: Any) -> str:
        if isinstance(value, dict):
            value = ",".join(f"{k}={v}" for k, v in value.items())
        return f"{key} {value}"

    parts = [", ".join(one(k, v) for k, v in fields.items() if k not in ("up", "down"))]
    parts += [f"{d}: " + ", ".join(one(k, v) for k, v in fields[d].items())
              for d in ("up", "down") if fields.get(d)]
    return "; ".join(p for p in parts if p) or "a clean link"


def _print_presets(entries: list[dict[str, Any]]) -> None:
    def line(text: str) -> None:  # user text: no markup, no wrapping inside paths
        console.print(text, markup=False, highlight=False, soft_wrap=True)

    for entry in entries:
        where = (f"{Path(entry['file']).name}:{entry['line']} (shipped)" if entry["shipped"]
                 else f"{entry['file']}:{entry['line']}")
        line(f"{entry['name']:<14} {entry['description']}".rstrip())
        line(f"    {_settings(entry['fields'])}")
        if entry["source"]:
            line(f"    source: {' '.join(entry['source'].split())}")
        line(f"    from: {where}")


def _fmt(value: Any) -> str:
    return "-" if value is None else str(value)


def _print_status(status: dict[str, Any]) -> None:
    spec = status["spec"]
    console.print(f"[bold]link {status['name']}[/bold]  topology {status['topology']}  "
                  f"preset {spec['preset'] or '(none)'}  mtu {spec['mtu']}")
    if spec.get("source"):
        console.print(f"  source: {spec['source']}")
    console.print("  hosts:")
    for name, host in status["hosts"].items():
        addresses = ", ".join(host["addresses"]) or "(bridge only)"
        console.print(f"    {name:<12} {host['netns']:<28} {addresses}")
    cluster = status.get("cluster")
    if cluster:
        mtus = ", ".join(f"{k} {v}" for k, v in cluster["mtu"].items())
        console.print(f"  cluster: overlay {cluster['overlay']}, encryption "
                      f"{cluster['encryption']}, datapath {cluster['datapath']}; MTU {mtus}; "
                      "a pod's second container is <pod>c2")
    for link in status["links"]:
        console.print(f"  link {link['name']} ({link['wire']}): "
                      f"{link['robot_side']} <-> {link['edge_side']}"
                      + ("" if link.get("state", "up") == "up" else f"  LINK {link['state']}"))
    console.print("  stages (packets/bytes passed, dropped):")
    stages = status["counters"]["stages"]
    if not stages:
        console.print("    none (a clean link; offloads off, MTU set)")
    for st in stages:
        params = st["params"].get("text") or st["params"].get("schedule") or st["params"]
        console.print(f"    {st['link']:<10} {st['direction']:<4} {st['kind']:<7} {params!s:<14}"
                      f" passed {_fmt(st.get('passed_packets'))} pkt / "
                      f"{_fmt(st.get('passed_bytes'))} B, dropped "
                      f"{_fmt(st.get('dropped_packets'))} pkt")
    if status.get("outage"):
        outage = status["outage"]
        if outage["t0_ns"] is None:
            console.print(f"  outage {outage['schedule']}: not armed yet")
        else:
            done = ", ".join(f"{e['edge']} at +{(e['after_ns'] - outage['t0_ns']) / 1e9:.3f} s"
                             for e in outage["events"]) or "no switch yet"
            console.print(f"  outage {outage['schedule']}: t0 = {outage['t0_ns']} ns "
                          f"(CLOCK_MONOTONIC); {done}")
    sample = next(iter(status["socket_buffers"].values()), {})
    if sample:
        parts = [f"{k.split('.')[-1]}={v['effective']}" + ("" if v["applied"] else "*")
                 for k, v in sample.items()]
        console.print("  socket buffers: " + ", ".join(parts)
                      + ("  (* read-only in a child namespace on this kernel: host value)"
                         if any(not v["applied"] for v in sample.values()) else ""))
    congestion = next(iter((status.get("tcp_congestion") or {}).values()), None)
    if congestion:
        console.print(f"  TCP congestion control: {congestion['effective']} "
                      f"({congestion['source']})")
    for note in status.get("notes", []):
        console.print(f"  note: {note}")


def register(app: typer.Typer) -> None:
    link = typer.Typer(name="link", no_args_is_help=True,
                       help="Emulated hosts and impaired links (network namespaces).")
    app.add_typer(link, name="link")
    from linklab.field.cli_measure import add_measure

    add_measure(link)   # linklab link measure A B (the field package: hosts over SSH)

    @link.command("up")
    def up_command(
        preset: str = typer.Argument(None, help="Preset: wifi-ideal, wifi-mild, wifi-severe, "
                                     "wifi-outage, ethernet-1g, lan-2.5g; with the emulator: "
                                     "4g, wifi, cloud; radio (ns-3 802.11a, paper 002): "
                                     "wifi-80211a, wifi-far, wifi-80211a-curve; or one of "
                                     "--presets FILE (all: linklab link presets)."),
        presets: list[Path] = typer.Option(None, "--presets", help=PRESETS_HELP),
        topology: str = typer.Option("pair", "--topology", help="pair | star | chain | "
                                     "cluster (nodes and pods, paper 001)."),
        hosts: int = typer.Option(1, "--hosts", help="Robots in a star topology."),
        nodes: str = typer.Option(None, "--nodes", help="Cluster: nodes, 2 (robot, edge; "
                                  "default) to 8 (robot1..N-1, edge on a switch)."),
        pods: str = typer.Option(None, "--pods", help="Cluster: pods per node (default 2)."),
        overlay: str = typer.Option(None, "--overlay", help="Cluster: vxlan (default, pod "
                                    "MTU 1450) or none (direct routing)."),
        encryption: str = typer.Option(None, "--encryption", help="Cluster: none (default) or "
                                       "wireguard (wireguard-go between nodes, pod MTU 1380)."),
        datapath: str = typer.Option(None, "--datapath", help="Cluster: iptables (default; "
                                     "kube-proxy rules, conntrack) or ebpf (tc redirects)."),
        loss: str = typer.Option(None, "--loss", help="Packet loss, e.g. 1% or up=1%,down=20%."),
        rate: str = typer.Option(None, "--rate", help="Rate limit, e.g. 433Mbit/s."),
        outage: str = typer.Option(None, "--outage",
                                   help="START+LENGTH[/PERIOD], e.g. 10s+20s or 5s+2s/30s."),
        mtu: str = typer.Option(None, "--mtu", help="MTU in bytes, e.g. 1500."),
        tcp_congestion: str = typer.Option(
            None, "--tcp-congestion", help="TCP congestion control in every namespace, "
            "e.g. cubic (stock Debian/Ubuntu), reno or bbr; default: the host's, recorded."),
        delay: str = typer.Option(None, "--delay", help="One-way delay (emu), e.g. 30ms or "
                                  "up=30ms,down=20ms."),
        jitter: str = typer.Option(None, "--jitter", help="Delay variation (emu), e.g. 5ms."),
        jitter_distribution: str = typer.Option(
            None, "--jitter-distribution",
            help="uniform (netem's default), normal, pareto or paretonormal."),
        loss_model: str = typer.Option(None, "--loss-model",
                                       help="Burst loss (emu): gemodel:p,r,1-h,1-k, e.g. "
                                       "gemodel:1%,30%,100%,0%."),
        trace: str = typer.Option(None, "--trace", help="Mahimahi traces (emu): "
                                  "up.trace,down.trace (or one file for both)."),
        radio: str = typer.Option(None, "--radio", help="Radio medium (paper 002): ns3 "
                                  "(the realtime 802.11a simulation) or curve (its measured "
                                  "loss vs distance, no simulator)."),
        distance: str = typer.Option(None, "--distance", help="Radio: each robot's distance "
                                     "from the edge, e.g. 25.5m (a radio preset, or ns3)."),
        tx_power: str = typer.Option(None, "--tx-power", help="Radio: every station's "
                                     "transmit power, e.g. 16.0206dBm (ns-3's default)."),
        name: str = typer.Option("default", "--name", help=NAME_HELP),
        as_json: bool = typer.Option(False, "--json", help="Print the status as JSON."),
    ) -> None:
        """Build hosts and links; they stay up until `linklab link down`
        (`linklab link clean` leaves them alone).

        Options replace the preset's values. A preset from --presets FILE is recorded
        with the run: status, exec and down do not need the file. Ctrl-C (or SIGTERM)
        before the link is up and recorded undoes everything (exit 130/143); after that
        it is ignored: the status is printed and the exit status is 0.
        """
        from linklab.emu.link_options import emu_overrides
        from linklab.link.lifecycle import up
        from linklab.link.presets import resolve_preset
        from linklab.link.radio import radio_overrides

        if presets and not preset:
            raise UsageError("given without a PRESET to take from it; name one of its "
                             "presets (list them: linklab link presets --presets FILE)",
                             argument="--presets")
        fields = resolve_preset(preset, presets or ()) if preset else None
        bed = up(preset, preset_fields=fields, topology=topology, hosts=hosts, name=name,
                 loss=loss, rate=rate, outage=outage, mtu=mtu, tcp_congestion=tcp_congestion,
                 nodes=nodes, pods=pods,
                 overlay=overlay, encryption=encryption, datapath=datapath,
                 **radio_overrides(radio=radio, distance=distance, tx_power=tx_power),
                 **emu_overrides(delay=delay, jitter=jitter,
                                 jitter_distribution=jitter_distribution,
                                 loss_model=loss_model, trace=trace),
                 finish_once_up=True)
        status = bed.status()
        if as_json:
            print_json(status)
        else:
            _print_status(status)

    @link.command("presets")
    def presets_command(
        presets: list[Path] = typer.Option(None, "--presets", help=PRESETS_HELP),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """List the presets (shipped, and those of --presets FILE): name, description,
        settings, source and where each is defined. Every file is validated whole.

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
            _print_presets(entries)

    @link.command("status")
    def status_command(
        name: str = typer.Option(None, "--name", help=NAME_HELP + " Default: every run."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Hosts, addresses, applied stages and their counters."""
        from linklab.link.lifecycle import list_runs, open_run

        names = [name] if name else list_runs()
        statuses = [open_run(n).status() for n in names]
        if as_json:
            print_json(statuses[0] if name else statuses)
            return
        if not statuses:
            console.print("no linklab link is up")
        for status in statuses:
            _print_status(status)

    @link.command("exec", context_settings={"allow_extra_args": True,
                                            "ignore_unknown_options": True})
    def exec_command(
        host: str = typer.Argument(..., help="Host: robot, edge, ap, robot1..N; in a "
                                   "cluster also its pods (robotpod1, edgepod2, ...) and their "
                                   "second containers (robotpod1c2)."),
        command: list[str] = typer.Argument(..., help="Command (after --)."),
        name: str = typer.Option("default", "--name", help=NAME_HELP),
    ) -> None:
        """Run a command inside a host: linklab link exec edge -- ping 10.77.0.1"""
        from linklab.link.lifecycle import open_run

        bed = open_run(name)
        argv = bed.argv(host, command)
        try:
            code = subprocess.call(argv)
        except FileNotFoundError as error:
            raise LinklabError(f"cannot run {command[0]!r}: {error}") from None
        raise typer.Exit(code)

    @link.command("down")
    def down_command(
        name: str = typer.Option("default", "--name", help=NAME_HELP),
    ) -> None:
        """Take a run down: undo every change it made, newest first."""
        from linklab.link.lifecycle import down

        problems = down(name)
        if problems:
            raise LinklabError("; ".join(problems))
        console.print(f"link {name} is down")

    @link.command("clean")
    def clean_command(
        name: str = typer.Option(None, "--name", help="Only this run."),
        prefix: str = typer.Option(None, "--prefix", help="Only runs whose name starts so."),
        journals_only: bool = typer.Option(
            False, "--journals-only",
            help="Only undo runs recorded in the state directory; do not look for "
                 "unrecorded linklab namespaces."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Remove whatever linklab left behind (and only that): runs whose process was
        killed (a bench, a testbed, a `link up` killed before its link was up) and
        namespaces of runs whose state is gone. A run whose process is alive, and a link
        made by `linklab link up` (it stays until `linklab link down`), are left alone."""
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
