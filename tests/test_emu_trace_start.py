"""A workload started at a trace's zero meets the trace's first second (issue 44: the
relay's clock used to start with the relay, seconds before `link exec` ran anything)."""

from __future__ import annotations

import time

import pytest

from linklab.emu.directives import Trace
from linklab.emu.measure import udp_run
from test_emu_relay import ADDR_B, PORT, relay_link, sockets

# alone (make test runs it after the others, one at a time): it times the trace's start
pytestmark = [pytest.mark.integration, pytest.mark.alone]


def _trace(path):
    # second 0-1: an opportunity every ms (12 Mbit/s); seconds 1-4: every 20 ms (0.6 Mbit/s)
    lines = [str(ms) for ms in range(1, 1001)] + [str(ms) for ms in range(1020, 4001, 20)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _delivered_in_a_second(tmp_path, first_packet: bool) -> float:
    """The share of 500 datagrams of 1400 B (5.6 Mbit/s for 1 s) that arrive within 0.2 s
    of the last, sent 1.5 s after the relay started."""
    trace = _trace(tmp_path / "t.trace")
    with relay_link(tmp_path / str(first_packet), ab=[Trace(trace)],
                    first_packet=first_packet) as wire:
        sender, receiver = sockets(wire)
        time.sleep(1.5)
        run = udp_run(sender, receiver, (ADDR_B, PORT), count=500, rate_pps=500, size=1400,
                      linger_s=0.2)
        stats = wire.relay.fresh_stats()
    print(f"first_packet={first_packet}: {run.received.sum()} of 500, epoch "
          f"{(stats.epoch_ns - stats.started_ns) / 1e9:+.2f} s after the relay started")
    return run.received.mean(), stats


def test_a_workload_meets_the_traces_first_second_when_it_starts_at_the_first_packet(
        tmp_path):
    aligned, stats = _delivered_in_a_second(tmp_path, True)
    assert aligned >= 0.95
    assert (stats.epoch_ns - stats.started_ns) / 1e9 > 1.4   # the zero is the first frame
    # the relay's start as the zero: 1.5 s in, the same workload meets the slow part
    unaligned, _ = _delivered_in_a_second(tmp_path, False)
    assert unaligned < 0.5
