"""What the relay's learned wake-up lead costs: its CPU, with and without the lead.

    .venv/bin/python scripts/relay_lead_cost.py     (as root; run alone on the machine)

A relay with 20 ms of delay each way carries 64-byte datagrams one way, 1000 at 200/s
and 10 000 at 2000/s, once sleeping to each deadline (spin 0) and once with the learned
lead (the default). Prints, per run, the relay's CPU as a share of one core (utime +
stime over the run) and the datagrams' lateness beyond 20 ms (kernel stamps: p50, p99).
The numbers in docs/RESULTS.md's "A delay stage's accuracy" come from this script.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from linklab.emu.measure import udp_run  # noqa: E402
from linklab.procfs import cpu_seconds  # noqa: E402
from test_emu_relay import ADDR_B, PORT, Delay, relay_link, sockets  # noqa: E402


def main() -> None:
    for spin in (0.0, None):
        for rate, count in ((200, 1000), (2000, 10000)):
            with tempfile.TemporaryDirectory() as tmp:
                with relay_link(Path(tmp), ab=[Delay(0.02)], ba=[Delay(0.02)],
                                spin_s=spin) as wire:
                    pid = wire.relay.pid
                    before = cpu_seconds(pid)
                    sender, receiver = sockets(wire)
                    run = udp_run(sender, receiver, (ADDR_B, PORT), count=count,
                                  rate_pps=rate, size=64, linger_s=0.2, tx_timestamps=True)
                    used = cpu_seconds(pid) - before
            ok = run.received & (run.tx_ns > 0)
            late = (run.recv_ns[ok] - run.tx_ns[ok]) / 1e3 - 20000
            print(f"lead {'learned' if spin is None else 'none'}, {rate}/s: relay CPU "
                  f"{100 * used / (count / rate + 0.2):.1f} % of a core; beyond 20 ms "
                  f"p50 {np.median(late):.0f} us, p99 {np.percentile(late, 99):.0f} us")


if __name__ == "__main__":
    main()
