"""The relay's bounded queues with real traffic (issue 44): a flood cannot grow the
relay's memory past its queue's limit, and CoDel keeps a TCP flow's standing queue near
its target where drop-tail lets it fill (bufferbloat)."""

from __future__ import annotations

import re
import subprocess
import threading

import numpy as np
import pytest

from conftest import require_tool
from linklab.emu.directives import Delay, Rate
from linklab.emu.measure import udp_run
from test_emu_relay import ADDR_B, PORT, _iperf, relay_link, sockets

# alone (make test runs it after the others, one at a time): it times CoDel's standing queue
pytestmark = [pytest.mark.integration, pytest.mark.alone]


def _peak_rss_bytes(pid: int) -> int:
    text = open(f"/proc/{pid}/status").read()
    return int(re.search(r"VmHWM:\s+(\d+) kB", text).group(1)) * 1024


def test_a_flood_cannot_grow_the_relay_past_its_queue_limit(tmp_path):
    limit = 4 << 20
    # 10 Mbit/s carries ~880 frames/s of 1400 B; 6000/s for 3 s offers ~7x that
    with relay_link(tmp_path, ab=[Rate(10e6, limit_bytes=limit)]) as wire:
        pid = wire.relay.pid
        before = _peak_rss_bytes(pid)
        sender, receiver = sockets(wire)
        run = udp_run(sender, receiver, (ADDR_B, PORT), count=18000, rate_pps=6000,
                      size=1400, linger_s=0.2)
        stats = wire.relay.fresh_stats()
        grown = _peak_rss_bytes(pid) - before
    stage = stats.ab.stages[0]
    print(f"peak RSS grew {grown / 2**20:.1f} MiB; queue max {stage.queue_max_bytes / 2**20:.2f}"
          f" MiB of {limit / 2**20:.0f}; {stage.dropped_packets} dropped, "
          f"{run.received.sum()} received")
    assert stage.queue_max_bytes <= limit
    assert stage.dropped_packets > 5000          # it was a flood
    # the queued bytes, buffers rounded up to 128 B, and a few MiB of allocator slack;
    # 9064-byte buffers per frame (before) made the same queue 27 MiB
    assert grown <= limit * 1.15 + (4 << 20), grown


def _rtt_under_tcp_load(tmp_path, queue: str) -> tuple[float, float]:
    """(median ping RTT in ms, TCP goodput in bit/s) while iperf3 TCP loads a 10 Mbit/s
    link with 10 ms each way and a 1000-frame queue (1.2 s at the rate). cubic: a
    loss-based sender fills a queue; BBR, this host's default, keeps it short itself."""
    ab = [Rate(10e6, limit_packets=1000, queue=queue), Delay(0.010)]
    with relay_link(tmp_path / queue, ab=ab, ba=[Delay(0.010)]) as wire:
        pings: dict[str, str] = {}

        def ping() -> None:
            pings["out"] = subprocess.run(
                ["ip", "netns", "exec", wire.a.netns, "ping", "-n", "-i", "0.05", "-c", "80",
                 ADDR_B], capture_output=True, text=True, timeout=30).stdout

        worker = threading.Thread(target=ping)
        worker.start()
        tcp = _iperf(wire, "-t", "6", "-C", "cubic")
        worker.join()
    rtts = np.array([float(x) for x in re.findall(r"time=([\d.]+) ms", pings["out"])])
    # the last 2 s of pings: the queue has settled
    settled = float(np.median(rtts[-40:]))
    goodput = tcp["end"]["sum_received"]["bits_per_second"]
    print(f"{queue}: median RTT {settled:.1f} ms under load, TCP {goodput / 1e6:.2f} Mbit/s")
    return settled, goodput


def test_codel_keeps_the_standing_queue_near_its_target_where_droptail_fills(tmp_path):
    require_tool("iperf3")
    require_tool("ping")
    codel_rtt, codel_goodput = _rtt_under_tcp_load(tmp_path, "codel")
    tail_rtt, _ = _rtt_under_tcp_load(tmp_path, "droptail")
    # 20 ms of path; CoDel's target is 5 ms of queue (RTT = path + queue + a TCP burst)
    assert codel_rtt < 20 + 25, codel_rtt
    assert tail_rtt > 3 * codel_rtt, (tail_rtt, codel_rtt)
    assert codel_goodput > 0.8 * 10e6 * 1448 / 1514
