"""The rule a stream is judged by, and its verdict: ok, or failed with the reason.

One rule per QoS (docs/metrics.md "Verdicts" is its written form; every row stores the
rule that decided it in ``completion_rule``). Every rule first asks that no probe crashed,
that the publisher wrote its whole count and that samples arrived; then:

- **every sample** (RELIABLE KEEP_ALL on DDS; reliable MQTT, QoS 1, and reliable Zenoh,
  which keep no history to replace samples in): every published sample arrived;
- **RELIABLE KEEP_LAST N**: a newer sample may replace an older one the reader has not
  acknowledged, so some samples may be missing; the stream may not stop: no stall longer
  than the stall limit while the link was up (a declared outage is the condition under
  test, not the middleware's doing; the time after it until samples flow again is);
- **BEST_EFFORT**: samples may be lost (delivery and the stall say how many and for how
  long; a gate can demand more);
- and for every QoS, paper 000's overrun rule (Table II caption: a mean latency above
  100 publish intervals is "—").

The stall limit is 100 publish intervals -- the same overrun as the latency rule: a stream
that stops for that long has overrun by the paper's measure -- and at least STALL_FLOOR_S,
so that a fast stream is not failed by a pause the OS scheduler or a flush of the probe's
records can cause (at 1 kHz, 100 intervals are 0.1 s).
"""

from __future__ import annotations

from dataclasses import dataclass

from linklab.bench.metrics import CellMetrics
from linklab.middleware import family

# Table II caption (000_10b8b18b6f5db8a8.txt §V-C): latency above 100 intervals is "—".
LATENCY_LIMIT_INTERVALS = 100
STALL_LIMIT_INTERVALS = 100
STALL_FLOOR_S = 1.0

EVERY_SAMPLE = "every_sample"
KEEP_LAST = "keep_last"
BEST_EFFORT = "best_effort"
UNKNOWN = "unknown"


def stall_limit_s(interval_s: float) -> float:
    return max(STALL_LIMIT_INTERVALS * interval_s, STALL_FLOOR_S)


def history_flag(qos: tuple[str, ...] | list[str]) -> str | None:
    flags = list(qos)
    if "--history" in flags:
        return flags[flags.index("--history") + 1]
    return None


@dataclass(frozen=True)
class Rule:
    """The rule of one stream: what its QoS promises, at its publish interval."""

    kind: str          # EVERY_SAMPLE | KEEP_LAST | BEST_EFFORT | UNKNOWN
    label: str         # the QoS as said in the text, e.g. "RELIABLE KEEP_LAST 10"
    interval_s: float  # the publish interval (s)

    @property
    def expects_all(self) -> bool:
        return self.kind == EVERY_SAMPLE

    @property
    def stall_limit_s(self) -> float | None:
        """The longest stall allowed with the link up; None: stalls are not judged."""
        return stall_limit_s(self.interval_s) if self.kind == KEEP_LAST else None

    def text(self) -> str:
        latency = _seconds(LATENCY_LIMIT_INTERVALS * self.interval_s)
        common = (f"the publisher wrote its count, samples arrived, mean latency <= "
                  f"{latency} ({LATENCY_LIMIT_INTERVALS} publish intervals)")
        if self.kind == EVERY_SAMPLE:
            return f"{self.label}: every published sample must arrive; {common}"
        if self.kind == KEEP_LAST:
            return (f"{self.label}: newer samples may replace unacknowledged ones, the "
                    f"stream may not stop: {common}, and no stall longer than "
                    f"{_seconds(self.stall_limit_s or 0.0)} ({STALL_LIMIT_INTERVALS} publish "
                    f"intervals, at least {STALL_FLOOR_S:g} s) while the link was up")
        if self.kind == BEST_EFFORT:
            return (f"{self.label}: samples may be lost (delivery and stall say how many "
                    f"and how long): {common}")
        return (f"{self.label}: the middleware's own defaults, not known before the run: "
                f"{common}")


def rule_for(base: str, qos: tuple[str, ...] | list[str], interval_s: float) -> Rule:
    """The rule of a stream with probe QoS flags ``qos`` on middleware ``base``
    (fastdds | cyclonedds | mqtt | zenoh)."""
    flags = list(qos)
    if "--system-default" in flags or "--qos" not in flags:
        return Rule(UNKNOWN, "SYSTEM_DEFAULT", interval_s)
    reliable = flags[flags.index("--qos") + 1] == "reliable"
    labels = family(base).reliability_labels
    if labels is not None:  # MQTT, Zenoh: no history cache, the reliability alone
        return Rule(EVERY_SAMPLE if reliable else BEST_EFFORT,
                    labels[0] if reliable else labels[1], interval_s)
    if not reliable:
        return Rule(BEST_EFFORT, "BEST_EFFORT", interval_s)
    history = history_flag(flags)
    if history == "keep_all":
        return Rule(EVERY_SAMPLE, "RELIABLE KEEP_ALL", interval_s)
    if history and history.startswith("keep_last:"):
        return Rule(KEEP_LAST, f"RELIABLE KEEP_LAST {history.split(':', 1)[1]}", interval_s)
    return Rule(KEEP_LAST, "RELIABLE KEEP_LAST", interval_s)


def _seconds(value: float) -> str:
    return f"{value:.3g} s" if value < 10 else f"{value:.1f} s"


@dataclass(frozen=True)
class Outcome:
    """How the processes of a stream ended."""

    publisher_finished: bool  # published all its messages (writes that did not fail)
    publisher_exit: int | None  # None: killed by the runner (still running at the deadline)
    subscriber_exit: int | None
    expects_all: bool  # every published sample must arrive (Rule.expects_all)
    publisher_signalled: bool = False  # the runner stopped it (not a crash)
    subscriber_signalled: bool = False
    # the probe printed its summary with a normal end and no errors before it died (e.g.
    # Fast DDS 2.9 aborting in a TCP transport destructor at exit): the measurement is
    # complete, the crash is noted but does not fail the cell
    publisher_completed: bool = False
    subscriber_completed: bool = False
    # False: the publisher left no summary, its count is a lower bound (streams.py)
    published_exact: bool = True
    # False: the publisher printed no summary (killed or crashed); with published_exact
    # its records and what arrived hold every seq it was told to write
    publisher_summary: bool = True
    # matched readers that unmatched while the publisher wrote its samples (its summary's
    # readers_unmatched_while_publishing; 0 when the middleware does not say)
    readers_unmatched: int = 0
    # the subscriber ended on the publisher's end-of-stream marker (not at the deadline)
    stream_ended: bool = False
    # the longest stall allowed with the link up (Rule.stall_limit_s); None: not judged
    stall_limit_s: float | None = None


def exit_note(outcome: Outcome) -> str | None:
    """A probe that died after completing its run: worth saying, not a failure."""
    notes = []
    for role, code, completed in (
            ("publisher", outcome.publisher_exit, outcome.publisher_completed),
            ("subscriber", outcome.subscriber_exit, outcome.subscriber_completed)):
        if completed and code is not None and code != 0:
            how = f"signal {-code}" if code < 0 else f"exit status {code}"
            notes.append(f"{role} ended with {how} after completing its run")
    if not outcome.published_exact or not outcome.publisher_summary:
        code = outcome.publisher_exit
        how = ("killed by the runner" if outcome.publisher_signalled
               else f"ended with signal {-code}" if code is not None and code < 0
               else f"ended with exit status {code}")
        count = ("published is a lower bound (its records to their last flush and every "
                 "sample received)" if not outcome.published_exact else
                 "its records and every sample received hold every sample it was told to "
                 "write (published is exact)")
        notes.append(f"publisher {how} without its summary: {count}")
    return "; ".join(notes) or None


def failure_reason(metrics: CellMetrics, outcome: Outcome, interval_s: float,
                   expected: int) -> str | None:
    """Why a stream failed, or None. Order: crash, not completed, stalled, latency above
    the limit. A reason starts with "crashed:", "not completed:", "stalled:" or
    "latency:"."""
    for role, code, signalled, completed in (
            ("publisher", outcome.publisher_exit, outcome.publisher_signalled,
             outcome.publisher_completed),
            ("subscriber", outcome.subscriber_exit, outcome.subscriber_signalled,
             outcome.subscriber_completed)):
        if code is not None and code != 0 and not signalled and not completed:
            how = f"signal {-code}" if code < 0 else f"exit status {code}"
            return f"crashed: {role} ended with {how}"
    if not outcome.publisher_finished:
        if not outcome.published_exact:
            return (f"not completed: publisher wrote at least {metrics.published}/"
                    f"{expected} (stopped without its summary: its records to their last "
                    "flush and every sample received)")
        return (f"not completed: publisher wrote {metrics.published}/{expected} "
                "(writes blocked or failed, or stopped at the deadline)")
    if metrics.received == 0:
        return "not completed: nothing received"
    if outcome.expects_all and metrics.received < metrics.published:
        when = "by the end of the stream" if outcome.stream_ended else "before the deadline"
        lost = ("" if not outcome.readers_unmatched else
                f"; the writer lost a matched reader {outcome.readers_unmatched} time(s) "
                "while publishing (a writer drops an unmatched reader with what it had "
                "not acknowledged)")
        return f"not completed: received {metrics.received}/{metrics.published} {when}{lost}"
    limit = outcome.stall_limit_s
    if limit is not None and metrics.stall_link_up_s > limit:
        return stalled_reason(metrics, limit)
    limit_ms = LATENCY_LIMIT_INTERVALS * interval_s * 1000
    if metrics.latency_mean_ms > limit_ms:
        return (f"latency: mean {metrics.latency_mean_ms:.0f} ms > {limit_ms:.0f} ms "
                f"({LATENCY_LIMIT_INTERVALS} publish intervals)")
    return None


def stalled_reason(metrics: CellMetrics, limit_s: float) -> str:
    """"stalled: ..." for a stream whose longest stall with the link up is above the
    limit: how long, from when, what arrived in all."""
    at = ("" if metrics.stall_link_up_at_s != metrics.stall_link_up_at_s
          else f" from {metrics.stall_link_up_at_s:.1f} s after the first sample")
    outage = ("" if abs(metrics.stall_max_s - metrics.stall_link_up_s) < 1e-3 else
              " with the link up (declared outages left out)")
    return (f"stalled: nothing arrived for {metrics.stall_link_up_s:.1f} s{at} with samples "
            f"outstanding{outage} (limit {limit_s:.3g} s); received "
            f"{metrics.received}/{metrics.published}")
