"""model/latency.py: the replay of the repair protocol behaves as the mechanisms say."""

from __future__ import annotations

import dataclasses
import heapq
import math
import random

import pytest

from linklab.model.latency import (
    NACK_ALL,
    NACK_ONE,
    LatencyInput,
    _Link,
    _Replay,
    _Sample,
    predict,
)
from linklab.model.shaper import bucket_bytes
from linklab.tune.latencycheck import latency_input, row_contention, tuned_settings
from linklab.tune.wirecheck import LinkInfo

LINK = 300e6


def plain(**changes) -> LatencyInput:
    """A stream with no pacing and instant timers, to check one mechanism at a time."""
    base = LatencyInput(
        rate_hz=30, fragments=100, fragment_wire_bytes=1500, per=0.0,
        link_bytes_per_s=LINK / 8, bucket_bytes=0, delay_s=0.0, cpu_bytes_per_s=1e12,
        receive_bytes_per_s=1e12, heartbeat_s=0.010, reader_delay_s=0.0,
        writer_delay_s=0.0, nack_scope=NACK_ALL, lateness_s=0.0, receive_s=0.0)
    return dataclasses.replace(base, **changes)


def test_without_loss_a_sample_takes_its_bytes_over_the_link_rate():
    x = plain()
    expected = 100 * 1500 / (LINK / 8)
    r = predict(x)
    assert r.mean_s == pytest.approx(expected, rel=1e-6)
    assert r.p95_s == pytest.approx(expected, rel=1e-6)
    assert r.rounds_mean == 0


def test_the_token_bucket_lets_its_bytes_through_at_once():
    x = plain(bucket_bytes=60_000)
    assert predict(x).mean_s == pytest.approx((150_000 - 60_000) / (LINK / 8), rel=1e-6)
    assert bucket_bytes(300e6) == 75_000
    assert bucket_bytes(10e6) == 32 * 1024  # never below 32 KiB


def test_the_replay_is_pure():
    x = plain(per=0.1, lateness_s=0.0005)
    assert predict(x) == predict(x)
    assert predict(x, seed=2) != predict(x)


@pytest.mark.parametrize("scope", [NACK_ALL, NACK_ONE])
def test_more_loss_means_more_rounds_and_later_samples(scope):
    results = [predict(plain(per=per, nack_scope=scope)) for per in (0.01, 0.05, 0.2)]
    assert [r.rounds_mean for r in results] == sorted(r.rounds_mean for r in results)
    assert results[0].mean_s < results[1].mean_s < results[2].mean_s
    assert all(r.p95_s >= r.mean_s for r in results)


def test_a_lost_fragment_waits_for_a_heartbeat_and_both_answers():
    """One round: the next Heartbeat, the reader's and the writer's delays."""
    slow = predict(plain(per=0.05, reader_delay_s=0.005, writer_delay_s=0.005))
    fast = predict(plain(per=0.05))
    assert slow.mean_s - fast.mean_s == pytest.approx(
        0.010 * (slow.rounds_mean - 0), rel=0.5)
    assert slow.p95_s > fast.p95_s + 0.009


def test_one_sample_per_acknack_queues_samples_behind_each_other():
    """Cyclone's AckNack asks for one sample: when samples overlap in repair, later ones
    wait; Fast DDS asks for all at once."""
    heavy = dict(per=0.2, fragments=400, heartbeat_s=0.016)
    one = predict(plain(nack_scope=NACK_ONE, **heavy))
    every = predict(plain(nack_scope=NACK_ALL, **heavy))
    assert one.mean_s > every.mean_s


def test_a_nackfrag_window_costs_rounds_when_losses_lie_far_apart():
    wide = predict(plain(per=0.05, fragments=600, nackfrag_window=10_000))
    narrow = predict(plain(per=0.05, fragments=600, nackfrag_window=256))
    assert narrow.rounds_mean > wide.rounds_mean
    assert narrow.mean_s > wide.mean_s


def test_a_paced_writer_spreads_a_sample_over_periods():
    """Fast DDS's throughputController: 30 fragments a period of 5 ms; a 100-fragment
    sample after an idle spell sends two periods' bytes back to back, then waits."""
    paced = predict(plain(pacer_bytes=30 * 1500, pacer_period_s=0.005))
    free = predict(plain())
    assert paced.mean_s > free.mean_s + 0.005
    assert paced.mean_s < free.mean_s + 0.015



def test_fast_dds_skips_the_heartbeat_while_every_unacknowledged_sample_waits_to_be_sent():
    """Fast DDS 2.9 sends its periodic Heartbeat only for a change it has sent and that is
    not acknowledged (ReaderProxy::has_unacknowledged): while the samples outstanding are
    all in the flow controller (the one being paced, repairs queued behind it) the timer
    stops; the next delivery starts it a period later. Cyclone's does not pause."""
    def replay(needs_sent: bool) -> _Replay:
        x = plain(pacer_bytes=30 * 1500, pacer_period_s=0.005,
                  heartbeat_needs_sent=needs_sent)
        return _Replay(x, random.Random(1), _Link(x.link_bytes_per_s, 0.0, 1e12))

    fast, steady = replay(True), replay(False)
    for r in (fast, steady):
        r.samples = [_Sample(written=0.0, in_flight=0), _Sample(written=0.03, in_flight=0)]
        r.queued = {1: 1}  # sample 1 is being paced; sample 0 was sent, not acknowledged
    assert fast.heartbeat_due() and steady.heartbeat_due()
    fast.queued[0] = steady.queued[0] = 1  # sample 0's repair is queued too
    assert not fast.heartbeat_due() and steady.heartbeat_due()
    fast.heartbeat(0.04, 0)
    assert not fast.hb_running and not fast.events  # stopped: nothing sent, nothing planned
    fast.queue.append((1, [97, 98, 99], False))  # the rest of sample 1
    fast.pace(0.041, new_period=True)  # delivered: the timer starts again, a period on
    assert fast.hb_running
    assert min(t for t, _, kind, _ in fast.events if kind == "hb") == \
        pytest.approx(0.041 + fast.x.heartbeat_s)
    assert tuned("fastdds", 512 * 1024, LinkInfo(300e6, 0.05)).heartbeat_needs_sent
    assert not tuned("cyclonedds", 512 * 1024, LinkInfo(300e6, 0.05)).heartbeat_needs_sent

def tuned(middleware: str, payload: int, link: LinkInfo, competitors: float = 0.0,
          cores: float = 1.0) -> LatencyInput:
    settings = tuned_settings(payload, 30.0, link, competitors, cores)
    return latency_input(middleware, settings, payload, 30.0, link, competitors, cores)


def test_a_busy_machine_makes_the_same_stream_later():
    link = LinkInfo(300e6, 0.2, 1500)
    for middleware in ("fastdds", "cyclonedds"):
        idle = predict(tuned(middleware, 256 * 1024, link))
        busy = predict(tuned(middleware, 256 * 1024, link, competitors=4, cores=2))
        assert busy.mean_s > idle.mean_s, middleware


def test_the_tuned_inputs_follow_the_profile():
    link = LinkInfo(300e6, 0.2, 1500)
    fast = tuned("fastdds", 512 * 1024, link)
    cyclone = tuned("cyclonedds", 512 * 1024, link)
    assert fast.heartbeat_s == pytest.approx(1 / 60, rel=1e-6)  # n = 2r
    assert fast.pacer_bytes is not None and fast.nack_scope == NACK_ALL
    assert cyclone.nack_scope == NACK_ONE and cyclone.nackfrag_window == cyclone.fragments
    # Cyclone's writer blocks on its socket's send buffer: 93 datagrams wait at most
    assert cyclone.socket_paced and cyclone.pacer_bytes == 93 * cyclone.fragment_wire_bytes
    assert cyclone.heartbeat_s < 1 / 60  # sized for one sample per AckNack (model.repair R3)
    assert fast.fragments == math.ceil((512 * 1024 + 24) / 1296)  # 1472 - 176 B reserve
    with pytest.raises(ValueError):
        latency_input("zenoh", tuned_settings(1024, 30.0, link), 1024, 30.0, link)


@pytest.mark.parametrize("row,expected", [
    ({"cpu_load": "none"}, (0.0, 1.0)),
    ({"cpu_load": "1/core", "cpu_load_processes": 2}, (2.0, 2.0)),
    ({"cpu_load": "2/core", "cpu_load_processes": 8}, (8.0, 4.0)),
])
def test_a_rows_cpu_load_gives_competitors_and_cores(row, expected):
    assert row_contention(row) == expected


def test_a_stream_that_does_not_keep_up_has_no_figure():
    """Repairs of 20 % loss one sample per AckNack with a slow loop: samples are still
    incomplete when the replay ends, so mean and p95 are infinite, not those of the
    samples that happened to complete."""
    r = predict(plain(per=0.2, fragments=400, nack_scope=NACK_ONE, heartbeat_s=0.05,
                      nack_gap_s=0.05, heartbeat_after_data=True))
    assert not r.kept_up and math.isinf(r.mean_s) and math.isinf(r.p95_s)
    assert r.completed < 940
    assert predict(plain(per=0.01)).kept_up


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="PER"):
        plain(per=1.0)
    with pytest.raises(ValueError, match="nack_scope"):
        plain(nack_scope="some")


def cyclone(**changes) -> LatencyInput:
    """Cyclone's rules (model/latency.py): one sample per AckNack, a Heartbeat asking for
    an answer after each sample and a directed one after each repair, NackDelay 20 ms."""
    rules = dict(nack_scope=NACK_ONE, heartbeat_after_data=True, heartbeat_s=0.020,
                 nack_gap_s=0.020, ack_delay_s=0.010)
    return plain(**{**rules, **changes})


def reader_after_a_nack(x: LatencyInput, lost: set[int], **state):
    """A replay whose reader asked for fragments [3, 10) of sample 0 at t = 0 (its last
    AckNack) and still lacks ``lost``; the writer's Heartbeats reach up to t = 0."""
    import random

    from linklab.model.latency import _Link, _Replay, _Sample
    replay = _Replay(x, random.Random(1), _Link(x.link_bytes_per_s, 0, 1e12))
    replay.samples.append(_Sample(written=0.0, in_flight=0, lost=set(lost)))
    replay.last_nack, replay.last_nack_sample, replay.last_nack_end = 0.0, 0, 10
    replay.last_ack, replay.last_base, replay.hb_reach = 0.0, 0, 0.0
    for key, value in state.items():
        setattr(replay, key, value)
    return replay


@pytest.mark.parametrize("lost,directed,on_delay,now,goes,comes_back", [
    ({5}, True, False, 0.001, True, None),      # directed, after a NACK sent at once: goes
    ({5}, False, False, 0.001, False, None),    # periodic within NackDelay and AckDelay:
    #                                             held until the next Heartbeat
    ({5}, False, False, 0.012, False, 0.020),   # AckDelay passed: back at t_last + NackDelay
    ({5}, True, True, 0.001, False, None),      # the last went on NackDelay: directed waits
    ({5}, False, False, 0.021, True, None),     # NackDelay passed: goes
    ({12}, False, False, 0.001, True, None),    # past the last NACK's end: new, goes at once
])
def test_cyclone_decides_on_its_acknack_as_its_source_does(lost, directed, on_delay, now,
                                                           goes, comes_back):
    """Cyclone DDS 0.10.2 ddsi_acknack.c get_AckNack_info / sched_acknack_if_needed, the
    rules model/latency.py replays (NackDelay 20 ms, AckDelay 10 ms)."""
    x = dataclasses.replace(cyclone(), per=0.0)
    replay = reader_after_a_nack(x, lost, directed=directed, nack_on_delay=on_delay)
    replay.nack_at, replay.nack_token = now, 1
    replay.cyclone_nack(now, 1)
    assert (replay.last_nack == now) is goes
    assert replay.nack_at == comes_back


def test_a_socket_paced_writer_lets_heartbeats_and_repairs_pass_its_sample():
    """Cyclone's periodic Heartbeat reaches the reader while a long sample is still being
    sent (its writer blocks on the socket, the link's queue stays short), so repairs start
    before the first copy ends: a 391-fragment sample at PER 20 % completes sooner than
    with the whole sample queued ahead of every Heartbeat."""
    queued = predict(cyclone(per=0.2, fragments=391, nackfrag_window=256, heartbeat_s=0.003,
                             nack_gap_s=0.003))
    paced = predict(cyclone(per=0.2, fragments=391, nackfrag_window=256, heartbeat_s=0.003,
                            nack_gap_s=0.003, socket_paced=True, pacer_bytes=92 * 1500))
    assert paced.kept_up and paced.mean_s < 0.8 * queued.mean_s


def test_a_busy_machine_slows_the_writer_not_the_readers_rates():
    """A competitor takes a share of the writer, busy for a whole sample; the reader's
    thread sleeps between samples and runs at once when woken, but for the slice wait
    (docs/RESULTS.md, 2026-11-29: busy loss-free medians as fast as idle ones)."""
    link = LinkInfo(300e6, 0.05, 1500)
    idle = tuned("cyclonedds", 64 * 1024, link)
    busy = tuned("cyclonedds", 64 * 1024, link, competitors=2, cores=2)
    assert busy.cpu_bytes_per_s == pytest.approx(idle.cpu_bytes_per_s * 2 / 3)
    assert busy.receive_bytes_per_s == idle.receive_bytes_per_s
    assert (busy.receive_s, busy.control_s, busy.reader_wake_s) == \
        (idle.receive_s, idle.control_s, idle.reader_wake_s)
    assert busy.lateness_s > idle.lateness_s and busy.slice_share > 0 == idle.slice_share


@pytest.mark.parametrize("lost", [set(), {9}])
def test_a_piggybacked_heartbeat_is_lost_with_its_fragments_datagram(lost):
    """Cyclone's Heartbeat rides in the datagram of a sample's last fragment
    (writer_hbcontrol_piggyback): the reader hears it exactly when that fragment arrives,
    never independently of it."""
    x = dataclasses.replace(cyclone(), per=0.0)
    replay = reader_after_a_nack(x, lost, hb_reach=-1.0)
    replay.send_heartbeat(0.002, at_once=True, carrier=(0, 9))
    while replay.events and replay.events[0][2] != "hb_in":
        heapq.heappop(replay.events)
    assert [e[2] for e in replay.events].count("hb_in") == 1  # queued, fate not drawn
    t, _, _, args = heapq.heappop(replay.events)
    replay.hb_in(t, *args)
    assert (replay.hb_reach == 0.002) is (not lost)
