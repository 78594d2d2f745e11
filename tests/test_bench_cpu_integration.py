"""CPU contention really applied (issue 38 item 1; root, namespaces, the Fast DDS probe).

Each test runs ``linklab bench`` as a user does and watches /proc and the cgroup files
while the cell runs: the competitors of ``cpu_load`` run throughout the probes' lives,
CPU-bound, at the probes' priority, and none is left after the run; the probes of a
``cpu_quota`` cell are in a group with that quota and the group is gone afterwards; a
SIGKILLed bench leaves competitors, probes and groups that ``linklab link clean`` removes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import require_root
from linklab.link import cgroups, competitors

# alone (make test runs it after the others, one at a time):
# it loads the CPU and finds its competitors among all processes
pytestmark = [pytest.mark.integration, pytest.mark.alone]
REPO = Path(__file__).resolve().parents[1]
CELL = ("name: busy\nfixed: {link: wifi-ideal, rate: 30Hz, count: COUNT, payload: 16KiB, "
        "warmup: 0.5s, grace: 5s, EXTRA}\n")


def start_bench(tmp_path: Path, extra: str, count: int = 150) -> subprocess.Popen:
    path = tmp_path / "s.yaml"
    path.write_text(CELL.replace("COUNT", str(count)).replace("EXTRA", extra))
    return subprocess.Popen([sys.executable, "-m", "linklab.cli", "bench", str(path),
                             "--out", str(tmp_path / "runs")], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def processes(bench_pid: int) -> tuple[list[int], list[int]]:
    """(competitors, probes of this bench) running now."""
    found: tuple[list[int], list[int]] = ([], [])
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        argv = cmdline(int(entry))
        # the competitor itself: ``ip netns exec HOST`` carries the same words in its argv
        # until it has entered the namespace and exec'd, so match the whole argv
        if argv[:-1] == competitors.argv() and argv[-1] == "":
            found[0].append(int(entry))
        elif argv and argv[0].endswith("linklab-probe-fastdds") and any(
                a.startswith(f"linklab_{bench_pid}_") for a in argv):
            found[1].append(int(entry))
    return found


def traits(pid: int) -> dict:
    """What decides a process's share of the CPU: nice, policy, autogroup, cpu cgroup."""
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu_line = next(line for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines()
                    if "cpu" in line.split(":")[1].split(","))
    return {"nice": stat[16], "policy": stat[38], "cgroup": cpu_line.split(":", 2)[2],
            # the kernel names an autogroup only for a task in the root cpu cgroup (empty
            # when the tests run in a group of their own, as under a CI runner)
            "autogroup": (Path(f"/proc/{pid}/autogroup").read_text().split() or [""])[0]}


def stop(bench: subprocess.Popen) -> None:
    """End a bench a failed assertion left running as a user would (Ctrl-C: it removes its
    competitors, probes and groups), so that nothing CPU-bound outlives the test."""
    if bench.poll() is not None:
        return
    bench.send_signal(signal.SIGINT)
    try:
        bench.wait(timeout=60)
    except subprocess.TimeoutExpired:
        bench.kill()
        bench.wait()
        subprocess.run([sys.executable, "-m", "linklab.cli", "link", "clean"],
                       capture_output=True, timeout=120, cwd=REPO)


def netns_of(pid: int) -> str | None:
    ino = os.stat(f"/proc/{pid}/ns/net").st_ino
    for name in os.listdir("/run/netns"):
        if os.stat(f"/run/netns/{name}").st_ino == ino:
            return name
    return None


def only_run(tmp_path: Path) -> Path:
    (run,) = [p for p in (tmp_path / "runs").iterdir() if (p / "run.json").exists()]
    return run


def the_row(run: Path) -> dict:
    (row,) = pq.read_table(run / "cells.parquet").to_pylist()
    return row


def alive(pid: int, start: str | None) -> bool:
    from linklab.link.journal import process_alive

    return process_alive(pid, start)


def test_competitors_run_throughout_the_probes_at_their_priority_and_end(tmp_path):
    require_root()
    bench = start_bench(tmp_path, "cpu_load: 2/core")
    samples, seen, where = [], {}, {}
    try:
        while bench.poll() is None:
            comps, probes = processes(bench.pid)
            row = {"competitors": set(comps), "probes": set(probes), "traits": {}}
            for pid in comps + probes:
                try:
                    row["traits"][pid] = traits(pid)
                    if pid in comps and pid not in where:
                        where[pid] = netns_of(pid)
                    from linklab.link.journal import process_start_time
                    seen.setdefault(pid, process_start_time(pid))
                except (OSError, StopIteration):
                    pass  # ended between the listing and the read
            samples.append(row)
            time.sleep(0.1)
        out, err = bench.communicate()
    finally:
        stop(bench)
    assert bench.returncode == 0, err[-2000:]
    during = [s for s in samples if s["probes"]]
    assert len(during) >= 30, "the probes ran for seconds"
    # every moment a probe of the cell ran, the same 4 competitors ran (2 per online CPU)
    everyone = set().union(*(s["competitors"] for s in during))
    assert len(everyone) == 4 == 2 * competitors.online_cpus()
    assert all(s["competitors"] == everyone for s in during)
    # in the hosts' namespaces, two each, and at the probes' nice, policy, cgroup, autogroup
    tags = sorted(name.rsplit("-", 1)[1] for name in (where[p] for p in everyone))
    assert tags == ["edge", "edge", "robot", "robot"]
    for s in during:
        for comp in s["competitors"] & set(s["traits"]):
            for probe in s["probes"] & set(s["traits"]):
                assert s["traits"][comp] == s["traits"][probe]
    # none is left
    assert not any(alive(pid, seen[pid]) for pid in everyone)
    assert processes(bench.pid) == ([], [])

    run = only_run(tmp_path)
    row = the_row(run)
    assert row["status"] == "ok", row["failure_reason"]
    assert (row["cpu_load"], row["cpu_load_processes"], row["cpu_load_placement"]) == \
        ("2/core", 4, "robot:2,edge:2")
    # they ran through the cell (5 s of publishing) and were CPU-bound: each second of
    # their lives on a CPU or waiting for one (schedstat), never asleep
    wall = row["cpu_load_wall_s"]
    assert 5.0 < wall < 60.0
    busy = row["cpu_load_cpu_s"] + row["cpu_load_runqueue_s"]
    assert 0.95 * 4 * wall <= busy <= 4 * wall * 1.01 + 0.05, (row["cpu_load_cpu_s"], busy)
    detail = json.loads((run / "records" / row["cell_id"] / "cpu.json").read_text())
    assert all(c["cpu_s"] > 0.05 * c["wall_s"] for c in detail["competitors"]), detail
    info = json.loads((run / "run.json").read_text())["cpu"]
    assert info["competitor"]["code"] == "while True: pass"
    assert info["competitor"]["argv"][-1] == competitors.TAG
    report = subprocess.run([sys.executable, "-m", "linklab.cli", "report", str(run)],
                            capture_output=True, text=True, timeout=60, cwd=REPO,
                            env=dict(os.environ, COLUMNS="200"))
    assert "cpu_load=2/core (4 competitors)" in report.stdout, report.stdout[-2000:]


def test_probes_run_in_a_group_with_the_quota_and_the_group_goes_away(tmp_path):
    require_root()
    controller = cgroups.find()
    assert isinstance(controller, cgroups.Controller), controller
    bench = start_bench(tmp_path, "cpu_quota: 0.5cores, cpu_load: 1")
    groups, competitor_groups = {}, set()
    try:
        while bench.poll() is None:
            comps, probes = processes(bench.pid)
            for pid in probes + comps:
                try:
                    group = traits(pid)["cgroup"]
                    path = controller.mount / group.lstrip("/")
                    quota = cgroups.read_quota(path)
                except (OSError, StopIteration):
                    continue
                if pid in comps:
                    competitor_groups.add(group)
                else:
                    groups[group] = quota
            time.sleep(0.1)
        out, err = bench.communicate()
    finally:
        stop(bench)
    assert bench.returncode == 0, err[-2000:]
    # the probes of robot and of edge, each host in a group of its own with 50 ms of
    # every 100 ms; the competitor stays where the bench runs
    assert sorted(g.rsplit("-", 1)[1] for g in groups) == ["edge", "robot"], groups
    assert all(g.rsplit("/", 1)[1].startswith("linklab-") for g in groups)
    assert set(groups.values()) == {(50_000, 100_000)}
    assert competitor_groups == {traits(os.getpid())["cgroup"]}
    assert not any((controller.mount / g.lstrip("/")).exists() for g in groups)
    row = the_row(only_run(tmp_path))
    assert row["status"] == "ok", row["failure_reason"]
    assert (row["cpu_quota"], row["cpu_quota_hosts"], row["cpu_quota_us"],
            row["cpu_period_us"]) == ("0.5cores", "robot,edge", 50_000, 100_000)
    assert row["cpu_quota_periods"] > 0  # the probes used CPU in the groups


def test_a_sigkilled_bench_leaves_what_link_clean_removes(tmp_path):
    require_root()
    controller = cgroups.find()
    assert isinstance(controller, cgroups.Controller), controller
    bench = start_bench(tmp_path, "cpu_load: 2/core, cpu_quota: 0.5cores", count=3000)
    left: dict[int, str | None] = {}
    groups: set[Path] = set()
    from linklab.link.journal import process_start_time

    try:
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline and bench.poll() is None:
            comps, probes = processes(bench.pid)
            if len(comps) == 4 and len(probes) == 2:
                for pid in comps + probes:
                    left[pid] = process_start_time(pid)
                    if pid in probes:
                        groups.add(controller.mount / traits(pid)["cgroup"].lstrip("/"))
                break
            time.sleep(0.1)
        assert len(left) == 6, "the competitors and probes of the cell did not all start"
        bench.send_signal(signal.SIGKILL)
        bench.wait(timeout=10)
    finally:
        stop(bench)
    time.sleep(0.5)
    assert all(alive(pid, start) for pid, start in left.items())  # left behind
    assert len(groups) == 2 and all(g.exists() for g in groups)
    clean = subprocess.run([sys.executable, "-m", "linklab.cli", "link", "clean"],
                           capture_output=True, text=True, timeout=60, cwd=REPO)
    assert clean.returncode == 0, clean.stderr
    assert not any(alive(pid, start) for pid, start in left.items())
    assert not any(g.exists() for g in groups)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    tag = next(iter(groups)).name.split("-")[1]
    assert f"linklab-{tag}-" not in listed
