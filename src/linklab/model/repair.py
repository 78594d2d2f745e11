"""How many repair rounds a fragmented sample needs over a lossy link, and how fast the
repair loop must turn for a writer that repairs one sample at a time.

Derived from the assumptions of paper 000 (000_10b8b18b6f5db8a8.txt, IV-C, Eq. 3): every
IP packet is lost independently with probability PER = 1 - p; a retransmission round
repairs a fragment only if the Heartbeat, the AckNack/NackFrag and the repair all arrive
(p^3; Eq. 3 counts the first two as p^2). A sample of F one-packet fragments misses each
fragment after its first copy with probability PER; after j rounds that repaired, with
(1 - p)^(j+1). It is complete when no fragment is missing:

    P(complete after j repairing rounds) = (1 - PER^(j+1))^F                  (R1)

and a round repairs with probability h = p^2 (Heartbeat and NackFrag arrive; the repair's
own loss is the next PER factor of R1). The expected rounds are the sum of the tail:

    E[rounds] = (1/h) * sum_{j>=0} (1 - (1 - PER^(j+1))^F)                     (R2)

Cyclone DDS 0.10 NACKs the fragments of one sample per AckNack (ddsi_acknack.c,
add_AckNack_makebitmaps: "cutting it off at the first missing sample that the
defragmenter knows about ... add a NACKFRAG for that sample"), so its repair loop must
turn r * E[rounds] times a second to keep up with r samples a second (R3). Measured
(docs/RESULTS.md, "Cyclone's repair loop"): 512 KiB at 30 Hz over PER 20 % reached
8.0-8.9 Hz with a 16.7 ms loop (1/(2r)) and 30 Hz with R3's 3.0 ms (a factor 2
margin). Fast DDS 2.9 NACKs every incomplete sample in one response
(StatefulReader::send_acknack), so n = 2r serves it (000 IV-D).
"""

from __future__ import annotations

import math

# The series of R2 converges fast (PER^(j+1) shrinks geometrically); stop when the
# remaining tail is below this.
_TAIL = 1e-9
_MAX_ROUNDS = 10_000


def _check(per: float, fragments: int) -> None:
    if not 0.0 <= per < 1.0:
        raise ValueError(f"PER must lie in [0, 1), got {per}")
    if fragments < 1:
        raise ValueError(f"a sample has at least one fragment, got {fragments}")


def complete_after(fragments: int, per: float, repairing_rounds: int) -> float:
    """P(all F fragments arrived after j rounds that repaired), R1: (1 - PER^(j+1))^F."""
    _check(per, fragments)
    return (1.0 - per ** (repairing_rounds + 1)) ** fragments


def expected_repairing_rounds(fragments: int, per: float) -> float:
    """sum_{j>=0} P(incomplete after j repairing rounds): the rounds that must repair (R2)."""
    _check(per, fragments)
    total = 0.0
    for j in range(_MAX_ROUNDS):
        tail = 1.0 - complete_after(fragments, per, j)
        total += tail
        if tail < _TAIL:
            break
    return total


def expected_rounds(fragments: int, per: float, control_loss: float | None = None) -> float:
    """E[rounds] until a sample is complete, counting rounds lost with their Heartbeat or
    NackFrag (R2): repairing rounds / h, h = (1 - control_loss)^2, control_loss = PER."""
    loss = per if control_loss is None else control_loss
    h = (1.0 - loss) ** 2
    return expected_repairing_rounds(fragments, per) / h


def rounds_quantile(fragments: int, per: float, quantile: float,
                    control_loss: float | None = None) -> int:
    """Smallest number of repairing rounds j with P(complete) >= quantile, scaled by 1/h
    and rounded up: the rounds after which a share ``quantile`` of samples is complete."""
    if not 0.0 < quantile < 1.0:
        raise ValueError(f"quantile must lie in (0, 1), got {quantile}")
    _check(per, fragments)
    loss = per if control_loss is None else control_loss
    h = (1.0 - loss) ** 2
    for j in range(_MAX_ROUNDS):
        if complete_after(fragments, per, j) >= quantile:
            return math.ceil(j / h) if j else 0
    return _MAX_ROUNDS


# R3's margin: the loop must turn twice as fast as the mean need (measured, see above).
SERIAL_REPAIR_MARGIN = 2.0


def serial_repair_interval(rate_hz: float, fragments: int, per: float,
                           margin: float = SERIAL_REPAIR_MARGIN) -> float:
    """Longest repair-loop period [s] for a writer that repairs one sample per round (R3):
    1 / (margin * r * E[rounds]); at least one round per sample."""
    if rate_hz <= 0:
        raise ValueError(f"rate must be positive, got {rate_hz}")
    rounds = max(1.0, expected_rounds(fragments, per))
    return 1.0 / (margin * rate_hz * rounds)
