"""One class per impairment (linklab.link.impairments): its fields, its stages, and the
relay stage it becomes. Pure, no root."""

from __future__ import annotations

from dataclasses import fields

import pytest

from linklab.emu.directives import Delay, GilbertElliott
from linklab.errors import LinklabError
from linklab.link.impairments import (
    FIELDS,
    RELAY_KINDS,
    BurstLoss,
    BurstLossStage,
    DelayStage,
    DirectionSpec,
    JitterStage,
    LossStage,
    describe_direction,
    direction_stages,
    relay_directives,
)
from linklab.link.spec import STAGE_FIELDS, build_spec

EVERY_KIND = frozenset({"loss", "rate", "outage", "delay", "jitter", "burst_loss", "trace"})


def test_every_field_fills_an_attribute_of_a_direction():
    attrs = {f.name for f in fields(DirectionSpec)}
    assert {f.attr for f in FIELDS.values()} == attrs
    assert list(FIELDS) == ["loss", "rate", "outage", "delay", "jitter", "jitter_distribution",
                            "burst_loss", "trace", "queue", "queue_limit"]
    assert STAGE_FIELDS[:len(FIELDS)] == tuple(FIELDS)


def test_the_relay_runs_the_impairments_that_have_a_relay_form():
    assert RELAY_KINDS == {"delay": "delay", "jitter": "delay", "burst_loss": "loss",
                           "trace": "trace", "rate": "rate", "medium": "medium"}


def test_a_kernel_impairment_refuses_the_relay_in_one_line():
    with pytest.raises(LinklabError, match="the emu wire cannot run a 'loss' stage"):
        LossStage(0.01).relay_stage()


def test_delay_and_jitter_are_one_relay_stage_where_the_first_stood():
    model = BurstLoss(0.01, 0.3)
    stages = [BurstLossStage(model), DelayStage(0.03), JitterStage(0.005, "normal")]
    assert relay_directives(stages) == (GilbertElliott(0.01, 0.3, 1.0, 0.0),
                                        Delay(0.03, 0.005, "normal"))
    assert relay_directives([JitterStage(0.002)]) == (Delay(0.0, 0.002, "uniform"),)


def test_a_direction_is_described_and_staged_by_its_impairments():
    spec = build_spec(None, None, {"loss": "1%", "rate": "10Mbit/s", "delay": "5ms"})
    assert describe_direction(spec.up) == {"loss": "1 %", "rate": "10 Mbit/s",
                                           "delay": "5 ms"}
    kinds = [s.kind for s in direction_stages(spec.up, EVERY_KIND)]
    assert kinds == ["rate", "loss", "delay"]
    assert describe_direction(DirectionSpec()) == {"loss": "0 %"}
