"""Through the real probes: a RELIABLE KEEP_LAST cell whose link goes dark mid-cell fails
with its stall named, while the same cell on a link that stays up is ok (issue 37).

The link is cut the way a robot's Wi-Fi drops, without telling linklab: 2 s after the first
measured sample the edge host's interfaces go down for 5 s (``ip link set ... down`` in its
namespace), then come back. With a format-1 verdict the cell was "ok" (samples arrived
before and after); the stall rule fails it: nothing arrived for ~5 s with samples
outstanding, more than 100 publish intervals (3.3 s) at 30 Hz.
"""

from __future__ import annotations

import contextlib
import os
import threading

import pytest

from conftest import require_root

pytestmark = pytest.mark.integration

CUT_AT_S, CUT_FOR_S = 2.0, 5.0


def _scenario(middleware: str):
    from linklab.bench.spec import parse_scenario

    return parse_scenario(f"""\
name: dark-{middleware}
fixed:
  middleware: {middleware}
  link: wifi-ideal
  payload: 4KiB
  rate: 30Hz
  count: 300
  qos: reliable
  history: "keep_last:10"
  warmup: 0.5s
  grace: 6s
""", f"dark-{middleware}.yaml")


def _environment(cut: bool):
    from linklab.bench.namespace_environment import LinklabEnvironment

    class DarkLink(LinklabEnvironment):
        """Real links; with ``cut``, the edge's interfaces go down mid-cell, undeclared."""

        @contextlib.contextmanager
        def link(self, cell, run_tag):
            with super().link(cell, run_tag) as bed:
                timers: list[threading.Timer] = []
                start = bed.start_traffic

                def set_edge(state: str) -> None:
                    bed.bed.run("edge", ["sh", "-c", "for i in $(ls /sys/class/net); do "
                                         f"[ $i = lo ] || ip link set $i {state}; done"])

                def start_traffic(first_sample_in_s: float) -> None:
                    start(first_sample_in_s)
                    if cut:
                        down = first_sample_in_s + CUT_AT_S
                        timers.append(threading.Timer(down, set_edge, ("down",)))
                        timers.append(threading.Timer(down + CUT_FOR_S, set_edge, ("up",)))
                        for timer in timers:
                            timer.start()

                bed.start_traffic = start_traffic
                try:
                    yield bed
                finally:
                    for timer in timers:
                        timer.cancel()
                        if timer.is_alive():
                            timer.join()

    return DarkLink()


def _run(tmp_path, middleware: str, cut: bool) -> dict:
    from linklab.bench.matrix import expand
    from linklab.bench.runner import run_cells
    from linklab.rundir import RunStore

    scenario = _scenario(middleware)
    cells = expand(scenario)
    store = RunStore.create(tmp_path / f"run-{cut}", scenario=scenario.to_dict(), options={},
                            planned=[c.cell_id for c in cells], estimated_s=20.0)
    (row,) = run_cells(store, cells, _environment(cut),
                       run_tag=f"dk{os.getpid() % 10000}{int(cut)}")
    return row


@pytest.mark.parametrize("middleware", ["fastdds", "cyclonedds"])
def test_a_keep_last_cell_whose_link_goes_dark_fails_with_its_stall(tmp_path, middleware):
    require_root()
    row = _run(tmp_path, middleware, cut=True)
    seen = {k: row.get(k) for k in ("status", "failure_reason", "received", "published",
                                    "stall_max_s", "stall_at_s", "completion_rule")}
    assert row["status"] == "failed", seen
    assert row["failure_reason"].startswith("stalled: nothing arrived for "), seen
    # the cut lasted 5 s from 2 s; the stall began within a few intervals of it and lasted
    # at least as long (plus the middleware's way back: a heartbeat, a repair)
    assert CUT_FOR_S - 0.2 <= row["stall_max_s"] <= CUT_FOR_S + 4.0, seen
    assert abs(row["stall_at_s"] - CUT_AT_S) < 0.5, seen
    assert "RELIABLE KEEP_LAST 10" in row["completion_rule"], seen
    assert 0 < row["received"] < row["published"] == 300, seen


def test_the_same_cell_on_a_link_that_stays_up_is_ok(tmp_path):
    require_root()
    row = _run(tmp_path, "fastdds", cut=False)
    assert row["status"] == "ok", row.get("failure_reason")
    assert row["stall_max_s"] < 1.0 and row["received"] == 300
