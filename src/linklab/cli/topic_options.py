"""The options of one topic over one link that linklab model and linklab tune share."""

from __future__ import annotations

from typing import Any

import typer

RATE = typer.Option(..., "--rate", help="How often the topic publishes, e.g. 30Hz.")
PAYLOAD = typer.Option(..., "--payload", help="Size of one sample, e.g. 256KiB.")
SUBSCRIBERS = typer.Option(1, "--subscribers",
                           help="Subscribers each sample is sent to, one unicast copy each.")
OVERLAY = typer.Option("none", "--overlay",
                       help="Tunnel around the traffic, its header added to every packet: "
                            "none, vxlan (a Kubernetes pod network) or wireguard.")


def link_option(default: Any) -> Any:
    """``--link``: the link's rate (``...``: required)."""
    return typer.Option(default, "--link", help="What the link carries, e.g. 433Mbit/s "
                        "(measure it if you can: linklab link measure).")
