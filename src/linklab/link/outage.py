"""The outage scheduler: a small process that opens and closes outage windows on time.

``up`` starts it (through the journal, so ``down`` stops it) with the schedule, the
run's t0 (CLOCK_MONOTONIC ns) and the nft chains to switch. At ``t0 + start`` it adds
one drop rule to each outage chain (100 % loss), at ``t0 + start + length`` it flushes
them, and repeats every period if there is one. A switch is one nft transaction per
namespace, sent through libnftables handles opened inside each namespace beforehand
(about 1 ms; no process to start at switch time -- on a busy machine spawning ``nft``
took 5-25 ms), with the ``nft`` command as fallback. The measured times (before and
after each switch) are appended to ``<state dir>/<run>.outage.jsonl`` so a benchmark can
align with them.

Run as ``python -m linklab.link.outage '<json>'``.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from linklab.link.direction_spec import Outage
from linklab.link.system import NETNS_DIR, Shell


def _commands(shell: Shell, switches: list[dict[str, Any]], edge: str) -> list[list[str]]:
    """nft scripts, one per namespace, for an edge: "on", "off" or "tidy".

    Deleting rules makes nft wait for an RCU grace period (10-40 ms here), so closing a
    window only *adds* a ``return`` in front of the drop rule (5 ms, like opening it);
    the chain is emptied afterwards ("tidy"), when the timing no longer matters.
    """
    by_netns: dict[str, list[str]] = defaultdict(list)
    for sw in switches:
        where = f"{sw['table']} {sw['chain']}"
        by_netns[sw["netns"]].append({"on": f"add rule {where} {sw['rule']}",
                                      "off": f"insert rule {where} return",
                                      "tidy": f"flush chain {where}"}[edge])
    return [shell.argv_in(netns, ["nft", "-f", "-"]) + ["\n".join(lines) + "\n"]
            for netns, lines in by_netns.items()]


CLONE_NEWNET = 0x40000000


class NftInNetns:
    """A libnftables context whose netlink socket lives in one network namespace."""

    def __init__(self, netns_path: Path):
        libc = ctypes.CDLL(None, use_errno=True)
        self.lib = ctypes.CDLL("libnftables.so.1")
        self.lib.nft_ctx_new.restype = ctypes.c_void_p
        self.lib.nft_ctx_new.argtypes = [ctypes.c_uint32]
        self.lib.nft_run_cmd_from_buffer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        self.lib.nft_ctx_buffer_output.argtypes = [ctypes.c_void_p]
        self.lib.nft_ctx_buffer_error.argtypes = [ctypes.c_void_p]
        # This process moves into the namespace for good: its netlink socket is made
        # there. (The scheduler needs no other namespace; the next handle moves again.)
        target = os.open(netns_path, os.O_RDONLY)
        try:
            if libc.setns(target, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns {netns_path}")
            self.ctx = self.lib.nft_ctx_new(0)  # opens its netlink socket here
        finally:
            os.close(target)
        self.lib.nft_ctx_buffer_output(self.ctx)
        self.lib.nft_ctx_buffer_error(self.ctx)
        self.run("list tables")  # warm the cache: the first command is the slow one

    def run(self, script: str) -> bool:
        return self.lib.nft_run_cmd_from_buffer(self.ctx, script.encode()) == 0


def _switch_fast(handles: dict[str, NftInNetns], scripts: dict[str, str]) -> bool:
    return all([handles[netns].run(script) for netns, script in scripts.items()])


def _scripts(switches: list[dict[str, Any]], edge: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for argv in _commands(Shell(), switches, edge):
        netns = argv[1].split("/")[-1]  # nsenter --net=/run/netns/<name>
        out[netns] = argv[-1]
    return out


def _switch(commands: list[list[str]]) -> bool:
    procs = []
    for argv in commands:
        *cmd, script = argv
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        procs.append((proc, script))
    ok = True
    for proc, script in procs:
        _, err = proc.communicate(script)
        if proc.returncode != 0:
            ok = False
            print(f"outage: nft failed: {err.strip()}", file=sys.stderr, flush=True)
    return ok


def _sleep_until(target_ns: int) -> None:
    while True:
        remaining = (target_ns - time.monotonic_ns()) / 1e9
        if remaining <= 0:
            return
        time.sleep(min(remaining, 0.5))


def run(config: dict[str, Any]) -> int:
    shell = Shell(tuple(config.get("shell_prefix", ())))
    schedule = Outage(config["start_s"], config["length_s"], config.get("period_s"))
    t0_ns = int(config["t0_ns"])
    switches = config["switches"]
    events = Path(config["events"])
    state = Path(config["state"])
    on_cmds, off_cmds = _commands(shell, switches, "on"), _commands(shell, switches, "off")
    tidy_cmds = _commands(shell, switches, "tidy")
    netns = {sw["netns"] for sw in switches}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    handles: dict[str, NftInNetns] | None
    try:
        handles = {n: NftInNetns(NETNS_DIR / n) for n in netns}
        scripts = {edge: _scripts(switches, edge) for edge in ("on", "off", "tidy")}
    except OSError as error:
        print(f"outage: libnftables unusable ({error}); using the nft command",
              file=sys.stderr, flush=True)
        handles = None
    k = 0
    while True:
        begin = schedule.start_s + (k * schedule.period_s if schedule.period_s else 0.0)
        for edge, commands in (("on", on_cmds), ("off", off_cmds)):
            when = begin if edge == "on" else begin + schedule.length_s
            _sleep_until(t0_ns + int(when * 1e9))
            if not state.exists() or not all((NETNS_DIR / n).exists() for n in netns):
                return 0  # the run is gone (taken down or cleaned): nothing left to switch
            before = time.monotonic_ns()
            ok = (_switch_fast(handles, scripts[edge]) if handles is not None
                  else _switch(commands))
            after = time.monotonic_ns()
            with events.open("a") as out:
                out.write(json.dumps({"window": k, "edge": edge, "planned_ns": t0_ns + int(
                    when * 1e9), "before_ns": before, "after_ns": after, "ok": ok}) + "\n")
            if edge == "off":
                if handles is not None:
                    _switch_fast(handles, scripts["tidy"])
                else:
                    _switch(tidy_cmds)
        if schedule.period_s is None:
            return 0
        k += 1


def main() -> int:
    return run(json.loads(sys.argv[1]))


if __name__ == "__main__":
    raise SystemExit(main())
