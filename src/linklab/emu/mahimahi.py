"""Mahimahi's ``mm-link``, the reference the fidelity benchmark runs beside the relay.

Built on first need (``scripts/mahimahi-build.sh`` into ``build/mahimahi/bin``), never by
setup. Run so that nothing outside a namespace of its own changes:

- **Its own network namespace.** mm-link needs ``net.ipv4.ip_forward`` = 1 and adds an
  iptables NAT rule; both are per network namespace, so it runs inside
  ``linklab-mm<pid>`` (made, given ip_forward there, and deleted by ``MahimahiNamespace``)
  and the host's namespace is never touched.
- **A real uid other than root.** mm-link refuses to run unless it is set-uid root and
  started by someone else (``check_requirements``: euid 0, real uid and gid not 0); it then
  drops to the real uid before running the command inside. A set-uid root file would let
  any local user start it; instead ``setpriv --ruid --rgid --clear-groups`` (util-linux)
  sets only the *real* ids to nobody's (65534) and keeps the effective uid 0, the state a
  set-uid start gives, and execs mm-link. No file on disk is set-uid, and the command
  inside runs as nobody. mm-link then opens its traces and logs as nobody, so they are
  copied into a directory nobody owns.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from linklab.emu.relay import REPO
from linklab.errors import EnvironmentProblem

BUILD_SCRIPT = REPO / "scripts" / "mahimahi-build.sh"
NOBODY = 65534


def mm_link_binary() -> Path:
    """build/mahimahi/bin/mm-link, built now (apt packages and all) when missing."""
    path = REPO / "build" / "mahimahi" / "bin" / "mm-link"
    result = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True)
    if result.returncode != 0 or not os.access(path, os.X_OK):
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise EnvironmentProblem(f"could not build Mahimahi's mm-link ({BUILD_SCRIPT}): {tail}")
    return path


def mm_link_built() -> bool:
    return os.access(REPO / "build" / "mahimahi" / "bin" / "mm-link", os.X_OK)


def mm_link_command(binary: Path, netns: str, traces: tuple[Path, Path], log_option: str,
                    log: Path, inner: str, queue_packets: int | None = None,
                    cpu: int | None = None, realtime_priority: int | None = None) -> list[str]:
    """mm-link in ``netns`` with nobody's real ids, running ``sh -c inner`` inside
    (``log_option``: uplink-log or downlink-log; ``queue_packets``: a drop-tail queue of
    that many packets each way, else mm-link's default, unbounded; ``cpu``,
    ``realtime_priority``: pinned, SCHED_FIFO, which what it starts inherits)."""
    pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
    if realtime_priority:
        pin += ["chrt", "-f", str(realtime_priority)]
    queues = []
    if queue_packets is not None:
        for way in ("uplink", "downlink"):
            queues += [f"--{way}-queue=droptail", f"--{way}-queue-args=packets={queue_packets}"]
    return [*pin, "ip", "netns", "exec", netns,
            "setpriv", f"--ruid={NOBODY}", f"--rgid={NOBODY}", "--clear-groups",
            str(binary), str(traces[0]), str(traces[1]), f"--{log_option}={log}", *queues,
            "--", "sh", "-c", inner]


_HEADER = re.compile(r"^# (init|base) timestamp: (\d+)$", re.MULTILINE)


def log_zero_realtime_ns(text: str) -> int:
    """The CLOCK_REALTIME instant (ns) of trace time 0 in an mm-link log: its header's
    init timestamp (realtime ms when mm-link started) plus base timestamp (ms after that
    when this direction's queue was made, its trace's zero; link_queue.cc)."""
    found = dict((k, int(v)) for k, v in _HEADER.findall(text))
    if set(found) != {"init", "base"}:
        raise EnvironmentProblem("mm-link's log has no init/base timestamp header")
    return (found["init"] + found["base"]) * 1_000_000


@contextlib.contextmanager
def mahimahi_namespace(name: str,
                       traces: tuple[Path, Path]) -> Iterator[tuple[Path, Path, Path]]:
    """A namespace for mm-link (loopback up, ip_forward 1) and a directory nobody owns
    (under the temporary directory) holding copies of the (up, down) traces; yields
    (directory, up, down). On leaving, whatever happened, the namespace is deleted (with
    it mm-link's NAT rule and ip_forward) and the directory removed."""
    made = False
    home = Path(tempfile.mkdtemp(prefix="linklab-mm-"))
    try:
        subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
        made = True
        for args in (["ip", "-n", name, "link", "set", "lo", "up"],
                     ["ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv4.ip_forward=1"]):
            subprocess.run(args, check=True, capture_output=True)
        copies = []
        for trace, suffix in zip(traces, ("up", "down"), strict=True):
            copies.append(home / f"trace.{suffix}")
            shutil.copyfile(trace, copies[-1])
        for path in (home, *copies):
            os.chown(path, NOBODY, NOBODY)
        yield home, copies[0], copies[1]
    finally:
        if made:
            subprocess.run(["ip", "netns", "del", name], check=False)
        shutil.rmtree(home, ignore_errors=True)
