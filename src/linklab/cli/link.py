"""``linklab link up|status|exec|down|clean|presets``: a thin shell over ``linklab.link``;
``linklab link measure`` is linklab.field's (a real path, measured)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import typer
from rich.console import Group

from linklab.cli.options import FORMAT_OPTION, output_format
from linklab.errors import LinklabError, UsageError
from linklab.output import console, markdown_table, print_json, print_text

NAME_HELP = ("Name of the link, so several can be up at once (its namespaces are "
             "linklab-NAME-HOST).")
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


def _host_rows(status: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(name, host["netns"], ", ".join(host["addresses"]) or "(bridge only)")
            for name, host in status["hosts"].items()]


def _link_text(link: dict[str, Any]) -> str:
    return (f"{link['name']} ({link['wire']}): {link['robot_side']} <-> {link['edge_side']}"
            + ("" if link.get("state", "up") == "up" else f"  LINK {link['state']}"))


STAGE_COLUMNS = ("link", "direction", "kind", "settings", "passed packets", "passed bytes",
                 "dropped packets")


def _stage_rows(status: dict[str, Any]) -> list[tuple[str, ...]]:
    rows = []
    for st in status["counters"]["stages"]:
        params = st["params"].get("text") or st["params"].get("schedule") or st["params"]
        rows.append((st["link"], st["direction"], st["kind"], str(params),
                     _fmt(st.get("passed_packets")), _fmt(st.get("passed_bytes")),
                     _fmt(st.get("dropped_packets"))))
    return rows


def _notes(status: dict[str, Any]) -> list[str]:
    """The lines after the stages: outage, socket buffers, congestion control, notes."""
    lines = []
    if status.get("outage"):
        outage = status["outage"]
        if outage["t0_ns"] is None:
            lines.append(f"outage {outage['schedule']}: not armed yet")
        else:
            done = ", ".join(f"{e['edge']} at +{(e['after_ns'] - outage['t0_ns']) / 1e9:.3f} s"
                             for e in outage["events"]) or "no switch yet"
            lines.append(f"outage {outage['schedule']}: t0 = {outage['t0_ns']} ns "
                         f"(CLOCK_MONOTONIC); {done}")
    sample = next(iter(status["socket_buffers"].values()), {})
    if sample:
        parts = [f"{k.split('.')[-1]}={v['effective']}" + ("" if v["applied"] else "*")
                 for k, v in sample.items()]
        lines.append("socket buffers: " + ", ".join(parts)
                     + ("  (* read-only in a child namespace on this kernel: host value)"
                        if any(not v["applied"] for v in sample.values()) else ""))
    placement = status.get("placement")
    if placement:
        lines.append(f"relay on CPU {placement['relay_cpu']}; link exec on CPU(s) "
                     f"{','.join(map(str, placement['endpoint_cpus']))}")
    congestion = next(iter((status.get("tcp_congestion") or {}).values()), None)
    if congestion:
        lines.append(f"TCP congestion control: {congestion['effective']} "
                     f"({congestion['source']})")
    lines += [f"note: {note}" for note in status.get("notes", [])]
    return lines


def _cluster_text(cluster: dict[str, Any]) -> str:
    mtus = ", ".join(f"{k} {v}" for k, v in cluster["mtu"].items())
    return (f"cluster: overlay {cluster['overlay']}, encryption {cluster['encryption']}, "
            f"datapath {cluster['datapath']}; MTU {mtus}; a pod's second container is "
            "<pod>c2")


def _print_status(status: dict[str, Any]) -> None:
    spec = status["spec"]
    lines = [f"[bold]link {status['name']}[/bold]  topology {status['topology']}  "
             f"preset {spec['preset'] or '(none)'}  mtu {spec['mtu']}"]
    if spec.get("source"):
        lines.append(f"  source: {spec['source']}")
    lines.append("  hosts:")
    lines += [f"    {name:<12} {netns:<28} {addresses}"
              for name, netns, addresses in _host_rows(status)]
    if status.get("cluster"):
        lines.append(f"  {_cluster_text(status['cluster'])}")
    lines += [f"  link {_link_text(link)}" for link in status["links"]]
    lines.append("  stages (packets/bytes passed, dropped):")
    if not status["counters"]["stages"]:
        lines.append("    none (a clean link; offloads off, MTU set)")
    for link, direction, kind, params, packets, size, dropped in _stage_rows(status):
        lines.append(f"    {link:<10} {direction:<4} {kind:<7} {params:<14} passed {packets} "
                     f"pkt / {size} B, dropped {dropped} pkt")
    lines += [f"  {line}" for line in _notes(status)]
    print_text(Group(*(console.render_str(line) for line in lines)))  # markup, highlighting


def _status_markdown(status: dict[str, Any]) -> str:
    """:func:`_print_status` as Markdown: the hosts and the stages as tables."""
    spec = status["spec"]
    lines = [f"**link {status['name']}**: topology {status['topology']}, preset "
             f"{spec['preset'] or '(none)'}, mtu {spec['mtu']}", ""]
    if spec.get("source"):
        lines += [f"source: {spec['source']}", ""]
    lines += markdown_table(("host", "namespace", "addresses"), _host_rows(status)) + [""]
    if status.get("cluster"):
        lines += [_cluster_text(status["cluster"]), ""]
    lines += [f"- link {_link_text(link)}" for link in status["links"]] + [""]
    if status["counters"]["stages"]:
        lines += markdown_table(STAGE_COLUMNS, _stage_rows(status), (4, 5, 6)) + [""]
    else:
        lines += ["stages: none (a clean link; offloads off, MTU set)", ""]
    lines += [f"- {line}" for line in _notes(status)]
    return "\n".join(lines).rstrip() + "\n"


def register(app: typer.Typer) -> None:
    link = typer.Typer(name="link", no_args_is_help=True,
                       help="Emulate hosts joined by an impaired link on this machine (network "
                            "namespaces): bring it up, inspect it, run commands on its "
                            "hosts, take it down; measure a real path to replay it.")
    app.add_typer(link, name="link")
    @link.command("up")
    def up_command(
        preset: str = typer.Argument(None, help="The link to emulate: wifi-ideal, wifi-mild, "
                                     "wifi-severe, wifi-outage, ethernet-1g, lan-2.5g; with the "
                                     "emulator: 4g, wifi, cloud; a simulated radio (802.11a "
                                     "in ns-3, as in paper 002, Evaluation of ROS 2 in Lossy "
                                     "Unmanned Networks): wifi-80211a, wifi-far, "
                                     "wifi-80211a-curve; or one of a --presets FILE. List "
                                     "them: linklab link presets. Default: a clean link with "
                                     "only the options given."),
        presets: list[Path] = typer.Option(None, "--presets", help=PRESETS_HELP),
        topology: str = typer.Option("pair", "--topology", help="How the hosts are joined: "
                                     "pair (robot and edge), star (--hosts robots around one "
                                     "access point), chain (robot, a routing access point, "
                                     "edge) or cluster (nodes and pods, as in paper 001, "
                                     "ROS 2 Deployments on Kubernetes)."),
        hosts: int = typer.Option(1, "--hosts", help="Robots in a star topology."),
        nodes: str = typer.Option(None, "--nodes", help="Cluster: nodes, from 2 (robot and "
                                  "edge) to 8 (robot1..robot7 and edge on one switch). "
                                  "Default: 2."),
        pods: str = typer.Option(None, "--pods", help="Cluster: pods per node. Default: 2."),
        overlay: str = typer.Option(None, "--overlay", help="Cluster: vxlan (pod MTU 1450) "
                                    "or none (direct routing). Default: vxlan."),
        encryption: str = typer.Option(None, "--encryption", help="Cluster: none or "
                                       "wireguard (WireGuard between nodes, pod MTU 1380). "
                                       "Default: none."),
        datapath: str = typer.Option(None, "--datapath", help="Cluster: iptables (kube-proxy "
                                     "rules, connection tracking) or ebpf (tc redirects). "
                                     "Default: iptables."),
        loss: str = typer.Option(None, "--loss", help="Packet loss, e.g. 1%, or per "
                                 "direction up=1%,down=20% (up: robot to edge). Default: the "
                                 "preset's."),
        rate: str = typer.Option(None, "--rate", help="Rate limit, e.g. 433Mbit/s. Default: "
                                 "the preset's."),
        outage: str = typer.Option(None, "--outage",
                                   help="Cut the link for LENGTH, START into the run, "
                                        "optionally again every PERIOD: START+LENGTH[/PERIOD], "
                                        "e.g. 10s+20s or 5s+2s/30s. Default: the preset's."),
        mtu: str = typer.Option(None, "--mtu", help="Largest IP packet in bytes, e.g. 1500. "
                                "Default: the preset's."),
        tcp_congestion: str = typer.Option(
            None, "--tcp-congestion", help="TCP congestion control in every namespace, "
            "e.g. cubic (stock Debian/Ubuntu), reno or bbr. Default: the host's, recorded."),
        delay: str = typer.Option(None, "--delay", help="One-way delay (with the emulator), "
                                  "e.g. 30ms or up=30ms,down=20ms. Default: the preset's."),
        jitter: str = typer.Option(None, "--jitter", help="Variation of the delay (with the "
                                   "emulator), e.g. 5ms. Default: the preset's."),
        jitter_distribution: str = typer.Option(
            None, "--jitter-distribution",
            help="Shape of the delay variation: uniform, normal, pareto or paretonormal. "
                 "Default: the preset's, else uniform (as netem)."),
        loss_model: str = typer.Option(None, "--loss-model",
                                       help="Loss in bursts (with the emulator), a "
                                       "Gilbert-Elliott model gemodel:p,r,1-h,1-k (p: chance "
                                       "to enter the bad state, r: to leave it, 1-h: loss in "
                                       "the bad state, 1-k: loss in the good one), e.g. "
                                       "gemodel:1%,30%,100%,0%."),
        trace: str = typer.Option(None, "--trace", help="Replay a recorded link (with the "
                                  "emulator): Mahimahi delivery traces up.trace,down.trace, "
                                  "or one file for both directions."),
        queue: str = typer.Option(None, "--queue", help="What the queue in front of the "
                                  "rate or trace does when full or slow (with the emulator): "
                                  "droptail (drop the newcomer), headdrop (drop the oldest) "
                                  "or codel (drop once frames wait over 5 ms), e.g. codel or "
                                  "up=codel,down=droptail. Default: droptail."),
        queue_limit: str = typer.Option(None, "--queue-limit", help="The most that queue "
                                        "holds: 200packets, a size such as 1MiB, or both "
                                        "(200packets+1MiB). Default: 50 ms at the rate (a "
                                        "trace: 64 MiB)."),
        trace_start: str = typer.Option(None, "--trace-start", help="When a --trace starts: "
                                        "first-packet (the link's first frame), now, or a "
                                        "UTC time such as 2026-11-28T10:30:00Z. Default: "
                                        "when the link comes up."),
        relay_cpu: str = typer.Option("auto", "--relay-cpu", help="The CPU the emulator's "
                                      "relay runs on; `link exec` then runs on the others: "
                                      "auto (the highest CPU; none with one CPU), none, or "
                                      "a CPU number."),
        radio: str = typer.Option(None, "--radio", help="Simulated radio (paper 002): ns3 "
                                  "(a real-time 802.11a simulation) or curve (its measured "
                                  "loss against distance, no simulator)."),
        distance: str = typer.Option(None, "--distance", help="Radio: each robot's distance "
                                     "from the edge, e.g. 25.5m (a radio preset, or --radio "
                                     "ns3)."),
        tx_power: str = typer.Option(None, "--tx-power", help="Radio: every station's "
                                     "transmit power, e.g. 16.0206dBm. Default: ns-3's, "
                                     "16.0206dBm."),
        name: str = typer.Option("default", "--name", help=NAME_HELP),
        as_json: bool = typer.Option(False, "--json", help="Print the status as JSON."),
    ) -> None:
        """Bring up emulated hosts joined by an impaired link.

        They stay up until `linklab link down` (`linklab link clean` leaves them alone).

        Options replace the preset's values. A preset from --presets FILE is recorded
        with the run: status, exec and down do not need the file. Ctrl-C (or SIGTERM)
        before the link is up and recorded undoes everything (exit 130/143); after that
        it is ignored: the status is printed and the exit status is 0.
        """
        from linklab.link.impairments import emulator_overrides as emu_overrides
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
                 queue=queue, queue_limit=queue_limit, trace_start=trace_start,
                 relay_cpu=relay_cpu, finish_once_up=True)
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
            _print_presets(entries)

    @link.command("status")
    def status_command(
        name: str = typer.Option(None, "--name", help="Only the link of this name. Default: "
                                 "every link that is up."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
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
                typer.echo(_status_markdown(status))
            else:
                _print_status(status)

    @link.command("exec", context_settings={"allow_extra_args": True,
                                            "ignore_unknown_options": True})
    def exec_command(
        host: str = typer.Argument(..., help="Host: robot, edge, ap, robot1..N; in a "
                                   "cluster also its pods (robotpod1, edgepod2, ...) and their "
                                   "second containers (robotpod1c2)."),
        command: list[str] = typer.Argument(..., help="The command and its arguments, "
                                            "after --."),
        name: str = typer.Option("default", "--name", help=NAME_HELP),
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

    @link.command("down")
    def down_command(
        name: str = typer.Option("default", "--name", help=NAME_HELP),
    ) -> None:
        """Take a link down: undo every change it made, newest first."""
        from linklab.link.lifecycle import down

        problems = down(name)
        if problems:
            raise LinklabError("; ".join(problems))
        console.print(f"link {name} is down")

    @link.command("clean")
    def clean_command(
        name: str = typer.Option(None, "--name", help="Only the run of this name. Default: "
                                 "every run."),
        prefix: str = typer.Option(None, "--prefix", help="Only runs whose name starts with "
                                   "this."),
        journals_only: bool = typer.Option(
            False, "--journals-only",
            help="Only undo runs linklab recorded; do not look for linklab namespaces "
                 "it has no record of."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
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

    from linklab.cli.field_measure import add_measure

    add_measure(link)   # linklab link measure A B (the field package: hosts over SSH)
