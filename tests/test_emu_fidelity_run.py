"""The fidelity benchmark's cells, briefly (linklab.emu.fidelity): UDP above capacity
through the relay, and through mm-link when it is built, delivers what the trace allows in
each of two trace seconds, and leaves nothing behind. The benchmark's own targets (2 %,
r >= 0.99) are measured by the benchmark, not asserted here."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from linklab.emu.fidelity import trace_pair
from linklab.emu.fidelity_cells import Measured, Workload, run_linklab, run_mahimahi
from linklab.emu.fidelity_metrics import per_second
from linklab.emu.mahimahi import REPO, mm_link_built
from linklab.emu.models import read_trace, trace_capacity_per_second

# alone (make test runs it after the others, one at a time): it follows a trace second by second
pytestmark = [pytest.mark.integration, pytest.mark.native, pytest.mark.alone]

TRACE = "Verizon-LTE-short"
WORK = Workload("udp", "up", 3.0, 12_000_000, 500)   # trace seconds 0-3, 1.3x the peak


def _left_behind() -> tuple[list[str], str, list[str]]:
    pid = os.getpid()
    spaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    mine = [line for line in spaces.splitlines()
            if line.startswith((f"linklab-fid{pid}-", f"linklab-mm{pid}"))]
    homes = [p.name for p in Path(tempfile.gettempdir()).glob("linklab-mm-*")]
    return mine, Path("/proc/sys/net/ipv4/ip_forward").read_text(), homes


def _check(run, who: str, latest_start_s: float) -> None:
    """``run()`` measures a cell: each of trace seconds 1 and 2 delivers what the trace
    allows, the client starts soon after the zero, and nothing is left behind."""
    before = _left_behind()
    measured: Measured = run()
    capacity = trace_capacity_per_second(read_trace(trace_pair(TRACE)[0]), 1, 2)
    got = per_second(measured.samples, measured.zero_ns, 1, 2)
    shares = [g / c for g, c in zip(got, capacity, strict=True)]
    print(f"{who}: delivered / capacity per second {shares}, client started "
          f"{measured.start_offset_s:.3f} s after the zero")
    assert all(0.97 <= s <= 1.01 for s in shares)
    assert 0 <= measured.start_offset_s < latest_start_s
    assert _left_behind() == before


def test_udp_above_capacity_through_the_relay_delivers_the_trace(tmp_path):
    _check(lambda: run_linklab(trace_pair(TRACE), WORK, tmp_path), "relay", 0.2)


@pytest.mark.skipif(not mm_link_built(), reason="Mahimahi's mm-link is built on the "
                    "benchmark's first run (scripts/mahimahi-build.sh), not by setup")
def test_udp_above_capacity_through_mm_link_delivers_the_trace_and_leaves_nothing():
    binary = REPO / "build" / "mahimahi" / "bin" / "mm-link"
    _check(lambda: run_mahimahi(binary, trace_pair(TRACE), WORK), "mm-link", 0.9)
