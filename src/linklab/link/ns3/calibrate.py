"""Measure the radio medium's loss-vs-distance curve (paper 002 §IV, Fig. 4).

    python -m linklab.link.ns3.calibrate [--packets N] [--out FILE] [--check]

Runs ``linklab-ns3 curve`` (the same Wi-Fi settings as the realtime medium, in simulated
time: deterministic, seeded, a few seconds): two nodes at each distance, N packets of 60
bytes from one to the other, and writes ``radio-curve.json`` (the fast mode's curve,
radio_curve.py) with every setting and this command. ``--check`` measures again and
compares with the file instead of writing it (exit 1 if they differ): the file is
reproducible. Distances: 1 m steps from 10 to 23 m, 0.1 m steps from 24 to 28 m (where
the paper's figures have their detail), then 29, 30, 35, 40 and 50 m.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from linklab.link.ns3 import ns3_binary
from linklab.link.radio import CALIBRATION, DEFAULT_TX_POWER_DBM
from linklab.link.radio_curve import curve_path

PACKET_BYTES = 60          # "Packet sizes of 60 bytes were sent between two nodes" (§IV)
DEFAULT_PACKETS = 2000
INTERVAL_MS = 10.0         # one packet at a time: no queueing, every loss is the channel's
SEED = 1


def distances() -> list[float]:
    coarse = [float(d) for d in range(10, 24)]
    fine = [round(24 + 0.1 * i, 1) for i in range(41)]
    return coarse + fine + [29.0, 30.0, 35.0, 40.0, 50.0]


def measure(points: list[float], packets: int, size: int = PACKET_BYTES,
            tx_power_dbm: float = DEFAULT_TX_POWER_DBM, seed: int = SEED) -> list[dict[str, Any]]:
    """One JSON object per distance from ``linklab-ns3 curve`` (simulated time)."""
    argv = [str(ns3_binary()), "curve", "--distances", ",".join(f"{d:g}" for d in points),
            "--packets", str(packets), "--size", str(size), "--tx-power",
            f"{tx_power_dbm:.4f}", "--interval-ms", f"{INTERVAL_MS:g}", "--seed", str(seed)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def curve_document(packets: int) -> dict[str, Any]:
    rows = measure(distances(), packets)
    command = "python -m linklab.link.ns3.calibrate" + (
        f" --packets {packets}" if packets != DEFAULT_PACKETS else "")
    return {
        "what": "loss of 60-byte packets between two ns-3 802.11a ad-hoc nodes vs distance "
                "(paper 002 §IV, Fig. 4), simulated time, unicast with the MAC's retries",
        "command": command, "size_bytes": PACKET_BYTES, "packets": packets,
        "interval_ms": INTERVAL_MS, "seed": SEED, "settings": CALIBRATION,
        "points": [{"distance_m": r["distance_m"], "loss": r["loss"],
                    "received": r["received"], "sent": r["sent"]} for r in rows],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m linklab.link.ns3.calibrate",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--packets", type=int, default=DEFAULT_PACKETS)
    parser.add_argument("--out", type=Path, default=curve_path())
    parser.add_argument("--check", action="store_true",
                        help="measure again and compare with --out instead of writing it")
    args = parser.parse_args(argv)
    if args.packets < 1:
        parser.error("--packets: expected a count of 1 or more")
    document = curve_document(args.packets)
    text = json.dumps(document, indent=1) + "\n"
    if args.check:
        same = args.out.exists() and json.loads(args.out.read_text()) == document
        print(f"{args.out}: {'reproduced' if same else 'DIFFERS from a new measurement'}")
        return 0 if same else 1
    args.out.write_text(text)
    onset = next((p["distance_m"] for p in document["points"] if p["loss"] > 0), None)
    print(f"wrote {args.out}: loss begins at {onset} m")
    return 0


if __name__ == "__main__":
    sys.exit(main())
