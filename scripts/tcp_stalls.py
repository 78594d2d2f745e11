#!/usr/bin/env python3
"""Per trial of a bench run: how long the TCP connections between the hosts stood still.

    python3 scripts/tcp_stalls.py RUN_DIR SS_LOG

SS_LOG is what scripts/ss_sample.sh wrote while `linklab bench` made RUN_DIR. For each
cell (in the window started_utc + 1 s .. + wall_s) and each established TCP connection seen in
it, the script finds the longest stretch in which the connection had unacknowledged bytes
and its bytes_acked did not move (a retransmission timeout waiting, or a closed window),
the largest retransmission timeout (RTO) and the largest backoff (RTO doubled that many
times) the kernel reported.
The data connection is the one whose sender got the most bytes acknowledged; the others
carry discovery's TCP side and the reader's ACKNACKs. It prints a markdown table:
delivered, worst latency, connections, and the stalls, beside each other
(docs/RESULTS.md, "Fast DDS over TCP at PER 20 %").
"""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

FIELD = re.compile(r"(\w+):([^\s]+)")


def read_samples(path: Path):
    """Yield (time, namespace, local, peer, fields) for every ESTAB socket in the log."""
    when = ns = head = None
    for line in path.read_text().splitlines():
        if line.startswith("### "):
            _, stamp, ns = line.split()
            when = datetime.fromisoformat(stamp).replace(tzinfo=UTC)
            head = None
        elif line and not line[0].isspace():
            parts = line.split()
            head = (parts[3], parts[4]) if parts[0] == "ESTAB" and len(parts) >= 5 else None
        elif head and when is not None:
            yield when, ns, head[0], head[1], dict(FIELD.findall(line))


def worst_stall(samples) -> tuple[float, float, int]:
    """Longest time (s) with unacknowledged bytes and bytes_acked unchanged; the largest
    retransmission timeout (s) and backoff the kernel reported."""
    longest, rto, backoff = 0.0, 0.0, 0
    since = last_acked = last_time = None
    for when, fields in samples:
        backoff = max(backoff, int(fields.get("backoff", 0)))
        rto = max(rto, float(fields.get("rto", 0)) / 1000)
        acked = fields.get("bytes_acked")
        if fields.get("unacked") and acked is not None and acked == last_acked:
            since = since or last_time
            longest = max(longest, (when - since).total_seconds())
        else:
            since = None
        last_acked, last_time = acked, when
    return longest, rto, backoff


def trial_rows(run: Path, log: Path) -> list[list[str]]:
    samples = list(read_samples(log))
    rows = []
    for line in (run / "cells.jsonl").read_text().splitlines():
        cell = json.loads(line)
        stamp = datetime.fromisoformat(cell["started_utc"])  # whole seconds
        end = stamp + timedelta(seconds=cell["wall_s"])
        # started_utc is cut to the second: skip that second, which can hold the end of
        # the cell before (its sockets close only when its probes exit)
        start = stamp + timedelta(seconds=1)
        conns: dict[tuple[str, str, str], list] = {}
        for when, ns, local, peer, fields in samples:
            if start <= when <= end:
                conns.setdefault((ns, local, peer), []).append((when, fields))
        pairs = {tuple(sorted((local, peer))) for _, local, peer in conns}
        # the data connection: the end whose bytes got acknowledged most
        sent = {key: max(int(f.get("bytes_acked", 0)) for _, f in seq)
                for key, seq in conns.items()}
        data = max(sent, key=sent.__getitem__, default=None)
        others = [worst_stall(seq) for key, seq in conns.items() if key != data]
        d_stall, d_rto, d_backoff = worst_stall(conns[data]) if data else (0.0, 0.0, 0)
        o_stall = max((o[0] for o in others), default=0.0)
        o_rto = max((o[1] for o in others), default=0.0)
        o_backoff = max((o[2] for o in others), default=0)
        latency = cell.get("latency_max_ms")
        rows.append([cell["cell_id"], f"{cell['received']}/{cell['published']}",
                     f"{latency / 1000:.1f}" if latency is not None else "—",
                     str(len(pairs)), f"{d_stall:.1f}", f"{d_rto:.1f}", str(d_backoff),
                     f"{o_stall:.1f}", f"{o_rto:.1f}", str(o_backoff)])
    return rows


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: tcp_stalls.py RUN_DIR SS_LOG", file=sys.stderr)
        return 2
    run, log = Path(argv[0]), Path(argv[1])
    if not (run / "cells.jsonl").is_file():
        print(f"tcp_stalls.py: RUN_DIR: no cells.jsonl in {run}", file=sys.stderr)
        return 2
    if not log.is_file():
        print(f"tcp_stalls.py: SS_LOG: no such file {log}", file=sys.stderr)
        return 2
    try:
        rows = trial_rows(run, log)
    except (ValueError, IndexError, KeyError) as err:
        print(f"tcp_stalls.py: cannot read {log} with {run}: {err}", file=sys.stderr)
        return 2
    print("| cell | delivered | worst latency (s) | TCP connections "
          "| data: longest stall (s) | data: max RTO (s) | data: max backoff "
          "| others: longest stall (s) | others: max RTO (s) | others: max backoff |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
