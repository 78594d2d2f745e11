"""The latency model's machine (tune/latencymachine.py), fitted on a run's loss-free tuned
cells (tune/latencyfit.py), printed as the line ``linklab model-check --latency`` prints
and as the Python that would store it:

    python3 scripts/latency_fit.py RUN_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from linklab.rundir import RunStore
from linklab.tune.latencyfit import calibrate
from linklab.tune.wirecheck import link_infos


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    run = Path(sys.argv[1])
    store = RunStore.open(run)
    fit = calibrate(store.rows, link_infos(store.info), run.name)
    if fit is None:
        print(f"{run}: no middleware has two loss-free idle optimized cells to fit on",
              file=sys.stderr)
        return 1
    print(fit.calibration.describe())
    print(repr(fit.calibration))
    return 0


if __name__ == "__main__":
    sys.exit(main())
