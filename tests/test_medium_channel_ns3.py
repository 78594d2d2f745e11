"""The medium's channel from distance against ns-3 3.37 (issue 43): the stored error table
is what ns-3's TableBasedErrorRateModel gives, and a saturated station at a fixed MCS
loses throughput with distance as it does in ns-3, within 10 % (a few cells of
``python -m linklab.link.ns3.channel_agreement``), both in simulated time."""

from __future__ import annotations

import json
import subprocess

import pytest

from linklab.emu.medium_sim import FLAG, simulates_medium
from linklab.emu.relay import relay_binary
from linklab.link.ns3 import ns3_binary
from linklab.link.ns3.channel_agreement import TOLERANCE, compare, table
from linklab.model import wifi_channel

# integration, not alone: simulated time on both sides, nothing timed against the clock
pytestmark = [pytest.mark.integration, pytest.mark.native, pytest.mark.slow]


@pytest.fixture(scope="module")
def ns3():
    # not built, or built before these modes: a failure naming the fix (no silent skip)
    path, emu = ns3_binary(), relay_binary()
    usage = subprocess.run([str(path)], capture_output=True, text=True, timeout=30).stderr
    if "per-table" not in usage:
        pytest.fail(f"{path} has no per-table mode (built before ns3/run_per_table.cc): "
                    "rebuild it with scripts/setup.sh")
    if not simulates_medium(emu):
        pytest.fail(f"{emu} has no {FLAG}: rebuild it with scripts/setup.sh")
    return path


@pytest.mark.parametrize("standard, width, count", [("n", 20, 8), ("ac", 80, 10),
                                                    ("ax", 80, 12)])
def test_the_stored_table_is_what_ns3_gives(ns3, standard, width, count):
    out = subprocess.run([str(ns3), "per-table", "--standard", standard, "--width", str(width),
                          "--gi", "800", "--bytes", "1500", "--snr-from", "-5", "--snr-to",
                          "50", "--snr-step", "0.5"], capture_output=True, text=True, check=True)
    live = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(live) == count
    for row in live:
        grid, per = wifi_channel._table()[standard][row["mcs"]]
        assert grid == row["snr_db"] and per == row["per"], f"{standard} MCS {row['mcs']}: " \
            "regenerate src/linklab/model/wifi-per-ns3.json with scripts/wifi_per_table.py"


def test_throughput_falls_with_distance_as_in_ns3(ns3):
    rows = [compare(mcs, d, seconds=1.5, seed=1, ns3=ns3)
            for mcs, d in ((9, 11.0), (9, 12.0), (4, 30.0), (4, 31.0))]
    print("\n" + table(rows))
    for r in rows:
        assert abs(r.error) <= TOLERANCE, table(rows)
    for near, far in ((rows[0], rows[1]), (rows[2], rows[3])):
        assert far.per > near.per
        assert far.ns3_mbps < 0.95 * near.ns3_mbps and far.medium_mbps < 0.95 * near.medium_mbps
