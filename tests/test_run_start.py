"""bench/run_start.py: a new run directory, and what a --resume reads back from it."""

from __future__ import annotations

from linklab.bench.matrix import expand
from linklab.bench.run_start import create_run, holds_scenario, saved_gates, saved_scenario
from linklab.bench.spec import parse_scenario
from linklab.rundir import RunStore

SCENARIO = """\
name: start-test
fixed: {rate: 30Hz, link: wifi-ideal, count: 30}
axes:
  payload: [32KiB, 64KiB]
"""


def test_a_new_run_keeps_what_a_resume_needs(tmp_path):
    scenario = parse_scenario(SCENARIO, "s.yaml")
    cells = expand(scenario)
    store = create_run(tmp_path, scenario, [c.cell_id for c in cells], kind="k8s",
                       options={"quick": False, "repeat": 2, "gates": ["delivery>=99%", 3]},
                       estimated_s=12.0)
    assert store.root.parent == tmp_path and store.root.name.startswith("start-test-k8s-")
    info = RunStore.open(store.root).info
    assert holds_scenario(info)
    again = saved_scenario(info)
    assert again.name == "start-test" and again.trials == 2   # its --repeat, parsed again
    assert [c.cell_id for c in expand(again)] == [c.cell_id for c in expand(
        parse_scenario(SCENARIO, "s.yaml", repeat=2))]
    assert saved_gates(info) == ["delivery>=99%"]   # only what a --gate can be


def test_a_run_without_its_scenario_text_cannot_be_resumed():
    assert not holds_scenario({})
    assert not holds_scenario({"scenario": {"text": "name: x", "path": ""}})
    assert not holds_scenario({"scenario": {"text": None, "path": "s.yaml"}})
    assert saved_gates({}) == []
