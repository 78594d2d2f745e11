"""The user-namespace holder itself (linklab.link.userns starts it): inside ``unshare
--user --map-root-user --mount --net`` it mounts a private /run/netns, builds the testbed
with linklab.link.lifecycle.up, prints ``ready <state file>`` (or ``<exit code>
<message>``) and keeps the testbed up until asked to stop, its state file goes, or the
process that owns it is gone; then it takes the testbed down."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from linklab.errors import LinklabError
from linklab.link.journal import process_alive, process_start_time
from linklab.link.lifecycle import up


def _mount_private_netns_dir() -> None:
    target = "/run/netns" if Path("/run/netns").is_dir() else "/run"
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "linklab-netns", target],
                   check=True, capture_output=True)
    Path("/run/netns").mkdir(exist_ok=True)


def hold(config: dict[str, Any]) -> int:
    stop = {"now": False}

    def _stop(*_: object) -> None:
        stop["now"] = True

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _stop)
    try:
        _mount_private_netns_dir()
        bed = up(**config["kwargs"], owner=True)   # this holder owns it while building
    except LinklabError as error:
        print(f"{error.exit_code} {error}", flush=True)
        return error.exit_code
    except Exception as error:  # noqa: BLE001 - reported to the starting process
        print(f"1 {error}", flush=True)
        return 1
    if stop["now"]:   # the starter gave up while the testbed was being built
        bed.down()
        return 0
    # The process the run lives for, or none: a detached run (linklab link up), kept
    # by this holder until linklab link down (runs.kept_by).
    bed.journal.update(holder={"pid": os.getpid(), "start": process_start_time(os.getpid())},
                       owner=config.get("owner"), detached=config.get("owner") is None)
    try:
        print(f"ready {bed.journal.path}", flush=True)
    except OSError:   # the starter is gone (killed) before it learnt the run is up
        bed.down()
        return 0
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - nobody reads us any more
    owner = config.get("owner") or {}
    while not stop["now"]:
        if not bed.journal.exists():
            break
        if owner and not process_alive(owner.get("pid"), owner.get("start")):
            break
        time.sleep(0.2)
    bed.down()
    return 0


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "hold":
        return hold(json.loads(sys.argv[2]))
    print("usage: python -m linklab.link.userns_holder hold CONFIG", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
