"""What the emulator's stages should produce, computed from their parameters.

The tests compare measurements against these; users can ask what a preset means
(e.g. the loss rate and mean burst length of a Gilbert-Elliott setting).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.special import ndtri

from linklab.emu.directives import FourStateLoss, GilbertElliott
from linklab.errors import UsageError

# Mahimahi's PACKET_SIZE: bytes one trace line (delivery opportunity) carries.
TRACE_OPPORTUNITY_BYTES = 1504
# netem's distribution tables hold 16-bit values scaled by NETEM_DIST_SCALE = 8192.
_TABLE_LIMIT = 32767 / 8192


def _ge_chain(model: GilbertElliott) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stationary distribution, transition matrix and per-state loss (Good, Bad)."""
    p, r = model.p, model.r
    transition = np.array([[1 - p, p], [r, 1 - r]])
    stationary = np.array([r, p]) / (p + r) if p + r > 0 else np.array([1.0, 0.0])
    loss = np.array([model.one_minus_k, model.one_minus_h])
    return stationary, transition, loss


def ge_loss_rate(model: GilbertElliott) -> float:
    """Long-run loss probability: pi_G (1-k) + pi_B (1-h), pi_B = p / (p + r)."""
    stationary, _, loss = _ge_chain(model)
    return float(stationary @ loss)


def ge_mean_burst_length(model: GilbertElliott) -> float:
    """Mean number of consecutive losses: P(loss) / P(received, then lost).

    A frame's fate is drawn in the state it finds, then the chain moves (as in the
    relay), so P(received at n, lost at n+1) = sum_s pi_s (1 - l_s) sum_s' T[s,s'] l_s'.
    For the simple Gilbert model (1-h = 1, 1-k = 0) this is 1 / r."""
    stationary, transition, loss = _ge_chain(model)
    start_of_burst = float((stationary * (1 - loss)) @ transition @ loss)
    return ge_loss_rate(model) / start_of_burst if start_of_burst > 0 else float("inf")


def four_state_loss_rate(model: FourStateLoss) -> float:
    """Long-run loss of netem's 4-state model: stationary mass of states 3 and 4."""
    m = model
    transition = np.array([
        [1 - m.p13 - m.p14, 0.0, m.p13, m.p14],
        [0.0, 1 - m.p23, m.p23, 0.0],
        [m.p31, m.p32, 1 - m.p31 - m.p32, 0.0],
        [1.0, 0.0, 0.0, 0.0],
    ])
    values, vectors = np.linalg.eig(transition.T)
    stationary = np.real(vectors[:, np.argmin(np.abs(values - 1))])
    stationary = stationary / stationary.sum()
    return float(stationary[2] + stationary[3])


def burst_lengths(lost: np.ndarray) -> np.ndarray:
    """Lengths of the runs of True in a boolean loss sequence."""
    lost = np.asarray(lost, dtype=bool).astype(np.int8)
    edges = np.diff(np.concatenate(([0], lost, [0])))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    return ends - starts


def loss_runs(lost: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) index of each run of True."""
    lost = np.asarray(lost, dtype=bool).astype(np.int8)
    edges = np.diff(np.concatenate(([0], lost, [0])))
    return list(zip(np.flatnonzero(edges == 1).tolist(),
                    (np.flatnonzero(edges == -1) - 1).tolist(), strict=True))


def read_trace(path: Path) -> np.ndarray:
    """Millisecond timestamps of a Mahimahi trace, validated like the relay does."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as error:
        raise UsageError(f"cannot read trace {path}: {error.strerror}",
                         argument="--trace") from None
    values = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        if not line.isdigit():
            raise UsageError(f"{path} line {number}: expected a millisecond integer "
                             "(Mahimahi trace: one delivery opportunity per line)",
                             argument="--trace")
        values.append(int(line))
    if not values or values[-1] <= 0:
        raise UsageError(f"{path}: a trace needs at least one line and a last timestamp > 0",
                         argument="--trace")
    if any(b < a for a, b in zip(values, values[1:], strict=False)):
        raise UsageError(f"{path}: timestamps must not decrease", argument="--trace")
    return np.array(values, dtype=np.int64)


def trace_capacity_bps(times_ms: np.ndarray) -> float:
    """Capacity of a Mahimahi trace in IP bit/s: 1504 bytes per line per period."""
    period_s = float(times_ms[-1]) / 1000.0
    return len(times_ms) * TRACE_OPPORTUNITY_BYTES * 8 / period_s


def opportunities_between(times_ms: np.ndarray, start_ms: int, end_ms: int) -> int:
    """Opportunities at trace milliseconds in [start_ms, end_ms), the trace repeating
    with its period P (its last timestamp): copy k holds every line's t at k * P + t, its
    last ones at (k + 1) * P (Mahimahi moves its base by P after a copy's last line,
    link_queue.cc; emu/src/stages/trace.rs does the same)."""
    period = int(times_ms[-1])
    per_copy = len(times_ms)

    def before(ms: int) -> int:  # opportunities at trace times < ms
        copies, within = divmod(ms, period)
        if within == 0 and copies > 0:  # copy copies - 1's lines at P fall at ms itself
            return (copies - 1) * per_copy + int(np.searchsorted(times_ms, period))
        return copies * per_copy + int(np.searchsorted(times_ms, within))

    return before(end_ms) - before(start_ms)


def trace_capacity_per_second(times_ms: np.ndarray, first_s: int, count: int) -> list[int]:
    """Bytes a trace can carry in each of its seconds first_s .. first_s + count - 1."""
    return [TRACE_OPPORTUNITY_BYTES * opportunities_between(times_ms, s * 1000, (s + 1) * 1000)
            for s in range(first_s, first_s + count)]


def _pareto_value(q: np.ndarray) -> np.ndarray:
    # iproute2 netem/paretonormal.c: ((1 - q)^(-1/a) - 1.5) * 4/3, a = 3
    return np.minimum(((1 - q) ** (-1 / 3) - 1.5) * (4 / 3), _TABLE_LIMIT)


def jitter_samples(distribution: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Jitter draws in units of the jitter parameter, as netem (and the relay) make
    them: uniform in [-1, 1); normal, pareto and paretonormal read at a uniform
    quantile, paretonormal = (normal + 3 pareto) / 4 at the same quantile
    (iproute2 netem/paretonormal.c), all clipped to the tables' [-4, 4) range."""
    q = rng.random(n)
    if distribution == "uniform":
        return 2 * q - 1
    q = np.clip(q, 1e-12, 1 - 1e-12)
    if distribution == "normal":
        return np.clip(ndtri(q), -4, _TABLE_LIMIT)
    if distribution == "pareto":
        return _pareto_value(q)
    if distribution == "paretonormal":
        return np.clip((ndtri(q) + 3 * _pareto_value(q)) / 4, -4, _TABLE_LIMIT)
    raise ValueError(distribution)
