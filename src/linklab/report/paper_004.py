# ruff: noqa: E501  (the paper's tables are kept one row per line)
"""Seed 004's tables from bench runs of scenarios/paper-004-middlewares.yaml, with the
paper's values beside ours (markdown, for docs/RESULTS.md).

    python -m linklab.report.paper_004 RUN_DIR [RUN_DIR ...]

- Table 2: mean one-way latency (ms) per link, message and middleware;
- Fig. 6: throughput (KB/s = received payload bytes per second / 1000);
- Table 3: CPU (% of one core) of publisher, subscriber and broker/router processes.
A link with no cells (its preset not available yet) is reported as pending, never filled
in; a failed cell is "—" (seed 004 Table 2 prints "-" for the runs that did not complete).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

MESSAGES = ("Array1k", "Array4k", "Array16k", "Array64k", "Array256k", "Array1m", "Array2m",
            "PointCloud512k", "PointCloud1m", "PointCloud2m")
# ours -> the paper's column (seed 004 Table 2); MQTT-nobroker has no counterpart here
COLUMNS = {"fastdds": "FastDDS", "cyclonedds": "CycloneDDS", "zenoh-peer": "Zenoh-TCP",
           "zenoh-router": "Zenoh-broker", "mqtt": "MQTT-broker"}
LINKS = {"ethernet-1g": "ethernet", "wifi": "wifi", "4g": "4g"}
_ = None  # "-" in the paper: the run did not complete

# seed 004 Table 2 (a) Ethernet, (b) Wi-Fi, (c) 4G: mean latency in ms, columns as COLUMNS
TABLE2: dict[str, dict[str, tuple]] = {
    "ethernet": {
        "Array1k": (13.63, 1.29, 1.98, 1.78, 91.01),
        "Array4k": (16.92, 1.30, 1.97, 1.91, 3.87),
        "Array16k": (26.62, 1.55, 2.36, 2.24, 3.58),
        "Array64k": (4.79, 3.35, 3.35, 3.27, 14.77),
        "Array256k": (43.63, 5.37, 7.42, 7.42, 48.50),
        "Array1m": (180.09, 19.28, 32.88, 42.69, 5545.04),
        "Array2m": (_, 37.97, 70.97, 70.61, 7468.62),
        "PointCloud512k": (66.55, 11.16, 20.51, 18.47, 87.07),
        "PointCloud1m": (545.27, 21.95, 37.42, 41.24, 1020.70),
        "PointCloud2m": (604.80, 39.94, 76.78, 77.12, 5625.40),
    },
    "wifi": {
        "Array1k": (178.40, 51.40, 14.82, 12.58, 173.62),
        "Array4k": (178.74, 39.84, 32.34, 54.11, 73.64),
        "Array16k": (2811.88, 56.73, 48.30, 139.63, 125.69),
        "Array64k": (3238.00, 606.50, 452.51, 326.96, 4382.25),
        "Array256k": (12450.00, 1574.14, 3021.77, 2323.91, 19788.57),
        "Array1m": (_, _, 5960.16, 7599.04, _),
        "Array2m": (_, _, 9386.79, 11337.42, _),
        "PointCloud512k": (_, _, 5164.90, 5407.28, _),
        "PointCloud1m": (_, 3748.00, 5326.69, 5657.96, _),
        "PointCloud2m": (_, _, 9283.26, 8805.96, _),
    },
    "4g": {
        "Array1k": (104.69, 58.80, 72.11, 134.02, 679.91),
        "Array4k": (126.50, 103.75, 102.86, 98.05, 537.87),
        "Array16k": (3680.47, 116.95, 150.81, 145.42, 530.20),
        "Array64k": (4802.26, 163.29, 3349.90, 434.19, 2222.11),
        "Array256k": (_, _, 7458.61, 7556.25, 19987.27),
        "Array1m": (_, _, 10086.88, 11811.52, _),
        "Array2m": (_, _, 15365.29, 10870.59, _),
        "PointCloud512k": (_, _, 7357.50, 6591.85, _),
        "PointCloud1m": (_, _, 13254.00, 10333.13, _),
        "PointCloud2m": (_, _, 14309.50, 11900.27, _),
    },
}
# seed 004 Table 3: CPU % of Host 1 (Ethernet, Wi-Fi, 4G), columns as COLUMNS
TABLE3: dict[str, tuple] = {
    "Array1k": ((6.04, 6.01, 5.89), (0.04, 0.04, 0.04), (0.05, 0.05, 0.06), (0.06, 0.05, 0.06), (0.05, 0.05, 0.05)),
    "Array4k": ((6.04, 6.05, 5.87), (0.04, 0.03, 0.04), (0.05, 0.05, 0.06), (0.06, 0.05, 0.06), (0.05, 0.05, 0.05)),
    "Array16k": ((5.12, 5.58, 6.06), (0.05, 0.04, 0.05), (0.06, 0.06, 0.06), (0.06, 0.06, 0.06), (0.04, 0.05, 0.06)),
    "Array64k": ((5.61, 5.57, 6.05), (0.07, 0.06, 0.06), (0.06, 0.05, 0.05), (0.07, 0.05, 0.06), (0.05, 0.03, 0.06)),
    "Array256k": ((6.64, 4.42, 5.81), (0.19, 0.09, 0.06), (0.09, 0.05, 0.04), (0.09, 0.05, 0.05), (0.07, 0.04, 0.05)),
    "Array1m": ((6.92, 4.96, 6.05), (0.51, 0.08, 0.11), (0.16, 0.04, 0.03), (0.18, 0.03, 0.04), (0.17, 0.12, 0.14)),
    "Array2m": ((7.01, 5.58, 0.02), (0.77, 0.08, 0.19), (0.30, 0.04, 0.03), (0.32, 0.04, 0.03), (0.20, 0.18, 0.19)),
    "PointCloud512k": ((6.30, 4.98, 0.03), (0.30, 0.07, 0.07), (0.12, 0.06, 0.03), (0.12, 0.04, 0.04), (0.12, 0.09, 0.09)),
    "PointCloud1m": ((7.08, 0.04, 0.02), (0.57, 0.09, 0.12), (0.18, 0.04, 0.03), (0.19, 0.04, 0.04), (0.21, 0.15, 0.14)),
    "PointCloud2m": ((7.08, 8.40, 0.04), (0.84, 0.11, 0.19), (0.32, 0.03, 0.03), (0.30, 0.03, 0.04), (0.22, 0.22, 0.20)),
}
LINK_INDEX = {"ethernet": 0, "wifi": 1, "4g": 2}
# seed 004 Table 4 (Array1k; the paper does not say which middleware or link -- its
# "without security" latency equals Table 2's Zenoh-TCP over 4G, 72.11 ms)
TABLE4 = {"with": (77.35, 9701, 0.06), "without": (72.11, 9804, 0.06)}
SECURED_PAIRS = (("fastdds", "fastdds-secure"), ("zenoh-peer", "zenoh-peer-tls"),
                 ("zenoh-router", "zenoh-router-tls"), ("mqtt", "mqtt-tls"))


def load_rows(run_dirs: list[Path]) -> list[dict[str, Any]]:
    """Cell rows of the runs, each with its probe reports (records/<cell>/{pub,sub}.json);
    a later run's cell replaces an earlier one with the same id."""
    rows: dict[str, dict[str, Any]] = {}
    for run_dir in run_dirs:
        for line in (run_dir / "cells.jsonl").read_text().splitlines():
            row = json.loads(line)
            for role in ("pub", "sub"):
                report = run_dir / "records" / row["cell_id"] / f"{role}.json"
                row[f"_{role}"] = json.loads(report.read_text()) if report.exists() else {}
            rows[row["cell_id"]] = row
    return list(rows.values())


def cpu_percent(report: dict[str, Any]) -> float:
    """CPU time of a probe over its life, % of one core; the Python probe's start-up
    (interpreter, imports, session) is subtracted (its summary's startup_cpu_s)."""
    cpu, wall = report.get("cpu_s"), report.get("wall_s")
    if cpu is None or not wall:
        return math.nan
    startup = (report.get("summary") or {}).get("startup_cpu_s") or 0.0
    return 100.0 * max(cpu - startup, 0.0) / wall


def _ok(row: dict[str, Any] | None) -> bool:
    return row is not None and row.get("status") == "ok"


def _fmt(value: float | None, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.{digits}f}"


def _index(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(LINKS.get(r["link"], r["link"]), r["type"], r["middleware"]): r for r in rows}


def table2(rows: list[dict[str, Any]], link: str) -> str:
    cells = _index(rows)
    if not any(key[0] == link for key in cells):
        return f"_{link}: pending — needs the `{link}` preset (delay stage); not run._\n"
    head = "| message | " + " | ".join(f"{c} ours / paper" for c in COLUMNS.values()) + " |"
    lines = [head, "|---|" + "---|" * len(COLUMNS)]
    for message in MESSAGES:
        out = []
        for i, middleware in enumerate(COLUMNS):
            row = cells.get((link, message, middleware))
            if _ok(row):
                ours = _fmt(row.get("latency_mean_ms"))
            elif row is None:
                ours = "not run"
            else:  # did not complete: "—", with the mean of what did arrive, if anything
                arrived = row.get("latency_mean_ms")
                ours = "—" if arrived is None or math.isnan(arrived) else f"— [{arrived:.2f}]"
            out.append(f"{ours} / {_fmt(TABLE2[link][message][i])}")
        lines.append(f"| {message} | " + " | ".join(out) + " |")
    return "\n".join(lines) + "\n"


def throughput(rows: list[dict[str, Any]], link: str) -> str:
    cells = _index(rows)
    if not any(key[0] == link for key in cells):
        return f"_{link}: pending — needs the `{link}` preset (delay stage); not run._\n"
    lines = ["| message | " + " | ".join(COLUMNS.values()) + " |", "|---|" + "---|" * len(COLUMNS)]
    for message in MESSAGES:
        out = []
        for middleware in COLUMNS:
            row = cells.get((link, message, middleware))
            goodput = row.get("goodput_bit_s") if _ok(row) else None
            out.append(_fmt(goodput / 8 / 1000 if goodput else None, 1))
        lines.append(f"| {message} | " + " | ".join(out) + " |")
    return "\n".join(lines) + "\n"


def table3(rows: list[dict[str, Any]], link: str) -> str:
    cells = _index(rows)
    if not any(key[0] == link for key in cells):
        return f"_{link}: pending — needs the `{link}` preset (delay stage); not run._\n"
    lines = ["| message | " + " | ".join(f"{c} pub / sub / broker (paper)" for c in COLUMNS.values())
             + " |", "|---|" + "---|" * len(COLUMNS)]
    for message in MESSAGES:
        out = []
        for i, middleware in enumerate(COLUMNS):
            row = cells.get((link, message, middleware))
            paper = TABLE3[message][i][LINK_INDEX[link]]
            if not _ok(row):
                out.append(f"— ({paper:.2f})")
                continue
            broker = row.get("broker_cpu_s")
            wall = (row.get("_sub") or {}).get("wall_s")
            broker_pct = 100 * broker / wall if broker is not None and wall and \
                not (isinstance(broker, float) and math.isnan(broker)) else None
            out.append(f"{_fmt(cpu_percent(row['_pub']))} / {_fmt(cpu_percent(row['_sub']))} / "
                       f"{_fmt(broker_pct) if broker_pct is not None else 'n/a'} ({paper:.2f})")
        lines.append(f"| {message} | " + " | ".join(out) + " |")
    return "\n".join(lines) + "\n"


def table4(rows: list[dict[str, Any]]) -> str:
    """Security on/off per middleware and link: mean latency, throughput, CPU."""
    cells = _index(rows)
    lines = ["| link | middleware | security | mean latency (ms) | throughput (B/s) | "
             "CPU % pub / sub / broker |", "|---|---|---|---|---|---|"]
    for link in LINKS.values():
        for plain, secured in SECURED_PAIRS:
            for name, label in ((plain, "off"), (secured, "on")):
                row = cells.get((link, "Array1k", name))
                if row is None:
                    continue
                if not _ok(row):
                    lines.append(f"| {link} | {plain} | {label} | — | — | — |")
                    continue
                broker = row.get("broker_cpu_s")
                wall = (row.get("_sub") or {}).get("wall_s")
                broker_pct = _fmt(100 * broker / wall) if isinstance(broker, (int, float)) \
                    and not math.isnan(broker) and wall else "n/a"
                goodput = row.get("goodput_bit_s") or math.nan
                lines.append(f"| {link} | {plain} | {label} | {_fmt(row.get('latency_mean_ms'))} "
                             f"| {_fmt(goodput / 8, 0)} | {_fmt(cpu_percent(row['_pub']))} / "
                             f"{_fmt(cpu_percent(row['_sub']))} / {broker_pct} |")
    w, wo = TABLE4["with"], TABLE4["without"]
    lines.append(f"| paper | (Table 4) | on | {w[0]:.2f} | {w[1]} | {w[2]:.2f} |")
    lines.append(f"| paper | (Table 4) | off | {wo[0]:.2f} | {wo[1]} | {wo[2]:.2f} |")
    return "\n".join(lines) + "\n"


def render(rows: list[dict[str, Any]]) -> str:
    if any(r["middleware"] in dict(SECURED_PAIRS).values() for r in rows):
        return "#### Table 4: security on/off, Array1k at 10 Hz\n\n" + table4(rows)
    parts = []
    for link in LINKS.values():
        parts += [f"#### Table 2 ({link}): mean latency, ms — ours / paper\n\n"
                  "— = the cell did not complete (not every sample published and delivered "
                  "in time); [x] = mean latency of the samples that did arrive.\n",
                  table2(rows, link),
                  f"#### Fig. 6 ({link}): throughput, KB/s (ours)\n", throughput(rows, link),
                  f"#### Table 3 ({link}): CPU % of one core — ours pub / sub / broker "
                  "(paper, Host 1)\n", table3(rows, link)]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m linklab.report.paper_004 RUN_DIR [RUN_DIR ...]", file=sys.stderr)
        return 2
    print(render(load_rows([Path(a) for a in args])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
