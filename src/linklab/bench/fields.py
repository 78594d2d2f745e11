"""The fields of a scenario cell and their parsers: YAML value -> SI units / canonical form.

Every parser takes the :class:`Located` place the value came from, so an error names the
file, the line and the field: ``s.yaml:12: axes.payload[2]: '12' has no unit; ...``.
The scenario's shape (fixed / axes / quick, topics, gates) is in ``spec.py``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from linklab.errors import UsageError
from linklab.middleware import NAMES as MIDDLEWARE_NAMES
from linklab.probes.message_types import MESSAGE_TYPES as PROBE_MESSAGE_TYPES
from linklab.units import parse_duration, parse_fraction, parse_frequency, parse_size

# the registry's (linklab.middleware), secured variants (security on/off) included
MIDDLEWARES = MIDDLEWARE_NAMES
# reliable / best_effort set the reliability alone (history: keep_all unless given);
# the others are ROS 2's named QoS profiles (linklab.probes.qos.ROS2_PROFILES).
RELIABILITIES = ("reliable", "best_effort")
ROS2_PROFILE_NAMES = ("default", "sensor_data", "parameters", "services_default",
                      "system_default")
QOS_VALUES = RELIABILITIES + ROS2_PROFILE_NAMES
DURABILITIES = ("volatile", "transient_local")
TOPOLOGIES = ("pair", "star", "chain", "cluster")
# Paper 001 §III-C, Fig. 3: where a topic's publisher and its subscriber run in a
# cluster (``topology: cluster``; host names: linklab.link.cluster_plan; placement:
# topics.flow_hosts). linklab.k8s uses the same words with the same meanings:
#   bare-metal       on two nodes themselves, no pods (robot -> edge, node to node over
#                    the underlay): the paper's baseline
#   intra-container  both in one container of one pod (robotpod1 -> robotpod1): one
#                    network, mount and IPC namespace: loopback, and shared memory if
#                    the middleware uses it
#   intra-pod        two containers of one pod (robotpod1 -> robotpod1c2): the pod's
#                    network namespace shared (loopback), mount and IPC namespaces
#                    separate (each its own /dev/shm: shared-memory transports cannot
#                    meet)
#   intra-host       two pods on one node (robotpod1 -> robotpod2): pod veth -> the
#                    node's datapath (iptables/conntrack or eBPF) -> pod veth, no overlay
#   cross-host       pods on two nodes (robotpod1 -> edgepod1): pod -> node -> overlay
#                    (VXLAN, or direct routing) [-> WireGuard] -> underlay -> node -> pod
# (with more than two nodes the robot node is robot1). A cluster cell without flow
# places its topics as cross-host.
FLOWS = ("bare-metal", "intra-container", "intra-pod", "intra-host", "cross-host")
# The probe protocol's message types (README, "Probes"; the table:
# linklab.probes.message_types): of any size (a payload like Bytes) Bytes and ROS 2's
# Image, PointCloud2, String, UInt8MultiArray, and the fixed-size performance_test family.
MESSAGE_TYPES = tuple(t.name for t in PROBE_MESSAGE_TYPES if t.in_scenarios)
PROFILE_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
MAX_SUBSCRIBERS = 32
MAX_PAIRS = 32
# The search for the most a link carries (search.py): ``rate: max``; ``rate: 75%`` runs
# at that fraction of the maximum found for the same settings.
RATE_MAX = "max"
# What one run takes at most, so that a typo (``count: 1e25``, ``--repeat 100000``) is
# refused with the limit named instead of running for ever or expanding a matrix that
# does not fit in memory. A cell costs at least matrix.SETUP_S (8 s): MAX_CELLS cells are
# a day of link time or more; the largest shipped study has 1200
# (paper-000-table2-calibrated.yaml).
MAX_TRIALS = 1000            # trials: and --repeat
MAX_CELLS = 10_000           # cells of one run: the product of the axes' lengths x trials
MAX_COUNT = 100_000_000      # count: messages a topic publishes in one cell
MAX_CELL_S = 24 * 3600.0     # duration, warmup, grace, outage_start, outage_length, and a
                             # topic's publishing time (count / rate) in one cell
MAX_SEARCH_TRIAL_S = 3600.0  # search: trial (one trial of a throughput search)


@dataclass(frozen=True)
class Located:
    """Where a value came from, for error messages."""

    file: str
    line: int
    field: str

    def error(self, message: str) -> UsageError:
        where = f"{self.file}:{self.line}: {self.field}:" if self.field else \
            f"{self.file}:{self.line}:"
        return UsageError(f"{where} {message}")

    def sub(self, name: str, node: yaml.Node | None = None) -> Located:
        field = f"{self.field}.{name}" if self.field and not name.startswith("[") else \
            f"{self.field}{name}" if self.field else name
        line = node.start_mark.line + 1 if node is not None else self.line
        return Located(self.file, line, field)


# --- YAML with line numbers -----------------------------------------------------------

def compose(text: str, path: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise UsageError(f"{path}:{line}: not valid YAML: {problem}") from None


_PLAIN_TAGS = {f"tag:yaml.org,2002:{t}" for t in
               ("str", "int", "float", "bool", "null", "map", "seq", "timestamp")}


def plain(node: yaml.Node | None, where: Located) -> Any:
    """A node's Python value (YAML 1.1 safe types); a tag of one's own is an error."""
    if node is None:
        return None
    for sub in _walk(node):
        if sub.tag not in _PLAIN_TAGS:
            loc = Located(where.file, sub.start_mark.line + 1, where.field)
            raise loc.error(f"the YAML tag {sub.tag!r} is not accepted; write plain values")
    try:
        return yaml.safe_load(yaml.serialize(node))
    except (yaml.YAMLError, ValueError, OverflowError) as error:
        raise where.error(f"not a valid value: {str(error).splitlines()[0]}") from None


def _walk(node: yaml.Node):
    yield node
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _walk(item)
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield from _walk(key)
            yield from _walk(value)


def mapping(node: yaml.Node, where: Located) -> list[tuple[str, yaml.Node, Located]]:
    """(key, value node, place) of a mapping node; duplicate keys are an error."""
    if not isinstance(node, yaml.MappingNode):
        raise where.error("expected a mapping (key: value lines)")
    items = []
    seen: set[str] = set()
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            raise Located(where.file, key_node.start_mark.line + 1, where.field).error(
                "a key must be a plain name")
        key = str(key_node.value)
        loc = where.sub(key, key_node)
        if key in seen:
            raise loc.error("appears twice")
        seen.add(key)
        items.append((key, value_node, loc))
    return items


# --- field parsers --------------------------------------------------------------------

def choice(value: Any, allowed: tuple[str, ...], where: Located) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise where.error(f"{value!r} is not one of {', '.join(allowed)}")
    return value


def positive_int(value: Any, where: Located, *, most: int | None = None,
                 limit: str = "the most accepted") -> int:
    """A whole number from 1 to ``most``; ``limit`` says what ``most`` is."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise where.error(f"{value!r} must be a whole number greater than zero"
                          + (f" (at most {most})" if most is not None else ""))
    if most is not None and value > most:
        raise where.error(f"{value} is more than {most}, {limit}")
    return value


def cell_duration(value: Any, where: Located, *, allow_zero: bool = False) -> float:
    """A duration of one cell (duration, warmup, grace, outage_*): at most MAX_CELL_S."""
    seconds = with_units(parse_duration, value, where, allow_zero=allow_zero)
    if seconds > MAX_CELL_S:
        raise where.error(f"{value!r} is longer than {MAX_CELL_S / 3600:g} h, the most "
                          "linklab takes for one cell")
    return seconds


def with_units(parser, value: Any, where: Located, **kw) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)  # a bare number: let the unit parser say what is missing
    try:
        result = parser(value, **kw)
    except UsageError as error:
        raise where.error(str(error)) from None
    if isinstance(result, float) and not math.isfinite(result):
        raise where.error(f"{value!r} is not a finite value")
    return result


def parse_history(value: Any, where: Located) -> str:
    """``keep_all`` | ``keep_last:N`` | ``N`` (keep_last) | ``tuned`` | ``profile``.

    ``tuned``: keep_last with N_HC from the tuner (seed 000 eq. 6). ``profile``: what the
    profile brings — the tuned profile its N_HC, the others KEEP_ALL.
    """
    if isinstance(value, bool):
        raise where.error(f"{value!r} is not a history")
    if isinstance(value, int):
        return f"keep_last:{positive_int(value, where)}"
    if isinstance(value, str):
        if value in ("keep_all", "tuned", "profile"):
            return value
        match = re.fullmatch(r"keep_last:(\d+)", value)
        if match and 0 < int(match[1]) <= 1_000_000:
            return f"keep_last:{int(match[1])}"
    raise where.error(f"{value!r} is not a history; expected keep_all, keep_last:N, "
                      "a number N (keep_last:N), tuned (N_HC from linklab tune) or profile")


def parse_rate(value: Any, where: Located) -> float | str:
    """A publish rate (``30Hz``), ``max`` (search for the most the link carries) or a
    percentage of that maximum (``75%``, paper 001 Fig. 6)."""
    if value == RATE_MAX:
        return RATE_MAX
    if isinstance(value, str) and value.strip().endswith("%"):
        fraction = with_units(parse_fraction, value, where)
        if fraction <= 0:
            raise where.error(f"{value!r}: a share of the maximum rate is above 0 %")
        return f"{fraction * 100:g}%"
    try:
        return with_units(parse_frequency, value, where)
    except UsageError as error:
        raise UsageError(f"{error}; or max (search for the highest rate the link carries) "
                         "or a percentage of it, e.g. 75%") from None


def rate_fraction(rate: float | str) -> float | None:
    """``"75%"`` -> 0.75; None for a fixed rate or ``max``."""
    if isinstance(rate, str) and rate.endswith("%"):
        return float(rate[:-1]) / 100
    return None


def parse_profile(value: Any, where: Located) -> str:
    if isinstance(value, str) and value.endswith((".xml", ".json5")):
        # a profile file of your own, relative to the scenario file
        path = (Path(where.file).parent / value).resolve()
        if not path.is_file():
            raise where.error(f"profile file {value!r} not found (looked at {path})")
        return str(path)
    return name(value, PROFILE_NAME, "profile", where)


def name(value: Any, pattern: re.Pattern, what: str, where: Located) -> str:
    if not isinstance(value, str) or not pattern.match(value):
        raise where.error(f"{value!r} is not a {what} name (letters, digits, _ . -)")
    return value


# --- CPU contention (bench/cpu.py applies them; README "A busy robot") -----------------
# cpu_load: CPU-bound competitors linklab starts for a cell, at the probes' priority:
# ``none``, ``N/core`` (N per online CPU of the machine the hosts run on) or a count ``N``.
# cpu_quota: CPU time a host's probes may use, in cores (``0.5cores`` = 50 ms of every
# 100 ms period: cgroup cpu.cfs_quota_us / cpu.max), or ``none``.
# cpu_load_on / cpu_quota_on: the hosts they apply to (default: the cell's endpoint hosts).
CPU_NONE = "none"
MAX_LOAD_PER_CORE = 16       # cpu_load: N/core, and a count: at most this many per CPU
MAX_LOAD_COUNT = 1024        # cpu_load: N (per machine; checks.py: <= 16 per online CPU)
MIN_QUOTA_CORES = 0.01       # 1 ms of a 100 ms period: the kernel's least cfs_quota_us
MAX_QUOTA_CORES = 1024.0     # (checks.py: at most the machine's online CPUs)
LOAD_ACCEPTED = (f"none, N/core (N CPU-bound competitors per online CPU, 1 to "
                 f"{MAX_LOAD_PER_CORE}) or a count N of competitors (1 to "
                 f"{MAX_LOAD_COUNT})")
QUOTA_ACCEPTED = ("none or the CPU time a host's probes may use, in cores: 0.5cores (half "
                  f"of one CPU), 1.5cores; from {MIN_QUOTA_CORES:g}cores to the machine's "
                  "online CPUs")


def parse_cpu_load(value: Any, where: Located) -> str:
    """``none`` | ``N/core`` | ``N`` (canonical text: "none", "2/core", "3")."""
    if value is None or value == CPU_NONE:
        return CPU_NONE
    if isinstance(value, int) and not isinstance(value, bool):
        if 1 <= value <= MAX_LOAD_COUNT:
            return str(value)
        raise where.error(f"{value!r}: a count of competitors is 1 to {MAX_LOAD_COUNT}; "
                          f"expected {LOAD_ACCEPTED}")
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(?:core|cpu)\s*", value)
        if match and 1 <= int(match[1]) <= MAX_LOAD_PER_CORE:
            return f"{int(match[1])}/core"
        if re.fullmatch(r"\s*\d+\s*", value) and 1 <= int(value) <= MAX_LOAD_COUNT:
            return str(int(value))
    raise where.error(f"{value!r} is not a CPU load; expected {LOAD_ACCEPTED}")


def load_processes(load: str, online_cpus: int) -> int:
    """How many competitors ``cpu_load`` (canonical) starts on a machine of
    ``online_cpus`` CPUs: N/core -> N x CPUs, a count as it is, none -> 0."""
    if load == CPU_NONE:
        return 0
    if load.endswith("/core"):
        return int(load[:-5]) * online_cpus
    return int(load)


def parse_cpu_quota(value: Any, where: Located) -> str:
    """``none`` | ``Xcores`` (canonical text: "none", "0.5cores")."""
    if value is None or value == CPU_NONE:
        return CPU_NONE
    text = str(value).strip() if not isinstance(value, bool) else ""
    if text.endswith("%"):
        raise where.error(f"{value!r}: a percentage does not say of what (one CPU? the "
                          f"machine?); write the quota in cores, e.g. 0.5cores; expected "
                          f"{QUOTA_ACCEPTED}")
    match = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)\s*cores?", text)
    if match is None:
        hint = " (no unit)" if re.fullmatch(r"[\d.]+", text) else ""
        raise where.error(f"{value!r} is not a CPU quota{hint}; expected {QUOTA_ACCEPTED}")
    cores = float(match[1])
    if not MIN_QUOTA_CORES <= cores <= MAX_QUOTA_CORES:
        raise where.error(f"{value!r}: a quota is {MIN_QUOTA_CORES:g} to "
                          f"{MAX_QUOTA_CORES:g} cores; expected {QUOTA_ACCEPTED}")
    return f"{cores:g}cores"


def quota_cores(quota: str) -> float | None:
    """``"1.5cores"`` -> 1.5; None for none."""
    return None if quota == CPU_NONE else float(quota.removesuffix("cores"))


def parse_host_list(value: Any, where: Located) -> str:
    """A host name or a list of them (``cpu_load_on``, ``cpu_quota_on``): "robot,edge"."""
    items = value if isinstance(value, list) else [value]
    names: list[str] = []
    for item in items:
        if not isinstance(item, str) or not re.fullmatch(r"[a-z][a-z0-9]*", item):
            raise where.error(f"{item!r} is not a host name; expected a host of the cell's "
                              "topology or a list of them, e.g. robot or [robot, edge]")
        if item in names:
            raise where.error(f"names host {item} twice")
        names.append(item)
    if not names:
        raise where.error("an empty list; name at least one host, e.g. [robot]")
    return ",".join(names)


def parse_host_name(value: Any, where: Located) -> str:
    """One host name (``broker_host``); checked against the cell's topology later."""
    if not isinstance(value, str) or not re.fullmatch(r"[a-z][a-z0-9]*", value):
        raise where.error(f"{value!r} is not a host name; expected one host of the cell's "
                          "topology, e.g. edge, robot, or robot2 in a star")
    return value


def host_list(text: str | None) -> tuple[str, ...] | None:
    """``"robot,edge"`` -> ("robot", "edge"); None (every endpoint host) stays None."""
    return None if text is None else tuple(text.split(","))


# Cell fields whose value is one plain value (fixed:, axes: lists of them, quick:).
SCALAR_PARSERS = {
    "middleware": lambda v, w: choice(v, MIDDLEWARES, w),
    "profile": parse_profile,
    "topology": lambda v, w: choice(v, TOPOLOGIES, w),
    "hosts": lambda v, w: positive_int(v, w, most=MAX_SUBSCRIBERS),
    "payload": lambda v, w: int(with_units(parse_size, v, w)),
    "rate": parse_rate,
    "qos": lambda v, w: choice(v, QOS_VALUES, w),
    "history": parse_history,
    "depth": lambda v, w: positive_int(v, w, most=1_000_000),
    "durability": lambda v, w: choice(v, DURABILITIES, w),
    "type": lambda v, w: choice(v, MESSAGE_TYPES, w),
    "count": lambda v, w: positive_int(v, w, most=MAX_COUNT, limit="the most messages a "
                                       "topic publishes in one cell"),
    "duration": lambda v, w: None if v is None else cell_duration(v, w),
    "grace": lambda v, w: None if v is None else cell_duration(v, w),
    "outage_length": lambda v, w: None if v is None else cell_duration(v, w),
    "warmup": lambda v, w: cell_duration(v, w, allow_zero=True),
    "outage_start": lambda v, w: cell_duration(v, w, allow_zero=True),
    "subscribers": lambda v, w: positive_int(v, w, most=MAX_SUBSCRIBERS),
    "flow": lambda v, w: choice(v, FLOWS, w),
    "pairs": lambda v, w: positive_int(v, w, most=MAX_PAIRS),
    "cpu_load": parse_cpu_load,
    "cpu_load_on": parse_host_list,
    "cpu_quota": parse_cpu_quota,
    "cpu_quota_on": parse_host_list,
    "broker_host": parse_host_name,
}
# ``link`` (a preset name or an inline link) and ``link.FIELD`` are parsed by links.py;
# ``topics`` (a list of endpoints) by topics.py.
FIELDS = ("middleware", "profile", "link", "topology", "hosts", "flow", "payload", "rate",
          "qos", "history", "depth", "durability", "type", "count", "duration", "warmup",
          "outage_start", "outage_length", "grace", "subscribers", "pairs", "topics",
          "cpu_load", "cpu_load_on", "cpu_quota", "cpu_quota_on", "broker_host")
