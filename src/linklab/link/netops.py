"""Journaled network operations used by wires and stages (each one records what it made).

Wires and stages never call ``ip``/``tc``/``nft`` themselves; they call these methods,
so every change of a run is in its journal (as data, ``made.py``) and ``down`` can undo
it.

Kernel modules: linklab loads none. Shaping a port's ingress needs the ifb driver; if it
is a module that is not loaded, ``ip link add ... type ifb`` would load it with two
devices (ifb0, ifb1) in the root namespace, and unloading it later could remove other
users' ifb devices -- so linklab refuses, before building anything, and says how to
load it once (``ifb_unavailable``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from linklab.link import made
from linklab.link.journal import Journal
from linklab.link.system import CommandFailed
from linklab.link.topology import Port

OFFLOADS = ("gso", "tso", "gro")
ALIAS_PREFIX = "linklab:"


def nft_name(text: str) -> str:
    """nft identifiers: letters, digits and underscores."""
    return "".join(c if c.isalnum() else "_" for c in text)


class NetOps:
    def __init__(self, journal: Journal, tag: str):
        self.journal = journal
        self.tag = tag
        self.table = f"linklab_{tag}"
        self._ingress: set[tuple[str, str]] = set()
        self._tables: set[tuple[str, str]] = set()
        self._ifbs: set[tuple[str, str]] = set()

    # --- namespaces and links ----------------------------------------------------------

    def add_netns(self, netns: str) -> None:
        """A host namespace. The caller checked that ``netns`` did not exist before."""
        try:
            self.journal.change(f"namespace {netns}", ["ip", "netns", "add", netns],
                                made.netns(netns))
        except CommandFailed:
            # `ip netns add` can fail after making /run/netns/<name>; it is ours, remove it
            self.journal.shell.run(["ip", "netns", "delete", netns], check=False)
            raise
        self.ip(netns, ["link", "set", "lo", "up"], undo=made.link_up(netns, "lo"))
        # A mark inside the namespace saying which state file it belongs to, so `clean`
        # can tell a live run (state file present, in any state directory) from one left
        # behind, and never mistakes someone else's namespace for linklab's.
        self.ip(netns, ["link", "set", "dev", "lo", "alias", f"{ALIAS_PREFIX}{self.journal.path}"],
                undo=None)

    def ip(self, netns: str, args: list[str], undo: made.Record | None,
           what: str | None = None) -> str:
        return self.journal.change(what or f"ip {' '.join(args)}", ["ip", "-n", netns, *args],
                                   undo, None)

    def tc(self, netns: str, args: list[str], undo: made.Record | None) -> str:
        return self.journal.change(f"tc {' '.join(args)}", ["tc", "-n", netns, *args], undo)

    def veth(self, a: Port, b: Port) -> None:
        """A veth pair made directly inside the two namespaces (never in the root one)."""
        self.ip(a.netns, ["link", "add", a.ifname, "type", "veth", "peer", "name", b.ifname,
                          "netns", b.netns], undo=made.link(a.netns, a.ifname),
                what=f"veth {a.netns}/{a.ifname} <-> {b.netns}/{b.ifname}")

    def offloads_off(self, netns: str, ifname: str) -> None:
        args = [arg for feature in OFFLOADS for arg in (feature, "off")]
        self.journal.change(f"offloads off {netns}/{ifname}", ["ethtool", "-K", ifname, *args],
                            made.offloads(netns, ifname, OFFLOADS), netns)

    def sysctl(self, netns: str, key: str, value: str) -> bool:
        """Set a per-namespace sysctl; False if the kernel keeps it read-only there."""
        path = "/proc/sys/" + key.replace(".", "/")
        old = self.journal.shell.run(["cat", path], netns, check=False)
        if old.returncode != 0:
            return False
        writable = self.journal.shell.run(["test", "-w", path], netns, check=False)
        if writable.returncode != 0:
            return False
        previous = " ".join(old.stdout.split())
        try:
            self.journal.change(f"sysctl {netns} {key}={value}",
                                ["sysctl", "-q", "-w", f"{key}={value}"],
                                made.sysctl(netns, key, previous), netns)
        except CommandFailed:
            return False  # e.g. not writable from an unprivileged user namespace
        return True

    def read_sysctl(self, netns: str, key: str) -> str | None:
        path = "/proc/sys/" + key.replace(".", "/")
        result = self.journal.shell.run(["cat", path], netns, check=False)
        return " ".join(result.stdout.split()) if result.returncode == 0 else None

    # --- nftables: one netdev table per namespace, one ingress chain per port -----------

    def nft(self, netns: str, script: str, undo: made.Record | None, what: str) -> None:
        self.journal.change(what, ["nft", "-f", "-"], undo, netns, input=script)

    def ingress_chain(self, port: Port, prerouting: bool = False) -> tuple[str, str]:
        """The nft chain that sees what arrives on ``port`` (made on first use).

        Normally a netdev chain on the port's ingress hook (sees every frame first).
        When the port's ingress is shaped through an ifb, the kernel skips nft's ingress
        hook for the frames the ifb re-injects, so such a port gets a chain on the inet
        prerouting hook instead (``prerouting=True``; IP packets, priority -300, before
        conntrack). Returns (family, chain name).
        """
        family = "inet" if prerouting else "netdev"
        key = f"{family} {self.table}"
        if (port.netns, key) not in self._tables:
            self.nft(port.netns, f"add table {key}\n",
                     made.nft_table(port.netns, family, self.table),
                     f"nft table {port.netns}/{key}")
            self._tables.add((port.netns, key))
        chain = "in_" + nft_name(port.ifname)
        if (port.netns, chain) not in self._ingress:
            if prerouting:
                script = (f"add chain {key} prerouting {{ type filter hook prerouting "
                          f"priority -300 ; policy accept ; }}\n"
                          f"add chain {key} {chain}\n"
                          f"add rule {key} prerouting iifname \"{port.ifname}\" jump {chain}\n")
            else:
                script = (f"add chain {key} {chain} {{ type filter hook ingress "
                          f"device \"{port.ifname}\" priority 0 ; policy accept ; }}\n")
            self.nft(port.netns, script, None, f"nft chain {port.netns}/{family}/{chain}")
            self._ingress.add((port.netns, chain))
        return family, chain

    def nft_counter(self, netns: str, family: str, name: str) -> None:
        self.nft(netns, f"add counter {family} {self.table} {name}\n", None,
                 f"nft counter {netns}/{name}")

    def nft_rule(self, netns: str, family: str, chain: str, rule: str) -> None:
        self.nft(netns, f"add rule {family} {self.table} {chain} {rule}\n", None,
                 f"nft rule {netns}/{chain}: {rule}")

    # --- ifb: the ingress side of a port, as an egress we can shape ---------------------

    def ifb(self, port: Port, ifb: str) -> None:
        """Redirect everything arriving on ``port`` through ifb device ``ifb``.

        ``matchall`` is not in every kernel, so the redirect is a u32 match-all filter.
        """
        if (port.netns, ifb) in self._ifbs:
            return
        self.ip(port.netns, ["link", "add", ifb, "type", "ifb"], undo=made.link(port.netns, ifb))
        self.offloads_off(port.netns, ifb)
        self.ip(port.netns, ["link", "set", ifb, "up"], undo=made.link_up(port.netns, ifb))
        self.tc(port.netns, ["qdisc", "add", "dev", port.ifname, "handle", "ffff:", "ingress"],
                undo=made.qdisc(port.netns, port.ifname, "ingress"))
        # (the filter goes away with the ingress qdisc)
        self.tc(port.netns, ["filter", "add", "dev", port.ifname, "parent", "ffff:",
                             "protocol", "all", "u32", "match", "u32", "0", "0",
                             "action", "mirred", "egress", "redirect", "dev", ifb],
                undo=None)
        self._ifbs.add((port.netns, ifb))


def ifb_unavailable(sys_module: Path = Path("/sys/module"),
                    proc_modules: Path = Path("/proc/modules"),
                    builtin: Path | None = None) -> str | None:
    """None if ifb devices can be made without loading a kernel module, else why not.

    Usable: the ifb module is loaded (``/sys/module/ifb``), or built into the kernel
    (listed in ``modules.builtin``), or the kernel loads no modules at all (no
    ``/proc/modules``: then ifb is built in or absent, and ``ip`` says which).
    """
    if (sys_module / "ifb").exists() or not proc_modules.exists():
        return None
    builtin = builtin or Path(f"/lib/modules/{os.uname().release}/modules.builtin")
    try:
        if any(line.rsplit("/", 1)[-1].strip() in ("ifb.ko", "ifb.ko.xz", "ifb.ko.zst")
               for line in builtin.read_text().splitlines()):
            return None
    except OSError:
        pass
    return ("shaping a link's ingress (a rate on the robot->edge direction) needs the ifb "
            "kernel module, which is not loaded; linklab loads no kernel module (it could "
            "not tell when unloading is safe): load it once as root with "
            "'modprobe ifb numifbs=0' (numifbs=0: no ifb0/ifb1 in the root namespace)")


# --- reading counters ------------------------------------------------------------------------

class Snapshot:
    """Counters read once per namespace, for stages to pick their numbers from."""

    def __init__(self, journal: Journal, table: str,
                 relay: dict[tuple[str, str, str], dict[str, Any]] | None = None):
        self.shell = journal.shell
        self.table = table
        self.relay = relay or {}
        self._nft: dict[str, dict[str, tuple[int, int]]] = {}
        self._tc: dict[str, list[dict[str, Any]]] = {}
        self._links: dict[str, list[dict[str, Any]]] = {}

    def nft_counter(self, netns: str, name: str) -> tuple[int, int]:
        """(packets, bytes) of a named counter."""
        if netns not in self._nft:
            result = self.shell.run(["nft", "-j", "list", "counters"], netns, check=False)
            counters: dict[str, tuple[int, int]] = {}
            if result.returncode == 0:
                for item in json.loads(result.stdout).get("nftables", []):
                    if "counter" in item and item["counter"].get("table") == self.table:
                        c = item["counter"]
                        counters[c["name"]] = (int(c["packets"]), int(c["bytes"]))
            self._nft[netns] = counters
        return self._nft[netns].get(name, (0, 0))

    def _listing(self, cache: dict[str, list[dict[str, Any]]], netns: str,
                 argv: list[str]) -> list[dict[str, Any]]:
        """A JSON listing of ``netns`` (read once; empty if the command fails)."""
        if netns not in cache:
            result = self.shell.run(argv, check=False)
            cache[netns] = json.loads(result.stdout) if result.returncode == 0 else []
        return cache[netns]

    def qdiscs(self, netns: str) -> list[dict[str, Any]]:
        return self._listing(self._tc, netns, ["tc", "-n", netns, "-s", "-j", "qdisc", "show"])

    def qdisc(self, netns: str, dev: str, kind: str) -> dict[str, Any] | None:
        for entry in self.qdiscs(netns):
            if entry.get("dev") == dev and entry.get("kind") == kind:
                return entry
        return None

    def links(self, netns: str) -> list[dict[str, Any]]:
        return self._listing(self._links, netns,
                             ["ip", "-n", netns, "-s", "-j", "link", "show"])
