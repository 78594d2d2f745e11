"""A real pair link on the relay's shared 802.11 medium, real UDP traffic through it: its
delay and loss rise with the offered load and with the number of contending stations,
and the relay records how late it handled the medium's events (its lag), bounded.

802.11a at 54 Mbit/s (DCF): one saturated station alone carries ~29.6 Mbit/s of 1428-byte
IP packets (1400-byte datagrams; Bianchi, linklab.model.dcf with n = 1), so 5 Mbit/s
passes with sub-millisecond delay and no loss, and 40 Mbit/s fills the robot's 1000-frame
queue: ~0.4 s of queueing and a quarter of the datagrams dropped. At a fixed 10 Mbit/s,
8 saturated background stations leave the robot about a ninth of the channel (~3 Mbit/s),
so the same load meets a full queue too.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import require_root
from linklab.emu.relay import relay_binary
from linklab.link import testbed as link_testbed

# alone (make test runs it after the others, one at a time): it times the relay's medium
pytestmark = [pytest.mark.integration, pytest.mark.alone]

PY = sys.executable
RECORD = struct.Struct("<Qqq")   # linklab.link.udpflow --records: seq, t_send, t_recv (ns)
DATAGRAM = 1400                  # UDP payload; 1428 B IP packets
SECONDS = 3.0
# The relay handles 99 in 100 medium events at most this late (ns): issue 43's target
# ("no scheduling lag above 1 ms"); a fifth of one 1428-byte exchange at 54 Mbit/s is
# 0.07 ms. Measured here, alone on the machine (2026-11-29): p99 20-35 us, max 1.3-2.9 ms.
# Before the relay capped its polling (emu/src/lead.rs SpinBudget), a SCHED_FIFO relay
# polling between dense medium events was stopped by the kernel's RT limit for ~50 ms
# once a second: p99 20-34 ms with 8 saturated stations.
LAG_P99_BOUND_NS = 1_000_000


def send(bed, tmp: Path, mbit_s: float, port: int, seconds: float, gaps: str,
         idle_s: float) -> tuple[int, bytes]:
    """``mbit_s`` of 1400-byte datagrams robot -> edge for ``seconds`` (``gaps`` even or
    exponential): how many were sent, and the receiver's records (linklab.link.udpflow)."""
    records = tmp / f"recv-{port}.bin"
    receiver = bed.popen("edge", [PY, "-m", "linklab.link.udpflow", "recv", "--port",
                                  str(port), "--idle", str(idle_s), "--records", str(records)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert receiver.stderr.readline().strip() == "ready"
    pps = mbit_s * 1e6 / (8 * (DATAGRAM + 28))
    sender = bed.popen("robot", [PY, "-m", "linklab.link.udpflow", "send", "--to",
                                 bed.hosts["edge"].address, "--port", str(port), "--pps",
                                 f"{pps:.1f}", "--seconds", str(seconds), "--size",
                                 str(DATAGRAM), "--gaps", gaps, "--seed", str(port)],
                       stdout=subprocess.PIPE, text=True)
    sent = json.loads(sender.communicate(timeout=60)[0].splitlines()[-1])["sent"]
    receiver.communicate(timeout=60)
    return sent, records.read_bytes()


def flow(bed, tmp: Path, mbit_s: float, port: int) -> dict[str, float]:
    """``mbit_s`` of 1400-byte datagrams (Poisson) robot -> edge for SECONDS: sent,
    received, loss and the one-way delay (median, p95; one clock, CLOCK_MONOTONIC)."""
    sent, data = send(bed, tmp, mbit_s, port, SECONDS, "exponential", 1.5)
    delays = sorted(t_recv - t_send for _, t_send, t_recv in RECORD.iter_unpack(data))
    assert delays, f"nothing arrived at {mbit_s} Mbit/s"
    return {"sent": sent, "received": len(delays), "loss": 1 - len(delays) / sent,
            "median_ms": delays[len(delays) // 2] / 1e6,
            "p95_ms": delays[int(0.95 * (len(delays) - 1))] / 1e6}


def medium_figures(bed) -> dict:
    stage = next(s for s in bed.counters()["stages"] if s["kind"] == "medium")
    return stage["medium"]


def settled_figures(bed) -> dict:
    """The medium's figures once its stats file has seen every frame offered. The relay
    rewrites the file every 100 ms, so read right after the sender stops it may miss up to
    that much of the last traffic (70 datagrams at 8 Mbit/s, which an accounting of every
    datagram cannot allow); once the sender has stopped nothing more is offered, so two
    readings a stats interval apart that agree are the final count."""
    last = medium_figures(bed)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        time.sleep(0.25)
        now = medium_figures(bed)
        if now["stations"]["a"]["offered_frames"] == last["stations"]["a"]["offered_frames"]:
            return now
        last = now
    raise AssertionError("the medium's stats file kept changing 5 s after the sender stopped")


def test_delay_and_loss_rise_with_load_and_stations_and_the_lag_is_bounded(tmp_path):
    require_root()
    relay_binary()
    results: dict[str, dict[str, float]] = {}
    with link_testbed(None, name=f"med{os.getpid()}", medium="standard=a") as bed:
        results["5 Mbit/s, 0 stations"] = flow(bed, tmp_path, 5, 9201)
        results["10 Mbit/s, 0 stations"] = flow(bed, tmp_path, 10, 9202)
        results["40 Mbit/s, 0 stations"] = flow(bed, tmp_path, 40, 9203)
        alone = medium_figures(bed)
    with link_testbed(None, name=f"med{os.getpid()}b",
                      medium="standard=a,stations=8,station_load=saturated") as bed:
        results["10 Mbit/s, 8 stations"] = flow(bed, tmp_path, 10, 9204)
        crowded = medium_figures(bed)
    print()
    for label, r in results.items():
        print(f"{label:<22} sent {r['sent']:>6} loss {r['loss']:6.1%} delay median "
              f"{r['median_ms']:8.3f} ms p95 {r['p95_ms']:8.3f} ms")
    for label, figures in (("alone", alone), ("8 stations", crowded)):
        print(f"medium {label}: lag max {figures['lag_max_ns'] / 1e3:.1f} us, p90 "
              f"{figures['lag_p90_ns'] / 1e3:.1f} us, p99 "
              f"{figures['lag_p99_ns'] / 1e3:.1f} us, collisions "
              f"{figures['collision_probability']:.3f}")
    low, high = results["5 Mbit/s, 0 stations"], results["40 Mbit/s, 0 stations"]
    assert low["loss"] < 0.01 and low["median_ms"] < 2
    assert high["loss"] > 0.15 and high["median_ms"] > 100 * low["median_ms"]
    few, many = results["10 Mbit/s, 0 stations"], results["10 Mbit/s, 8 stations"]
    assert few["loss"] < 0.01 and many["loss"] > 0.15
    assert many["median_ms"] > 50 * few["median_ms"]
    # the medium's own counters agree: the robot's queue overflowed, the crowd collided
    assert alone["stations"]["a"]["drops_queue"] > 0
    assert crowded["collision_probability"] > 0.2 > alone["collision_probability"]
    for figures in (alone, crowded):
        assert 0 <= figures["lag_p99_ns"] <= LAG_P99_BOUND_NS, figures
        # each late turn is kept with when it came and where the relay's time went
        # (emu/src/medium/lag.rs): its lag is over the bound and within the maximum, and
        # no longer than the time since the relay's previous turn began (asleep, reading,
        # that turn's work): an event still pending after a turn is due after it
        late = figures["lag_late_at"]
        assert len(late) == min(figures["lag_late_turns"], 32) <= figures["lag_late_events"]
        for at, lag, slept, read, previous in late:
            assert figures["lag_late_ns"] < lag <= figures["lag_max_ns"]
            assert lag <= slept + read + previous, (at, lag, slept, read, previous)


def test_a_robot_moving_away_from_its_ap_loses_its_link_as_it_goes(tmp_path):
    """medium motion: the relay steps the robot-AP channel (MCS and losses) as the robot
    walks from 5 m to 150 m over 8 s. 8 Mbit/s of real UDP traffic passes while it is near
    and nothing passes once it is far (802.11ac 80 MHz: MCS 0 loses nearly every frame
    from ~75 m, linklab.model.wifi_channel); the relay applied every step."""
    require_root()
    relay_binary()
    port, seconds, mbit_s = 9211, 10.0, 8.0
    medium = "standard=ac,mcs=9,distance=5m,motion=150m over 8s"
    with link_testbed(None, name=f"mov{os.getpid()}", medium=medium) as bed:
        spec = next(s for s in bed.counters()["stages"] if s["kind"] == "medium")["params"]
        sent, data = send(bed, tmp_path, mbit_s, port, seconds, "even", 3)
        figures = settled_figures(bed)
    arrived = {seq for seq, _, _ in RECORD.iter_unpack(data)}
    pps = mbit_s * 1e6 / (8 * (DATAGRAM + 28))

    def delivered(first_s: float, last_s: float) -> float:
        seqs = range(int(first_s * pps), min(sent, int(last_s * pps)))
        return sum(seq in arrived for seq in seqs) / len(seqs)

    share = [delivered(k, k + 1) for k in range(int(seconds))]
    print("\ndelivered each second:", " ".join(f"{s:.0%}" for s in share), "| relay:",
          figures["link"], "| at the end:", spec["at_end"])
    assert delivered(0, 1) > 0.98
    assert delivered(seconds - 1.5, seconds) < 0.05
    assert figures["link"]["steps_applied"] == figures["link"]["steps"] == spec["steps"]
    assert figures["link"]["mcs"] == spec["at_end"]["mcs"] == 0
    # what did not arrive, the robot's station dropped at the retry limit (the far
    # channel loses every MPDU) or at its full queue, or still holds: in its queue, or in
    # the A-MPDU on the air, which the counters do not list (at most 64 MPDUs, VHT's
    # BlockAck window); nothing else on this link drops
    robot = figures["stations"]["a"]
    assert robot["drops_retry"] > 0
    held = robot["drops_retry"] + robot["drops_queue"] + robot["queue_packets"]
    assert held <= sent - len(arrived) <= held + 64
