"""CPU contention as cell settings (issue 38 item 1): ``cpu_load`` competitors and a
``cpu_quota`` for the probes -- parsing, refusals before anything runs (``--dry-run``
too), the journal's cgroup record, the race-free join, and how reports show them.

None needs root; the real competitors and quota groups are in
test_bench_cpu_integration.py.
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from linklab.bench import cpu
from linklab.bench.matrix import expand
from linklab.bench.spec import parse_scenario
from linklab.errors import UsageError
from linklab.link import cgroups, made

REPO = Path(__file__).resolve().parents[1]
BASE = "name: s\nfixed:\n  link: wifi-ideal\n  payload: 1KiB\n  rate: 30Hz\n  count: 10\n"


def cells_of(extra: str) -> list:
    """The cells of BASE (its fixed: open) plus ``extra`` (more fixed fields, indented by
    two, or an axes: section)."""
    return expand(parse_scenario(BASE + extra, "s.yaml"))


def error_of(extra: str) -> str:
    with pytest.raises(UsageError) as info:
        cells_of(extra)
    return str(info.value)


# --- parsing ------------------------------------------------------------------------------

def test_values_are_canonical_in_cells_ids_and_rows():
    cells = cells_of("axes:\n  cpu_load: [none, 2/core, 3, 1 / cpu]\n"
                     "  cpu_quota: [none, 1.50cores, .5 core]\n")
    assert [c.cpu_load for c in cells[::3]] == ["none", "2/core", "3", "1/core"]
    assert [c.cpu_quota for c in cells[:3]] == ["none", "1.5cores", "0.5cores"]
    assert cells[4].cell_id == "load2-per-core-quota1.5cores"
    assert cells[0].cell_id == "noload-noquota"
    row = cells[4].axes()
    assert (row["cpu_load"], row["cpu_quota"], row["cpu_load_on"], row["cpu_quota_on"]) == \
        ("2/core", "1.5cores", None, None)
    fixed = cells_of("  cpu_load: 2/core\n  cpu_load_on: [robot]\n  cpu_quota_on: edge\n")
    assert (fixed[0].cpu_load_on, fixed[0].cpu_quota_on, fixed[0].cpu_quota) == \
        ("robot", "edge", "none")
    # as an axis, a list of hosts is one value: [robot, edge] -> both hosts
    on = cells_of("axes:\n  cpu_load_on: [robot, [robot, edge]]\n")
    assert [c.cpu_load_on for c in on] == ["robot", "robot,edge"]
    assert [c.cell_id for c in on] == ["load-on-robot", "load-on-robot.edge"]
    # nothing asked: every cell says so
    plain = cells_of("")[0]
    assert (plain.cpu_load, plain.cpu_quota) == ("none", "none") and not cpu.asked(plain)


LOAD = ("expected none, N/core (N CPU-bound competitors per online CPU, 1 to 16) or a "
        "count N of competitors (1 to 1024)")
QUOTA = ("expected none or the CPU time a host's probes may use, in cores: 0.5cores (half "
         "of one CPU), 1.5cores; from 0.01cores to the machine's online CPUs")


@pytest.mark.parametrize("extra, expected", [
    ("  cpu_load: 0\n", f"s.yaml:7: fixed.cpu_load: 0: a count of competitors is 1 to 1024; "
                        f"{LOAD}"),
    ("  cpu_load: 2000\n", "s.yaml:7: fixed.cpu_load: 2000: a count of competitors is 1 to "
                           f"1024; {LOAD}"),
    ("  cpu_load: -1\n", f"s.yaml:7: fixed.cpu_load: -1: a count of competitors is 1 to "
                         f"1024; {LOAD}"),
    ("  cpu_load: 17/core\n", f"s.yaml:7: fixed.cpu_load: '17/core' is not a CPU load; {LOAD}"),
    ("  cpu_load: 0/core\n", f"s.yaml:7: fixed.cpu_load: '0/core' is not a CPU load; {LOAD}"),
    ("  cpu_load: 0.5/core\n", f"s.yaml:7: fixed.cpu_load: '0.5/core' is not a CPU load; "
                               f"{LOAD}"),
    ("  cpu_load: 1.5\n", f"s.yaml:7: fixed.cpu_load: 1.5 is not a CPU load; {LOAD}"),
    ("  cpu_load: 2cores\n", f"s.yaml:7: fixed.cpu_load: '2cores' is not a CPU load; {LOAD}"),
    ("  cpu_load: busy\n", f"s.yaml:7: fixed.cpu_load: 'busy' is not a CPU load; {LOAD}"),
    ("  cpu_load: true\n", f"s.yaml:7: fixed.cpu_load: True is not a CPU load; {LOAD}"),
    ("axes:\n  cpu_load: [none, 2/core, x]\n",
     f"s.yaml:8: axes.cpu_load[2]: 'x' is not a CPU load; {LOAD}"),
    ("  cpu_quota: 50%\n", "s.yaml:7: fixed.cpu_quota: '50%': a percentage does not say of "
                           "what (one CPU? the machine?); write the quota in cores, e.g. "
                           f"0.5cores; {QUOTA}"),
    ("  cpu_quota: 0.5\n", f"s.yaml:7: fixed.cpu_quota: 0.5 is not a CPU quota (no unit); "
                           f"{QUOTA}"),
    ("  cpu_quota: 0cores\n", f"s.yaml:7: fixed.cpu_quota: '0cores': a quota is 0.01 to 1024 "
                              f"cores; {QUOTA}"),
    ("  cpu_quota: 0.001cores\n", "s.yaml:7: fixed.cpu_quota: '0.001cores': a quota is 0.01 "
                                  f"to 1024 cores; {QUOTA}"),
    ("  cpu_quota: 5000cores\n", "s.yaml:7: fixed.cpu_quota: '5000cores': a quota is 0.01 to "
                                 f"1024 cores; {QUOTA}"),
    ("  cpu_quota: -1cores\n", f"s.yaml:7: fixed.cpu_quota: '-1cores' is not a CPU quota; "
                               f"{QUOTA}"),
    ("  cpu_quota: 1.5ghz\n", f"s.yaml:7: fixed.cpu_quota: '1.5ghz' is not a CPU quota; "
                              f"{QUOTA}"),
    ("  cpu_quota: [1cores]\n", f"s.yaml:7: fixed.cpu_quota: ['1cores'] is not a CPU quota; "
                                f"{QUOTA}"),
    ("axes:\n  cpu_quota: [1core, 1cores]\n", "s.yaml:8: axes.cpu_quota: lists the same "
                                              "value twice"),
    ("  cpu_load_on: [Robot]\n", "s.yaml:7: fixed.cpu_load_on: 'Robot' is not a host name; "
                                 "expected a host of the cell's topology or a list of them, "
                                 "e.g. robot or [robot, edge]"),
    ("  cpu_load_on: []\n", "s.yaml:7: fixed.cpu_load_on: an empty list; name at least one "
                            "host, e.g. [robot]"),
    ("  cpu_quota_on: [robot, robot]\n", "s.yaml:7: fixed.cpu_quota_on: names host robot "
                                         "twice"),
    ("  cpu_quota_on: 3\n", "s.yaml:7: fixed.cpu_quota_on: 3 is not a host name; expected a "
                            "host of the cell's topology or a list of them, e.g. robot or "
                            "[robot, edge]"),
])
def test_a_bad_value_is_one_line_naming_the_field_and_what_is_accepted(extra, expected):
    message = error_of(extra)
    assert message == expected
    assert "\n" not in message


# --- what this machine can apply ----------------------------------------------------------

def refusal(cell, *, remote=False, cpus=2, controller="no cgroup cpu controller here"):
    with pytest.raises(UsageError) as info:
        cpu.check_cell(cell, remote=remote, cpus=cpus, controller=controller)
    return info.value.argument, str(info.value)


def v1(tmp_path: Path, quota: int = -1) -> cgroups.Controller:
    """A cpu hierarchy of files (limit_cores reads the groups above the parent)."""
    (tmp_path / "cpu.cfs_quota_us").write_text(f"{quota}\n")
    (tmp_path / "cpu.cfs_period_us").write_text("100000\n")
    return cgroups.Controller(1, tmp_path, tmp_path)


def test_what_the_machine_cannot_apply_is_refused_naming_the_field(tmp_path):
    load = cells_of("  cpu_load: 2/core\n")[0]
    quota = cells_of("  cpu_quota: 1.5cores\n")[0]
    assert refusal(load, remote=True) == ("cpu_load", (
        "cpu_load: 2/core: applied on linklab's namespace testbeds only; on real hosts "
        "(hosts:) linklab does not start competitors or make cgroups: remove cpu_load or "
        "run the scenario without hosts:"))
    assert refusal(quota, remote=True)[0] == "cpu_quota"
    # a quota without a cpu controller (or one this user may not use)
    assert refusal(quota) == ("cpu_quota", (
        "cpu_quota: 1.5cores cannot be applied here: no cgroup cpu controller here; remove "
        "cpu_quota or run where a cpu cgroup can be made"))
    # more than the machine's CPUs, more than the cgroup linklab runs in may use
    assert refusal(quota, cpus=1, controller=v1(tmp_path))[1] == (
        f"cpu_quota: 1.5cores is more than the 1 online CPUs of this machine; {QUOTA}")
    assert refusal(quota, cpus=4, controller=v1(tmp_path, quota=100_000))[1] == (
        f"cpu_quota: 1.5cores is more than the 1 cores the cgroup linklab runs in may use "
        f"({tmp_path}); expected at most 1cores")
    cpu.check_cell(quota, remote=False, cpus=2, controller=v1(tmp_path, quota=200_000))
    # more competitors than 16 per CPU
    many = cells_of("  cpu_load: 40\n")[0]
    assert refusal(many, cpus=2) == ("cpu_load", (
        f"cpu_load: 40: 40 competitors is more than 16 per online CPU (32 on this machine of "
        f"2); {LOAD}"))
    cpu.check_cell(many, remote=False, cpus=4, controller=None)
    # hosts: a load on a host of the topology, a quota on a host with probes
    assert refusal(cells_of("  cpu_load: 1\n  cpu_load_on: ap\n")[0]) == ("cpu_load_on", (
        "cpu_load_on: host 'ap' is not in the cell's pair topology; accepted: robot, edge"))
    chain = cells_of("  topology: chain\n  cpu_load: 1\n  cpu_load_on: ap\n")[0]
    cpu.check_cell(chain, remote=False, cpus=2, controller=None)
    assert cpu.placement(chain, 2) == ["ap"]
    on_ap = cells_of("  topology: chain\n  cpu_quota: 1core\n  cpu_quota_on: ap\n")[0]
    assert refusal(on_ap, controller=v1(tmp_path)) == ("cpu_quota_on", (
        "cpu_quota_on: host 'ap' runs no probe of this cell, and the quota is for a host's "
        "probes; accepted: robot, edge"))


def test_competitors_per_core_are_placed_round_robin_over_their_hosts():
    cell = cells_of("  cpu_load: 2/core\n")[0]
    assert cpu.placement(cell, 2) == ["robot", "edge", "robot", "edge"]
    assert cpu.placement(cell, 3) == ["robot", "edge"] * 3
    robot = cells_of("  cpu_load: 3\n  cpu_load_on: robot\n")[0]
    assert cpu.placement(robot, 2) == ["robot"] * 3
    assert cpu.placement(cells_of("")[0], 2) == []
    star = cells_of("  topology: star\n  subscribers: 2\n  cpu_quota: 1core\n")[0]
    assert cpu.quota_hosts(star) == ("edge", "robot1", "robot2")


@pytest.mark.slow
@pytest.mark.parametrize("extra, expected", [
    # (as root: without root, that it cannot make a cgroup comes first)
    pytest.param("  cpu_quota: 64cores\n",
                 "s.yaml:7: fixed.cpu_quota: 64cores is more than the ",
                 marks=pytest.mark.integration),
    ("axes:\n  cpu_load: [none, 1]\n  cpu_load_on: [robot, edge1]\n",
     "s.yaml:9: axes.cpu_load_on[1]: cell load1-load-on-edge1: host 'edge1' is not in the "
     "cell's pair topology; accepted: robot, edge"),
    ("  cpu_load: 1000\n", "s.yaml:7: fixed.cpu_load: 1000: 1000 competitors is more than 16 "
                           "per online CPU"),
])
def test_dry_run_refuses_what_cannot_apply_with_the_fields_line(tmp_path, extra, expected):
    (tmp_path / "s.yaml").write_text(BASE + extra)
    for dry in (["--dry-run"], []):   # the run refuses the same before anything runs
        result = subprocess.run([sys.executable, "-m", "linklab.cli", "bench", "s.yaml",
                                 "--out", "runs", *dry], capture_output=True, text=True,
                                timeout=60, cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"linklab: error: {expected}"), \
            result.stderr
        assert not (tmp_path / "runs").exists()


def test_dry_run_refuses_cpu_load_on_field_hosts(tmp_path):
    (tmp_path / "f.yaml").write_text(textwrap.dedent("""\
        name: f
        hosts: {robot: ssh://nobody@192.0.2.1, edge: local}
        fixed: {payload: 1KiB, rate: 30Hz, count: 10}
        axes:
          cpu_load: [none, 1/core]
        """))
    result = subprocess.run([sys.executable, "-m", "linklab.cli", "bench", "f.yaml",
                             "--dry-run"], capture_output=True, text=True, timeout=60,
                            cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "linklab: error: f.yaml:5: axes.cpu_load[1]: cell load1-per-core: 1/core: applied "
        "on linklab's namespace testbeds only; on real hosts (hosts:) linklab does not start "
        "competitors or make cgroups: remove cpu_load or run the scenario without hosts:")


def test_a_bed_that_cannot_apply_them_makes_an_error_not_a_cell_without_them():
    from linklab.errors import LinklabError

    class KubeLikeBed:  # as linklab.k8s's beds say
        applies_cpu = False

    cell = cells_of("  cpu_load: 1\n")[0]
    with pytest.raises(LinklabError, match="applied on linklab's namespace testbeds only"):
        cpu.CellLoad(cell, KubeLikeBed(), Path("."))
    cpu.CellLoad(cells_of("")[0], KubeLikeBed(), Path("."))  # nothing asked: nothing to do


# --- the cgroup: where, recorded, joined ---------------------------------------------------

MOUNTS_V1 = """\
30 25 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
32 30 0:28 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
40 30 0:35 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
CGROUP_V1 = "4:memory:/x\n1:cpu:/lab/session\n0::/\n"


def test_the_cpu_controller_is_found_from_mountinfo_and_the_own_cgroup():
    assert cgroups.parse_mounts(MOUNTS_V1) == (Path("/sys/fs/cgroup/cpu"),
                                               Path("/sys/fs/cgroup/unified"))
    assert cgroups.own_group(CGROUP_V1, 1) == "/lab/session"
    assert cgroups.own_group(CGROUP_V1, 2) == "/"
    assert cgroups.own_group("1:cpu,cpuacct:/a\n", 1) == "/a"
    found = cgroups.find(MOUNTS_V1, "1:cpu:/\n")
    assert isinstance(found, cgroups.Controller) or "cannot make a cgroup" in found
    if isinstance(found, cgroups.Controller):
        assert (found.version, found.parent) == (1, Path("/sys/fs/cgroup/cpu"))
        assert found.group("b1", "robot") == Path("/sys/fs/cgroup/cpu/linklab-b1-robot")
    assert cgroups.find("30 25 0:26 / /proc rw - proc proc rw\n", "0::/\n") == (
        "this machine has no cgroup cpu controller (cgroup v1 cpu or v2 cpu)")
    assert cgroups.find("31 30 0:27 / /mnt/cg rw - cgroup cgroup rw,cpu\n", "1:cpu:/\n") == (
        "the cpu controller is mounted at /mnt/cg, not under /sys/fs/cgroup/")
    assert cgroups.quota_us(0.5) == 50_000 and cgroups.quota_us(1.5) == 150_000
    assert cgroups.quota_us(0.01) == 1_000


def test_v2_groups_go_where_cpu_is_enabled_for_children(tmp_path):
    root = tmp_path
    (root / "cgroup.subtree_control").write_text("cpu memory\n")
    session = root / "user.slice" / "session.scope"
    session.mkdir(parents=True)
    (root / "user.slice" / "cgroup.subtree_control").write_text("memory\n")
    assert cgroups.v2_parent(root, session) == root
    (root / "user.slice" / "cgroup.subtree_control").write_text("cpu\n")
    assert cgroups.v2_parent(root, session) == root / "user.slice"
    (root / "cgroup.subtree_control").write_text("")
    (root / "user.slice" / "cgroup.subtree_control").write_text("")
    assert cgroups.v2_parent(root, session) is None


def test_the_journal_record_names_only_a_runs_own_cgroup():
    good = {"what": "q", **made.cgroup("/sys/fs/cgroup/cpu/linklab-b1-robot")}
    assert made.check(good, "b1")["path"] == "/sys/fs/cgroup/cpu/linklab-b1-robot"
    made.check({"what": "q", **made.cgroup("/sys/fs/cgroup/cpu/a.slice/linklab-b1-edge")},
               "b1")
    for path, why in [("/tmp/linklab-b1-robot", "is not under /sys/fs/cgroup/"),
                      ("/sys/fs/cgroup/cpu/../../linklab-b1-robot", "is not a plain path"),
                      ("/sys/fs/cgroup/cpu//linklab-b1-robot", "is not a plain path"),
                      ("/sys/fs/cgroup/cpu/linklab-b2-robot", "is not one of run 'b1'"),
                      ("/sys/fs/cgroup/cpu/user.slice", "is not one of run 'b1'"),
                      ("/sys/fs/cgroup/cpu/linklab-b1-Robot", "is not one of run 'b1'"),
                      (7, "is not under /sys/fs/cgroup/")]:
        with pytest.raises(made.BadRecord, match=why.replace(".", r"\.").replace("(", r"\(")):
            made.check({"what": "q", "kind": "cgroup", "path": path}, "b1")
    assert made.undo_command(good) is None  # removed by cgroups.remove, not a command


def test_a_process_joins_the_group_before_it_runs_and_keeps_its_pid(tmp_path):
    """join_argv: the shell writes its own pid to cgroup.procs, then execs the command:
    the command runs as that pid (a regular file stands in for cgroup.procs here)."""
    procs = tmp_path / "cgroup.procs"
    argv = cgroups.join_argv(tmp_path, ["/bin/sh", "-c", 'cat "$0"; echo $$', str(procs)])
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    out, _ = child.communicate(timeout=10)
    written, own = out.split()
    assert int(written) == int(own) == child.pid  # in the group before it ran, same pid
    # a group the wrapper cannot write to: the command never runs
    bad = cgroups.join_argv(tmp_path / "missing", ["/bin/echo", "ran"])
    result = subprocess.run(bad, capture_output=True, text=True, timeout=10)
    assert result.returncode != 0 and "ran" not in result.stdout


def test_remove_is_done_when_the_group_is_gone(tmp_path):
    assert cgroups.remove(tmp_path / "linklab-b1-robot") is None
    empty = tmp_path / "linklab-b1-edge"
    empty.mkdir()
    assert cgroups.remove(empty) is None and not empty.exists()


# --- reports --------------------------------------------------------------------------------

def row(cell_id: str, load: str, quota: str = "none", n: int | None = 4) -> dict:
    return {"cell_id": cell_id, "link": "lab", "profile": "default",
            "payload_bytes": 1024, "trial": 1, "status": "ok", "rate_hz": 30.0,
            "cpu_load": load, "cpu_load_on": None, "cpu_quota": quota, "cpu_quota_on": None,
            "cpu_load_processes": n, "reception_rate_hz": 30.0}


def test_report_blocks_split_on_and_name_the_load_and_the_quota():
    from linklab.report.settings import format_setting
    from linklab.report.table import build_blocks

    # a fixed load is said in every title (as asked and as applied)
    (block,) = build_blocks([row("a", "2/core")])
    assert block.title == "lab  [cpu_load=2/core (4 competitors)]"
    blocks = build_blocks([row("a", "none", n=0), row("b", "2/core"),
                           row("c", "2/core", "0.5cores")])
    assert [b.title for b in blocks] == [
        "lab  [cpu_load=none, cpu_quota=none]",
        "lab  [cpu_load=2/core (4 competitors), cpu_quota=none]",
        "lab  [cpu_load=2/core (4 competitors), cpu_quota=0.5cores]"]
    # rows of runs made before the fields existed: no split, nothing said
    old = [{k: v for k, v in row(i, "none").items() if not k.startswith("cpu")}
           for i in "ab"]
    old[1]["payload_bytes"] = 2048
    assert [b.title for b in build_blocks(old)] == ["lab"]
    assert format_setting("cpu_load", "2/core") == "cpu load 2/core"
    assert format_setting("cpu_quota_on", None) == "cpu quota on endpoints"


def test_every_row_has_the_applied_columns():
    from linklab.rundir import CPU_COLUMNS, complete_row

    full = complete_row({"cell_id": "x"})
    for key in CPU_COLUMNS:
        assert key in full
    assert math.isnan(full["cpu_load_cpu_s"]) and full["cpu_quota_us"] is None
