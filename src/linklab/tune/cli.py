"""``linklab tune``: write Fast DDS and Cyclone DDS profiles for one topic over one link."""

from __future__ import annotations

from pathlib import Path

import typer

from linklab.errors import UsageError
from linklab.model.scenario import DEFAULT_UTILIZATION
from linklab.model.sweep import parse_count_bytes
from linklab.output import print_json
from linklab.tune import TuningInput, render_text, tune, usage_lines, write_profiles
from linklab.units import parse_bitrate, parse_fraction, parse_frequency, parse_size

DEFAULT_OUT = "linklab-profiles"


def build_input(rate: str, payload: str, link: str, utilization: str, mtu: str, overlay: str,
                subscribers: int, ros: str, per: str | None, peers: list[str]) -> TuningInput:
    omega = parse_fraction(utilization, "--utilization")
    if omega <= 0:
        raise UsageError(f"{utilization!r} is outside (0, 1]; e.g. 0.65 or 65%",
                         argument="--utilization")
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
        peers=tuple(peers or ()),
    )


def register(app: typer.Typer) -> None:
    @app.command("tune")
    def tune_command(
        rate: str = typer.Option(..., "--rate", help="Publish rate r, e.g. 30Hz."),
        payload: str = typer.Option(..., "--payload", help="Sample size u, e.g. 256KiB."),
        link: str = typer.Option(..., "--link",
                                 help="Link throughput T_OS->Link (measured if you can), "
                                      "e.g. 433Mbit/s."),
        utilization: str = typer.Option(str(DEFAULT_UTILIZATION), "--utilization",
                                        help="omega, the link share for DDS, in (0, 1]; "
                                             "0.6-0.7 for an exclusive link."),
        mtu: str = typer.Option("1500", "--mtu", help="MTU of the physical link in bytes."),
        overlay: str = typer.Option("none", "--overlay", help="none | vxlan | wireguard."),
        subscribers: int = typer.Option(1, "--subscribers",
                                        help="Subscribers reached by unicast."),
        ros: str = typer.Option("humble", "--ros", help="humble | jazzy."),
        per: str = typer.Option(None, "--per",
                                help="Packet error rate to explain for (default: the paper's "
                                     "1% and 20%)."),
        peer: list[str] = typer.Option(None, "--peer",
                                       help="Unicast peer (Cyclone; turns multicast off). "
                                            "Repeatable."),
        out: Path = typer.Option(Path(DEFAULT_OUT), "--out",
                                 help="Directory for fastdds.xml and cyclonedds.xml."),
        strict: bool = typer.Option(False, "--strict",
                                    help="Exit 3 (after writing nothing) when the topic does "
                                         "not fit the link (R_pub > T*omega)."),
        json_output: bool = typer.Option(False, "--json", help="Print JSON instead of text."),
    ) -> None:
        """Profiles from the paper's framework (000 IV-F): maxMessageSize, heartbeat, N_HC."""
        t = build_input(rate, payload, link, utilization, mtu, overlay, subscribers, ros, per,
                        peer)
        result = tune(t)  # validates everything before any file is touched
        if strict and result.verdict == "infeasible":
            if json_output:
                print_json({**result.to_dict(), "files": {}})
            else:
                typer.echo(result.explanation.summary)
            typer.echo("linklab: error: --strict: the topic does not fit the link; "
                       "no files written", err=True)
            raise typer.Exit(3)
        paths = write_profiles(result, out)
        if json_output:
            print_json({**result.to_dict(), "files": {k: str(v) for k, v in paths.items()}})
            return
        lines = render_text(t, result.settings, result.explanation)
        lines += ["", f"Wrote {paths['fastdds']}", f"      {paths['cyclonedds']}", ""]
        lines += usage_lines(t, result.settings, str(paths["fastdds"]), str(paths["cyclonedds"]))
        typer.echo("\n".join(lines))
