"""A short sft-bench trial records CPU and memory of every endpoint process, and the Fast
DDS reference trial does too (real middlewares in network namespaces; a few seconds)."""

from __future__ import annotations

import pytest

from linklab.sft import fastdds_reference, netns
from linklab.sft.bench import Settings, Testbed

# alone (make test runs it after the others, one at a time): it measures CPU overhead
pytestmark = [pytest.mark.integration, pytest.mark.alone]
# 1 s of warm-up, 3 s measured at 10 Hz: a Python endpoint spends ~0.6 ms of CPU per
# message, so over 1 s (~6 ms) utime + stime, counted in 10 ms ticks, is often still 0
SHORT = Settings(warmup=10, count=30)


def _plausible(use: dict, seconds: float) -> None:
    assert seconds > 0.9                            # at least ten periods and a half
    assert use["cpu_s"] is not None and use["cpu_s"] >= 0
    assert use["cpu_pct"] == pytest.approx(100 * use["cpu_s"] / seconds)
    assert 5_000 < use["rss_mean_kb"] < 2_000_000   # a process's RSS: MB, not bytes or GB
    assert use["rss_peak_kb"] >= use["rss_mean_kb"]   # the peak counts every sample


@pytest.mark.parametrize("middleware", ["cyclonedds", "zenoh"])
def test_a_trial_records_cpu_and_memory_per_process(middleware: str) -> None:
    bed = Testbed(middleware, 1, f"ov{middleware[:2]}")
    try:
        workload = {"kind": "synthetic", "fields": 5, "size": 128}
        base = bed.trial(workload, "baseline", [{"reads": ["f0"]}], SHORT)
        sft = bed.trial(workload, "sft", [{"reads": ["f0"], "record": True}], SHORT)
    finally:
        bed.close()
    for trial in (base, sft):
        assert set(trial["usage"]) == {"publisher", "receiver1"}
        for use in trial["usage"].values():
            _plausible(use, trial["seconds"])
    # the Python endpoints work at every message: ~80 ms over the four windows
    assert sum(u["cpu_s"] for t in (base, sft) for u in t["usage"].values()) > 0


@pytest.mark.native
def test_the_fastdds_reference_trial_measures_the_probes() -> None:
    with netns.star(1, "ovfd") as star:
        got = fastdds_reference.trial(star, fastdds_reference.payload_for(5, 128), 10.0,
                                      10, 10, "ovref")
    # ten slots, or eleven when the probe's first write was more than a quarter period
    # late (a loaded machine): the rate is per message either way
    assert got["messages"] in (10, 11)
    assert got["kbit_s"][0] == pytest.approx(8 * got["bytes"][0] * 10 / got["messages"]
                                             / 1.05 / 1000)
    assert got["bytes"][0] > 10 * 640          # ten full samples crossed the receiver's port
    assert got["latency_median_ms"] is not None and got["latency_median_ms"] < 50
    for use in got["usage"].values():
        _plausible(use, got["seconds"])
