"""The link emulator against its evidence (issue 8), in real namespaces.

Each test builds two namespaces ``linklab-emu<pid>-<n>-a|b`` joined only by a
``linklab-emu`` relay, measures what crosses, and removes exactly what it made.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import ks_2samp

from conftest import require_root, require_tool
from linklab.emu import (
    Delay,
    GilbertElliott,
    OnOff,
    Outage,
    Rate,
    RelayConfig,
    Trace,
    relay_binary,
)
from linklab.emu.measure import udp_run, udp_socket_in
from linklab.emu.models import (
    burst_lengths,
    ge_loss_rate,
    ge_mean_burst_length,
    jitter_samples,
    loss_runs,
    trace_capacity_bps,
)
from linklab.emu.relay import relay_status
from linklab.emu.tap_wire import RelayWire, TapEnd

# alone (make test runs it after the others, one at a time):
# it times the relay's frames (latency, a busy disk)
pytestmark = [pytest.mark.integration, pytest.mark.alone]

_counter = itertools.count()
ADDR_A, ADDR_B = "10.213.0.1", "10.213.0.2"
PORT = 40000


@contextmanager
def relay_link(tmp_path: Path, ab=(), ba=(), seed: int = 7, epoch_ns: int | None = None,
               spin_s: float | None = None, first_packet: bool = False) -> Iterator[RelayWire]:
    require_root()
    relay_binary()
    n = next(_counter)
    pid = os.getpid()
    ns_a, ns_b = f"linklab-emu{pid}-{n}-a", f"linklab-emu{pid}-{n}-b"
    tag = f"le{pid % 100000}x{n}"
    made: list[str] = []
    wire = None
    try:
        for ns in (ns_a, ns_b):
            subprocess.run(["ip", "netns", "add", ns], check=True)
            made.append(ns)
            # no IPv6 chatter (router solicitations, MLD) on the measured link
            subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw",
                            "net.ipv6.conf.all.disable_ipv6=1",
                            "net.ipv6.conf.default.disable_ipv6=1"], check=True)
        config = RelayConfig(tap_a=f"{tag}a", tap_b=f"{tag}b", ab=tuple(ab), ba=tuple(ba),
                             seed=seed, epoch_ns=epoch_ns, stats_interval_s=0.05, spin_s=spin_s,
                             epoch_first_packet=first_packet)
        wire = RelayWire(TapEnd(ns_a, f"{tag}a", f"{ADDR_A}/24"),
                         TapEnd(ns_b, f"{tag}b", f"{ADDR_B}/24"), config, tmp_path / f"emu{n}")
        wire.up()
        # static neighbours: no ARP exchange inside the measured window
        for ns, dev, peer, peer_dev in ((ns_a, f"{tag}a", ADDR_B, f"{tag}b"),
                                        (ns_b, f"{tag}b", ADDR_A, f"{tag}a")):
            mac = subprocess.run(["ip", "-n", ns_b if ns == ns_a else ns_a, "-j", "link", "show",
                                  peer_dev], capture_output=True, text=True, check=True).stdout
            address = json.loads(mac)[0]["address"]
            subprocess.run(["ip", "-n", ns, "neigh", "replace", peer, "lladdr", address,
                            "dev", dev, "nud", "permanent"], check=True)
        yield wire
    finally:
        if wire is not None:
            wire.down()
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], check=False)


def sockets(wire: RelayWire):
    sender = udp_socket_in(wire.a.netns)
    receiver = udp_socket_in(wire.b.netns)
    receiver.bind((ADDR_B, PORT))
    return sender, receiver


# ---------------------------------------------------------------- delay -------

def one_way_us(tmp_path: Path, stages, spin_s: float | None = None) -> np.ndarray:
    """One-way latency (us) of 1000 datagrams at 200/s a -> b: kernel transmit stamp
    (the TAP handed the frame) to kernel receive stamp, so neither Python nor the
    scheduling of the test process is in it."""
    with relay_link(tmp_path, ab=stages, spin_s=spin_s) as wire:
        sender, receiver = sockets(wire)
        run = udp_run(sender, receiver, (ADDR_B, PORT), count=1000, rate_pps=200, size=64,
                      linger_s=0.2, tx_timestamps=True)
    stamped = run.received & (run.tx_ns > 0)
    assert stamped.sum() >= 990, (run.received.sum(), (run.tx_ns > 0).sum())
    return (run.recv_ns[stamped] - run.tx_ns[stamped]) / 1e3


def test_a_delay_stage_adds_its_setting_to_the_relays_own_latency(tmp_path):
    """The promise docs/RESULTS.md states for a delay stage: it adds its setting to the
    relay's own forwarding latency within 50 us at the median, never less, and 99 % of
    frames within 5 ms of the setting (the tail is the host waking a halted vCPU: 0.1 to
    2.4 ms on this VM, 2026-11-28; a lead long enough to cover it would poll for ms).
    A timer on an idle vCPU fires ~0.1 ms late whatever the priority; before the relay
    learned its lead (emu/src/lead.rs) a 2 x 20 ms link gave a median ping RTT of
    40.3-40.5 ms (CI, 2026-11-28: 40.4)."""
    base = one_way_us(tmp_path / "bare", [])
    delayed = one_way_us(tmp_path / "delayed", [Delay(0.020)]) - 20_000
    added = float(np.median(delayed) - np.median(base))
    print(f"relay alone: median {np.median(base):.0f} us, p99 {np.percentile(base, 99):.0f} us; "
          f"with a 20 ms stage, beyond 20 ms: median {np.median(delayed):.0f} us, p99 "
          f"{np.percentile(delayed, 99):.0f} us, max {delayed.max():.0f} us; "
          f"the stage beyond its setting: {added:+.0f} us at the median")
    assert abs(added) <= 50
    assert np.percentile(delayed, 99) <= 5000
    assert delayed.min() >= 0  # never early


def test_a_busy_disk_does_not_hold_frames_back(tmp_path):
    """The relay writes its stats file every 50 ms here; with fsync load on the same
    disk, a write in the forwarding loop held frames for up to 28 ms (21-26 % of them
    more than 2 ms late). The writer thread keeps the disk out of the frames' path."""
    load = subprocess.Popen(
        ["bash", "-c", f"while :; do dd if=/dev/zero of={tmp_path}/load bs=1M count=200 "
                       "conv=fsync status=none; done"], start_new_session=True)
    try:
        time.sleep(1.0)
        with relay_link(tmp_path, ab=[Delay(0.030)]) as wire:
            sender, receiver = sockets(wire)
            run = udp_run(sender, receiver, (ADDR_B, PORT), count=3000, rate_pps=1000,
                          size=64, linger_s=0.2)
    finally:
        os.killpg(load.pid, signal.SIGKILL)
        load.wait()
    late_ms = run.one_way_s * 1e3 - 30.0
    print(f"late: p99 {np.percentile(late_ms, 99):.2f} ms, max {late_ms.max():.2f} ms, "
          f"{(late_ms > 2).sum()} / {(late_ms > 10).sum()} of {len(late_ms)} more than "
          "2 / 10 ms")
    assert len(late_ms) == 3000
    assert (late_ms > 10).mean() < 0.01


@pytest.mark.parametrize("distribution", ["uniform", "normal", "pareto", "paretonormal"])
def test_jitter_matches_its_distribution(tmp_path, distribution):
    delay_s, jitter_s = 0.030, 0.010
    stage = Delay(delay_s, jitter_s, distribution, reorder=True)
    with relay_link(tmp_path, ab=[stage], seed=11) as wire:
        sender, receiver = sockets(wire)
        run = udp_run(sender, receiver, (ADDR_B, PORT), count=1500, rate_pps=1000, size=64,
                      linger_s=0.2)
    measured = (run.one_way_s - delay_s) / jitter_s
    expected = jitter_samples(distribution, 20000, np.random.default_rng(5))
    result = ks_2samp(measured, expected)
    print(f"{distribution}: n={len(measured)} KS D={result.statistic:.4f} p={result.pvalue:.3f}")
    assert len(measured) == 1500
    assert result.pvalue > 0.01


def test_jitter_keeps_order_by_default(tmp_path):
    with relay_link(tmp_path, ab=[Delay(0.005, 0.004, "normal")]) as wire:
        sender, receiver = sockets(wire)
        run = udp_run(sender, receiver, (ADDR_B, PORT), count=1000, rate_pps=2000, size=64,
                      linger_s=0.1)
    assert run.received.all()
    assert (np.diff(run.arrival_order) > 0).all(), "frames were reordered"
    # with reordering allowed the same jitter does reorder (the test can fail)
    with relay_link(tmp_path, ab=[Delay(0.005, 0.004, "normal", reorder=True)]) as wire:
        sender, receiver = sockets(wire)
        run = udp_run(sender, receiver, (ADDR_B, PORT), count=1000, rate_pps=2000, size=64,
                      linger_s=0.1)
    assert (np.diff(run.arrival_order) < 0).sum() > 100


# ---------------------------------------------------------------- loss --------

def test_gilbert_elliott_loss_rate_and_burst_length(tmp_path):
    model = GilbertElliott(p=0.02, r=0.25, one_minus_h=0.8, one_minus_k=0.005)
    count = 100_000
    with relay_link(tmp_path, ab=[model], seed=3) as wire:
        sender, receiver = sockets(wire)
        run = udp_run(sender, receiver, (ADDR_B, PORT), count=count, rate_pps=40_000, size=32)
        stats = wire.relay.fresh_stats()
    # datagrams the sending host itself dropped never met the link: leave them out
    lost = ~run.received[run.left]
    assert run.left.sum() >= 0.99 * count
    rate = lost.mean()
    bursts = burst_lengths(lost)
    want_rate, want_burst = ge_loss_rate(model), ge_mean_burst_length(model)
    print(f"loss {rate:.4f} (model {want_rate:.4f}), mean burst {bursts.mean():.3f} "
          f"(model {want_burst:.3f}) over {count} packets")
    stage = stats.ab.stages[0]
    # every lost datagram was dropped by the loss stage (nothing else on the link
    # lost frames); frames other than the test's (if any) may add a few drops
    others = stage.packets_in - run.left.sum()
    assert lost.sum() <= stage.dropped_packets <= lost.sum() + others
    assert abs(rate - want_rate) <= 0.10 * want_rate
    assert abs(bursts.mean() - want_burst) <= 0.10 * want_burst


# ---------------------------------------------------------------- rate --------

def _iperf(wire: RelayWire, *client_args: str) -> dict:
    server = subprocess.Popen(["ip", "netns", "exec", wire.b.netns, "iperf3", "-s", "-1",
                               "-B", ADDR_B], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        out = subprocess.run(["ip", "netns", "exec", wire.a.netns, "iperf3", "-c", ADDR_B,
                              "-J", *client_args], capture_output=True, text=True, timeout=60)
        return json.loads(out.stdout)
    finally:
        server.wait(timeout=10)


def test_rate_goodput_tcp_udp_and_queue_limit(tmp_path):
    require_tool("iperf3")
    rate = 20e6
    # 200 frames = 120 ms at 20 Mbit/s: enough to ride out a sender that the busy
    # machine stalls for a moment (an empty queue would waste link time)
    limit = 200
    with relay_link(tmp_path, ab=[Rate(rate, limit_packets=limit), Delay(0.005)],
                    ba=[Delay(0.005)]) as wire:
        tcp = _iperf(wire, "-t", "4", "-O", "1")
        udp = _iperf(wire, "-u", "-b", "40M", "-l", "1472", "-t", "3")
        stats = wire.relay.fresh_stats()
    # the rate applies to Ethernet frames: a full TCP segment is 1448 B of data in a
    # 1514 B frame (timestamps on), a 1472 B UDP datagram a 1514 B frame
    tcp_goodput = tcp["end"]["sum_received"]["bits_per_second"]
    udp_goodput = udp["end"]["sum_received"]["bits_per_second"]
    tcp_expected, udp_expected = rate * 1448 / 1514, rate * 1472 / 1514
    print(f"TCP {tcp_goodput / 1e6:.2f} Mbit/s (frame-limited {tcp_expected / 1e6:.2f}), "
          f"UDP {udp_goodput / 1e6:.2f} Mbit/s (frame-limited {udp_expected / 1e6:.2f})")
    assert abs(tcp_goodput - tcp_expected) <= 0.05 * tcp_expected
    assert abs(udp_goodput - udp_expected) <= 0.05 * udp_expected
    stage = stats.ab.stages[0]
    assert stage.queue_max_packets <= limit
    assert stage.queue_max_packets == limit  # 40 Mbit/s into 20 Mbit/s filled it...
    assert stage.dropped_packets > 0        # ...and overflowed it (drop-tail)


# ---------------------------------------------------------------- trace -------

def test_trace_replay_delivers_trace_capacity(tmp_path):
    # 10 ms period, 7 opportunities: 7 * 1504 B / 10 ms = 8.42 Mbit/s
    trace = tmp_path / "synthetic.trace"
    times = [1, 2, 2, 4, 6, 6, 10]
    trace.write_text("".join(f"{t}\n" for t in times))
    capacity = trace_capacity_bps(np.array(times))
    with relay_link(tmp_path, ab=[Trace(trace, limit_packets=100)]) as wire:
        sender, receiver = sockets(wire)
        # 1472 B payload = 1500 B IP packets, offered at ~1.4x capacity for 3 s
        run = udp_run(sender, receiver, (ADDR_B, PORT), count=1000, rate_pps=1000,
                      size=1472, linger_s=0.3)
    arrived = np.sort(run.recv_ns[run.received])
    # IP bytes delivered between the first and last arrival (the first one's
    # bytes were delivered before the window starts)
    ip_bytes = (len(arrived) - 1) * 1500
    throughput = ip_bytes * 8 / ((arrived[-1] - arrived[0]) / 1e9)
    print(f"trace throughput {throughput / 1e6:.3f} Mbit/s, capacity {capacity / 1e6:.3f}")
    assert abs(throughput - capacity) <= 0.02 * capacity


# ---------------------------------------------------------------- outage ------

def _loss_windows_s(run, t0_mono_ns: int, realtime_offset_ns: int) -> list[tuple[float, float]]:
    """Runs of lost datagrams as (first, last) send time after t0, among the datagrams
    that left the sending host (the kernel's transmit time when there is one: the
    sender's own stamp is taken before sendto)."""
    sent = run.tx_ns if run.tx_ns is not None else run.send_ns
    send_mono = (sent - realtime_offset_ns)[run.left]
    return [((send_mono[a] - t0_mono_ns) / 1e9, (send_mono[b] - t0_mono_ns) / 1e9)
            for a, b in loss_runs(~run.received[run.left])]


def _realtime_offset() -> int:
    return time.time_ns() - time.monotonic_ns()


def _judged_at_read(run, epoch: int) -> tuple[np.ndarray, float]:
    """Each datagram's arrival at the link (kernel transmit time, s after ``epoch``) and
    ``lag``: an upper bound of how much later the relay read (and judged) a frame -- the
    largest one-way time of a frame that got through (it also counts the receive side,
    so it is on the safe side)."""
    assert run.tx_ns is not None and (run.tx_ns[run.left] > 0).all()
    tx = (run.tx_ns - _realtime_offset() - epoch) / 1e9
    lag = float(((run.recv_ns - run.tx_ns)[run.received]).max()) / 1e9
    return tx, lag


def _drops_follow(run, tx: np.ndarray, lag: float, windows: list[tuple[float, float]]):
    """A frame is dropped iff the relay read it inside a window, read time in
    [tx, tx + lag]: a lost frame has tx in [start - lag, end) of a window; a frame with
    tx in [start, end - lag) is lost."""
    lost = run.left & ~run.received
    for seq in np.flatnonzero(lost):
        assert any(a - lag <= tx[seq] < b for a, b in windows), (seq, tx[seq], lag)
    for a, b in windows:
        inside = run.left & (tx >= a) & (tx < b - lag)
        assert not (run.received & inside).any(), (a, b, lag)
        assert inside.any() or b - lag - a < 0.005 or a > tx[run.left].max(), (a, b, lag)


def test_scheduled_outage_windows(tmp_path):
    epoch = time.monotonic_ns() + int(0.5e9)
    windows = ((0.5, 0.3), (1.2, 0.2))
    with relay_link(tmp_path, ab=[Outage(windows)], epoch_ns=epoch) as wire:
        sender, receiver = sockets(wire)
        run = udp_run(sender, receiver, (ADDR_B, PORT), count=2200, rate_pps=1000, size=64,
                      linger_s=0.1, tx_timestamps=True)
    tx, lag = _judged_at_read(run, epoch)
    print("outage windows measured (s after epoch):", _loss_windows_s(run, epoch,
                                                                      _realtime_offset()),
          f"relay lag <= {lag * 1e3:.2f} ms")
    _drops_follow(run, tx, lag, [(start, start + length) for start, length in windows])
    # both windows were covered, each with 5 ms or more of frames that had to be lost
    assert tx[run.left].min() < 0.5 - lag and tx[run.left].max() > 1.4
    assert min(length for _, length in windows) - lag >= 0.005


def test_on_off_windows_follow_the_relays_schedule(tmp_path):
    """The relay drops exactly the frames it reads inside one of its own off windows.

    A frame is judged when the relay reads it, which is after the frame reached the TAP
    (the kernel's transmit timestamp, ``tx_ns``) by the relay's wake-up latency; and the
    sender's own stamp is taken before ``sendto``. On a loaded machine both move a frame
    by milliseconds (frames read up to 8.5 ms late were seen), so judging by the sender's
    stamp with a fixed tolerance failed now and then (a datagram "lost at 2.83 s",
    just before the 2.832 s window of seed 5). With read time in
    [tx, tx + lag], lag bounded by the largest one-way time of a frame that got through,
    a lost frame must have tx in [start - lag, end) of a logged window, and a frame with
    tx in [start, end - lag) must be lost.
    """
    log = tmp_path / "onoff.log"
    epoch = time.monotonic_ns() + int(0.3e9)
    with relay_link(tmp_path, ab=[OnOff(0.25, 0.1, log_path=log)], epoch_ns=epoch,
                    seed=5) as wire:
        sender, receiver = sockets(wire)
        run = udp_run(sender, receiver, (ADDR_B, PORT), count=3000, rate_pps=1000, size=64,
                      linger_s=0.1, tx_timestamps=True)
        wire.down()
        dropped = wire.relay.stats().ab.stages[0].dropped_packets
    events = [line.split() for line in log.read_text().splitlines()]
    offs = [(int(t) - epoch) / 1e9 for kind, t in events if kind == "off"]
    ons = [(int(t) - epoch) / 1e9 for kind, t in events if kind == "on"]
    tx, lag = _judged_at_read(run, epoch)
    lost = run.left & ~run.received
    assert int(lost.sum()) == dropped  # every loss is the on/off stage's drop
    schedule = list(zip(offs, [*ons, float("inf")], strict=False))
    last_tx = float(tx[run.left].max())
    print("on/off: schedule", [(round(a, 3), round(b, 3)) for a, b in schedule])
    print(f"on/off: {int(lost.sum())} lost of {int(run.left.sum())}, relay lag <= "
          f"{lag * 1e3:.2f} ms")
    _drops_follow(run, tx, lag, schedule)
    # the check above covered real windows: at least three hold 5 ms or more of frames
    # that must all be lost (lag is an upper bound, from the receive side as well)
    assert len([1 for a, b in schedule if b - lag - a >= 0.005 and b - lag < last_tx]) >= 3


# ---------------------------------------------------------------- lifecycle ---

def test_sigterm_stops_cleanly_and_a_dead_relay_means_link_down(tmp_path):
    with relay_link(tmp_path, ab=[Delay(0.001)], ba=[Delay(0.001)]) as wire:
        ping = ["ip", "netns", "exec", wire.a.netns, "ping", "-n", "-c", "3", "-i", "0.05",
                "-W", "1", ADDR_B]
        assert subprocess.run(ping, capture_output=True).returncode == 0
        relay = wire.relay
        assert relay_status(relay.pid, relay.stats_path).link == "up"
        os.kill(relay.pid, signal.SIGKILL)
        relay.process.wait(5)
        status = relay_status(relay.pid, relay.stats_path)
        assert status.link == "down" and "not running" in status.reason
        assert subprocess.run(ping, capture_output=True).returncode != 0
        # the TAP went with the relay: nothing bypasses it
        links = subprocess.run(["ip", "-n", wire.a.netns, "-o", "link"], capture_output=True,
                               text=True).stdout
        assert wire.a.ifname not in links
    with relay_link(tmp_path, ab=[Delay(0.001)]) as wire:
        assert wire.down() == 0
        stats = wire.relay.stats()
        assert stats.state == "stopped"
        assert relay_status(wire.relay.pid, wire.relay.stats_path).reason.startswith(
            "the link emulator stopped")


# ---------------------------------------------------------------- rarer stages ----

def test_four_state_loss_duplication_and_corruption(tmp_path):
    from linklab.emu import Corrupt, Duplicate, FourStateLoss
    from linklab.emu.models import four_state_loss_rate

    model = FourStateLoss(p13=0.01, p31=0.3, p32=0.2, p23=0.4, p14=0.02)
    count = 120_000
    with relay_link(tmp_path, ab=[model, Duplicate(0.1), Corrupt(0.05)], seed=9) as wire:
        sender, receiver = sockets(wire)
        run = udp_run(sender, receiver, (ADDR_B, PORT), count=count, rate_pps=40_000, size=64)
        stats = wire.relay.fresh_stats()
    loss, dup, corrupt = stats.ab.stages
    sent = run.left.sum()
    want = four_state_loss_rate(model)
    measured = loss.dropped_packets / loss.packets_in
    print(f"4-state loss {measured:.4f} (model {want:.4f}); duplicated "
          f"{dup.packets_out - dup.packets_in}; received {run.received.sum()} of {sent}")
    assert abs(measured - want) <= 0.10 * want
    assert abs((dup.packets_out - dup.packets_in) / dup.packets_in - 0.1) < 0.01
    # a flipped bit fails the UDP checksum, so the receiver drops ~5 % of the
    # datagrams that survived the loss stage (a duplicate may still get through)
    survivors = loss.packets_out
    missing_after_loss = survivors - (run.received[run.left].sum())
    assert 0.03 * survivors < missing_after_loss < 0.07 * survivors


def test_relay_stops_when_a_side_disappears(tmp_path):
    with relay_link(tmp_path, ab=[Delay(0.001)]) as wire:
        subprocess.run(["ip", "netns", "del", wire.b.netns], check=True)
        assert wire.relay.process.wait(5) == 1  # no busy loop on a dead device
        status = relay_status(wire.relay.pid, wire.relay.stats_path)
        assert status.link == "down" and "failed" in status.reason
        subprocess.run(["ip", "netns", "add", wire.b.netns], check=True)  # for the cleanup
