"""One-way latency of a reliable, fragmented DDS stream over a lossy, rate-limited link:
mean and p95 from a replay of the repair protocol, sample by sample (issue 38).

Paper 000 (000_10b8b18b6f5db8a8.txt, IV-C/D) explains latency by its parts: a sample's
fragments cross the link at T_OS->Link (Eq. 2), each IP packet is lost with PER, and a
lost fragment waits for a repair round -- a Heartbeat, the reader's AckNack/NackFrag and
the repair (Eq. 3: a round repairs only if the first two arrive, p^2). How many rounds a
sample needs is model/repair.py's R1. What R1 leaves out decides the latency a user sees
(when a round starts, what it may ask for, what the repair waits behind), so this module
replays the protocol rather than multiplying averages:

* **the link is one queue**: a token bucket of ``bucket_bytes`` refilled at the link
  rate (the bed's tbf; a Wi-Fi transmit queue): repairs and Heartbeats wait behind the
  data before them;
* **the writer's sending**, at most ``cpu_bytes_per_s``: Fast DDS's throughputController
  (FlowControllerLimitedAsyncPublishMode) lets ``pacer_bytes`` out per period; when they
  run out a new period starts at once if the last began a period ago or more (after an
  idle spell two periods' bytes leave back to back), else when it ends, late by a
  wake-up; new samples go before repairs (its FlowQueue: new_ones_, then old_ones_).
  Cyclone hands a sample's fragments over at once;
* **the reader** takes fragments in at most at ``receive_bytes_per_s`` and hands a
  complete sample over after ``receive_s`` and its thread's wake-up;
* **Heartbeats**: Fast DDS's timer fires ``heartbeat_s`` after its last firing while a
  sample it has sent is unacknowledged (its phase to the writes drifts by each wake-up);
  samples still in the flow controller (first copy or requested repair) do not count
  (``heartbeat_needs_sent``), so it stops when only those are outstanding, and the
  flow controller's next delivery starts it again; the reader answers after
  ``reader_delay_s`` (heartbeatResponseDelay), the writer repairs after
  ``writer_delay_s`` (nackResponseDelay). Cyclone's writer sends a Heartbeat asking for an
  answer after every sample and every repair and a periodic one ``heartbeat_s`` after the
  last (the one after a repair addressed to the reader); its reader answers at once,
  within NackDelay's rules below;
* **what one AckNack asks for**: Fast DDS a NackFrag for every incomplete sample, Cyclone
  DDS 0.10 for one (model/repair.py); a NackFrag's bitmap starts at the lowest fragment
  the reader lacks and spans ``nackfrag_window`` fragments (RTPS: 256);
* **Cyclone's NackDelay** (``nack_gap_s``; Cyclone DDS 0.10.2 ddsi_acknack.c
  get_AckNack_info): an AckNack whose NackFrag starts at or beyond the end of the last
  one's (a later sample, or fragments past the last bitmap) goes at once; one that
  overlaps the last goes at once only in answer to a *directed* Heartbeat -- the one its
  writer sends after a repair (q_receive.c handle_NackFrag: defer_heartbeat_to_peer) --
  unless the last was itself sent on NackDelay and NackDelay has not passed; else it is
  held back: until NackDelay after the last AckNack, when it goes on its own (the
  reader's acknack event, rescheduled to t_last_nack + NackDelay), if the first
  incomplete sample moved on or AckDelay (``ack_delay_s``) has passed since the last
  AckNack, else until the next Heartbeat (the suppressed NACK became a suppressed ACK:
  seen in a capture of 32 KiB at PER 20 %, the re-ask following the second periodic
  Heartbeat, not NackDelay after the lost AckNack);
* every timer fires late by an exponential wake-up of mean ``lateness_s`` (model/cpu.py);
  a Heartbeat or AckNack is lost with PER like any packet, a repair per fragment.

Where these rules come from: the middlewares' source (Fast DDS 2.9 FlowControllerImpl,
StatefulReader::send_acknack; Cyclone 0.10 ddsi_acknack.c) and a capture of the tuned
Fast DDS 512 KiB stream at PER 5 % (docs/RESULTS.md, "the latency model"). A sample's
latency is the arrival of its last fragment minus its write time, as docs/metrics.md
defines it. The replay is pure: a fixed seed, the same answer for the same input.
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass, field

import numpy as np

from linklab.model.latency_input import (  # noqa: F401  (the replay's public names)
    CONTROL_WIRE_BYTES,
    LATE_INTERVALS,
    MAX_EVENTS,
    NACK_ALL,
    NACK_ONE,
    NACKFRAG_WINDOW,
    READER_WAKE,
    SAMPLES,
    WARMUP,
    LatencyInput,
    LatencyPrediction,
)


@dataclass
class _Sample:
    written: float
    in_flight: int  # first-copy fragments sent or queued, not yet arrived
    lost: set[int] = field(default_factory=set)  # known lost, not asked for
    asked: set[int] = field(default_factory=set)  # asked for: repair queued or on its way
    rounds: int = 0  # AckNacks that reached the writer asking for some of it
    done: float | None = None
    acked: bool = False  # the writer knows it arrived

    def complete(self) -> bool:
        return self.done is None and not (self.in_flight or self.lost or self.asked)


@dataclass
class _Link:
    """A token bucket of ``bucket`` bytes refilled at ``rate`` in front of a FIFO."""

    rate: float
    bucket: float
    cpu: float
    free_at: float = 0.0
    tokens: float = 0.0
    at: float = 0.0

    def send(self, now: float, size: float) -> float:
        """When the last byte of ``size`` bytes handed over at ``now`` has left."""
        start = max(now, self.free_at)
        tokens = min(self.bucket, self.tokens + self.rate * (start - self.at))
        done = start + max(size / self.cpu, (size - tokens) / self.rate)
        self.tokens = max(0.0, min(self.bucket, tokens + self.rate * (done - start) - size))
        self.at = self.free_at = done
        return done


@dataclass
class _Replay:
    x: LatencyInput
    rng: random.Random
    link: _Link
    reader_free: float = 0.0
    samples: list[_Sample] = field(default_factory=list)
    events: list = field(default_factory=list)
    queue: list = field(default_factory=list)  # the pacer's FIFO: [sample, n, repair]
    period_start: float = -math.inf
    period_left: float = 0.0
    pacer_busy: bool = False
    nack_pending: bool = False
    hb_running: bool = False
    hb_epoch: int = 0
    oldest_unacked: int = 0
    last_nack: float = -math.inf
    last_nack_sample: int = -1
    # Cyclone's AckNack state (ddsi_pwr_rd_match): the last NackFrag's [base, end) of
    # fragments, whether it went on NackDelay, a directed Heartbeat since, the Heartbeat's
    # reach, and the acknack event's time and token (resched_xevent_if_earlier)
    last_nack_end: int = 0
    last_ack: float = -math.inf
    last_base: int = -1
    nack_on_delay: bool = False
    directed: bool = False
    hb_reach: float = -math.inf
    nack_at: float | None = None
    nack_token: int = 0
    queued: dict = field(default_factory=dict)  # sample -> its entries in the pacer's FIFO
    seq: int = 0

    def at(self, t: float, kind: str, *args) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, kind, args))

    def late(self, delay_s: float = 1.0) -> float:
        """A timer's wake-up lateness; none for an answer given at once (no timer)."""
        if self.x.lateness_s <= 0 or delay_s <= 0:
            return 0.0
        return self.rng.expovariate(1.0 / self.x.lateness_s)

    def arrives(self) -> bool:
        return self.rng.random() >= self.x.per

    # --- the writer's sending ---------------------------------------------------------
    def hand(self, now: float, sample: int, fragments: list[int], repair: bool) -> None:
        """Fragments the writer sends: through the pacer, or straight to the link."""
        if self.x.pacer_bytes is None or (repair and self.x.socket_paced):
            self.transmit(now, sample, fragments, repair)
            return
        self.queue.append((sample, fragments, repair))
        self.queued[sample] = self.queued.get(sample, 0) + 1
        if not self.pacer_busy:
            self.pacer_busy = True
            self.at(now, "pace")

    def pace(self, now: float, new_period: bool = False) -> None:
        """Fast DDS's throughputController (FlowControllerLimitedAsyncPublishMode): send
        while the period's bytes last; when they run out, a new period starts at once if
        the last one began a period ago or more (after an idle spell the second period's
        bytes follow the first without a pause), else when it ends (late by a wake-up)."""
        x = self.x
        if x.socket_paced:
            self.pace_socket(now)
            return
        if new_period:
            self.period_start, self.period_left = now, x.pacer_bytes
        while self.queue:
            if self.period_left < x.fragment_wire_bytes:
                if now - self.period_start < x.pacer_period_s:
                    self.at(self.period_start + x.pacer_period_s + self.late(), "pace", True)
                    return
                self.period_start, self.period_left = now, x.pacer_bytes
            # new samples before repairs (Fast DDS's FlowQueue: new_ones_, then old_ones_)
            at = next((k for k, e in enumerate(self.queue) if not e[2]), 0)
            sample, fragments, repair = self.queue[at]
            n = min(len(fragments), int(self.period_left // x.fragment_wire_bytes))
            now = self.transmit(now, sample, fragments[:n], repair)
            self.period_left -= n * x.fragment_wire_bytes
            if n == len(fragments):
                self.queue.pop(at)
                self.queued[sample] -= 1
            else:
                self.queue[at] = (sample, fragments[n:], repair)
        self.pacer_busy = False

    def pace_socket(self, now: float) -> None:
        """``socket_paced``: hand fragments while the link holds less than ``pacer_bytes``;
        the sample's last fragment carries a Heartbeat asking for an answer in its
        datagram (Cyclone's writer_hbcontrol_piggyback): the two are lost together."""
        x, link = self.x, self.link
        while self.queue:
            room = x.pacer_bytes - max(0.0, link.free_at - now) * link.rate
            if room < x.fragment_wire_bytes - 1e-6:  # blocked until one fits
                self.at(max(now + 1e-9, link.free_at - (x.pacer_bytes - x.fragment_wire_bytes)
                            / link.rate), "pace")
                return
            sample, fragments, repair = self.queue[0]
            n = min(len(fragments), max(1, int(room // x.fragment_wire_bytes)))
            now = self.transmit(now, sample, fragments[:n], repair)
            if n < len(fragments):
                self.queue[0] = (sample, fragments[n:], repair)
                continue
            self.queue.pop(0)
            self.queued[sample] -= 1
            self.send_heartbeat(now, at_once=True, carrier=(sample, fragments[n - 1]))
        self.pacer_busy = False

    def transmit(self, now: float, sample: int, fragments: list[int], repair: bool) -> float:
        """Hand fragments to the link; returns when the writer is done handing them over
        (its CPU's sending rate)."""
        size = len(fragments) * self.x.fragment_wire_bytes
        arrived = self.link.send(now, size) + self.x.delay_s
        # the reader takes fragments in as they come, unless it is behind
        self.reader_free = max(arrived, max(self.reader_free, now + self.x.delay_s)
                               + size / self.x.receive_bytes_per_s)
        self.at(self.reader_free, "arrive", sample, fragments, repair)
        if self.x.heartbeat_needs_sent:  # StatefulWriter::deliver_sample_nts restarts it
            self.start_heartbeat(now)
        return now + size / self.x.cpu_bytes_per_s

    # --- the reader -------------------------------------------------------------------
    def arrive(self, now: float, sample: int, fragments: list[int], repair: bool) -> None:
        s = self.samples[sample]
        if repair:
            s.asked.difference_update(fragments)
        else:
            s.in_flight -= len(fragments)
        if self.x.per > 0:
            s.lost.update(f for f in fragments if self.rng.random() < self.x.per)
        if s.complete():  # the reader's thread wakes to hand the sample over
            wake = self.x.lateness_s * READER_WAKE if self.x.reader_wake_s is None \
                else self.x.reader_wake_s
            s.done = now + self.x.receive_s + (self.rng.expovariate(1 / wake) if wake else 0.0)
            if self.x.slice_share and self.rng.random() < self.x.slice_share:
                s.done += self.rng.uniform(0.0, self.x.slice_s)

    def heartbeat(self, now: float, epoch: int) -> None:
        """A periodic Heartbeat. Fast DDS's timer fires a period after its last firing
        (late by a wake-up each time, so its phase to the writes drifts) while some
        sample is unacknowledged, and stops when none is; the next write starts it again
        a period later. Cyclone's comes a period after the last Heartbeat of any kind
        (``epoch`` names the one it was planned after)."""
        if self.x.heartbeat_after_data:
            if epoch == self.hb_epoch:
                self.send_heartbeat(now, at_once=False)
            return
        if not self.heartbeat_due():
            self.hb_running = False
            return
        self.send_heartbeat(now, at_once=False)
        self.at(now + self.x.heartbeat_s + self.late(), "hb", 0)

    def heartbeat_due(self) -> bool:
        """Whether the periodic Heartbeat goes out: some sample is unacknowledged -- with
        ``heartbeat_needs_sent`` (Fast DDS 2.9 StatefulWriter::send_periodic_heartbeat:
        ReaderProxy::has_unacknowledged counts only changes whose status is
        UNACKNOWLEDGED, not those UNSENT or REQUESTED in the flow controller) one with
        nothing left in the pacer's FIFO."""
        unacked = (i for i in range(self.oldest_unacked, len(self.samples))
                   if not self.samples[i].acked)
        if not self.x.heartbeat_needs_sent:
            return next(unacked, None) is not None
        return any(not self.queued.get(i) for i in unacked)

    def start_heartbeat(self, now: float) -> None:
        """The periodic Heartbeat's timer, started a period from ``now`` unless it runs
        (Fast DDS's TimedEvent::restart_timer acts only on a stopped timer)."""
        if not self.x.heartbeat_after_data and not self.hb_running:
            self.hb_running = True
            self.at(now + self.x.heartbeat_s + self.late(), "hb", 0)

    def send_heartbeat(self, now: float, at_once: bool, directed: bool = False,
                       carrier: tuple[int, int] | None = None) -> None:
        """A Heartbeat leaves behind what the link holds; the reader reads it after the
        data before it. ``directed``: Cyclone's after a repair, addressed to the reader.
        ``carrier``: (sample, fragment) whose datagram it rides in (Cyclone's piggyback on
        a sample's last fragment): lost exactly when that fragment is."""
        if self.x.heartbeat_after_data and not directed:
            # Cyclone: the next periodic one a period later; the one after a repair is
            # sent apart (q_receive.c defer_heartbeat_to_peer) and moves nothing
            self.hb_epoch += 1
            self.at(now + self.x.heartbeat_s + self.late(), "hb", self.hb_epoch)
        if carrier is not None:  # its datagram is on the link already
            self.at(self.reader_free, "hb_in", now, at_once, directed, carrier)
            return
        sent = self.link.send(now, CONTROL_WIRE_BYTES)
        if self.arrives():
            self.at(max(sent + self.x.delay_s, self.reader_free), "hb_in", now, at_once,
                    directed)

    def hb_in(self, now: float, sent_at: float, at_once: bool, directed: bool,
              carrier: tuple[int, int] | None = None) -> None:
        """The reader answers a Heartbeat after ``reader_delay_s`` (at once when it asks
        for an answer), one answer at a time; Cyclone's (``nack_gap_s``) by its acknack
        event (``cyclone_nack``). A Heartbeat riding in a lost fragment's datagram is lost
        with it (its arrival comes after the fragment's: same time, queued later)."""
        if carrier is not None and carrier[1] in self.samples[carrier[0]].lost:
            return
        if self.x.nack_gap_s:
            self.directed = self.directed or directed
            self.hb_reach = max(self.hb_reach, sent_at)
            self.resched_nack(now + self.x.control_s)
            return
        if self.nack_pending:
            return
        self.nack_pending = True
        delay = 0.0 if at_once else self.x.reader_delay_s
        self.at(now + self.x.control_s + delay + self.late(delay), "nack", sent_at)

    def resched_nack(self, t: float) -> None:
        """Cyclone's acknack event, moved earlier to ``t`` (never later)."""
        if self.nack_at is None or t < self.nack_at:
            self.nack_at = t
            self.nack_token += 1
            self.at(t, "cyclone_nack", self.nack_token)

    def cyclone_nack(self, now: float, token: int) -> None:
        """Cyclone's reader decides on its AckNack (ddsi_acknack.c get_AckNack_info and
        make_and_resched_acknack): new, directed or NackDelay passed: it goes; else it is
        suppressed and the event comes back NackDelay after the last AckNack."""
        if token != self.nack_token:
            return
        self.nack_at = None
        gap = self.x.nack_gap_s
        sample = self.asking(self.hb_reach)[:1]
        if sample:
            s = self.samples[sample[0]]
            base = min(s.lost | s.asked)
            new = sample[0] != self.last_nack_sample or base >= self.last_nack_end
            passed = now >= self.last_nack + gap
            if not (new or passed or (self.directed and not self.nack_on_delay)):
                if sample[0] > self.last_base or now >= self.last_ack + self.x.ack_delay_s:
                    self.resched_nack(self.last_nack + gap)
                return
            self.nack_on_delay = not new and not self.directed and passed
            self.last_nack_end = min(base + self.x.nackfrag_window,
                                     max(s.lost | s.asked) + 1)
            self.last_base = sample[0]
        self.directed = False
        self.last_ack = now
        self.nack(now, self.hb_reach)

    def asking(self, hb_sent_at: float) -> list[int]:
        """The incomplete samples an AckNack names (all of them, or Cyclone's first)."""
        # a sample with losses is incomplete, so not acknowledged: none before oldest_unacked
        asking = [i for i in range(self.oldest_unacked, len(self.samples))
                  if self.samples[i].lost and self.samples[i].written <= hb_sent_at]
        return asking[:1] if self.x.nack_scope == NACK_ONE else asking

    def nack(self, now: float, hb_sent_at: float) -> None:
        asking = self.asking(hb_sent_at)
        self.nack_pending = False
        arrives = self.arrives()
        if arrives:  # the writer learns which samples are complete
            self.acknowledge(now)
        if not asking:
            return
        self.last_nack, self.last_nack_sample = now, asking[0]
        if not arrives:
            return
        wanted = []
        for i in asking:
            s = self.samples[i]
            # the bitmap starts at the lowest fragment the reader lacks, asked for or not
            first = min(s.lost | s.asked)
            window = sorted(f for f in s.lost if f < first + self.x.nackfrag_window)
            if not window:
                continue
            s.lost.difference_update(window)
            s.asked.update(window)
            s.rounds += 1
            wanted.append((i, window))
            # from the NackFrag on, the writer holds the sample as UNSENT (its
            # nackResponseDelay, then the flow controller) until the repair is delivered
            self.queued[i] = self.queued.get(i, 0) + 1
        self.at(now + self.x.delay_s + self.x.control_s + self.x.writer_delay_s
                + self.late(self.x.writer_delay_s), "repair", wanted)

    def repair(self, now: float, wanted: list[tuple[int, list[int]]]) -> None:
        for i, fragments in wanted:
            self.queued[i] -= 1
            self.hand(now, i, fragments, repair=True)
        if self.x.heartbeat_after_data:
            self.send_heartbeat(now, at_once=True, directed=True)

    def acknowledge(self, now: float) -> None:
        for s in self.samples[self.oldest_unacked:]:
            if s.done is not None and s.done <= now:
                s.acked = True
        while self.oldest_unacked < len(self.samples) and \
                self.samples[self.oldest_unacked].acked:
            self.oldest_unacked += 1

    def write(self, now: float) -> None:
        if not self.x.heartbeat_needs_sent:
            self.start_heartbeat(now)
        self.samples.append(_Sample(written=now, in_flight=self.x.fragments))
        self.hand(now, len(self.samples) - 1, list(range(self.x.fragments)), repair=False)
        if self.x.heartbeat_after_data and not self.x.socket_paced:
            self.send_heartbeat(now, at_once=True)


def _run(replay: _Replay, until: float) -> None:
    """Handle events in time order up to ``until`` (or MAX_EVENTS: a replay that has not
    ended by then leaves its samples incomplete rather than running on)."""
    handlers = {"pace": replay.pace, "arrive": replay.arrive, "hb": replay.heartbeat,
                "hb_in": replay.hb_in, "nack": replay.nack, "repair": replay.repair,
                "cyclone_nack": replay.cyclone_nack,
                "write": replay.write}
    for _ in range(MAX_EVENTS):
        if not replay.events:
            return
        t, _, kind, args = heapq.heappop(replay.events)
        if t > until:
            return
        handlers[kind](t, *args)


def replay_latencies(x: LatencyInput, seed: int = 1,
                     samples: int = SAMPLES) -> tuple[np.ndarray, float]:
    """Replay ``samples`` writes at ``rate_hz`` and the repairs they need: the latency (s)
    of each sample after the first WARMUP (inf for one still incomplete at the end), and
    the repair rounds per sample."""
    replay = _Replay(x, random.Random(seed),
                     _Link(x.link_bytes_per_s, x.bucket_bytes, x.cpu_bytes_per_s,
                           tokens=x.bucket_bytes))
    interval = 1.0 / x.rate_hz
    for i in range(samples):
        replay.at(i * interval + replay.late(), "write")  # the writer's timer wakes late too
    _run(replay, until=(samples + LATE_INTERVALS) * interval)
    counted = replay.samples[WARMUP:]
    latencies = np.array([s.done - s.written if s.done is not None else math.inf
                          for s in counted])
    return latencies, sum(s.rounds for s in counted) / len(counted)


def predict(x: LatencyInput, seed: int = 1, samples: int = SAMPLES) -> LatencyPrediction:
    """Mean and p95 of replay_latencies' samples, when every one completed."""
    latencies, rounds = replay_latencies(x, seed, samples)
    completed = int(np.isfinite(latencies).sum())
    if completed < len(latencies):
        # samples still incomplete at the end: the stream does not keep up, its latency
        # grows with the length of the replay, so no mean or p95 stands for it (nor may the
        # completed ones alone: the slowest are the ones left out)
        return LatencyPrediction(math.inf, math.inf, rounds, completed)
    return LatencyPrediction(mean_s=float(latencies.mean()),
                             p95_s=float(np.percentile(latencies, 95)),
                             rounds_mean=rounds, completed=completed)
