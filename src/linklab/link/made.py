"""What a run made, as data, and how each thing is undone (derived here, by code).

A state file never holds a command. Each journal step is one of the records below (a
namespace, an interface in a namespace, an address, a route, an nft table, a qdisc, a
sysctl and its old value, a helper or host process with its start time, a cgroup, a
wireguard-go UAPI socket, ...); ``check`` validates a record read back from a file field
by field, and ``undo_command`` derives the one command (argv, never a shell) that removes
it. A record that fails the check is refused as a whole: linklab acts on nothing it
cannot read exactly.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from linklab.errors import LinklabError

Record = dict[str, Any]

NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")          # namespaces
IFNAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}$")        # interfaces (IFNAMSIZ)
SYSCTL_KEY = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]+)+$")
SYSCTL_VALUE = re.compile(r"^[A-Za-z0-9_.:/-]+( [A-Za-z0-9_.:/-]+)*$")  # words, one space
NFT_TABLE = re.compile(r"^[A-Za-z0-9_]{1,64}$")
START_TIME = re.compile(r"^[0-9]{1,20}$")
FILE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}\.[A-Za-z0-9_.-]{1,100}$")
NFT_FAMILIES = ("netdev", "inet", "ip", "ip6", "bridge", "arp")
OFFLOADS = ("gso", "tso", "gro")
QDISC_PARENTS = ("root", "ingress", "clsact")  # clsact: tc bpf programs (cluster)
MAX_PID = 1 << 22   # pid_max can be at most 2^22
WHAT_MAX = 300


class BadRecord(LinklabError):
    """A journal step that is not exactly one of the known records."""


# --- constructors (what the code that makes a change records) -----------------------------

def netns(name: str) -> Record:
    return {"kind": "netns", "netns": name}


def link(netns_: str, ifname: str) -> Record:
    """An interface made inside a namespace (veth end, bridge, ifb): deleted on undo."""
    return {"kind": "link", "netns": netns_, "ifname": ifname}


def link_up(netns_: str, ifname: str) -> Record:
    return {"kind": "link_up", "netns": netns_, "ifname": ifname}


def master(netns_: str, ifname: str) -> Record:
    return {"kind": "master", "netns": netns_, "ifname": ifname}


def address(netns_: str, ifname: str, cidr: str) -> Record:
    return {"kind": "address", "netns": netns_, "ifname": ifname, "cidr": cidr}


def route(netns_: str, destination: str, via: str | None, dev: str) -> Record:
    return {"kind": "route", "netns": netns_, "destination": destination, "via": via,
            "dev": dev}


def neighbours(netns_: str, ifname: str) -> Record:
    """Permanent neighbour entries on an interface (flushed on undo)."""
    return {"kind": "neighbours", "netns": netns_, "ifname": ifname}


def offloads(netns_: str, ifname: str, features: tuple[str, ...] = OFFLOADS) -> Record:
    """Offload features turned off (turned on again on undo)."""
    return {"kind": "offloads", "netns": netns_, "ifname": ifname, "features": list(features)}


def sysctl(netns_: str, key: str, old: str) -> Record:
    return {"kind": "sysctl", "netns": netns_, "key": key, "old": old}


def nft_table(netns_: str, family: str, table: str) -> Record:
    return {"kind": "nft_table", "netns": netns_, "family": family, "table": table}


def qdisc(netns_: str, dev: str, parent: str) -> Record:
    """A root, ingress or clsact qdisc on an interface (deleted, with its filters -- e.g.
    the cluster's tc bpf programs -- on undo)."""
    return {"kind": "qdisc", "netns": netns_, "dev": dev, "parent": parent}


def process(pid: int, start: str | None, role: str = "helper") -> Record:
    """A process linklab started (``role`` helper: outage scheduler, relay; ``host``: a
    command run inside a host through Testbed.popen/run). Ended on undo if it is still
    the same process (pid and kernel start time)."""
    return {"kind": "process", "pid": pid, "start": start, "role": role}


WG_SOCKET_DIR = "/run/wireguard"


def wg_socket(ifname: str) -> Record:
    """The UAPI socket a wireguard-go process made for its device
    (``/run/wireguard/<ifname>.sock``; wireguard-go removes it when it ends by a signal
    it can catch, this record when it was killed)."""
    return {"kind": "wg_socket", "ifname": ifname}


def cgroup(path: str) -> Record:
    """A cgroup of the cpu controller made for a host's CPU quota
    (``<cgroup>/linklab-<run>-<host>``, link/cgroups.py): removed on undo, after ending
    what is still in it."""
    return {"kind": "cgroup", "path": path}


def files(names: list[str]) -> Record:
    """Files in the state directory next to the run's state file (``<run>.<suffix>``)."""
    return {"kind": "files", "names": list(names)}


# --- reading back --------------------------------------------------------------------------

def _text(value: Any, pattern: re.Pattern[str], field: str) -> str:
    if not isinstance(value, str) or not pattern.match(value):
        raise BadRecord(f"{field} {_show(value)} is not valid")
    return value


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _ip(value: Any, field: str, network: bool = False) -> str:
    if not isinstance(value, str):
        raise BadRecord(f"{field} {_show(value)} is not valid")
    try:
        parsed = (ipaddress.ip_network(value, strict=False) if network
                  else ipaddress.ip_interface(value) if "/" in value
                  else ipaddress.ip_address(value))
    except ValueError:
        raise BadRecord(f"{field} {_show(value)} is not an IP address") from None
    return str(parsed) if network else value


_FIELDS: dict[str, tuple[str, ...]] = {
    "netns": ("netns",), "link": ("netns", "ifname"), "link_up": ("netns", "ifname"),
    "master": ("netns", "ifname"), "address": ("netns", "ifname", "cidr"),
    "route": ("netns", "destination", "via", "dev"), "neighbours": ("netns", "ifname"),
    "offloads": ("netns", "ifname", "features"), "sysctl": ("netns", "key", "old"),
    "nft_table": ("netns", "family", "table"), "qdisc": ("netns", "dev", "parent"),
    "process": ("pid", "start", "role"), "files": ("names",), "inside": (),
    "wg_socket": ("ifname",), "cgroup": ("path",),
}
KINDS = tuple(_FIELDS)


def check(step: Any, run: str) -> Record:
    """A journal step read from a file, validated; raises BadRecord (one line).

    Each step is ``{"what": text, "kind": K, ...the fields of K}``; kind ``inside`` is a
    change that goes away with the object holding it (a rule in an nft table, an MTU).
    """
    if not isinstance(step, dict):
        raise BadRecord(f"a step is {type(step).__name__}, not an object")
    kind = step.get("kind")
    if kind not in _FIELDS:
        raise BadRecord(f"unknown step kind {_show(kind)}")
    extra = set(step) - {"what", "kind", *_FIELDS[kind]}
    missing = set(_FIELDS[kind]) - set(step)
    if extra or missing:
        raise BadRecord(f"step {kind}: " + (f"unknown field(s) {sorted(extra)}" if extra
                                           else f"missing field(s) {sorted(missing)}"))
    what = step.get("what", kind)
    if not isinstance(what, str) or len(what) > WHAT_MAX:
        raise BadRecord(f"step {kind}: 'what' must be text of at most {WHAT_MAX} characters")
    out: Record = {"what": " ".join(what.split()), "kind": kind}
    if "netns" in _FIELDS[kind]:
        out["netns"] = _text(step["netns"], NAME, "namespace")
    for field in ("ifname", "dev"):
        if field in _FIELDS[kind]:
            out[field] = _text(step[field], IFNAME, "interface")
    if kind == "address":
        out["cidr"] = _ip(step["cidr"], "address")
        if "/" not in out["cidr"]:
            raise BadRecord(f"address {_show(step['cidr'])} has no prefix length")
    elif kind == "route":
        dest = step["destination"]
        out["destination"] = "default" if dest == "default" else _ip(dest, "route", True)
        out["via"] = None if step["via"] is None else _ip(step["via"], "gateway")
    elif kind == "offloads":
        features = step["features"]
        if (not isinstance(features, list) or not features
                or any(f not in OFFLOADS for f in features)):
            raise BadRecord(f"offload features {_show(features)} are not valid")
        out["features"] = list(features)
    elif kind == "sysctl":
        out["key"] = _text(step["key"], SYSCTL_KEY, "sysctl")
        out["old"] = _text(step["old"], SYSCTL_VALUE, "sysctl value")
    elif kind == "nft_table":
        if step["family"] not in NFT_FAMILIES:
            raise BadRecord(f"nft family {_show(step['family'])} is not valid")
        out["family"] = step["family"]
        out["table"] = _text(step["table"], NFT_TABLE, "nft table")
    elif kind == "qdisc":
        if step["parent"] not in QDISC_PARENTS:
            raise BadRecord(f"qdisc parent {_show(step['parent'])} is not valid")
        out["parent"] = step["parent"]
    elif kind == "process":
        pid, start = step["pid"], step["start"]
        if type(pid) is not int or not 1 < pid < MAX_PID:
            raise BadRecord(f"pid {_show(pid)} is not valid")
        if start is not None:
            start = _text(start, START_TIME, "process start time")
        if step["role"] not in ("helper", "host"):
            raise BadRecord(f"process role {_show(step['role'])} is not valid")
        out.update(pid=pid, start=start, role=step["role"])
    elif kind == "cgroup":
        out["path"] = _cgroup_path(step["path"], run)
    elif kind == "files":
        names = step["names"]
        if not isinstance(names, list):
            raise BadRecord(f"file names {_show(names)} are not a list")
        for name in names:
            _text(name, FILE_NAME, "file name")
            if not name.startswith(f"{run}.") or name == f"{run}.json":
                raise BadRecord(f"file {_show(name)} is not one of run {run!r}'s files")
        out["names"] = list(names)
    return out


CGROUP_ROOT = "/sys/fs/cgroup/"
CGROUP_PART = re.compile(r"^[A-Za-z0-9_.:@-]{1,255}$")


def _cgroup_path(value: Any, run: str) -> str:
    """A run's own cgroup: under /sys/fs/cgroup, plain path parts, the last one
    ``linklab-<run>-<host>`` (nothing else is ever removed, nor its processes ended)."""
    if not isinstance(value, str) or not value.startswith(CGROUP_ROOT):
        raise BadRecord(f"cgroup {_show(value)} is not under {CGROUP_ROOT}")
    parts = value[len(CGROUP_ROOT):].split("/")
    if any(not CGROUP_PART.match(p) or p in (".", "..") for p in parts):
        raise BadRecord(f"cgroup {_show(value)} is not a plain path")
    if not re.fullmatch(re.escape(f"linklab-{run}-") + r"[a-z][a-z0-9]{0,31}", parts[-1]):
        raise BadRecord(f"cgroup {_show(value)} is not one of run {run!r}'s "
                        f"(linklab-{run}-HOST)")
    return value


# --- undo --------------------------------------------------------------------------------

def undo_command(record: Record) -> tuple[list[str], str | None] | None:
    """(argv, namespace to run it in, or None) that undoes ``record``; None: nothing to run
    (``inside``, or records undone otherwise: processes, files, cgroups)."""
    kind = record["kind"]
    ns = record.get("netns")
    if kind == "netns":
        return ["ip", "netns", "delete", ns], None
    if kind == "link":
        return ["ip", "-n", ns, "link", "del", record["ifname"]], None
    if kind == "link_up":
        return ["ip", "-n", ns, "link", "set", record["ifname"], "down"], None
    if kind == "master":
        return ["ip", "-n", ns, "link", "set", record["ifname"], "nomaster"], None
    if kind == "address":
        return ["ip", "-n", ns, "addr", "del", record["cidr"], "dev", record["ifname"]], None
    if kind == "route":
        via = ["via", record["via"]] if record["via"] else []
        return ["ip", "-n", ns, "route", "del", record["destination"], *via,
                "dev", record["dev"]], None
    if kind == "neighbours":
        return ["ip", "-n", ns, "neigh", "flush", "dev", record["ifname"],
                "nud", "permanent"], None
    if kind == "offloads":
        return (["ethtool", "-K", record["ifname"],
                 *[arg for f in record["features"] for arg in (f, "on")]], ns)
    if kind == "sysctl":
        return ["sysctl", "-q", "-w", f"{record['key']}={record['old']}"], ns
    if kind == "nft_table":
        return ["nft", "delete", "table", record["family"], record["table"]], ns
    if kind == "wg_socket":
        return ["rm", "-f", f"{WG_SOCKET_DIR}/{record['ifname']}.sock"], None
    if kind == "qdisc":
        where = {"root": ["root"], "ingress": ["handle", "ffff:", "ingress"],
                 "clsact": ["clsact"]}[record["parent"]]
        return ["tc", "-n", ns, "qdisc", "del", "dev", record["dev"], *where], None
    return None


def names(records: list[Record]) -> dict[str, list[str]]:
    """What the records name, for messages: namespaces and processes."""
    out: dict[str, list[str]] = {"namespaces": [], "processes": []}
    for r in records:
        if r.get("kind") == "netns":
            out["namespaces"].append(r["netns"])
        elif r.get("kind") == "process":
            out["processes"].append(str(r["pid"]))
    return out
