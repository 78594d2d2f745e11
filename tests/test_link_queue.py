"""The queue in front of a link's bottleneck: fields, refusals, and what the relay gets."""

from __future__ import annotations

import pytest

from linklab.emu.config import RelayConfig
from linklab.emu.directives import Rate as EmuRate
from linklab.emu.directives import Trace as EmuTrace
from linklab.errors import UsageError
from linklab.link import design
from linklab.link.direction_spec import QueueLimit
from linklab.link.impairments import QueuedRateStage, RateStage, TraceStage, relay_directives
from linklab.link.impairments.queue import parse_queue_limit
from linklab.link.wires.tap_relay import TapRelayWire


def test_a_queue_setting_moves_the_rate_into_the_relay_with_the_kernel_bucket():
    bed = design(None, name="t", rate="10Mbit/s", queue="codel", queue_limit="200 packets")
    up = next(iter(bed.stages.values()))["up"]
    assert [type(s) for s in up] == [QueuedRateStage]
    emu = relay_directives(up)
    assert emu == (EmuRate(10e6, 200, None, burst_bytes=up[0].burst_bytes, queue="codel"),)
    text = RelayConfig(tap_a="a", tap_b="b", ab=emu).text()
    assert "queue=codel limit_packets=200" in text
    assert all(w is TapRelayWire for w in bed.wires.values())


def test_without_a_queue_setting_the_rate_stays_in_the_kernel():
    bed = design(None, name="t", rate="10Mbit/s")
    up = next(iter(bed.stages.values()))["up"]
    assert [type(s) for s in up] == [RateStage]


def test_a_rate_queue_without_a_limit_holds_what_the_kernel_one_does():
    stage = QueuedRateStage(8e6, "headdrop", None)
    params = stage.params()
    # 50 ms at 8 Mbit/s (50 000 B) plus the bucket, as tbf's latency 50ms gives
    assert params["limit_bytes"] == 50_000 + stage.burst_bytes
    assert params["queue"] == "headdrop" and "headdrop queue" in params["text"]


def test_a_trace_takes_the_queue_too(tmp_path):
    trace = tmp_path / "t.trace"
    trace.write_text("1\n2\n")
    bed = design(None, name="t", trace=str(trace), queue="headdrop", queue_limit="1MiB")
    up = next(iter(bed.stages.values()))["up"]
    assert [type(s) for s in up] == [TraceStage]
    (emu,) = relay_directives(up)
    assert emu == EmuTrace(trace, None, 1 << 20, "headdrop")


@pytest.mark.parametrize(("text", "want"), [
    ("200 packets", QueueLimit(200, None)), ("64p", QueueLimit(64, None)),
    ("1MiB", QueueLimit(None, 1 << 20)), ("100 packets, 256KiB", QueueLimit(100, 256 << 10)),
])
def test_queue_limits_parse(text, want):
    assert parse_queue_limit(text) == want


@pytest.mark.parametrize(("kwargs", "argument", "says"), [
    ({"queue": "red", "rate": "1Mbit/s"}, "--queue", "droptail, headdrop, codel"),
    ({"queue": "codel"}, "--queue", "give a rate or a trace"),
    ({"queue_limit": "0 packets", "rate": "1Mbit/s"}, "--queue-limit", "N packets"),
    ({"queue_limit": "lots", "rate": "1Mbit/s"}, "--queue-limit", ""),
    ({"queue_limit": "5MiB"}, "--queue-limit", "give a rate or a trace"),
])
def test_a_queue_setting_that_cannot_apply_is_refused_in_one_line(kwargs, argument, says):
    with pytest.raises(UsageError) as error:
        design(None, name="t", **kwargs)
    message = str(error.value)
    assert message.startswith(argument) and says in message and "\n" not in message


def test_a_preset_file_can_set_the_queue_per_direction():
    bed = design("x", name="t", preset_fields={
        "up": {"rate": "20Mbit/s", "queue": "codel"}, "down": {"rate": "50Mbit/s"}})
    stages = next(iter(bed.stages.values()))
    assert [type(s) for s in stages["up"]] == [QueuedRateStage]
    assert [type(s) for s in stages["down"]] == [RateStage]


# --- when a trace starts (issue 44: a workload meets the trace at a defined moment) ---

def _trace(tmp_path):
    trace = tmp_path / "t.trace"
    trace.write_text("1\n2\n")
    return str(trace)


def test_trace_start_first_packet_reaches_the_relay(tmp_path):
    from linklab.link.impairments.trace import relay_epoch

    bed = design(None, name="t", trace=_trace(tmp_path), trace_start="first-packet")
    up = next(iter(bed.stages.values()))["up"]
    assert up[0].params()["start"] == "first-packet"
    assert relay_epoch(up) == (None, True)
    emu = relay_directives(up)
    text = RelayConfig(tap_a="a", tap_b="b", ab=emu, epoch_first_packet=True).text()
    assert "epoch first-packet" in text
    assert bed.spec.describe()["trace_start"] == "first-packet"


def test_trace_start_at_a_utc_time_is_the_relays_clock_then(tmp_path):
    import time
    from datetime import UTC, datetime

    from linklab.link.impairments.trace import relay_epoch

    at = datetime.fromtimestamp(time.time() + 30, tz=UTC)
    text = at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    bed = design(None, name="t", trace=_trace(tmp_path), trace_start=text)
    up = next(iter(bed.stages.values()))["up"]
    epoch_ns, first = relay_epoch(up)
    assert not first
    assert abs(epoch_ns - (time.monotonic_ns() + 30e9)) < 0.5e9


@pytest.mark.parametrize(("value", "says"), [
    ("soon", "first-packet, now, or a UTC time"),
    ("2026-11-28T10:30:00+02:00", "UTC time"),
    ("1999-01-01T00:00:00Z", "before this machine started"),
])
def test_a_trace_start_that_cannot_apply_is_refused(tmp_path, value, says):
    with pytest.raises(UsageError) as error:
        design(None, name="t", trace=_trace(tmp_path), trace_start=value)
    assert str(error.value).startswith("--trace-start") and says in str(error.value)


def test_trace_start_without_a_trace_is_refused():
    with pytest.raises(UsageError) as error:
        design(None, name="t", rate="10Mbit/s", trace_start="first-packet")
    assert "no trace" in str(error.value)
