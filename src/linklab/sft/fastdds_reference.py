"""Paper 003 Table I's Fast DDS column: full messages through the native Fast DDS probe.

The paper runs Fast DDS "as an independent reference implementation" beside the
EmbeddedRTPS baseline.  Here one reference trial runs ``linklab-probe-fastdds`` (Fast
DDS 2.9, UDPv4 only, unicast peers, ROS 2's default QoS: reliable, keep last 10,
volatile) on the *same star* as the SFT trials: the publisher probe in the publisher's
namespace, one subscriber probe per receiver.  The message is the probes' ``Bytes_``
type sized so its serialized payload equals the parametric shape's full message
(XCDR1: 4-byte encapsulation + fields x size for the SFT type; 4 + 20 + payload for
``Bytes_``, probes/idl/linklab_types.idl), at the same rate, warm-up and count.  Bytes
are counted on the same ports over a window of the same length holding the same
number of publications; latency is the probes' own (write -> take, one clock).
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from linklab.errors import EnvironmentProblem
from linklab.probes.binaries import binary_path
from linklab.probes.records import read_records
from linklab.sft import netns, usage

BYTES_HEADER = 20  # Bytes_: seq (8) + t_send_ns (8) + the sequence's length (4)
DOMAIN = 7  # not the sft-bench endpoints' domain 0


def payload_for(fields: int, field_size: int) -> int:
    """The ``Bytes_`` payload whose sample serializes to as many bytes as the full
    parametric message of ``fields`` x ``field_size`` (``uint8[S]`` members, no padding)."""
    return fields * field_size - BYTES_HEADER


def _ports(star: netns.Star) -> list[str]:
    """Every receiver's counted port as ``<namespace>/<interface>`` (read from here)."""
    return [h.port if "/" in h.port else f"{star.publisher.namespace}/{h.port}"
            for h in star.receivers]


def _read_ports(star: netns.Star) -> tuple[int, dict[str, int]]:
    """Every receiver port's tx+rx bytes, one ``cat`` per namespace, and when (the end
    of the reads, CLOCK_MONOTONIC ns: the ``cat`` runs at the end of ``ip netns exec``,
    whose start-up is most of a read's time)."""
    by_namespace: dict[str, list[str]] = {}
    for port in _ports(star):
        by_namespace.setdefault(port.split("/", 1)[0], []).append(port)
    out = {}
    for namespace, ports in by_namespace.items():
        files = [f"/sys/class/net/{p.split('/', 1)[1]}/statistics/{d}_bytes"
                 for p in ports for d in ("tx", "rx")]
        text = subprocess.run(["ip", "netns", "exec", namespace, "cat", *files],
                              capture_output=True, text=True, check=True).stdout.split()
        for index, port in enumerate(ports):
            out[port] = int(text[2 * index]) + int(text[2 * index + 1])
    return time.monotonic_ns(), out


def _sleep_until(monotonic_s: float) -> None:
    time.sleep(max(0.0, monotonic_s - time.monotonic()))


def _probe(star: netns.Star, host: netns.Host, role: str, common: list[str],
           extra: list[str]) -> subprocess.Popen:
    command = star.exec_args(host, str(binary_path("fastdds")), role, *common, *extra,
                             "--interface", host.address)
    return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def _wait_for(path: Path, timeout: float, procs: list[subprocess.Popen]) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            raise EnvironmentProblem(f"Fast DDS reference: the probes did not match within "
                                     f"{timeout:.0f} s")
        time.sleep(0.02)


def _latencies(tmp: Path, receivers: int) -> list[float]:
    lat: list[float] = []
    for index in range(receivers):
        path = tmp / f"sub{index}.bin"
        if path.exists():
            lat += [v / 1e6 for v in read_records(path).latency_ns.tolist()]
    return lat


def trial(star: netns.Star, payload: int, rate_hz: float, warmup: int, count: int,
          topic: str) -> dict[str, Any]:
    """One full-message trial; bytes per receiver port, latency, CPU and memory."""
    period = 1.0 / rate_hz
    warmup_s = warmup * period
    with tempfile.TemporaryDirectory(prefix="linklab-sftref-") as name:
        tmp = Path(name)
        # two spare samples: the window never sees the end; a domain of its own, so the
        # probes do not discover the idle sft-bench endpoints (domain 0) on the same hosts
        common = ["--topic", topic, "--type", "Bytes", "--size", str(payload),
                  "--count", str(count + 2), "--domain", str(DOMAIN)]
        subs = [_probe(star, host, "sub", common,
                       ["--peer", star.publisher.address, "--records", str(tmp / f"sub{i}.bin"),
                        "--idle-timeout", "3", "--match-timeout", "15"])
                for i, host in enumerate(star.receivers)]
        peers = [arg for host in star.receivers for arg in ("--peer", host.address)]
        pub = _probe(star, star.publisher, "pub", common,
                     [*peers, "--rate", str(rate_hz), "--warmup", str(warmup_s),
                      "--subscribers", str(len(subs)), "--ready-file", str(tmp / "ready"),
                      "--start-file", str(tmp / "go"), "--records", str(tmp / "pub.bin"),
                      "--linger", "1", "--match-timeout", "15"])
        procs = [pub, *subs]
        try:
            _wait_for(tmp / "ready", 20, procs)
            pids = {"publisher": pub.pid,
                    **{f"receiver{i + 1}": p.pid for i, p in enumerate(subs)}}
            with usage.RssSampler(list(pids.values())) as sampler:
                (tmp / "go").touch()
                go_ns = time.monotonic_ns()
                # from a quarter period after the warm-up's end (between two publication
                # slots), as long as sft-bench's window: count periods and a half; both
                # ends on the schedule, however long a read takes
                start_s = go_ns / 1e9 + warmup_s + period / 4
                _sleep_until(start_s)
                before = usage.snapshot(list(pids.values()), reset=True)
                t0, counters0 = _read_ports(star)
                _sleep_until(start_s + (count + 0.5) * period)
                t1, counters1 = _read_ports(star)
                after = usage.snapshot(list(pids.values()))
            for proc in procs:
                proc.wait(timeout=15)
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        sent = read_records(tmp / "pub.bin").records["t_send_ns"]
        messages = int(((sent >= t0) & (sent <= t1)).sum())
        # the first measured write after the go, less the slot it should have had: the
        # window holds exactly ``count`` slots while this stays under a quarter period
        late_ms = ((int(sent[0]) - go_ns) / 1e6 - (warmup + 1) * period * 1e3
                   if len(sent) else None)
        lat = _latencies(tmp, len(subs))
    seconds = (t1 - t0) / 1e9
    per_port = [counters1[p] - counters0[p] for p in _ports(star)]
    # per sft-bench's window: count messages in count + 1/2 periods (a late read that
    # let one more slot in does not add its bytes to the rate)
    scale = count / messages / ((count + 0.5) * period) if messages else 0.0
    return {"bytes": per_port, "seconds": seconds, "messages": messages,
            "first_slot_late_ms": late_ms,
            "kbit_s": [8 * b * scale / 1000 for b in per_port],
            "kbit_s_raw": [8 * b / seconds / 1000 for b in per_port],
            "latency_mean_ms": statistics.fmean(lat) if lat else None,
            "latency_median_ms": statistics.median(lat) if lat else None,
            "usage": usage.trial_usage(pids, before, after, sampler.samples, (t0, t1),
                                       messages)}
