"""Pure statistics of a path measurement: loss and its bursts, round trips, the ramp.

Loss: a per-packet received/lost sequence is fitted with the simple Gilbert model (the
Gilbert-Elliott chain with no loss in Good and every packet lost in Bad: netem's
``gemodel p r 1-h=100% 1-k=0%``), by counting transitions: p = P(lost | previous
received), r = P(received | previous lost). Its mean loss p/(p+r) is the observed loss
rate and its mean burst 1/r the observed mean run of consecutive losses, so the model is
stated by, and replays, exactly those two numbers (Gilbert 1960; Elliott 1963; the
two-state estimator of Yajnik et al., "Measurement and modelling of the temporal
dependence in packet loss", INFOCOM 1999, §4).

Standard errors (for comparing a replay with what was measured):
- mean loss of n packets from a stationary two-state Markov chain with lag-one
  correlation lambda = 1 - p - r: Var = pi (1 - pi) / n * (1 + lambda) / (1 - lambda)
  (the variance of the mean of an AR(1)-correlated sequence; e.g. Cox & Miller, The
  Theory of Stochastic Processes, 1965, §3.2);
- mean burst length: the sample standard deviation of the bursts over sqrt(bursts).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class LossFit:
    packets: int
    lost: int
    mean_loss: float          # lost / packets
    p: float                  # P(good -> bad)
    r: float                  # P(bad -> good)
    bursts: int               # runs of consecutive losses
    mean_burst: float         # packets per run (NaN without losses)
    se_loss: float            # standard error of mean_loss
    se_burst: float           # standard error of mean_burst

    def to_dict(self) -> dict:
        return asdict(self)


def fit_gilbert(received: np.ndarray) -> LossFit:
    """``received``: one bool per packet sent, in send order."""
    got = np.asarray(received, dtype=bool)
    n = int(got.size)
    lost_mask = ~got
    lost = int(lost_mask.sum())
    if n == 0:
        nan = math.nan
        return LossFit(0, 0, nan, nan, nan, 0, nan, nan, nan)
    pi = lost / n
    if lost == 0:
        return LossFit(n, 0, 0.0, 0.0, 1.0, 0, math.nan, 0.0, math.nan)
    prev, nxt = lost_mask[:-1], lost_mask[1:]
    from_good = int((~prev).sum())
    from_bad = int(prev.sum())
    p = float((~prev & nxt).sum() / from_good) if from_good else 1.0
    r = float((prev & ~nxt).sum() / from_bad) if from_bad else 1.0
    runs = burst_lengths(lost_mask)
    bursts = len(runs)
    mean_burst = float(np.mean(runs))
    se_burst = float(np.std(runs, ddof=1) / math.sqrt(bursts)) if bursts > 1 else math.inf
    lam = 1.0 - p - r
    inflation = (1.0 + lam) / (1.0 - lam) if lam < 1.0 else math.inf
    se_loss = math.sqrt(max(pi * (1.0 - pi), 0.0) / n * max(inflation, 0.0))
    return LossFit(n, lost, pi, p, r, bursts, mean_burst, se_loss, se_burst)


def burst_lengths(lost: np.ndarray) -> np.ndarray:
    """Lengths of the runs of True in ``lost``."""
    lost = np.asarray(lost, dtype=np.int8)
    edges = np.diff(np.concatenate(([0], lost, [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return ends - starts


def expected_burst_loss(p: float, r: float) -> tuple[float, float]:
    """(mean loss, mean burst) of a simple Gilbert chain: p/(p+r), 1/r."""
    return p / (p + r), 1.0 / r


@dataclass(frozen=True)
class RttStats:
    count: int
    min_ms: float
    p5_ms: float
    p25_ms: float
    p50_ms: float
    p75_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float
    sigma_ms: float           # robust: 1.4826 x the median absolute deviation
    se_median_ms: float       # standard error of the median (asymptotic, from the density)

    def to_dict(self) -> dict:
        return asdict(self)


def rtt_stats(rtt_ms: np.ndarray) -> RttStats:
    values = np.sort(np.asarray(rtt_ms, dtype=float))
    n = int(values.size)
    if n == 0:
        nan = math.nan
        return RttStats(0, *([nan] * 11))
    q = np.quantile(values, [0.05, 0.25, 0.5, 0.75, 0.95, 0.99])
    median = float(q[2])
    sigma = float(1.4826 * np.median(np.abs(values - median)))
    # SE of a sample median: 1 / (2 f(m) sqrt(n)); f(m) from the central 50 % (IQR) of the
    # sample: f ~ 0.5 / IQR (exact for a uniform core, close for smooth ones)
    iqr = float(q[3] - q[1])
    se_median = iqr / math.sqrt(n) if n > 1 else math.inf
    return RttStats(n, float(values[0]), float(q[0]), float(q[1]), median, float(q[3]),
                    float(q[4]), float(q[5]), float(values[-1]), float(values.mean()), sigma,
                    se_median)


def reorder_fraction(reordered: int, received: int) -> float:
    """RFC 4737 Type-P-Reordered ratio: packets that arrived after a later-sent one."""
    return reordered / received if received else math.nan


# --- the rate ramp ------------------------------------------------------------------------

SATURATION = 0.85   # a step is saturated when it delivers less than this share of what
#                     the path's base loss alone lets through


def saturated(offered_bps: float, received_bps: float | None, base_loss: float) -> bool:
    """Did the path carry less than was offered (beyond its packet loss)?"""
    if received_bps is None:
        return True
    return received_bps < SATURATION * offered_bps * (1.0 - base_loss)


def bottleneck_rate(carried_ip_bps: float, ip_bytes: int, loss: float,
                    loss_before_rate: bool, frame_overhead: int = 14) -> float:
    """The rate a replay's rate stage needs so that it carries ``carried_ip_bps`` of
    ``ip_bytes`` packets when saturated: linklab's rate stages count Ethernet frames (IP +
    14 B); a loss stage *after* the rate stage takes its share of what the rate let
    through (divide by 1 - loss), one *before* it does not change a saturated output."""
    frames = carried_ip_bps * (ip_bytes + frame_overhead) / ip_bytes
    return frames if loss_before_rate else frames / max(1e-9, 1.0 - loss)
