"""The bed's rate limit as a token bucket: one definition for the tbf that
link/impairments/rate.py installs and for the latency model that replays it (model/latency.py).

tbf lets a burst of its bucket through at the line's speed after the link idled, then the
rate. The bucket is 2 ms of traffic at the rate, at least 32 KiB (>= 20 full frames, so a
few fragments never wait on the token refill).
"""

from __future__ import annotations

import math

TBF_BURST_S = 0.002
TBF_MIN_BURST_BYTES = 32 * 1024


def bucket_bytes(rate_bits_per_s: float) -> int:
    """The token bucket of the bed's rate limit at ``rate_bits_per_s``."""
    return max(TBF_MIN_BURST_BYTES, math.ceil(rate_bits_per_s / 8 * TBF_BURST_S))
