#!/usr/bin/env python3
"""How much the probe itself costs, per middleware, on loopback inside one namespace.

The Python Zenoh probe runs on CPython (eclipse-zenoh), the native one (``zenoh-native``,
probes/zenoh, built on first need) on the zenoh crate; the others are C++. Seed 004's
comparison must not favour a middleware through its probe, so this measures each probe's
floor where the network costs nothing (loopback, one host namespace):

- latency floor: Array1k at 100 Hz, 1000 samples: one-way latency mean/p50/p99 and CPU
  per sample (publisher + subscriber, start-up excluded for the Python probe);
- large samples: Array1m at 50 Hz, 250 samples: latency mean/p99;
- throughput floor: Bytes 64 B asked at 20 kHz for 40 000 samples: the rate the pair
  sustains (unique samples / receive span) and the publisher's skipped deadlines.

    sudo .venv/bin/python scripts/probe_overhead.py [--out FILE.json] [--probes zenoh ...]
Prints a markdown table (docs/RESULTS.md "Zenoh probe overhead").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from linklab.probes.zenoh_choice import NATIVE_BINARY, native_zenoh_probe

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "build" / "probes"
PROBES = {
    "fastdds": [str(BUILD / "fastdds" / "linklab-probe-fastdds")],
    "cyclonedds": [str(BUILD / "cyclonedds" / "linklab-probe-cyclonedds")],
    "mqtt": [str(BUILD / "mqtt" / "linklab-probe-mqtt")],
    "zenoh": [sys.executable, "-m", "linklab.probes.zenoh_probe"],
    "zenoh-native": [str(NATIVE_BINARY)],  # built in main() when asked for
}
TESTS = {
    "latency": dict(type="Array1k", rate=100, count=1000),
    "large": dict(type="Array1m", rate=50, count=250),
    "throughput": dict(type="Bytes", size=64, rate=20000, count=40000),
}


def endpoints(probe: str, role: str) -> list[str]:
    if probe in ("fastdds", "cyclonedds"):
        return ["--peer", "127.0.0.1"]
    if probe == "mqtt":
        return ["--peer", "127.0.0.1:1883"]
    return ["--mode", "peer"] + (["--listen", "tcp/127.0.0.1:7447"] if role == "sub"
                                 else ["--peer", "tcp/127.0.0.1:7447"])


def run_probe(ns: str, argv: list[str], out: Path) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, *argv], stdout=open(out, "w"),
                            stderr=subprocess.DEVNULL, cwd=REPO)


def reap(process: subprocess.Popen, timeout: float) -> float:
    """Wait; return the process's CPU seconds (rusage of the probe itself)."""
    deadline = time.monotonic() + timeout
    while True:
        pid, _, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            return usage.ru_utime + usage.ru_stime
        if time.monotonic() > deadline:
            process.send_signal(2)
            deadline += 10
        time.sleep(0.05)


def records(path: Path) -> list[tuple[int, int, int, int]]:
    data = path.read_bytes()
    return [struct.unpack_from("<QqqI", data, 16 + 28 * i) for i in range((len(data) - 16) // 28)]


def summary(path: Path) -> dict:
    for line in reversed(path.read_text().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {}


def measure(ns: str, probe: str, test: str, work: Path) -> dict:
    spec = TESTS[test]
    common = ["--topic", f"ovh_{test}", "--type", spec["type"], "--count", str(spec["count"]),
              "--match-timeout", "20", "--idle-timeout", "10"]
    if "size" in spec:
        common += ["--size", str(spec["size"])]
    sub_bin, pub_bin = work / f"{probe}-{test}-sub.bin", work / f"{probe}-{test}-pub.bin"
    sub = run_probe(ns, [*PROBES[probe], "sub", *common, *endpoints(probe, "sub"),
                         "--records", str(sub_bin)], work / "sub.out")
    time.sleep(1.5 if probe.startswith("zenoh") else 0.5)
    pub = run_probe(ns, [*PROBES[probe], "pub", *common, *endpoints(probe, "pub"),
                         "--rate", str(spec["rate"]), "--records", str(pub_bin)],
                    work / "pub.out")
    budget = spec["count"] / spec["rate"] + 40
    pub_cpu, sub_cpu = reap(pub, budget), reap(sub, 20)
    pub_sum, sub_sum = summary(work / "pub.out"), summary(work / "sub.out")
    received = records(sub_bin)
    latencies = sorted((r[2] - r[1]) / 1e3 for r in received)  # microseconds
    unique = len({r[0] for r in received})
    span = (received[-1][2] - received[0][2]) / 1e9 if len(received) > 1 else float("nan")
    startup = (pub_sum.get("startup_cpu_s") or 0) + (sub_sum.get("startup_cpu_s") or 0)
    return {
        "probe": probe, "test": test, "received": unique, "sent": pub_sum.get("samples"),
        "latency_mean_us": statistics.fmean(latencies) if latencies else float("nan"),
        "latency_p50_us": latencies[len(latencies) // 2] if latencies else float("nan"),
        "latency_p99_us": latencies[int(len(latencies) * 0.99)] if latencies else float("nan"),
        "rate_hz": unique / span if span == span and span > 0 else float("nan"),
        "skipped_deadlines": pub_sum.get("skipped_deadlines"),
        "cpu_s": pub_cpu + sub_cpu, "startup_cpu_s": startup,
        "cpu_us_per_sample": 1e6 * (pub_cpu + sub_cpu - startup) / max(unique, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--probes", nargs="*", default=list(PROBES))
    parser.add_argument("--tests", nargs="*", default=list(TESTS))
    args = parser.parse_args()
    if "zenoh-native" in args.probes:
        native_zenoh_probe()
    ns = f"linklab-ovh{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    broker = None
    results = []
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            if "mqtt" in args.probes:
                from linklab.brokers import MosquittoConfig, start_mosquitto

                broker = start_mosquitto(MosquittoConfig(address="127.0.0.1"), work, netns=ns)
            for test in args.tests:
                for probe in args.probes:
                    result = measure(ns, probe, test, work)
                    results.append(result)
                    print(json.dumps(result), file=sys.stderr, flush=True)
    finally:
        if broker:
            broker.stop()
        subprocess.run(["ip", "netns", "del", ns])
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    print("| test | probe | received | latency mean / p50 / p99 (µs) | sustained rate (Hz) "
          "| skipped deadlines | CPU per sample (µs, pub+sub) |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['test']} | {r['probe']} | {r['received']}/{r['sent']} | "
              f"{r['latency_mean_us']:.0f} / {r['latency_p50_us']:.0f} / "
              f"{r['latency_p99_us']:.0f} | {r['rate_hz']:.0f} | {r['skipped_deadlines']} | "
              f"{r['cpu_us_per_sample']:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
