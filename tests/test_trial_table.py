"""scripts/trial_table.py: the per-trial rows and target tallies in docs/RESULTS.md."""

from __future__ import annotations

from conftest import load_script
from linklab.rundir import RunStore

table = load_script("trial_table")


def _row(trial, hz, received=1000, status="ok", mw="cyclonedds", size=524288):
    return {"middleware": mw, "profile": "optimized", "link_preset": "wifi-severe",
            "payload_bytes": size, "trial": trial, "status": status, "received": received,
            "published": 1000, "reception_rate_hz": hz, "latency_mean_ms": 180.0,
            "latency_p99_ms": 400.0, "wire_amplification": 1.4, "model_amplification": 1.43,
            "rate_dropped_packets": 0, "sub_udp_rcvbuf_errors": 0,
            "history_applied": "keep_last:47", "failure_reason": None}


def test_a_trial_meets_the_rate_and_completeness_targets_separately():
    assert table.meets(_row(1, 30.0), 29) == (True, True)
    assert table.meets(_row(1, 28.9), 29) == (False, True)
    assert table.meets(_row(1, 30.0, received=999), 29) == (True, False)
    # a failed cell meets nothing, whatever its raw rate
    assert table.meets(_row(1, 30.0, status="failed"), 29) == (False, False)
    assert table.meets(_row(1, None), 29) == (False, True)


def test_tally_counts_per_cell():
    rows = [_row(t, 30.0) for t in range(1, 9)] + [_row(9, 25.0), _row(10, 30.0, received=998)]
    rows += [_row(1, 30.0, mw="fastdds")]
    lines = table.tally(rows, 29)
    assert lines[2] == ("| cyclonedds | optimized | wifi-severe | 512 KiB | 9/10 | 9/10 "
                        "| 8/10 |")
    assert lines[3].startswith("| fastdds | optimized | wifi-severe | 512 KiB | 1/1 ")


def test_trial_rows_name_the_failure_and_show_missing_values_as_dashes():
    bad = _row(3, None, received=0, status="failed")
    bad["failure_reason"] = "nothing received"
    bad["latency_mean_ms"] = None
    (line,) = table.trial_rows([bad])[2:]
    assert "| 0 / 1000 | — | — (400.0) |" in line
    assert line.endswith("| failed: nothing received |")


def test_main_reads_a_run_directory_and_refuses_one_without_cells(tmp_path, capsys):
    run = tmp_path / "run"
    store = RunStore.create(run, scenario={"name": "x"}, options={},
                            planned=["a", "b"], estimated_s=1.0, versions={})
    for i, row in enumerate([_row(2, 30.0), _row(1, 29.5)]):
        store.append({"index": i, "cell_id": f"c{i}", "link": "wifi-severe", **row})
    assert table.main([str(run)]) == 0
    out = capsys.readouterr().out
    assert out.index("| 512 KiB | 1 |") < out.index("| 512 KiB | 2 |")
    assert "| 2/2 | 2/2 | 2/2 |" in out
    assert table.main([str(tmp_path / "nope")]) == 2
    assert "run_dir:" in capsys.readouterr().err


def test_a_busy_run_names_the_load_the_stall_and_the_writers_cpu_and_tallies_per_load():
    rows = []
    for load, received in (("none", 1000), ("2/core", 1000), ("2/core", 46)):
        row = dict(_row(len(rows) + 1, 30.0 if received == 1000 else 4.6, received=received),
                   cpu_load=load, stall_max_s=0.25 if received == 1000 else 10.4,
                   pub_cpu_s=2.5)
        rows.append(row)
    lines = table.trial_rows(rows)
    assert lines[0].startswith("| cpu_load | middleware |")
    assert "| longest stall s | writer CPU s | outcome |" in lines[0]
    assert lines[1].count("---") == 13
    assert lines[4].startswith("| 2/core | cyclonedds |") and "| 10.40 | 2.50 |" in lines[4]
    tallied = table.tally(rows, 29)
    assert tallied[2].startswith("| none | cyclonedds |") and tallied[2].endswith("| 1/1 |")
    assert tallied[3].startswith("| 2/core |") and tallied[3].endswith("| 1/2 | 1/2 | 1/2 |")


def test_rows_name_their_profile_file_when_the_cells_differ_in_it():
    rows = [_row(1, 30.0), dict(_row(1, 30.0), profile="/x/busy-robot-pacing/fastdds-25ms.xml")]
    lines = table.trial_rows(rows)
    assert lines[0].startswith("| profile | middleware |")
    assert lines[3].startswith("| fastdds-25ms.xml | cyclonedds |")
    assert table.tally(rows, 29)[3].startswith("| cyclonedds | fastdds-25ms.xml |")
