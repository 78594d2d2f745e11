"""Real Cyclone DDS traffic between two hosts of a cluster testbed, with counters.

``cyclone_flow`` starts a subscriber, then a publisher (the native probe, unicast peers,
multicast off as paper 001 runs Cyclone DDS), waits for both, and returns what arrived
and the interface byte counters before and after the publishing.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linklab.bench.metrics import read_records, unique_received
from linklab.bench.probe_driver import probe_binary


@dataclass
class Flow:
    received: int
    published: int
    before: dict[str, Any]
    after: dict[str, Any]
    pub_summary: dict[str, Any]
    sub_summary: dict[str, Any]

    def delta(self, host: str, ifname: str, key: str = "tx_bytes") -> int:
        b = self.before["interfaces"].get(host, {}).get(ifname, {}).get(key) or 0
        a = self.after["interfaces"].get(host, {}).get(ifname, {}).get(key) or 0
        return int(a) - int(b)


def _summary(text: str) -> dict[str, Any]:
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    return {}


def cyclone_flow(bed, pub: str, sub: str, tmp: Path, *, size: int = 1024, count: int = 200,
                 rate: float = 400.0, qos: str = "best_effort", topic: str = "t",
                 settle_s: float = 0.3, between=None) -> Flow:
    """``count`` samples of ``size`` B from host ``pub`` to host ``sub``; ``between``
    (optional) is called with the bed once the publisher runs (e.g. to read a capture)."""
    binary = str(probe_binary("cyclonedds"))
    pub_addr, sub_addr = bed.hosts[pub].address, bed.hosts[sub].address
    common = ["--topic", f"{topic}{int(time.monotonic_ns()) % 100000}", "--type", "Bytes",
              "--size", str(size), "--qos", qos, "--history", "keep_last:100"]
    sub_proc = bed.popen(sub, [binary, "sub", *common, "--rate", f"{rate:g}",
                               "--count", str(count), "--peer", pub_addr,
                               "--records", str(tmp / "sub.bin"), "--idle-timeout", "5",
                               "--match-timeout", "15"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(settle_s)
    before = bed.counters()
    pub_proc = bed.popen(pub, [binary, "pub", *common, "--rate", f"{rate:g}",
                               "--count", str(count), "--peer", sub_addr,
                               "--records", str(tmp / "pub.bin"), "--linger", "1",
                               "--match-timeout", "15"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if between is not None:
        between(bed)
    pub_out, pub_err = pub_proc.communicate(timeout=60)
    sub_out, sub_err = sub_proc.communicate(timeout=60)
    after = bed.counters()
    assert pub_proc.returncode == 0, pub_err[-2000:]
    received = published = 0
    if (tmp / "sub.bin").exists():
        received = len(unique_received(read_records(tmp / "sub.bin")[1]))
    if (tmp / "pub.bin").exists():
        published = len(read_records(tmp / "pub.bin")[1])
    return Flow(received, published, before, after, _summary(pub_out), _summary(sub_out))
