#!/usr/bin/env python3
"""Saturation throughput vs stations: the relay's 802.11 medium against Bianchi and ns-3.

Left, 802.11a DCF at 54 Mbit/s, 1500-byte IP packets: the medium (``linklab-emu
--simulate-medium``, every station saturated) beside Bianchi's model (linklab.model.dcf)
with the collision cost the medium uses (``ack_timeout=True``: PPDU + SIFS + ACK + slot,
then DIFS) and with Bianchi's own basic-access T_c (PPDU + DIFS). Right, 802.11ac 80 MHz
VHT MCS 8, one stream: the medium against ``linklab-ns3 saturation`` (ns-3 3.37) with the
settings aligned as linklab.link.ns3.medium_agreement aligns them, for 1500- and 200-byte
packets. Every point in simulated time, seed 1.

    .venv/bin/python scripts/medium_plot.py [--seconds S] [--out docs/img/medium-stations.svg]
                                            [--json FILE]
Prints the numbers it plots (a markdown table per panel).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402

from linklab.emu.directives import SimulatedLoad  # noqa: E402
from linklab.emu.medium_sim import simulate_medium  # noqa: E402
from linklab.link.medium import resolve  # noqa: E402
from linklab.link.ns3.medium_agreement import Cell, run_medium, run_ns3  # noqa: E402
from linklab.model.dcf import saturation  # noqa: E402
from linklab.report.plots import COLOURS, DPI, MARKERS, RC, WIDTH_IN  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
STATIONS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20)
A_FRAME, A_RATE = 1500, 54
AC_MCS, AC_FRAMES = 8, (1500, 200)


def medium_80211a(n: int, seconds: float) -> float:
    """Mbit/s of n saturated 802.11a stations on the medium (a, b, then background ones;
    the retry limit out of the way, as Bianchi has none: tests/test_medium_bianchi.py)."""
    background = max(0, n - 2)
    given = {"standard": "a", "mcs": 7, "retry_limit": 1000, "stations": background}
    if background:
        given |= {"station_load": "saturated", "station_frame": f"{A_FRAME}B"}
    loads = [SimulatedLoad("a", float("inf"), A_FRAME),
             SimulatedLoad("b", float("inf") if n >= 2 else 0.0, A_FRAME)]
    got = simulate_medium(resolve(given).directive(), loads, seconds, seed=n)
    return got["throughput_bps"] / 1e6


def measure(seconds: float) -> dict:
    a = []
    for n in STATIONS:
        a.append({"stations": n, "medium_mbps": medium_80211a(n, seconds),
                  "bianchi_ack_timeout_mbps": saturation(n, A_FRAME, A_RATE,
                                                         ack_timeout=True).throughput_mbps,
                  "bianchi_mbps": saturation(n, A_FRAME, A_RATE).throughput_mbps})
        print(f"  802.11a n={n}: {a[-1]['medium_mbps']:.2f} Mbit/s", file=sys.stderr, flush=True)
    ac = []
    for frame in AC_FRAMES:
        for n in STATIONS:
            cell = Cell(n, frame, AC_MCS)
            theirs, ours = run_ns3(cell, seconds), run_medium(cell, seconds)
            ac.append({"stations": n, "frame_bytes": frame,
                       "ns3_mbps": theirs["throughput_bps"] / 1e6,
                       "medium_mbps": ours["throughput_bps"] / 1e6,
                       "ns3_collision_p": theirs["collision_probability"],
                       "medium_collision_p": ours["collision_probability"]})
            print(f"  802.11ac {frame} B n={n}: ns-3 {ac[-1]['ns3_mbps']:.1f}, medium "
                  f"{ac[-1]['medium_mbps']:.1f} Mbit/s", file=sys.stderr, flush=True)
    return {"seconds": seconds, "a": a, "ac": ac}


def figure(data: dict) -> Figure:
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(WIDTH_IN, 3.2), dpi=DPI, layout="constrained")
        left, right = fig.subplots(1, 2)
    n = [r["stations"] for r in data["a"]]
    left.plot(n, [r["medium_mbps"] for r in data["a"]], marker=MARKERS[0], color=COLOURS[0],
              label="medium (--simulate-medium)")
    left.plot(n, [r["bianchi_ack_timeout_mbps"] for r in data["a"]], linestyle="--",
              color=COLOURS[1], label="Bianchi, T_c with ACK timeout")
    left.plot(n, [r["bianchi_mbps"] for r in data["a"]], linestyle=":", color=COLOURS[2],
              label="Bianchi, basic access T_c")
    left.set_title(f"802.11a DCF, {A_RATE} Mbit/s, {A_FRAME} B")
    for k, frame in enumerate(AC_FRAMES):
        rows = [r for r in data["ac"] if r["frame_bytes"] == frame]
        xs = [r["stations"] for r in rows]
        right.plot(xs, [r["medium_mbps"] for r in rows], marker=MARKERS[0],
                   color=COLOURS[2 * k], label=f"medium, {frame} B")
        right.plot(xs, [r["ns3_mbps"] for r in rows], marker=MARKERS[1], linestyle="--",
                   color=COLOURS[2 * k + 1], label=f"ns-3 3.37, {frame} B")
    right.set_title(f"802.11ac 80 MHz, VHT MCS {AC_MCS}, 1 stream, A-MPDU")
    for ax in (left, right):
        ax.set_xlabel("saturated stations")
        ax.set_ylabel("throughput (Mbit/s, IP)")
        ax.set_ylim(bottom=0)
        ax.legend(loc="lower left")
    return fig


def tables(data: dict) -> str:
    lines = ["| stations | medium Mbit/s | Bianchi (ACK timeout T_c) | error | Bianchi (basic "
             "T_c) |", "|---|---|---|---|---|"]
    for r in data["a"]:
        model = r["bianchi_ack_timeout_mbps"]
        lines.append(f"| {r['stations']} | {r['medium_mbps']:.2f} | {model:.2f} | "
                     f"{(r['medium_mbps'] - model) / model:+.1%} | {r['bianchi_mbps']:.2f} |")
    lines += ["", "| stations | frame B | ns-3 Mbit/s | medium Mbit/s | error | collisions "
              "ns-3 / medium |", "|---|---|---|---|---|---|"]
    for r in data["ac"]:
        lines.append(f"| {r['stations']} | {r['frame_bytes']} | {r['ns3_mbps']:.1f} | "
                     f"{r['medium_mbps']:.1f} | "
                     f"{(r['medium_mbps'] - r['ns3_mbps']) / r['ns3_mbps']:+.1%} | "
                     f"{r['ns3_collision_p']:.3f} / {r['medium_collision_p']:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0,
                        help="simulated seconds per point")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img" / "medium-stations.svg")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args(argv)
    data = measure(args.seconds)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    figure(data).savefig(args.out, format="svg", bbox_inches="tight",
                         metadata={"Date": None})
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    print(tables(data))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
