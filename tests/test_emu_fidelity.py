"""The fidelity benchmark's pure parts (linklab.emu.fidelity): a trace's capacity per
second, the counter binned into trace seconds, the correlation, the table,
the commands it runs, and the two traces the repository ships."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from linklab.emu.fidelity import QUEUE_PACKETS, TRACE_DIR, TRACES, trace_pair, workload
from linklab.emu.fidelity_cells import Workload
from linklab.emu.fidelity_metrics import (
    Row,
    Sample,
    Side,
    counter_at,
    parse_net_dev,
    pearson,
    per_second,
    table,
)
from linklab.emu.mahimahi import log_zero_realtime_ns, mm_link_command
from linklab.emu.models import (
    TRACE_OPPORTUNITY_BYTES,
    opportunities_between,
    read_trace,
    trace_capacity_per_second,
)
from linklab.errors import LinklabError, UsageError


def _brute(times, start: int, end: int) -> int:
    """Opportunities in [start, end) by listing the repeated trace copy by copy."""
    period = times[-1]
    return sum(1 for k in range(end // period + 2) for t in times
               if start <= k * period + t < end)


@pytest.mark.parametrize("times", [[0, 1, 1, 2, 4], [7, 7, 9, 1000], [1], [3, 3, 3]])
def test_opportunities_between_counts_the_repeated_trace(times):
    times = np.array(times)
    for start in range(0, 2 * times[-1] + 3, max(1, times[-1] // 7)):
        for end in range(start, 3 * times[-1] + 5, max(1, times[-1] // 5)):
            assert opportunities_between(times, start, end) == _brute(times, start, end)


def test_capacity_per_second_of_one_packet_a_millisecond_is_12_mbit_s():
    # opportunities at 1, 2, 3, ... ms: 999 in second 0, then 1000 a second
    per_ms = trace_capacity_per_second(np.array([1]), 0, 3)
    assert per_ms == [n * TRACE_OPPORTUNITY_BYTES for n in (999, 1000, 1000)]
    # two opportunities in the first 2 s: at 500 and at 1500 ms, then repeating
    sparse = trace_capacity_per_second(np.array([500, 1500, 2000]), 0, 3)
    assert sparse == [n * TRACE_OPPORTUNITY_BYTES for n in (1, 1, 2)]


NET_DEV = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets
    lo:     100       2    0    0    0     0          0         0      100       2
link-4242:  300000     200    0    0    0     0          0         0     5000      90
ingress: 7000 5 0 0 0 0 0 0 9 1
"""


def test_parse_net_dev_finds_an_interface_by_name_or_prefix():
    assert parse_net_dev(NET_DEV, "ingress") == (7000, 5)
    assert parse_net_dev(NET_DEV, "link-") == (300000, 200)
    assert parse_net_dev(NET_DEV, "eth0") is None


def test_per_second_interpolates_the_counter_at_each_trace_second():
    zero = 10_000_000_000
    # 1000 bytes per ms from zero - 0.5 s, sampled every 300 ms
    samples = [Sample(zero + t, 1000 * (t + 500_000_000) // 1_000_000)
               for t in range(-500_000_000, 3_600_000_000, 300_000_000)]
    assert counter_at(samples, zero) == pytest.approx(500_000)
    assert per_second(samples, zero, 1, 2) == pytest.approx([1_000_000, 1_000_000])
    with pytest.raises(LinklabError, match="no counter samples"):
        per_second(samples, zero, 3, 2)


def test_pearson():
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1)
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1)
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3]))
    with pytest.raises(ValueError):
        pearson([1], [1])


def _row(linklab: list[float], mahimahi: list[float] | None) -> Row:
    capacity = (1_000_000, 2_000_000, 1_500_000)
    return Row("T", "up", "udp", capacity, Side(tuple(linklab), 0.0),
               Side(tuple(mahimahi), 0.01) if mahimahi else None)


def test_a_row_holds_its_targets_within_2_percent_and_r_at_least_0_99():
    near = _row([990_000, 1_990_000, 1_490_000], [1_000_000, 2_000_000, 1_500_000])
    assert near.ratio() == pytest.approx(4_470_000 / 4_500_000)
    assert near.holds() is True
    far = _row([950_000, 1_900_000, 1_400_000], [1_000_000, 2_000_000, 1_500_000])
    assert far.holds() is False
    flat = _row([1_500_000] * 3, [1_000_000, 2_000_000, 1_500_000])
    assert flat.holds() is False   # same throughput, no correlation
    assert _row([1, 2, 3], None).holds() is None


def test_the_table_has_a_line_per_row_and_says_whether_each_holds():
    lines = table([_row([1_000_000, 2_000_000, 1_500_000], [1_000_000, 2_000_000, 1_500_000]),
                   _row([1_000_000, 2_000_000, 1_500_000], None)])
    assert len(lines) == 4 and lines[0].startswith("| trace | dir | proto | capacity")
    assert lines[2].endswith("| hold |") and "| 12.000 |" in lines[2]
    assert lines[3].endswith("| — |")


def test_workload_commands():
    tcp = Workload("tcp", "up", 17, 0, 500)
    assert tcp.client_args("10.0.0.1") == ["iperf3", "-c", "10.0.0.1", "-t", "17", "-J"]
    udp = Workload("udp", "down", 17, 12_000_000)
    assert udp.client_args("X")[-7:] == ["-J", "-R", "-u", "-b", "12000000", "-l", "1472"]


def test_udp_offers_one_and_a_half_times_the_busiest_second_up_to_the_end():
    times = np.array([1] + [1000 + i for i in range(1, 11)])   # 1 opportunity in s 0, 11 in s 1...
    work = workload("udp", "up", times, 2)
    assert work.seconds == 5 and work.queue_packets == QUEUE_PACKETS
    peak = max(trace_capacity_per_second(times, 0, 6))
    assert work.udp_bit_s == round(1.5 * peak * 8)
    assert workload("tcp", "up", times, 2).udp_bit_s == 0


def test_mm_link_runs_with_nobodys_real_ids_in_its_namespace():
    command = mm_link_command(Path("/b/mm-link"), "ns1", (Path("u"), Path("d")), "uplink-log",
                              Path("/h/l.log"), "echo hi", queue_packets=500, cpu=1,
                              realtime_priority=10)
    assert command[:9] == ["taskset", "-c", "1", "chrt", "-f", "10", "ip", "netns", "exec"]
    assert command[9:14] == ["ns1", "setpriv", "--ruid=65534", "--rgid=65534",
                             "--clear-groups"]
    assert command[14:18] == ["/b/mm-link", "u", "d", "--uplink-log=/h/l.log"]
    assert "--downlink-queue-args=packets=500" in command
    assert command[-4:] == ["--", "sh", "-c", "echo hi"]


def test_the_trace_zero_of_an_mm_link_log_is_init_plus_base():
    head = ("# mahimahi mm-link (Uplink) [u] > l\n# queue: infinite\n"
            "# init timestamp: 1795885034651\n# base timestamp: 37\n44 # 1504\n")
    assert log_zero_realtime_ns(head) == 1795885034688 * 1_000_000
    with pytest.raises(LinklabError):
        log_zero_realtime_ns("44 # 1504\n")


def test_the_shipped_traces_are_real_lte_traces_with_their_source_and_licence():
    readme = (TRACE_DIR / "README.md").read_text()
    assert "github.com/ravinet/mahimahi" in readme and "GPL" in readme
    assert (TRACE_DIR / "COPYING").read_text().startswith(
        "                    GNU GENERAL PUBLIC LICENSE")
    for name in TRACES:
        assert name in readme
        for path in trace_pair(name):
            times = read_trace(path)
            assert len(times) > 50_000 and times[-1] >= 139_000   # 140 s of LTE
    with pytest.raises(UsageError, match="no trace pair 'nope'"):
        trace_pair("nope")
