"""Automatic requirement recording, including a read of a field that was not sent."""

from __future__ import annotations

import pytest

from linklab.sft import cdr, samples
from linklab.sft.masks import FieldMask, mask_for_paths, paths_in_mask
from linklab.sft.recording import FieldNotTransmitted, Recorder, missing, unwrap, wrap
from linklab.sft.schema import schema
from linklab.sft.transport import ReaderTable, Request


def _view(sch, message, recorder, received, mode="raise"):
    widened = []
    view, _ = wrap(message, sch, recorder, received, mode, lambda: widened.append(1))
    return view, widened


def test_reads_are_recorded_per_leaf_and_nested() -> None:
    sch = schema("nav_msgs/msg/Odometry")
    recorder = Recorder(sch)
    message = samples.random_message(sch, __import__("random").Random(1))
    view, widened = _view(sch, message, recorder, FieldMask.full(sch.leaf_count))
    assert view.pose.pose.position.x == message.pose.pose.position.x
    assert view.header.stamp.sec == message.header.stamp.sec
    assert paths_in_mask(sch, recorder.mask()) == ["header.stamp.sec", "pose.pose.position.x"]
    assert widened == []  # no miss: announced once, after the callback
    # a struct used as a whole records all of it
    unwrap(view.twist)
    assert "twist" in paths_in_mask(sch, recorder.mask())


def test_a_struct_that_is_only_traversed_records_nothing() -> None:
    sch = schema("sensor_msgs/msg/BatteryState")
    recorder = Recorder(sch)
    view, _ = _view(sch, samples.battery_state(), recorder, FieldMask.full(sch.leaf_count))
    _ = view.header
    assert recorder.mask().bits == 0
    assert view.POWER_SUPPLY_STATUS_FULL == 4  # constants pass through, not recorded
    assert recorder.mask().bits == 0


def test_miss_raises_and_widens_at_once() -> None:
    sch = schema("sensor_msgs/msg/BatteryState")
    sent = mask_for_paths(sch, ["current"])
    recorder = Recorder(sch, sent)
    message = cdr.deserialize(cdr.serialize(samples.battery_state(), sch, sent), sch, sent)
    view, widened = _view(sch, message, recorder, sent)
    assert view.current == pytest.approx(-1.7)
    assert widened == []
    with pytest.raises(FieldNotTransmitted) as caught:
        _ = view.voltage
    assert caught.value.paths == ["voltage"]
    assert widened == [1]  # the subscriber announced the wider mask before the read returned
    assert paths_in_mask(sch, recorder.mask()) == ["voltage", "current"]


def test_miss_in_flag_mode_returns_default_and_lists_it() -> None:
    sch = schema("sensor_msgs/msg/BatteryState")
    sent = mask_for_paths(sch, ["current"])
    recorder = Recorder(sch, sent)
    message = cdr.deserialize(cdr.serialize(samples.battery_state(), sch, sent), sch, sent)
    view, widened = _view(sch, message, recorder, sent, mode="flag")
    assert view.serial_number == "" and view.voltage == 0.0
    assert missing(view) == ["serial_number", "voltage"]
    assert widened == [1, 1]  # each miss widens at once


def test_received_messages_are_read_only() -> None:
    sch = schema("sensor_msgs/msg/BatteryState")
    view, _ = _view(sch, samples.battery_state(), Recorder(sch), FieldMask.full(sch.leaf_count))
    with pytest.raises(AttributeError):
        view.current = 3.0


def test_reader_table_keeps_newest_request_per_reader_and_drops_leavers() -> None:
    sch = schema("sensor_msgs/msg/BatteryState")
    table = ReaderTable(sch.leaf_count)
    current = mask_for_paths(sch, ["current"])
    both = mask_for_paths(sch, ["current", "voltage"])
    assert table.apply(Request("a", "battery", current, 1))
    assert table.apply(Request("b", "battery", current, 1))
    assert table.apply(Request("c", "battery", FieldMask.full(sch.leaf_count), 1))
    assert table.variants() == {current: ["a", "b"]}  # one variant, shared; full -> full channel
    assert not table.apply(Request("a", "battery", both, 1))  # stale sequence number
    assert table.apply(Request("a", "battery", both, 2))
    assert table.variants() == {current: ["b"], both: ["a"]}
    assert table.leave("b") and not table.leave("b")
    assert table.variants() == {both: ["a"]}
    assert not table.apply(Request("d", "battery", FieldMask(3, 1), 1))  # wrong length
