"""``linklab sft-bench``: the SFT evaluation of paper 003 across emulated hosts."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from linklab.errors import UsageError
from linklab.output import err_console, print_json


def register(app: typer.Typer) -> None:
    @app.command("sft-bench")
    def sft_bench(
        middleware: str = typer.Option("cyclonedds", "--middleware",
                                       help="Middleware to measure: cyclonedds, zenoh or "
                                            "both."),
        quick: bool = typer.Option(False, "--quick",
                                   help="One field count, one size, one repeat (~2 min)."),
        overhead: bool = typer.Option(
            False, "--overhead", help="The CPU and memory overhead study in a few minutes: 7 "
            "fields x 512 B, 1 and 3 receivers, 50 and 100 % field-requirement probability, "
            "3 repeats, no Nav2/PointCloud2 cases, with the Fast DDS reference."),
        fastdds: bool = typer.Option(
            False, "--fastdds", help="Also run the Fast DDS reference of paper 003's Table I: "
            "full messages of each parametric shape through the native Fast DDS probe on the "
            "same hosts (with --middleware both: once, beside the first)."),
        repeats: int = typer.Option(5, "--repeats", min=1, help="Repeats per configuration."),
        link: str | None = typer.Option(
            None, "--link", help="Join the hosts with a linklab link preset (such as "
            "ethernet-1g, or 'clean'). Default: the benchmark's own star of namespaces, no "
            "impairment."),
        out: Path | None = typer.Option(None, "--out", help="Also write the full result to "
                                        "this file, as JSON."),
        as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
        verbose: bool = typer.Option(False, "--verbose", help="Print each trial on stderr."),
    ) -> None:
        """Measure selective field transmission: bytes sent when each receiver gets only
        the fields it uses, against full messages.

        The study of paper 003 (Selective Field Transmission): fields {5,7} x field size
        {128,256,512 B} x receivers {1,3} x chance a receiver needs a field {50,75,90,100
        %}, at 10 Hz; the Nav2 cases, PointCloud2 with three receivers, latency, and how
        fast a change of the needed fields takes effect; CPU and memory of every endpoint
        process (SFT against full messages); the paper's numbers beside ours. Needs root
        (network namespaces).
        """
        from linklab.sft.bench import Settings, markdown, run

        if middleware not in ("cyclonedds", "zenoh", "both"):
            raise UsageError(f"{middleware!r}: use cyclonedds, zenoh or both",
                             argument="--middleware")
        if quick and overhead:
            raise UsageError("--quick and --overhead are two different short studies: use one",
                             argument="--overhead")
        names = ["cyclonedds", "zenoh"] if middleware == "both" else [middleware]
        results = []
        for name in names:
            reference = (fastdds or overhead) and name == names[0]
            if overhead:
                settings = Settings.overhead(name, link, fastdds=reference)
            else:
                settings = (Settings.quick(name, link) if quick else
                            Settings(middleware=name, repeats=repeats, link=link))
                settings.fastdds = reference
            progress = (lambda text: err_console.print(text)) if verbose else (lambda _: None)
            results.append(run(settings, progress))
        if out is not None:
            out.write_text(json.dumps(results if len(results) > 1 else results[0], indent=1))
        if as_json:
            print_json(results if len(results) > 1 else results[0])
            return
        for result in results:
            typer.echo(markdown(result))
            typer.echo("")
