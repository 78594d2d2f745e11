"""Generated scenario files and link preset files: any text ends in a validated scenario
(and its cells) or preset table, or in linklab's own one-line error -- never another
exception. Seeded (``derandomize``); the same property as tests/test_properties.py.

Inputs are built three ways: structured documents from the keys and values these files
use (valid and invalid mixed), mutations of valid files (bytes dropped, inserted,
replaced), and arbitrary bytes.
"""

from __future__ import annotations

import yaml
from hypothesis import given
from hypothesis import strategies as st

from linklab.bench.matrix import expand
from linklab.bench.spec import parse_scenario
from linklab.link.presets import load_preset_file
from test_properties import MANY, SOME, one_line_error_or

VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
              st.floats(allow_nan=True, allow_infinity=True),
              st.sampled_from(["30Hz", "max", "75%", "150%", "256KiB", "1e300GiB", "20s",
                               "1e308h", "10%", "300Mbit/s", "wifi-severe", "wifi-nowhere",
                               "reliable", "sensor_data", "keep_last:5", "keep_last:0",
                               "transient_local", "star", "pair", "robot1", "edge", "ap",
                               "!!python/object:os.system", "fastdds", "mqtt", "zenoh-peer",
                               ">= 29Hz", "<= 80ms", "gemodel:1%,30%,100%,0%", "cross-host",
                               "", " ", "x" * 40]),
              st.text(max_size=12)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(
                                ["name", "from", "to", "pairs", "payload", "rate", "qos",
                                 "preset", "loss", "rate", "delay", "up", "down", "where",
                                 "topic", "reception_rate", "p", "r"]), inner, max_size=4)),
    max_leaves=12)
CELL_KEYS = ["middleware", "profile", "link", "topology", "hosts", "flow", "payload", "rate",
             "qos", "history", "depth", "durability", "type", "count", "duration", "warmup",
             "outage_start", "outage_length", "grace", "subscribers", "pairs", "topics",
             "link.loss", "link.rate", "link.colour", "colour"]
sections = st.dictionaries(st.sampled_from(CELL_KEYS), VALUES, max_size=8)
documents = st.fixed_dictionaries({}, optional={
    "name": st.one_of(st.just("s"), VALUES), "fixed": st.one_of(sections, VALUES),
    "axes": st.one_of(st.dictionaries(st.sampled_from(CELL_KEYS), st.lists(VALUES, max_size=3),
                                      max_size=4), VALUES),
    "trials": VALUES, "gates": VALUES, "search": VALUES, "quick": sections,
    "presets": VALUES, "colour": VALUES})

GOOD_SCENARIO = """\
name: good
fixed:
  link: {preset: wifi-severe, loss: 10%}
  topology: star
  payload: 1KiB
  rate: 30Hz
  count: 20
  topics:
    - {name: cam, from: edge, to: [robot1, robot2], qos: sensor_data}
    - {name: ctl, pairs: 2, history: keep_last:3, durability: transient_local}
axes:
  link.delay: [0ms, 2ms]
  middleware: [fastdds, cyclonedds]
gates:
  - where: {middleware: fastdds}
    reception_rate: ">= 29Hz"
search: {trial: 2s}
"""


def mutations(text: str):
    data = text.encode()
    return st.lists(st.tuples(st.integers(0, len(data)), st.integers(0, 6),
                              st.binary(max_size=6)), max_size=4).map(
        lambda edits: _apply(data, edits))


def _apply(data: bytes, edits) -> bytes:
    for at, drop, insert in edits:
        data = data[:at] + insert + data[at + drop:]
    return data


def scenario_outcome(data: bytes) -> None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return  # load_scenario's own one-line error (tests/test_bench_endpoints_spec.py)
    scenario, _ = one_line_error_or(parse_scenario, text, "s.yaml")
    if scenario is not None:
        one_line_error_or(expand, scenario)


def test_the_good_scenario_parses():
    assert len(expand(parse_scenario(GOOD_SCENARIO, "s.yaml"))) == 4


@MANY
@given(doc=documents)
def test_a_scenario_document_is_accepted_or_refused_in_one_line(doc):
    scenario_outcome(yaml.safe_dump(doc, allow_unicode=True).encode())


@MANY
@given(data=mutations(GOOD_SCENARIO))
def test_a_damaged_scenario_is_accepted_or_refused_in_one_line(data):
    scenario_outcome(data)


@SOME
@given(data=st.binary(max_size=200))
def test_bytes_as_a_scenario_are_accepted_or_refused_in_one_line(data):
    scenario_outcome(data)


PRESET_KEYS = ["description", "source", "rate", "loss", "outage", "mtu", "delay", "jitter",
               "jitter_distribution", "burst_loss", "trace", "up", "down", "colour"]
preset_docs = st.dictionaries(
    st.one_of(st.sampled_from(["lab", "wifi-mild", "a b", "x" * 80]), st.text(max_size=6)),
    st.one_of(st.dictionaries(st.sampled_from(PRESET_KEYS), VALUES, max_size=5), VALUES),
    max_size=3)
GOOD_PRESETS = """\
lab-wifi:
  description: a hall's Wi-Fi
  source: measured
  rate: 40Mbit/s
  loss: up=5%,down=1%
  delay: 2ms
  jitter: 1ms
  jitter_distribution: normal
lab-lte:
  up: {rate: 5Mbit/s}
  down: {rate: 20Mbit/s, burst_loss: "gemodel:1%,30%,100%,0%"}
  outage: 10s+2s/30s
  mtu: 1400
"""


def preset_outcome(tmp_path, data: bytes) -> None:
    path = tmp_path / "presets.yaml"
    path.write_bytes(data)
    one_line_error_or(load_preset_file, path)


def test_the_good_preset_file_loads(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(GOOD_PRESETS)
    assert sorted(load_preset_file(path)) == ["lab-lte", "lab-wifi"]


@SOME
@given(doc=preset_docs)
def test_a_preset_document_is_loaded_or_refused_in_one_line(tmp_path, doc):
    preset_outcome(tmp_path, yaml.safe_dump(doc, allow_unicode=True).encode())


@SOME
@given(data=st.one_of(mutations(GOOD_PRESETS), st.binary(max_size=200)))
def test_a_damaged_preset_file_is_loaded_or_refused_in_one_line(tmp_path, data):
    preset_outcome(tmp_path, data)
