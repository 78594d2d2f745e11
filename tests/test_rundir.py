"""linklab.rundir: the run directory's schema as typed records, the one JSON conversion
and the one number reader (docs/run-directory.md)."""

from __future__ import annotations

import json
import math

import pytest

from linklab.errors import UsageError
from linklab.output import jsonable
from linklab.rundir import (
    COUNTER_COLUMNS,
    FORMAT_VERSION,
    ROW_DEFAULTS,
    CellFields,
    CellMetrics,
    RunInfo,
    RunStore,
    Session,
    StreamRow,
    check_row,
    complete_row,
    num,
)
from linklab.rundir.files import json_text


def _cell_fields(**over) -> CellFields:
    fields = dict(metrics=CellMetrics(published=10, received=9), status="ok",
                  failure_reason=None, known_failure=None, exit_note=None,
                  completion_rule="all", expected=10, outage_s=0.0,
                  unmatched_subscribers=0, outage_at_s=math.nan, warmup_samples=0,
                  write_failures=None, polled_samples=None,
                  counters={c: 0 for c in COUNTER_COLUMNS}, pub_cpu_s=0.1, sub_cpu_s=0.2,
                  cpu_fraction_max=0.5, broker_cpu_s=math.nan, bridge_cpu_s=math.nan,
                  pub_rss_peak_bytes=1,
                  sub_rss_peak_bytes=2, fanout_step_ms=math.nan,
                  model_fanout_step_ms=math.nan, interfaces=[], simulator_lag_max_ms=math.nan)
    fields.update(over)
    return CellFields(**fields)


def test_a_cells_fields_are_its_metrics_then_the_outcome_then_the_counters_before_the_probes():
    row = _cell_fields().to_dict()
    keys = list(row)
    metric_keys = [k for k in CellMetrics().to_dict() if k != "model_amplification"]
    assert keys[:len(metric_keys)] == metric_keys
    assert "model_amplification" not in row
    at = keys.index("pub_cpu_s")
    assert keys[at - len(COUNTER_COLUMNS):at] == list(COUNTER_COLUMNS)
    assert keys[-1] == "simulator_lag_max_ms" and row["received"] == 9


def test_a_stream_row_leaves_out_the_cells_own_metrics():
    row = StreamRow(metrics=CellMetrics(), cell_id="c", topic="t", publisher="robot",
                    subscriber="edge", endpoint="sub", status="ok", failure_reason=None,
                    known_failure=None, completion_rule="all", history_applied=None,
                    pub_cpu_s=0.1, sub_cpu_s=0.1, pub_cpu_fraction=0.1, sub_cpu_fraction=0.1,
                    pub_rss_peak_bytes=1, sub_rss_peak_bytes=1, write_failures=0,
                    polled_samples=None, applied_qos=None, pub_applied_qos=None).to_dict()
    for key in ("wire_bytes", "wire_amplification", "model_amplification", "rate_bins_hz"):
        assert key not in row
    assert list(row)[-2:] == ["fanout_rank", "model_fanout_offset_ms"]
    assert row["metrics_version"] == 2 and list(row).index("cell_id") > list(row).index(
        "bytes_published")


def test_complete_row_puts_every_column_first_in_the_schemas_order():
    row = complete_row({"cell_id": "x", "index": 0, "pub_cpu_s": None, "wire_bytes": 3.0})
    assert list(row)[:len(ROW_DEFAULTS)] == list(ROW_DEFAULTS)
    assert list(row)[len(ROW_DEFAULTS):] == ["cell_id", "index", "duration_s", "grace_s"]
    assert math.isnan(row["pub_cpu_s"]) and row["wire_bytes"] == 3
    assert isinstance(row["wire_bytes"], int)


def test_run_info_is_written_in_its_order_and_checked_when_read_back():
    info = RunInfo(scenario={"name": "s"}, options={}, versions={"kernel": "k"},
                   planned=["a"], estimated_s=1.0, extra={"cpu": {}})
    data = info.to_dict()
    assert list(data)[:5] == ["format_version", "created_utc", "updated_utc", "finished",
                              "interrupted"]
    assert list(data)[-2:] == ["estimated_s", "cpu"]
    back = RunInfo.check(json.loads(json.dumps(data)), "run.json")
    assert back == info
    with pytest.raises(UsageError, match="format version 3"):
        RunInfo.check(dict(data, format_version=3), "run.json")
    with pytest.raises(UsageError, match="planned is not a JSON list"):
        RunInfo.check(dict(data, planned="a"), "run.json")
    with pytest.raises(UsageError, match="not an object"):
        RunInfo.check([], "run.json")


def test_a_session_and_a_new_run_on_disk(tmp_path):
    store = RunStore.create(tmp_path / "run", scenario={}, options={}, planned=["a"],
                            estimated_s=1.0, versions={"kernel": "test"})
    session = store.begin_session("r1", versions={"kernel": "test"})
    assert list(session) == [f for f in Session.__dataclass_fields__]
    written = json.loads((tmp_path / "run" / "run.json").read_text())
    assert written["format_version"] == FORMAT_VERSION and written["sessions"] == [session]


def test_one_json_conversion_three_ways_to_say_infinity():
    value = {1: (math.nan, math.inf, -math.inf), "r": CellMetrics(received=2)}
    assert jsonable(value)["1"] == [None, "inf", "-inf"]
    assert jsonable(value, "null")["1"] == [None, None, None]
    assert jsonable(value, "keep")["1"][1:] == [math.inf, -math.inf]
    assert jsonable(value)["r"]["received"] == 2
    assert json_text({"a": math.nan, "b": math.inf}) == '{"a": null, "b": Infinity}'


def test_num_is_a_finite_float_or_none():
    assert num("2.5") == 2.5 and num(3) == 3.0
    for value in (None, True, math.nan, math.inf, "x", [1]):
        assert num(value) is None


def test_a_row_read_back_is_checked():
    good = {"cell_id": "c", "index": 0, "payload_bytes": 8, "link": "l", "profile": "p",
            "latency_mean_ms": None, "count": None}
    row = check_row(good, "here")
    assert math.isnan(row["latency_mean_ms"]) and row["count"] is None
    with pytest.raises(UsageError, match="here: cell 'c': received is 'x', not a number"):
        check_row(dict(good, received="x"), "here")
    with pytest.raises(UsageError, match="status is 3, not text"):
        check_row(dict(good, status=3), "here")
