"""A minimal robot/edge host pair for the middleware tests (until the link branch's
testbed context manager is merged): two network namespaces joined by a veth pair.

Names carry this test process's pid (``linklab-mw<pid>-robot`` / ``-edge``); only what
this fixture created is removed, in ``finally``.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MQTT_PROBE = REPO / "build" / "probes" / "mqtt" / "linklab-probe-mqtt"
FASTDDS_PROBE = REPO / "build" / "probes" / "fastdds" / "linklab-probe-fastdds"
ZENOH_PROBE = [sys.executable, "-m", "linklab.probes.zenoh_probe"]
RECORD = struct.Struct("<QqqI")


@dataclass(frozen=True)
class Pair:
    robot: str
    edge: str
    robot_addr: str = "10.77.0.1"
    edge_addr: str = "10.77.0.2"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@contextmanager
def namespace_pair(tag: str = ""):
    run = f"linklab-mw{os.getpid()}{tag}"
    pair = Pair(robot=f"{run}-robot", edge=f"{run}-edge")
    veth_robot, veth_edge = f"lmw{os.getpid()}{tag}r"[:15], f"lmw{os.getpid()}{tag}e"[:15]
    created: list[str] = []
    try:
        for ns in (pair.robot, pair.edge):
            _ip("netns", "add", ns)
            created.append(ns)
            _ip("-n", ns, "link", "set", "lo", "up")
        _ip("link", "add", veth_robot, "netns", pair.robot, "type", "veth",
            "peer", "name", veth_edge, "netns", pair.edge)
        for ns, dev, addr in ((pair.robot, veth_robot, pair.robot_addr),
                              (pair.edge, veth_edge, pair.edge_addr)):
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            # multicast discovery (DDS) needs a route on the link
            _ip("-n", ns, "route", "add", "224.0.0.0/4", "dev", dev)
            subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-K", dev, "gso", "off",
                            "tso", "off", "gro", "off"], capture_output=True)
        yield pair
    finally:
        for ns in created:
            subprocess.run(["ip", "netns", "pids", ns], capture_output=True)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def start(netns: str, argv: list[str]) -> subprocess.Popen:
    """Start a probe in ``netns``. stderr goes to a file, not a pipe: Fast DDS with
    security logs a lot, and a full pipe nobody reads would block the probe."""
    log = tempfile.NamedTemporaryFile(prefix="linklab-probe-", suffix=".log", delete=False)
    process = subprocess.Popen(["ip", "netns", "exec", netns, *map(str, argv)],
                               stdout=subprocess.PIPE, stderr=log, text=True, cwd=REPO)
    process.stderr_path = Path(log.name)  # type: ignore[attr-defined]
    log.close()
    return process


def _stderr(process: subprocess.Popen) -> str:
    path: Path = process.stderr_path  # type: ignore[attr-defined]
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def finish(process: subprocess.Popen, timeout: float = 60.0) -> dict:
    """Wait for a probe, return its JSON summary (SIGINT first if it overstays)."""
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)
        try:
            out, _ = process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            out, _ = process.communicate()
    err = _stderr(process)
    process.stderr_path.unlink(missing_ok=True)  # type: ignore[attr-defined]
    lines = [line for line in out.splitlines() if line.startswith("{")]
    assert lines, f"probe printed no summary (exit {process.returncode}): {err[-2000:]}"
    summary = json.loads(lines[-1])
    summary["_stderr"] = err
    summary["_exit"] = process.returncode
    return summary


def wait_for_line(process: subprocess.Popen, needle: str, timeout: float = 15.0) -> None:
    """Wait until ``needle`` appears in the probe's log (the subscriber is subscribed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in _stderr(process):
            return
        if process.poll() is not None:
            break
        time.sleep(0.05)
    text = _stderr(process)
    process.kill()
    raise AssertionError(f"no {needle!r} from the probe: {text[-2000:]}")


def read_records(path: Path) -> tuple[int, list[tuple[int, int, int, int]]]:
    data = path.read_bytes()
    assert data[:8] == b"LLREC1\0\0", f"{path}: bad magic {data[:8]!r}"
    record_size, role = struct.unpack_from("<II", data, 8)
    assert record_size == RECORD.size
    return role, [RECORD.unpack_from(data, 16 + i * RECORD.size)
                  for i in range((len(data) - 16) // RECORD.size)]


def link_rx_bytes(netns: str) -> int:
    """Bytes received on the namespace's veth (not loopback): what crossed the link."""
    out = subprocess.run(["ip", "-n", netns, "-s", "-j", "link", "show"], check=True,
                         capture_output=True, text=True).stdout
    return sum(dev["stats64"]["rx"]["bytes"] for dev in json.loads(out)
               if dev["ifname"] != "lo")
