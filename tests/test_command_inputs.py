"""The text-to-input parsing the tune and model commands call (tune/input_text.py,
model/input_text.py) and what tune concludes (tune/outcome.py), without the CLI."""

from __future__ import annotations

import pytest

from linklab.errors import UsageError
from linklab.model.input_text import evaluate_sweep, parse_model_input
from linklab.model.sweep import parse_sweep
from linklab.tune import tune
from linklab.tune.input_text import parse_cpu_share, parse_peer, parse_tuning_input
from linklab.tune.outcome import cpu_falls_short, tuning_document


def tuning(**changes):
    args = dict(rate="30Hz", payload="256KiB", link="433Mbit/s", utilization="0.65",
                mtu="1500", overlay="none", subscribers=1, ros="humble", per=None, peers=[])
    args.update(changes)
    return parse_tuning_input(**args)


def test_tuning_input_parses_every_option_and_names_the_bad_one():
    t = tuning(peers=["10.0.0.2", "[fe80::1]:7400"], delay="3ms")
    assert t.rate_hz == 30 and t.payload_bytes == 256 * 1024 and t.delay_s == 0.003
    assert t.peers == ("10.0.0.2", "[fe80::1]:7400")
    assert t.middlewares == ("fastdds", "cyclonedds")
    with pytest.raises(UsageError) as error:
        tuning(utilization="0")
    assert error.value.argument == "--utilization"
    with pytest.raises(UsageError) as error:
        tuning(cpu_load="2/core", cpu_share="50%")
    assert error.value.argument == "--cpu-share"
    with pytest.raises(UsageError):
        parse_peer("robot.local:70000")
    assert parse_cpu_share("1.5cores") == 1.5 and parse_cpu_share("50%") == 0.5


def test_the_cpu_verdict_and_the_json_document():
    t = tuning()
    result = tune(t)
    assert not cpu_falls_short(result, t.middlewares)   # no --cpu-load: no verdict
    document = tuning_document(t, result, {"fastdds": "a.xml", "cyclonedds": "b.xml"}, None)
    assert document["files"] == {"fastdds": "a.xml", "cyclonedds": "b.xml"}
    assert set(document["latency_model"]) == {"fastdds", "cyclonedds"} and "verify" not in document


def test_model_input_and_a_sweeps_points():
    base = parse_model_input("30Hz", "256KiB", "433Mbit/s", "1%", "65500", None, "1500",
                             "paper", "0.65", 1, "none")
    assert base.per == 0.01 and base.max_message_size == 65500
    points = evaluate_sweep(base, parse_sweep("payload=32KiB,64KiB"))
    assert [v for v, _ in points] == [32 * 1024, 64 * 1024]
    assert all(r.inputs.payload_bytes == v for v, r in points)
    with pytest.raises(UsageError) as error:
        evaluate_sweep(base, parse_sweep("per=0..100%"))
    assert error.value.argument == "--sweep"
    with pytest.raises(UsageError) as error:
        parse_model_input("30Hz", "256KiB", "433Mbit/s", "100%", "65500", None, "1500",
                          "paper", "0.65", 1, "none")
    assert error.value.argument == "--per"
