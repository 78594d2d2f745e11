"""The ns-3 simulation's largest lag within a cell, from the cell's two snapshots
(linklab.bench.simlag, on hand-made snapshots; a real pair: tests/test_ns3_medium.py)."""

from __future__ import annotations

import pytest

from linklab.bench.simlag import simulator_lag_ms
from linklab.link.ns3 import lag_max_since

# a medium that lagged 9 ms at 0.15 s, 4 ms in (1.2, 1.3], 1.5 ms in (2.1, 2.2], and at
# most 0.3 ms since: the per-period maxima no later period reached (ns3/air.cc)
PEAKS = [[0.2, 9.0], [1.3, 4.0], [2.2, 1.5], [2.4, 0.3]]


def figures(sim_s: float, peaks=PEAKS, pid: int = 41, lag_ms: float = 0.05,
            from_s: float = 0.0) -> dict:
    return {"pid": pid, "sim_s": sim_s, "lag_ms": lag_ms,
            "lag_max_ms": max((v for _, v in peaks or [[0, 9.0]]), default=0.0),
            "lag_max_at_s": 0.15, "lag_peaks": peaks, "lag_peaks_from_s": from_s}


def snapshot(sim: dict | None, *, wrapped: bool = True) -> dict:
    """A LinkBed.snapshot (wrapped) or Testbed.counters: the air stages carry ``sim``."""
    stages = [{"link": "robot-edge", "direction": d, "kind": "air", "runs_in": "relay",
               "params": {}, "passed_packets": 3, "dropped_packets": 0,
               **({"simulator": sim} if sim is not None else {})} for d in ("up", "down")]
    counters = {"stages": stages, "interfaces": {}, "monotonic_ns": 1}
    return {"link": counters, "udp": {}} if wrapped else counters


@pytest.mark.parametrize(("since_s", "expected"), [
    (0.0, 9.0),     # the whole run
    (0.19, 9.0),    # the period open then, (0.1, 0.2], counts whole
    (0.2, 4.0),     # after the 9 ms period: the largest is the 4 ms one
    (1.0, 4.0),
    (1.3, 1.5),
    (2.25, 0.3),
    (2.4, 0.05),    # no period closed since: the latest lag
])
def test_the_largest_lag_after_a_time_is_the_first_later_peak(since_s, expected):
    assert lag_max_since(figures(2.4), since_s) == expected


def test_a_cell_gets_the_lag_of_its_own_window_not_of_the_run():
    """A 9 ms lag before the cell is not the cell's: the cell from 1.3 s to 2.4 s had 1.5."""
    assert simulator_lag_ms(snapshot(figures(1.3)), snapshot(figures(2.4))) == 1.5
    assert simulator_lag_ms(snapshot(figures(0.1)), snapshot(figures(2.4))) == 9.0
    # Testbed.counters() alone (no LinkBed wrapping) reads the same
    assert simulator_lag_ms(snapshot(figures(1.3), wrapped=False),
                            snapshot(figures(2.4), wrapped=False)) == 1.5


def test_no_simulator_on_the_link_is_none():
    veth = {"link": {"stages": [{"kind": "loss", "params": {}, "dropped_packets": 4}],
                     "interfaces": {}}, "udp": {}}
    assert simulator_lag_ms(veth, veth) is None
    assert simulator_lag_ms({}, {}) is None
    assert simulator_lag_ms(snapshot(None), snapshot(None)) is None   # stats not readable


def test_the_relays_medium_gives_its_largest_lag_since_it_started():
    stage = {"kind": "medium", "params": {}, "medium": {"lag_max_ns": 2_500_000,
                                                         "lag_p99_ns": 40_000}}
    after = {"link": {"stages": [stage], "interfaces": {}}, "udp": {}}
    assert simulator_lag_ms({}, after) == 2.5
    stage["medium"] = {"stations": {}}   # a relay that does not track its lag
    assert simulator_lag_ms({}, after) is None


def test_without_a_usable_start_the_window_is_the_whole_simulation():
    after = snapshot(figures(2.4))
    assert simulator_lag_ms(snapshot(None), after) == 9.0          # no figures before
    assert simulator_lag_ms(snapshot(figures(1.3, pid=7)), after) == 9.0   # restarted


def test_where_the_kept_peaks_do_not_reach_back_the_answer_is_the_bound_since_the_start():
    """Past the program's cap (lag_peaks_from_s) or from a program without lag_peaks, the
    window's largest lag is not known: the largest since the start (an upper bound)."""
    capped = figures(2.4, peaks=[[1.3, 4.0], [2.2, 1.5]], from_s=1.0)
    capped["lag_max_ms"] = 9.0
    assert simulator_lag_ms(snapshot(figures(0.5)), snapshot(capped)) == 9.0
    assert simulator_lag_ms(snapshot(figures(1.3)), snapshot(capped)) == 1.5   # covered
    old = figures(2.4, peaks=None)
    old["lag_max_ms"] = 9.0
    assert simulator_lag_ms(snapshot(figures(1.3)), snapshot(old)) == 9.0


def test_a_note_only_above_one_millisecond():
    from linklab.bench.simlag import simulator_lag_note

    assert simulator_lag_note(None) is None and simulator_lag_note(1.0) is None
    note = simulator_lag_note(12.34)
    assert note is not None and "12.3 ms behind real time" in note and "\n" not in note
