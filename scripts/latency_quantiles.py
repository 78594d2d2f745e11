"""A run's tuned cells' one-way latency quantiles against the latency replay's
(model/latency.py replay_latencies), on the machine model-check --latency fits on the run:
where the two distributions part (a repair round's cluster more or less often, a fast path
slower) when a mean or p95 misses.

    python3 scripts/latency_quantiles.py RUN_DIR [CELL_ID_PART ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from linklab.bench.metrics import latencies_ms, unique_received
from linklab.model.latency import replay_latencies
from linklab.probes.records import read_records
from linklab.rundir import RunStore
from linklab.tune import latencycheck as lc
from linklab.tune.latencyfit import calibrate
from linklab.tune.latencymachine import STORED
from linklab.tune.wirecheck import link_infos

QUANTILES = (10, 25, 50, 75, 90, 95, 99)


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    run, parts = Path(sys.argv[1]), sys.argv[2:]
    store = RunStore.open(run)
    links = link_infos(store.info)
    fit = calibrate(store.rows, links, run.name)
    machine = fit.calibration if fit else STORED
    print(machine.describe())
    for row in store.rows:
        cell = str(row.get("cell_id"))
        if not lc.predictable(row, links) or row.get("status") != "ok" \
                or not all(p in cell for p in parts):
            continue
        link = links[row["link"]]
        competitors, cores = lc.row_contention(row)
        payload, rate = int(row["payload_bytes"]), float(row["rate_hz"])
        x = lc.latency_input(row["middleware"], lc.tuned_settings(
            payload, rate, link, competitors, cores), payload, rate, link, competitors, cores,
            type_name=row.get("type") or "Bytes", calibration=machine)
        model = replay_latencies(x)[0] * 1e3
        measured = latencies_ms(unique_received(
            read_records(run / "records" / cell / "sub.bin").records))
        print(cell)
        for name, values in (("measured", measured), ("model", model)):
            print(f"  {name:<9}" + " ".join(f"p{q}={np.percentile(values, q):8.2f}"
                                            for q in QUANTILES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
