"""Probe overhead benchmark: linklab-probe-cyclonedds against Cyclone's own ddsperf on
the same veth pair of namespaces, same sample size and rate (docs/RESULTS.md).

    sudo .venv/bin/python probes/cyclonedds/compare_ddsperf.py [--seconds 10] [--runs 3]

Latency: ddsperf ping/pong (round trip; one way = RTT/2, the exchange is symmetric)
against the probe's one-way latency (t_recv - t_send on one CLOCK_MONOTONIC).
Throughput: ddsperf pub/sub against probe pub/sub at the same rate, received Mbit/s of
payload at the subscriber. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from linklab.probes import ProbeCommand, ProbeProcess, read_records  # noqa: E402
from probes_netns import link_pair  # noqa: E402


def ddsperf_run(pair, seconds: int, rate_hz: float, size: int) -> tuple[float, float, list[str]]:
    """ddsperf pub/sub (keep-all, reliable); -l makes the subscriber report one-way latency
    (receive time minus the sample's source timestamp: one clock, one kernel)."""
    sub_cmd = ["ddsperf", "-l", "-k", "all", "-D", str(seconds + 2), "sub"]
    pub_cmd = ["ddsperf", "-k", "all", "-D", str(seconds), "pub", f"{rate_hz:g}Hz", "size",
               str(size)]
    sub = subprocess.Popen([*pair.prefix(pair.edge), *sub_cmd], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
    time.sleep(0.5)
    subprocess.run([*pair.prefix(pair.robot), *pub_cmd], capture_output=True)
    out, _ = sub.communicate()
    # one line per second each: "... rate 0.03 kS/s 62.91 Mb/s (...)" and
    # "... sublat ... size 262144 mean 769us min 587us 50% 751.162us 90% ..."
    rates = [float(m) for m in re.findall(r"rate [\d.]+ kS/s ([\d.]+) Mb/s", out)]
    medians = [float(m) for m in re.findall(r"sublat .* 50% ([\d.]+)us", out)]
    # whole seconds of steady state: drop the first (start-up) and the last two (wind-down)
    steady = rates[1:-2] or rates
    return statistics.median(medians[1:-2] or medians), statistics.median(steady), [
        " ".join(pub_cmd), " ".join(sub_cmd)]


def probe_run(pair, tmp: Path, type_name: str, size: int, rate: float, seconds: int):
    n = int(rate * seconds)
    sub = ProbeCommand("cyclonedds", "sub", "overhead", tmp / "sub.bin", type=type_name,
                       count=n, idle_timeout_s=10, history="keep_all")
    pub = ProbeCommand("cyclonedds", "pub", "overhead", tmp / "pub.bin", type=type_name,
                       size=size, rate_hz=rate, count=n, warmup_s=0.5, history="keep_all")
    with ProbeProcess(sub, prefix=pair.prefix(pair.edge)) as s:
        time.sleep(0.5)
        with ProbeProcess(pub, prefix=pair.prefix(pair.robot)) as p:
            rp = p.wait(seconds + 60)
        rs = s.wait(60)
    rec = read_records(tmp / "sub.bin")
    span = rs.summary.raw["receive_span_s"]
    mbps = (len(rec) - 1) * size * 8 / span / 1e6 if span > 0 else 0.0
    median_us = float(statistics.median((rec.latency_ns / 1e3).tolist()))
    print(f"probe {size} B at {rate:g} Hz: skipped deadlines "
          f"{rp.summary.raw['skipped_deadlines']}, received {len(rec)}/{n}", file=sys.stderr)
    return median_us, mbps, len(rec), n, pub.argv()[1:], sub.argv()[1:]


CASES = ((262144, 30.0), (65536, 1000.0))  # the study's 256 KiB at 30 Hz; a 537 Mbit/s load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    tmp = Path(f"/tmp/linklab-overhead-{os.getpid()}")
    tmp.mkdir(exist_ok=True)
    results: dict = {}
    with link_pair(f"ov{os.getpid() % 100000}") as pair:
        for size, rate in CASES:
            key = f"{size}B_{rate:g}Hz"
            runs = results.setdefault(key, {"runs": []})["runs"]
            for _ in range(args.runs):  # alternate, so load changes hit both alike
                d_lat, d_thr, d_cmd = ddsperf_run(pair, args.seconds, rate, size)
                p_lat, p_thr, got, n, p_cmd, s_cmd = probe_run(pair, tmp, "Bytes", size, rate,
                                                               args.seconds)
                runs.append({"ddsperf_p50_us": round(d_lat, 1), "probe_p50_us": round(p_lat, 1),
                             "ddsperf_mbps": round(d_thr, 2), "probe_mbps": round(p_thr, 2),
                             "probe_received": f"{got}/{n}"})
            results[key]["commands"] = {
                "ddsperf_pub": d_cmd[0], "ddsperf_sub": d_cmd[1],
                "probe_pub": "linklab-probe-cyclonedds " + " ".join(p_cmd),
                "probe_sub": "linklab-probe-cyclonedds " + " ".join(s_cmd)}
            med = {k: statistics.median(r[k] for r in runs)
                   for k in ("ddsperf_p50_us", "probe_p50_us", "ddsperf_mbps", "probe_mbps")}
            med["latency_probe_vs_ddsperf"] = round(
                med["probe_p50_us"] / med["ddsperf_p50_us"] - 1, 3)
            med["throughput_probe_vs_ddsperf"] = round(
                med["probe_mbps"] / med["ddsperf_mbps"] - 1, 3)
            results[key]["median"] = med
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
