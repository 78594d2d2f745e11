"""Tabulate ns-3 3.37's frame error rates (MCS x SNR, 1500-byte MPDU) for the relay
medium's channel from distance: writes src/linklab/model/wifi-per-ns3.json, which
linklab.model.wifi_channel reads (its docstring says how).

    .venv/bin/python scripts/wifi_per_table.py [--check]

``--check`` writes nothing: it asks ns-3 again and says whether the stored table is what
ns-3 gives (exit 1 if not). The table comes from build/ns3/linklab-ns3 per-table
(ns3/run_per_table.cc; built by scripts/setup.sh).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from linklab.link.ns3 import ns3_binary

OUT = Path(__file__).resolve().parent.parent / "src" / "linklab" / "model" / "wifi-per-ns3.json"
# one width and guard interval per standard: ns-3's table model depends on neither
STANDARDS = {"n": (20, 800), "ac": (80, 800), "ax": (80, 800)}
SNR_FROM, SNR_TO, SNR_STEP = -5.0, 50.0, 0.5


def tabulate() -> list[dict]:
    rows = []
    for standard, (width, gi) in STANDARDS.items():
        out = subprocess.run(
            [str(ns3_binary()), "per-table", "--standard", standard, "--width", str(width),
             "--gi", str(gi), "--bytes", "1500", "--snr-from", str(SNR_FROM),
             "--snr-to", str(SNR_TO), "--snr-step", str(SNR_STEP)],
            capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            row = json.loads(line)
            rows.append({k: row[k] for k in ("standard", "mcs", "bytes", "snr_db", "per")})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args()
    rows = tabulate()
    if args.check:
        stored = json.loads(OUT.read_text())["rows"]
        same = stored == rows
        print("the stored table is ns-3's" if same else "the stored table differs from ns-3's")
        sys.exit(0 if same else 1)
    table = {"source": "ns-3 3.37 TableBasedErrorRateModel, 1 - GetChunkSuccessRate of an "
                       "MPDU of 1500 bytes (8 x 1500 bits), one stream, one receive antenna",
             "command": ".venv/bin/python scripts/wifi_per_table.py",
             "rows": rows}
    OUT.write_text(json.dumps(table, separators=(",", ":")) + "\n")
    print(f"{OUT}: {len(rows)} MCS rows")


if __name__ == "__main__":
    main()
