"""Field masks: bit vectors of any length, nested paths."""

from __future__ import annotations

import pytest

from linklab.errors import UsageError
from linklab.sft.masks import (
    FieldMask,
    mask_except,
    mask_for_paths,
    paths_in_mask,
    top_level_mask,
)
from linklab.sft.schema import normalize_typename, schema


def test_masks_of_any_length() -> None:
    mask = FieldMask.from_indices(200, [0, 63, 64, 199])
    assert mask.indices() == [0, 63, 64, 199] and mask.count() == 4
    assert FieldMask.parse(mask.text()) == mask
    assert FieldMask.full(200).is_full and not mask.is_full
    assert (mask | FieldMask.full(200)).is_full
    assert FieldMask.full(200).covers(mask) and not mask.covers(FieldMask.full(200))
    with pytest.raises(ValueError):
        FieldMask(4, 0b10000)
    with pytest.raises(ValueError):
        mask | FieldMask.full(10)


def test_text_form_is_length_and_hex() -> None:
    assert FieldMask(18, 0x20).text() == "18:00020"
    with pytest.raises(UsageError):
        FieldMask.parse("current")


def test_top_level_and_nested_paths() -> None:
    sch = schema("sensor_msgs/msg/BatteryState")
    assert sch.leaves[:3] == ("header.stamp.sec", "header.stamp.nanosec", "header.frame_id")
    assert mask_for_paths(sch, ["current"]).indices() == [sch.leaves.index("current")]
    assert mask_for_paths(sch, ["header"]) == mask_for_paths(
        sch, ["header.stamp", "header.frame_id"])
    assert mask_for_paths(sch, ["header.stamp"]).indices() == [0, 1]
    odom = schema("nav_msgs/msg/Odometry")
    position = mask_for_paths(odom, ["pose.pose.position"])
    assert [odom.leaves[i] for i in position.indices()] == [
        "pose.pose.position.x", "pose.pose.position.y", "pose.pose.position.z"]
    assert paths_in_mask(odom, position) == ["pose.pose.position"]
    assert paths_in_mask(sch, mask_for_paths(sch, ["header", "current"])) == [
        "header", "current"]


def test_paper_style_top_level_mask() -> None:
    cloud = schema("sensor_msgs/msg/PointCloud2")
    # bit j = top-level field j: height (1) and width (2)
    assert paths_in_mask(cloud, top_level_mask(cloud, 0b110)) == ["height", "width"]
    assert mask_except(cloud, ["height"]) == top_level_mask(cloud, 0b111111101)


def test_unknown_field_names_the_fields_that_exist() -> None:
    sch = schema("sensor_msgs/msg/BatteryState")
    with pytest.raises(UsageError, match="current"):
        mask_for_paths(sch, ["curent"])


def test_type_names_in_every_spelling() -> None:
    assert normalize_typename("sensor_msgs::msg::dds_::BatteryState_") == \
        "sensor_msgs/msg/BatteryState"
    assert normalize_typename("sensor_msgs/BatteryState") == "sensor_msgs/msg/BatteryState"
    assert schema("sensor_msgs::msg::dds_::BatteryState_").dds_typename == \
        "sensor_msgs::msg::dds_::BatteryState_"
    with pytest.raises(UsageError):
        schema("no_such_pkg/msg/Nope")
