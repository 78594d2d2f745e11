"""A benchmark endpoint run inside a namespace: ``python -m linklab.sft.worker pub|sub``.

Reads one JSON command per line on stdin, answers one JSON line on stdout (logs go to
stderr).  The orchestrator (:mod:`linklab.sft.bench`) drives one publisher worker and
one subscriber worker per receiver host, a new topic per trial.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from linklab.sft import samples, usage
from linklab.sft.api import Publisher, Subscriber
from linklab.sft.transport import TransportConfig


def workload_message(workload: dict[str, Any]) -> tuple[str, Any]:
    kind = workload["kind"]
    if kind == "synthetic":
        from linklab.sft.schema import synthetic_type
        name = synthetic_type(workload["fields"], workload["size"])
        return name, samples.synthetic_message(workload["fields"], workload["size"],
                                               random.Random(workload.get("seed", 0)))
    makers = {
        "laserscan": ("sensor_msgs/msg/LaserScan", samples.laser_scan),
        "battery": ("sensor_msgs/msg/BatteryState", samples.battery_state),
        "grid": ("nav_msgs/msg/OccupancyGrid", samples.occupancy_grid),
        "pointcloud": ("sensor_msgs/msg/PointCloud2", samples.point_cloud),
    }
    name, maker = makers[kind]
    return name, maker()


def _reader(paths: list[str]):
    """A callback that reads ``paths``, as an application would."""
    def callback(message: Any) -> None:
        for path in paths:
            value = message
            for part in path.split("."):
                value = getattr(value, part)
    return callback


def _counters(ports: list[str]) -> dict[str, int]:
    """tx+rx bytes of each port: an interface here, or ``<netns>/<interface>`` elsewhere."""
    out = {}
    for port in ports:
        if "/" in port:
            namespace, interface = port.split("/", 1)
            text = subprocess.run(
                ["ip", "netns", "exec", namespace, "cat",
                 f"/sys/class/net/{interface}/statistics/tx_bytes",
                 f"/sys/class/net/{interface}/statistics/rx_bytes"],
                capture_output=True, text=True, check=True).stdout.split()
            out[port] = int(text[0]) + int(text[1])
            continue
        base = Path(f"/sys/class/net/{port}/statistics")
        out[port] = int((base / "tx_bytes").read_text()) + int((base / "rx_bytes").read_text())
    return out


def _burst(pub: Publisher, message: Any, period: float, count: int, next_at: float) -> float:
    """Publish ``count`` messages at a steady rate (no drift); returns the next slot."""
    for _ in range(count):
        pub.publish(message)
        next_at += period
        time.sleep(max(0.0, next_at - time.monotonic()))
    return next_at


def serve(role: str, cfg: TransportConfig) -> None:
    subscribers: dict[str, Subscriber] = {}
    for line in sys.stdin:
        command = json.loads(line)
        op = command["op"]
        reply: dict[str, Any] = {"ok": True}
        if op == "subscribe":
            typename, _ = workload_message(command["workload"])
            subscribers[command["id"]] = Subscriber(
                command["topic"], typename, _reader(command.get("reads") or []),
                fields=command.get("fields"), record=command.get("record", False),
                config=cfg, sft=command["mode"] == "sft", on_miss="flag")
        elif op == "collect":
            sub = subscribers.pop(command["id"])
            stats = sub.stats
            lat = stats.latencies_ns[command.get("skip", 0):]
            reply.update(received=stats.received, misses=stats.misses,
                         latency_mean_ms=statistics.fmean(lat) / 1e6 if lat else None,
                         latency_median_ms=statistics.median(lat) / 1e6 if lat else None,
                         mask=sub.mask.text() if sub.mask else None,
                         sizes=sorted(set(stats.sizes[command.get("skip", 0):])),
                         announced=[[seq, mask.text(), ns] for seq, mask, ns in stats.announced],
                         first_reduced={str(k): v for k, v in stats.first_reduced_ns.items()})
            sub.close()
        elif op == "run":
            typename, message = workload_message(command["workload"])
            period = 1.0 / command["rate"]
            pub = Publisher(command["topic"], typename, config=cfg, sft=command["mode"] == "sft")
            time.sleep(command.get("settle_s", 0.3))
            next_at = time.monotonic()
            next_at = _burst(pub, message, period, command["warmup"], next_at)
            pids = command.get("pids") or []
            usage_before = usage.snapshot(pids, reset=True)
            before = _counters(command["ports"])
            t0 = time.monotonic_ns()
            next_at = _burst(pub, message, period, command["count"], next_at)
            time.sleep(period / 2)
            t1 = time.monotonic_ns()
            after = _counters(command["ports"])
            usage_after = usage.snapshot(pids)
            reply.update(bytes={p: after[p] - before[p] for p in after}, seconds=(t1 - t0) / 1e9,
                         window_ns=[t0, t1], usage_before=usage_before,
                         usage_after=usage_after,
                         published=pub.stats.published,
                         masks={r: m.text() for r, m in pub.masks().items()},
                         changes=[[c.reader_id, c.mask.text(), c.seq, c.sent_ns, c.applied_ns]
                                  for c in pub.stats.changes])
            pub.close()
        elif op == "quit":
            print(json.dumps(reply), flush=True)
            break
        print(json.dumps(reply), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m linklab.sft.worker")
    parser.add_argument("role", choices=("pub", "sub"))
    parser.add_argument("--middleware", default="cyclonedds")
    parser.add_argument("--peer", action="append", default=[])
    parser.add_argument("--listen", action="append", default=[])
    parser.add_argument("--interface")
    parser.add_argument("--domain", type=int, default=0)
    args = parser.parse_args()
    cfg = TransportConfig(middleware=args.middleware, domain=args.domain,
                          peers=tuple(args.peer), listen=tuple(args.listen),
                          interface=args.interface)
    # open the session / participant now, so peers are connected before the first trial
    if cfg.middleware == "zenoh":
        from linklab.sft.zenoh_transport import session
        session(cfg)
    else:
        from linklab.sft.dds import participant
        participant(cfg)
    print(json.dumps({"ready": True}), flush=True)
    serve(args.role, cfg)


if __name__ == "__main__":
    main()
