"""A zenoh router (the paper's "Zenoh-broker" column, seed 004 Fig. 5) run by eclipse-zenoh
in router mode from Python, inside a host namespace.

``zenohd`` would be the native router, but it does not build in reasonable time here
(MACHINE-NOTES); eclipse-zenoh's session in ``mode: "router"`` runs the same Rust
routing code, with a Python main thread that only sleeps.

    python -m linklab.brokers.zenoh_router --listen tcp/10.0.0.2:7447 [--config FILE]
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from linklab.brokers.process import BrokerProcess, spawn
from linklab.security.enclave import Enclave


@dataclass(frozen=True)
class ZenohRouterConfig:
    listen: list[str] = field(default_factory=lambda: ["tcp/0.0.0.0:7447"])
    # TLS (zenoh's transport/link/tls section); endpoints then use tls/ADDR:PORT
    root_ca_certificate: str | None = None
    listen_certificate: str | None = None
    listen_private_key: str | None = None
    enable_mtls: bool = True

    @property
    def port(self) -> int:
        return int(self.listen[0].rsplit(":", 1)[1])


def render_router_config(config: ZenohRouterConfig) -> dict:
    """The zenoh configuration (as a dict, JSON5-compatible) for a router."""
    document: dict = {
        "mode": "router",
        "listen": {"endpoints": list(config.listen)},
        "connect": {"endpoints": []},
        "scouting": {"multicast": {"enabled": False}, "gossip": {"enabled": False}},
        # no shared memory between the host namespaces: data must cross the link
        "transport": {"shared_memory": {"enabled": False}},
    }
    if config.root_ca_certificate:
        document["transport"]["link"] = {"tls": {
            "root_ca_certificate": config.root_ca_certificate,
            "listen_certificate": config.listen_certificate,
            "listen_private_key": config.listen_private_key,
            "enable_mtls": config.enable_mtls,
            "connect_certificate": config.listen_certificate,
            "connect_private_key": config.listen_private_key,
        }}
    return document


def start_zenoh_router(config: ZenohRouterConfig, workdir: Path, netns: str | None = None,
                       name: str = "zenoh-router") -> BrokerProcess:
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"{name}.json5"
    path.write_text(json.dumps(render_router_config(config), indent=2))
    argv = [sys.executable, "-m", "linklab.brokers.zenoh_router", "--config", str(path)]
    return spawn(name, argv, netns, config.port, workdir / f"{name}.log")


def main(argv: list[str] | None = None) -> int:
    import argparse

    import zenoh

    parser = argparse.ArgumentParser(prog="linklab-zenoh-router")
    parser.add_argument("--config", help="zenoh JSON5 configuration (mode is forced to router)")
    parser.add_argument("--listen", action="append", default=[])
    args = parser.parse_args(argv)
    config = zenoh.Config.from_file(args.config) if args.config else zenoh.Config()
    config.insert_json5("mode", '"router"')
    config.insert_json5("transport/shared_memory/enabled", "false")
    if args.listen:
        config.insert_json5("listen/endpoints", json.dumps(args.listen))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    session = zenoh.open(config)
    print(f"zenoh router {session.zid()} listening on "
          f"{config.get_json('listen/endpoints')}", file=sys.stderr, flush=True)
    stop.wait()
    session.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def zenoh_router_tls_config(enclave: Enclave, listen: list[str]) -> ZenohRouterConfig:
    return ZenohRouterConfig(listen=listen, root_ca_certificate=str(enclave.tls_ca),
                             listen_certificate=str(enclave.tls_cert),
                             listen_private_key=str(enclave.tls_key), enable_mtls=True)
