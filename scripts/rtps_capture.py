"""Run a scenario's cells through the real bench with a packet capture on the edge host.

For finding a mechanism on the wire (docs/RESULTS.md, issue 38: the tuned Fast DDS
profile under CPU contention): every cell runs exactly as ``linklab bench`` runs it (same
runner, environment, probes, CPU competitors), and while its link is up ``tshark`` records
the edge host's link interface into ``RUN/records/<cell>/edge.pcapng`` (headers only:
the first 192 bytes of each frame, enough for the RTPS submessage headers of every frame;
IP reassembly is off, so each fragment is one frame). The capture starts before the first
probe and stops after the last one; the link and the capture go away with the cell.

    python3 scripts/rtps_capture.py SCENARIO.yaml OUT_DIR      # root; prints the run dir
    python3 scripts/rtps_capture.py SCENARIO.yaml OUT_DIR --host robot   # the other side

Summaries per second of a capture: scripts/rtps_timeline.py.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from linklab.bench.matrix import expand
from linklab.bench.namespace_environment import LinklabEnvironment
from linklab.bench.runner import run_cells
from linklab.bench.spec import load_scenario
from linklab.rundir import RunStore

SNAPLEN = 192


class CapturingEnvironment(LinklabEnvironment):
    """The bench's own environment, with tshark on one host of every cell's link."""

    def __init__(self, presets, store: RunStore, host: str):
        super().__init__(presets)
        self.store = store
        self.host = host

    @contextlib.contextmanager
    def link(self, cell, run_tag):
        with super().link(cell, run_tag) as bed:
            host = bed.bed.hosts[self.host]
            out = self.store.cell_dir(cell.cell_id) / f"{self.host}.pcapng"
            argv = bed.bed.argv(self.host, ["tshark", "-q", "-i", host.interface, "-s",
                                            str(SNAPLEN), "-w", str(out)])
            tshark = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, start_new_session=True)
            deadline = time.monotonic() + 10
            while not out.exists() and time.monotonic() < deadline:
                if tshark.poll() is not None:
                    raise SystemExit(f"tshark ended: {tshark.stderr.read().decode()[-500:]}")
                time.sleep(0.05)
            time.sleep(0.5)  # tshark has opened the interface once its file exists
            try:
                yield bed
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(tshark.pid, signal.SIGINT)
                try:
                    tshark.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(tshark.pid, signal.SIGKILL)
                    tshark.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--host", default="edge", help="host whose link interface to capture")
    args = parser.parse_args()
    scenario = load_scenario(args.scenario)
    cells = expand(scenario)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    store = RunStore.create(args.out / f"{scenario.name}-capture-{stamp}",
                            scenario=dict(scenario.to_dict(), text=scenario.text),
                            options={"capture": args.host},
                            planned=[c.cell_id for c in cells], estimated_s=0.0)
    print(store.root, flush=True)
    env = CapturingEnvironment(scenario.presets, store, args.host)
    rows = run_cells(store, cells, env, run_tag=f"cap{os.getpid() % 10000}",
                     search_settings=scenario.search)
    for row in rows:
        print(f"{row['cell_id']}: {row['status']} {row['received']}/{row['published']} "
              f"stall {row.get('stall_max_s')} s {row.get('failure_reason') or ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
