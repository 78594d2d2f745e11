"""Benchmark: the testbed's own maximum TCP and UDP throughput across ``pair``.

    python -m linklab.link.throughput [--seconds 10] [--json]

For each condition (no stages, loss only, rate only) it brings a ``pair`` up and runs
iperf3 from robot to edge (``up``) and back (``-R``, ``down``): TCP, UDP as fast as the
sender can (``-b 0``), and UDP offered at 1 Gbit/s (UDP with 1472-byte datagrams and
4 MiB socket buffers, ``-w 4M``, so iperf3's socket is not what drops). Prints a
Markdown table (the one in docs/RESULTS.md). Needs root and iperf3.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

from linklab.link.lifecycle import testbed

CONDITIONS: list[tuple[str, dict[str, str]]] = [
    ("no stages", {}),
    ("loss 1 %", {"loss": "1%"}),
    ("loss 20 %", {"loss": "20%"}),
    ("rate 1 Gbit/s", {"rate": "1Gbit/s"}),
    ("rate 2.5 Gbit/s", {"rate": "2.5Gbit/s"}),
]


def _iperf(bed: Any, args: list[str], seconds: float, tries: int = 4) -> dict[str, Any]:
    """One iperf3 run against a fresh one-off server; retried, because on a lossy link
    iperf3's own UDP handshake or end-of-test exchange can be lost (and then hangs)."""
    last: dict[str, Any] = {}
    for _ in range(tries):
        server = bed.popen("edge", ["iperf3", "-s", "-1"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        try:
            out = bed.run("robot", ["iperf3", "-c", bed.hosts["edge"].address, "-J",
                                    "-t", str(seconds), *args], timeout=seconds + 15)
            last = json.loads(out.stdout)
        except subprocess.TimeoutExpired:
            last = {"error": "iperf3 hung"}
        except json.JSONDecodeError:
            last = {"error": "no output"}
        finally:
            server.kill()
            server.wait(timeout=10)
        if "error" not in last:
            return last
    return last


def measure(label: str, overrides: dict[str, str], seconds: float) -> dict[str, Any]:
    row: dict[str, Any] = {"condition": label, **overrides}
    with testbed(None, name="tput", **overrides) as bed:
        for direction, extra in (("up", []), ("down", ["-R"])):
            tcp = _iperf(bed, extra, seconds)
            row[f"tcp_{direction}_mbps"] = (
                tcp["end"]["sum_received"]["bits_per_second"] / 1e6
                if "error" not in tcp else None)
            for key, rate in (("udp_max", "0"), ("udp_1g", "1G")):
                udp = _iperf(bed, [*extra, "-u", "-b", rate, "-l", "1472", "-w", "4M"], seconds)
                if "error" in udp:
                    row[f"{key}_{direction}_mbps"] = row[f"{key}_{direction}_lost"] = None
                    continue
                total = udp["end"]["sum"]
                lost = total["lost_percent"]
                row[f"{key}_{direction}_mbps"] = total["bits_per_second"] * (
                    1 - lost / 100) / 1e6
                row[f"{key}_{direction}_lost"] = lost
    return row


def _cell(value: float | None, lost: float | None = None) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" + ("" if lost is None else f" ({lost:.1f} %)")


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| condition | dir | TCP Mbit/s | UDP max Mbit/s (lost) | UDP at 1 Gbit/s: "
             "received Mbit/s (lost) |", "|---|---|---:|---:|---:|"]
    for row in rows:
        for direction in ("up", "down"):
            lines.append(
                f"| {row['condition']} | {direction} | {_cell(row[f'tcp_{direction}_mbps'])} | "
                f"{_cell(row[f'udp_max_{direction}_mbps'], row[f'udp_max_{direction}_lost'])} | "
                f"{_cell(row[f'udp_1g_{direction}_mbps'], row[f'udp_1g_{direction}_lost'])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m linklab.link.throughput")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = []
    for label, overrides in CONDITIONS:
        rows.append(measure(label, overrides, args.seconds))
        print(f"done: {label}", file=sys.stderr, flush=True)
    print(json.dumps(rows, indent=1) if args.json else table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
