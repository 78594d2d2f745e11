"""SFT's CPU and memory overhead: the metric computations (sft.usage, sft.overhead)."""

from __future__ import annotations

import pytest

from linklab.sft import overhead, usage
from linklab.sft.fastdds_reference import BYTES_HEADER, payload_for

STATUS = """Name:\tpython3
VmPeak:\t  300000 kB
VmHWM:\t   45000 kB
VmRSS:\t   44520 kB
Threads:\t12
"""


def test_status_kb_reads_the_named_line() -> None:
    assert usage.status_kb(STATUS, "VmRSS") == 44520
    assert usage.status_kb(STATUS, "VmHWM") == 45000
    assert usage.status_kb(STATUS, "VmSwap") is None
    assert usage.status_kb("", "VmRSS") is None


def test_window_usage_cpu_as_share_of_a_core_and_per_message() -> None:
    before = {"cpu_s": 1.00, "rss_kb": 40000, "hwm_kb": 40000}
    after = {"cpu_s": 1.06, "rss_kb": 40200, "hwm_kb": 40500}
    got = usage.window_usage(before, after, [40000, 40100, 40300], seconds=3.0, messages=30)
    assert got["cpu_s"] == pytest.approx(0.06)
    assert got["cpu_pct"] == pytest.approx(2.0)           # 0.06 s of 3 s: 2 % of one core
    assert got["cpu_s_per_msg"] == pytest.approx(0.002)
    assert got["rss_mean_kb"] == pytest.approx(40133.333, rel=1e-6)
    assert got["rss_peak_kb"] == 40500                      # VmHWM after the reset



def test_a_sampled_rise_above_a_lagging_vmhwm_is_the_peak() -> None:
    """VmHWM is raised lazily by the kernel: a sample above it in the window is the peak."""
    before = {"cpu_s": 1.00, "rss_kb": 40000, "hwm_kb": 40000}
    after = {"cpu_s": 1.06, "rss_kb": 40200, "hwm_kb": 40200}
    got = usage.window_usage(before, after, [40000, 46000, 40200], seconds=3.0, messages=30)
    assert got["rss_peak_kb"] == 46000

def test_window_usage_falls_back_to_the_snapshots_and_a_gone_process_is_none() -> None:
    before = {"cpu_s": 0.0, "rss_kb": 100, "hwm_kb": 100}
    after = {"cpu_s": 0.0, "rss_kb": 300, "hwm_kb": 300}
    assert usage.window_usage(before, after, [], 1.0, 10)["rss_mean_kb"] == 200
    gone = usage.window_usage(before, {"cpu_s": None}, [1], 1.0, 10)
    assert set(gone.values()) == {None}
    assert usage.window_usage(before, after, [], 1.0, 0)["cpu_s_per_msg"] is None


def test_trial_usage_keeps_each_process_samples_inside_the_window() -> None:
    samples = [(5, 11, 999), (10, 11, 100), (20, 11, 200), (20, 12, 50), (31, 11, 999)]
    snap = {"11": {"cpu_s": 0.0, "rss_kb": 1, "hwm_kb": 1},
            "12": {"cpu_s": 0.0, "rss_kb": 1, "hwm_kb": 1}}
    got = usage.trial_usage({"publisher": 11, "receiver1": 12}, snap, snap, samples,
                            (10, 30), 3)
    assert got["publisher"]["rss_mean_kb"] == 150
    assert got["receiver1"]["rss_mean_kb"] == 50


def test_snapshot_of_this_process_is_plausible() -> None:
    import os

    snap = usage.snapshot([os.getpid()])[str(os.getpid())]
    assert snap["cpu_s"] > 0 and 1000 < snap["rss_kb"] <= snap["hwm_kb"]


def _row(receivers: int, base: dict, sft: dict, case: str = "parametric") -> dict:
    return {"case": case, "params": {"receivers": receivers},
            "usage": {"baseline": base, "sft": sft}}


def _use(cpu: float, rss: float) -> dict:
    return {"cpu_pct": cpu, "cpu_s_per_msg": cpu / 1000, "rss_mean_kb": rss,
            "rss_peak_kb": rss + 10}


def test_mean_change_in_the_metrics_unit_and_relative() -> None:
    got = overhead.mean_change([(1.0, 1.5), (3.0, 3.5), (None, 9.0)])
    assert got == {"n": 2, "baseline": 2.0, "sft": 2.5, "delta": 0.5, "relative_pct": 25.0}
    assert overhead.mean_change([])["delta"] is None


def test_summarize_pools_every_receiver_and_ignores_cases() -> None:
    rows = [
        _row(3, {"publisher": _use(2.0, 40000), "receiver1": _use(1.0, 30000),
                 "receiver2": _use(1.0, 30000)},
             {"publisher": _use(2.5, 40400), "receiver1": _use(1.2, 30100),
              "receiver2": _use(1.0, 30100)}),
        _row(1, {"publisher": _use(9.0, 1)}, {"publisher": _use(9.0, 1)}, case="nav2-grid"),
        {"case": "parametric", "params": {"receivers": 1}},  # a run recorded before usage
    ]
    got = overhead.summarize(rows)
    assert got["publisher"]["cpu_pct"]["delta"] == pytest.approx(0.5)
    assert got["publisher"]["rss_mean_kb"]["delta"] == pytest.approx(400)
    assert got["publisher"]["rss_mean_kb"]["relative_pct"] == pytest.approx(1.0)
    assert got["receiver"]["cpu_pct"]["n"] == 2
    assert got["receiver"]["cpu_pct"]["delta"] == pytest.approx(0.1)
    assert got["receiver"]["rss_mean_kb"]["delta"] == pytest.approx(100)


def test_rss_drift_is_half_the_baseline_step_within_one_testbed() -> None:
    rows = [_row(1, {"publisher": _use(1, 1000)}, {}),
            _row(1, {"publisher": _use(1, 1200)}, {}),
            _row(3, {"publisher": _use(1, 5000)}, {}),   # new processes: no step
            _row(3, {"publisher": _use(1, 5000)}, {})]
    assert overhead.rss_drift_kb(rows, "publisher") == pytest.approx((100 + 0) / 2)
    assert overhead.rss_drift_kb(rows, "receiver") is None


def test_fastdds_summary_compares_the_same_shapes() -> None:
    shape = {"fields": 7, "size": 512, "receivers": 1}
    rows = [{"case": "parametric", "params": {**shape, "frp": 0.5}, "baseline_kbit_s": 400.0,
             "sft_kbit_s": 200.0, "baseline_latency_ms": 1.0, "baseline_latency_median_ms": 0.8},
            {"case": "parametric", "params": {**shape, "size": 128, "frp": 0.5},
             "baseline_kbit_s": 999.0, "sft_kbit_s": 999.0, "baseline_latency_ms": 9.0}]
    ref = [{"params": {**shape, "repeat": 0}, "kbit_s": [440.0], "latency_mean_ms": 0.5,
            "latency_median_ms": 0.4,
            "usage": {"publisher": _use(0.3, 15000), "receiver1": _use(0.2, 16000)}}]
    got = overhead.fastdds_summary(rows, ref)
    assert got["kbit_s"] == 440.0 and got["baseline_kbit_s"] == 400.0
    assert got["change_pct"] == pytest.approx(10.0)
    assert got["baseline_latency_ms"] == 1.0
    assert got["publisher_cpu_pct"] == 0.3 and got["receiver_rss_mean_kb"] == 16000
    assert overhead.fastdds_summary(rows, []) == {}


def test_fastdds_payload_serializes_to_the_full_message_size() -> None:
    # SFT type: 4 + fields x size; Bytes_: 4 + 20 + payload (probes/idl/linklab_types.idl)
    assert 4 + BYTES_HEADER + payload_for(7, 512) == 4 + 7 * 512
    assert payload_for(5, 128) == 620


def test_markdown_puts_the_paper_beside_each_role() -> None:
    rows = [_row(1, {"publisher": _use(2.0, 40000), "receiver1": _use(1.0, 30000)},
                 {"publisher": _use(2.5, 40400), "receiver1": _use(1.0, 30000)})]
    text = overhead.markdown(overhead.summarize(rows), "zenoh")
    assert "+386.7" in text and "< 1 %" in text
    assert "| publisher | 1 | 2.00 / 2.50 | +0.50 | +25.0 % |" in text
    assert "| receiver |" in text
