#!/usr/bin/env python3
"""Measure best-effort sample delivery vs packet error rate and compare with the model.

Benchmark for docs/RESULTS.md (not a test): two network namespaces joined by a veth
pair (offloads off), Bernoulli loss on the subscriber's ingress with nftables
``numgen random`` (each IP fragment dropped independently), Cyclone DDS ``ddsperf``
best-effort (-u) pub -> sub at a fixed rate. Delivery = received / (received + lost)
from ddsperf's sequence-gap count. Prediction: linklab.model.delivery with Cyclone's
default 14720 B messages (or --max-message-size), real IP fragment counting.

usage (root): .venv/bin/python probes/checks/measure_best_effort_delivery.py \
    [--per 0.1% 1% 5%] [--payload 33KiB 66KiB 132KiB 264KiB] [--rate 30Hz] [--seconds 20]
Creates only linklab-be<pid>-{pub,sub} and removes exactly those at exit.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

from linklab.model.delivery import best_effort_delivery
from linklab.units import parse_fraction, parse_frequency, parse_size

TAG = f"be{os.getpid()}"
NS_PUB, NS_SUB = f"linklab-{TAG}-pub", f"linklab-{TAG}-sub"
IF_PUB, IF_SUB = f"lk{TAG}p"[:15], f"lk{TAG}s"[:15]


def sh(*args: str, ns: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(args)
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def link_up(sub_sysctls: list[str]) -> None:
    sh("ip", "netns", "add", NS_PUB)
    sh("ip", "netns", "add", NS_SUB)
    sh("ip", "link", "add", IF_PUB, "netns", NS_PUB, "type", "veth", "peer", "name", IF_SUB,
       "netns", NS_SUB)
    for ns, ifname, addr in ((NS_PUB, IF_PUB, "10.199.0.1/24"), (NS_SUB, IF_SUB, "10.199.0.2/24")):
        sh("ip", "link", "set", "lo", "up", ns=ns)
        sh("ip", "addr", "add", addr, "dev", ifname, ns=ns)
        sh("ip", "link", "set", ifname, "up", ns=ns)
        sh("ethtool", "-K", ifname, "gso", "off", "tso", "off", "gro", "off", ns=ns, check=False)
        sh("ip", "route", "add", "224.0.0.0/4", "dev", ifname, ns=ns)
        for knob in ("rmem_max", "wmem_max"):
            sh("sysctl", "-qw", f"net.core.{knob}=8388608", ns=ns, check=False)
    for setting in sub_sysctls:
        sh("sysctl", "-qw", setting, ns=NS_SUB)


def set_loss(per: float) -> None:
    sh("nft", "delete", "table", "netdev", "linklab_loss", ns=NS_SUB, check=False)
    if per <= 0:
        return
    threshold = round(per * 10000)
    rules = (f"table netdev linklab_loss {{\n  chain ingress {{\n"
             f"    type filter hook ingress device {IF_SUB} priority 0; policy accept;\n"
             f"    numgen random mod 10000 < {threshold} counter drop\n  }}\n}}\n")
    with tempfile.NamedTemporaryFile("w", suffix=".nft", delete=False) as f:
        f.write(rules)
    try:
        sh("nft", "-f", f.name, ns=NS_SUB)
    finally:
        os.unlink(f.name)


def link_down() -> None:
    for ns in (NS_PUB, NS_SUB):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def run_cell(payload: int, rate: float, seconds: int, domain: int, reliable: bool = False,
             config: str | None = None) -> tuple[int, int]:
    env = dict(os.environ)
    if config:
        env["CYCLONEDDS_URI"] = f"file://{os.path.abspath(config)}"
    mode = ["-k", "all"] if reliable else ["-u"]
    sub = subprocess.Popen(["ip", "netns", "exec", NS_SUB, "ddsperf", *mode, "-i", str(domain),
                            "-D", str(seconds + 6), "sub"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(1.0)
    subprocess.run(["ip", "netns", "exec", NS_PUB, "ddsperf", *mode, "-i", str(domain),
                    "-D", str(seconds + 2), "pub", f"{rate:g}Hz", "size", str(payload)],
                   env=env, capture_output=True, text=True, timeout=seconds + 30)
    out, _ = sub.communicate(timeout=seconds + 30)
    total = lost = 0
    for m in re.finditer(r"total (\d+) lost (\d+)", out):
        total, lost = int(m.group(1)), int(m.group(2))
    return total, lost


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per", nargs="+", default=["0.1%", "1%", "5%"])
    ap.add_argument("--payload", nargs="+", default=["33KiB", "66KiB", "132KiB", "264KiB"])
    ap.add_argument("--rate", default="30Hz")
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--max-message-size", type=int, default=14720)  # Cyclone's default
    ap.add_argument("--reliable", action="store_true",
                    help="reliable instead of best effort: report samples received per second")
    ap.add_argument("--config", help="Cyclone XML for pub and sub (CYCLONEDDS_URI)")
    ap.add_argument("--sub-sysctl", nargs="*", default=[],
                    help="sysctl KEY=VALUE in the subscriber's namespace, e.g. "
                         "net.ipv4.ipfrag_time=1")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root (network namespaces, nftables)", file=sys.stderr)
        return 2
    rate = parse_frequency(args.rate, "--rate")
    pers = [parse_fraction(p, "--per") for p in args.per]
    payloads = [parse_size(p, "--payload") for p in args.payload]
    domain = 150 + os.getpid() % 80
    if args.reliable:
        print("| PER | payload | received | reception rate (Hz) |")
        print("|---|---|---|---|")
    else:
        print("| PER | payload | received | lost | measured delivery | model delivery |")
        print("|---|---|---|---|---|---|")
    try:
        link_up(args.sub_sysctl)
        for per in pers:
            set_loss(per)
            for payload in payloads:
                total, lost = run_cell(payload, rate, args.seconds, domain, args.reliable,
                                       args.config)
                if args.reliable:
                    print(f"| {per:.1%} | {payload // 1024} KiB | {total} | "
                          f"{total / (args.seconds + 2):.2f} |", flush=True)
                    continue
                measured = total / (total + lost) if total + lost else float("nan")
                model = best_effort_delivery(payload, per, args.max_message_size, mode="ip")
                print(f"| {per:.1%} | {payload // 1024} KiB | {total} | {lost} | "
                      f"{measured:.1%} | {model:.1%} |", flush=True)
    finally:
        link_down()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
