"""``linklab keystore create DIR``: a DDS-Security keystore (SROS 2 layout) with TLS
material for MQTT and Zenoh."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from linklab.output import print_json


def register(app: typer.Typer) -> None:
    keystore = typer.Typer(help="Make the keys and certificates secured middlewares need: a "
                                "DDS-Security keystore (CA, enclaves, signed governance and "
                                "permissions) and TLS material for MQTT and Zenoh.",
                           no_args_is_help=True)

    @keystore.command("create")
    def create(
        directory: Path = typer.Argument(..., metavar="DIR", help="Where to create the keystore."),
        enclave: list[str] = typer.Option(
            None, "--enclave", help="Enclave (participant identity) to create, e.g. "
            "/linklab/robot (letters, digits, _; at most 60 characters); repeat for more. "
            "Default: /linklab/robot and /linklab/edge."),
        tls_address: list[str] = typer.Option(
            None, "--tls-address", help="IP address (IPv4/IPv6) or DNS name (RFC 1123 labels: "
            "letters, digits, '-') the TLS certificates are valid for (the broker's or "
            "router's addresses); repeatable. Default: 127.0.0.1, localhost."),
        json_output: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    ) -> None:
        """Create a keystore as `ros2 security create_keystore` and `create_enclave` do,
        with TLS certificates for MQTT and Zenoh."""
        from linklab.security.keystore import DEFAULT_ENCLAVES, create_keystore

        made = create_keystore(directory, tuple(enclave or DEFAULT_ENCLAVES),
                               tuple(tls_address or ("127.0.0.1", "localhost")))
        _show(made, json_output)

    @keystore.command("show")
    def show(
        directory: Path = typer.Argument(..., metavar="DIR", help="A keystore made by create."),
        json_output: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    ) -> None:
        """Check an existing keystore (CA, enclave certificates and keys) and list its
        enclaves and profiles."""
        from linklab.security.keystore import load_keystore

        _show(load_keystore(directory), json_output)

    def _show(made: Any, json_output: bool) -> None:
        result = {
            "keystore": str(made.root.resolve()),
            "ca": str(made.ca_cert.resolve()),
            "enclaves": [{"name": e.name, "directory": str(e.directory),
                          "fastdds_profile": str(e.fastdds_profile),
                          "cyclonedds_profile": str(e.cyclonedds_profile),
                          "mqtt_profile": str(e.mqtt_profile),
                          "zenoh_profile": str(e.zenoh_profile)} for e in made.enclaves],
        }
        if json_output:
            print_json(result)
            return
        typer.echo(f"keystore {result['keystore']} (CA {result['ca']})")
        for item in result["enclaves"]:
            typer.echo(f"  enclave {item['name']}: {item['directory']}")
            typer.echo(f"    Fast DDS profile  {item['fastdds_profile']}")
            typer.echo(f"    Cyclone DDS config {item['cyclonedds_profile']}")
            typer.echo(f"    MQTT TLS profile  {item['mqtt_profile']}")
            typer.echo(f"    Zenoh TLS profile {item['zenoh_profile']}")

    app.add_typer(keystore, name="keystore")
