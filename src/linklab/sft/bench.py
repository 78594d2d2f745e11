"""``linklab sft-bench``: paper 003 §V on emulated hosts, bytes counted on the interfaces.

Topology: :func:`linklab.sft.netns.star` (publisher host + 1 or 3 receiver hosts);
one worker process per host (:mod:`linklab.sft.worker`).  A *trial* publishes one
workload on a fresh topic at 10 Hz: ``warmup`` messages (discovery, ARR's first full
message, the request) and then ``count`` measured messages, reading the byte counters
of every receiver's bridge port before and after (all traffic: data, heartbeats,
acks, requests).  Each trial runs twice — ``baseline`` (the same middleware, plain
subscribers, full messages) and ``sft`` — and the change is (sft - baseline)/baseline.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from typing import Any

from linklab.errors import EnvironmentProblem
from linklab.sft import fastdds_reference, netns, overhead, usage
from linklab.sft.overhead import mean_present as _mean
from linklab.sft.schema import schema, synthetic_type

# Paper 003, Table I (SFT vs EmbeddedRTPS baseline, mean bandwidth change) and §V-D/E.
PAPER_TABLE1 = {"all": -19.7, "0.5": -49.1, "0.75": -21.4, "0.9": -8.4, "1.0": +0.2}
PAPER_NAV2 = {"laserscan": -43.1, "battery": -46.5, "grid": 0.0}
PAPER_POINTCLOUD = -32.9
PAPER_RESPONSE_MS = 1.3


@dataclass
class Settings:
    middleware: str = "cyclonedds"
    fields: tuple[int, ...] = (5, 7)
    sizes: tuple[int, ...] = (128, 256, 512)
    receivers: tuple[int, ...] = (1, 3)
    frps: tuple[float, ...] = (0.5, 0.75, 0.9, 1.0)
    repeats: int = 5
    rate_hz: float = 10.0
    warmup: int = 20  # 2 s: discovery, ARR's first full message, the request exchange
    count: int = 30  # 3 s measured
    seed: int = 3
    link: str | None = None  # a linklab.link preset (star topology); None: netns.star
    cases: bool = True  # the Nav2 and PointCloud2 cases after the parametric study
    fastdds: bool = False  # Table I's Fast DDS reference: full messages of each shape

    @classmethod
    def quick(cls, middleware: str, link: str | None = None) -> Settings:
        return cls(middleware=middleware, fields=(5,), sizes=(256,), repeats=1, warmup=15,
                   count=20, link=link)

    @classmethod
    def overhead(cls, middleware: str, link: str | None = None,
                 fastdds: bool = True) -> Settings:
        """§V-C's CPU and memory overhead in a few minutes: 7 fields x 512 B, 1 and 3
        receivers, FRP 50 and 100 %, 3 repeats, no Nav2/PointCloud2 cases."""
        return cls(middleware=middleware, fields=(7,), sizes=(512,), frps=(0.5, 1.0),
                   repeats=3, link=link, cases=False, fastdds=fastdds)


class Worker:
    """One worker process inside a namespace, spoken to with JSON lines."""

    def __init__(self, star: netns.Star, host: netns.Host, role: str, args: list[str]):
        command = star.exec_args(host, netns.python(), "-m", "linklab.sft.worker", role, *args)
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.host = host
        self._read()

    def _read(self) -> dict[str, Any]:
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        if not line:
            raise EnvironmentProblem(f"sft worker in {self.host.namespace} exited "
                                     f"(status {self.proc.poll()})")
        return json.loads(line)

    def call(self, **command: Any) -> dict[str, Any]:
        self.proc.stdin.write(json.dumps(command) + "\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]
        return self._read()

    def close(self) -> None:
        try:
            self.call(op="quit")
        except (OSError, EnvironmentProblem, ValueError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Testbed:
    """A star with a publisher worker and one subscriber worker per receiver."""

    __test__ = False  # not a pytest test class

    def __init__(self, middleware: str, receivers: int, tag: str, link: str | None = None):
        self._stack = ExitStack()
        self.workers: list[Worker] = []
        try:
            self.star = (netns.star(receivers, tag) if link is None
                         else _link_star(self._stack, link, receivers, tag))
            self._stack.callback(self.star.close)
            pub_addr = self.star.publisher.address
            if middleware == "zenoh":
                pub_args = ["--middleware", "zenoh", "--listen", f"tcp/{pub_addr}:7447"]
                sub_args = [["--middleware", "zenoh", "--peer", f"tcp/{pub_addr}:7447"]
                            for _ in self.star.receivers]
            else:
                pub_args = ["--interface", self.star.publisher.interface]
                for host in self.star.receivers:
                    pub_args += ["--peer", host.address]
                sub_args = [["--interface", host.interface, "--peer", pub_addr]
                            for host in self.star.receivers]
            self.pub = Worker(self.star, self.star.publisher, "pub", pub_args)
            self.workers.append(self.pub)
            self.subs = []
            for host, args in zip(self.star.receivers, sub_args, strict=True):
                self.subs.append(Worker(self.star, host, "sub", args))
                self.workers.append(self.subs[-1])
            time.sleep(1.0)  # sessions connect / participants discover each other
        except BaseException:
            self.close()
            raise
        self._topics = 0

    def trial(self, workload: dict[str, Any], mode: str, readers: list[dict[str, Any]],
              settings: Settings) -> dict[str, Any]:
        self._topics += 1
        topic = f"sftbench/t{self._topics}"
        for index, (worker, reader) in enumerate(zip(self.subs, readers, strict=True)):
            worker.call(op="subscribe", id=str(index), topic=topic, workload=workload,
                        mode=mode, **reader)
        pids = self.pids()
        with usage.RssSampler(list(pids.values())) as sampler:
            run = self.pub.call(op="run", topic=topic, workload=workload, mode=mode,
                                rate=settings.rate_hz, warmup=settings.warmup,
                                count=settings.count, ports=[h.port for h in self.star.receivers],
                                pids=list(pids.values()))
        subs = [worker.call(op="collect", id=str(index), skip=settings.warmup)
                for index, worker in enumerate(self.subs)]
        per_port = [run["bytes"][h.port] for h in self.star.receivers]
        return {"mode": mode, "bytes": per_port, "seconds": run["seconds"],
                "kbit_s": [8 * b / run["seconds"] / 1000 for b in per_port],
                "changes": run["changes"], "subs": subs,
                "usage": usage.trial_usage(pids, run["usage_before"], run["usage_after"],
                                           sampler.samples, run["window_ns"], settings.count)}

    def pids(self) -> dict[str, int]:
        """Each endpoint process by role: ``publisher``, ``receiver1`` ..."""
        return {"publisher": self.pub.proc.pid,
                **{f"receiver{i + 1}": w.proc.pid for i, w in enumerate(self.subs)}}

    def close(self) -> None:
        for worker in self.workers:
            worker.close()
        self._stack.close()


def _link_star(stack: ExitStack, preset: str, receivers: int, tag: str) -> netns.Star:
    """The same star built by ``linklab.link``: robots = receivers, edge = publisher.

    ``preset`` is a link preset name (e.g. ``ethernet-1g``) or ``clean``; bytes are
    counted on each robot's interface.
    """
    from linklab.link import testbed

    bed = stack.enter_context(testbed(None if preset == "clean" else preset, topology="star",
                                      hosts=receivers, name=f"sft{os.getpid()}{tag}"))
    edge = bed.hosts["edge"]
    robots = [bed.hosts[f"robot{i + 1}"] for i in range(receivers)]
    return netns.Star(bed.name, netns.Host(edge.netns, edge.address, "", edge.interface),
                      [netns.Host(r.netns, r.address, f"{r.netns}/{r.interface}", r.interface)
                       for r in robots])


@dataclass
class Row:
    case: str
    params: dict[str, Any]
    baseline_kbit_s: float
    sft_kbit_s: float
    change_pct: float
    baseline_latency_ms: float | None
    sft_latency_ms: float | None
    baseline_latency_median_ms: float | None = None
    sft_latency_median_ms: float | None = None
    per_receiver: list[dict[str, Any]] = field(default_factory=list)
    # per process (publisher, receiver1 ...), each mode: sft.usage.window_usage
    usage: dict[str, Any] = field(default_factory=dict)


def _pair(bed: Testbed, workload: dict[str, Any], readers: list[dict[str, Any]],
          baseline_readers: list[dict[str, Any]], settings: Settings, case: str,
          params: dict[str, Any], responses: list[dict[str, float]]) -> Row:
    base = bed.trial(workload, "baseline", baseline_readers, settings)
    sft = bed.trial(workload, "sft", readers, settings)
    if not all(reader.get("record") for reader in readers):
        changes, subs = [], []  # explicit requests go out before the publisher exists
    else:
        changes, subs = sft["changes"], sft["subs"]
    for reader_id, _mask, seq, sent, applied in changes:
        responses.append({"request_to_publisher_ms": (applied - sent) / 1e6, "seq": seq,
                          "reader": reader_id})
    for sub in subs:
        for seq, _mask, sent in sub["announced"]:
            first = sub["first_reduced"].get(str(seq))
            if first:
                responses.append({"request_to_first_reduced_ms": (first - sent) / 1e6})
    base_total, sft_total = sum(base["kbit_s"]), sum(sft["kbit_s"])
    return Row(case, params, base_total, sft_total, 100 * (sft_total - base_total) / base_total,
               _mean([s["latency_mean_ms"] for s in base["subs"]]),
               _mean([s["latency_mean_ms"] for s in sft["subs"]]),
               _mean([s["latency_median_ms"] for s in base["subs"]]),
               _mean([s["latency_median_ms"] for s in sft["subs"]]),
               [{"baseline_kbit_s": b, "sft_kbit_s": s, "mask": sub["mask"],
                 "sizes": sub["sizes"], "received": sub["received"],
                 "baseline_received": plain["received"], "misses": sub["misses"]}
                for b, s, sub, plain in zip(base["kbit_s"], sft["kbit_s"], sft["subs"],
                                            base["subs"], strict=True)],
               {"baseline": base["usage"], "sft": sft["usage"]})


class _Beds:
    """The testbed of one receiver count; rebuilt if a worker dies (e.g. killed from outside)."""

    def __init__(self, settings: Settings, receivers: int, progress: Callable[[str], None]):
        self.args = (settings.middleware, receivers,
                     f"{settings.middleware[:2]}{receivers}", settings.link)
        self.progress = progress
        self.restarts = 0
        self.bed = Testbed(*self.args)

    def pair(self, *args: Any) -> Row:
        for attempt in range(3):
            try:
                return _pair(self.bed, *args)
            except EnvironmentProblem as error:
                if attempt == 2:
                    raise
                self.progress(f"{error}; rebuilding the testbed and repeating the trial")
                self.restarts += 1
                self.bed.close()
                self.bed = Testbed(*self.args)
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.bed.close()


def _parametric(beds: _Beds, settings: Settings, receivers: int, rng: random.Random,
                responses: list[dict[str, float]], progress: Callable[[str], None]) -> list[Row]:
    """§V-A/C: every shape and field-requirement probability, ``repeats`` times."""
    rows: list[Row] = []
    for n_fields in settings.fields:
        for size in settings.sizes:
            synthetic_type(n_fields, size)
            workload = {"kind": "synthetic", "fields": n_fields, "size": size}
            for frp in settings.frps:
                for repeat in range(settings.repeats):
                    readers, plain = [], []
                    for _ in range(receivers):
                        reads = [f"f{j}" for j in range(n_fields) if rng.random() < frp]
                        readers.append({"reads": reads, "record": True})
                        plain.append({"reads": reads})
                    params = {"fields": n_fields, "size": size, "receivers": receivers,
                              "frp": frp, "repeat": repeat}
                    rows.append(beds.pair(workload, readers, plain, settings,
                                          "parametric", params, responses))
                    progress(f"parametric {params}: {rows[-1].change_pct:+.1f} %")
    return rows


def _cases(beds: _Beds, settings: Settings, receivers: int,
           responses: list[dict[str, float]], progress: Callable[[str], None]) -> list[Row]:
    """§V-D's Nav2 cases (1 receiver) and §V-E's PointCloud2 (3 receivers)."""
    rows: list[Row] = []
    if receivers == 1:
        nav2 = {
            "laserscan": [f for f in schema("sensor_msgs/msg/LaserScan").top_level
                          if f != "intensities"],
            "battery": ["current"],
            "grid": list(schema("nav_msgs/msg/OccupancyGrid").top_level),
        }
        for kind, fields in nav2.items():
            for repeat in range(settings.repeats):
                rows.append(beds.pair({"kind": kind}, [{"fields": fields, "reads": fields}],
                                      [{"reads": fields}], settings, f"nav2-{kind}",
                                      {"repeat": repeat, "fields": fields}, responses))
                progress(f"nav2 {kind}: {rows[-1].change_pct:+.1f} %")
    if receivers == 3:
        top = list(schema("sensor_msgs/msg/PointCloud2").top_level)
        needs = [["height", "width"], ["data"], [f for f in top if f != "height"]]
        for repeat in range(settings.repeats):
            rows.append(beds.pair({"kind": "pointcloud"},
                                  [{"fields": n, "reads": n} for n in needs],
                                  [{"reads": n} for n in needs], settings, "pointcloud2",
                                  {"repeat": repeat}, responses))
            progress(f"pointcloud2: {rows[-1].change_pct:+.1f} %")
    return rows


def _fastdds(beds: _Beds, settings: Settings, receivers: int,
             progress: Callable[[str], None]) -> list[dict[str, Any]]:
    """Table I's Fast DDS reference: full messages of every shape on the same star."""
    trials = []
    for n_fields in settings.fields:
        for size in settings.sizes:
            for repeat in range(settings.repeats):
                params = {"fields": n_fields, "size": size, "receivers": receivers,
                          "repeat": repeat}
                topic = f"sftref_{n_fields}x{size}_{receivers}_{repeat}"
                result = fastdds_reference.trial(
                    beds.bed.star, fastdds_reference.payload_for(n_fields, size),
                    settings.rate_hz, settings.warmup, settings.count, topic)
                trials.append({"params": params, **result})
                progress(f"fastdds {params}: {sum(result['kbit_s']):.1f} kbit/s")
    return trials


def run(settings: Settings, progress: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    rng = random.Random(settings.seed)
    rows: list[Row] = []
    reference: list[dict[str, Any]] = []
    responses: list[dict[str, float]] = []
    started = time.time()
    restarts = 0
    for receivers in settings.receivers:
        beds = _Beds(settings, receivers, progress)
        try:
            rows += _parametric(beds, settings, receivers, rng, responses, progress)
            if settings.cases:
                rows += _cases(beds, settings, receivers, responses, progress)
            if settings.fastdds:
                reference += _fastdds(beds, settings, receivers, progress)
        finally:
            restarts += beds.restarts
            beds.close()
    result = {"settings": asdict(settings), "seconds": time.time() - started,
              "testbed_restarts": restarts, "rows": [asdict(r) for r in rows],
              "responses": responses, "summary": summarize(rows, responses)}
    result["summary"]["overhead"] = overhead.summarize(result["rows"])
    if reference:
        result["fastdds_reference"] = reference
        result["summary"]["fastdds"] = overhead.fastdds_summary(result["rows"], reference)
    return result


def _change(rows: list[Row]) -> dict[str, float | None]:
    if not rows:
        return {"baseline_kbit_s": None, "sft_kbit_s": None, "change_pct": None}
    base = statistics.fmean(r.baseline_kbit_s for r in rows)
    sft = statistics.fmean(r.sft_kbit_s for r in rows)
    return {"baseline_kbit_s": base, "sft_kbit_s": sft, "change_pct": 100 * (sft - base) / base,
            "baseline_latency_ms": _mean([r.baseline_latency_ms for r in rows]),
            "sft_latency_ms": _mean([r.sft_latency_ms for r in rows]),
            "baseline_latency_median_ms": _mean([r.baseline_latency_median_ms for r in rows]),
            "sft_latency_median_ms": _mean([r.sft_latency_median_ms for r in rows]),
            "n": len(rows)}


def summarize(rows: list[Row], responses: list[dict[str, float]]) -> dict[str, Any]:
    parametric = [r for r in rows if r.case == "parametric"]
    table: dict[str, Any] = {"all": _change(parametric)}
    for frp in sorted({r.params["frp"] for r in parametric}):
        table[str(frp)] = _change([r for r in parametric if r.params["frp"] == frp])
    nav2 = {kind: _change([r for r in rows if r.case == f"nav2-{kind}"])
            for kind in PAPER_NAV2}
    cloud = [r for r in rows if r.case == "pointcloud2"]
    per_receiver = []
    if cloud:
        for index in range(len(cloud[0].per_receiver)):
            base = statistics.fmean(r.per_receiver[index]["baseline_kbit_s"] for r in cloud)
            sft = statistics.fmean(r.per_receiver[index]["sft_kbit_s"] for r in cloud)
            per_receiver.append({"mask": cloud[0].per_receiver[index]["mask"],
                                 "baseline_kbit_s": base, "sft_kbit_s": sft,
                                 "change_pct": 100 * (sft - base) / base})
    to_pub = [r["request_to_publisher_ms"] for r in responses if "request_to_publisher_ms" in r]
    to_first = [r["request_to_first_reduced_ms"] for r in responses
                if "request_to_first_reduced_ms" in r]

    def stats(values: list[float]) -> dict[str, float | None]:
        if not values:
            return {"n": 0, "mean": None, "median": None, "p95": None}
        ordered = sorted(values)
        return {"n": len(values), "mean": statistics.fmean(values),
                "median": statistics.median(values),
                "p95": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]}

    return {"table1": table, "nav2": nav2,
            "pointcloud2": {"aggregate": _change(cloud), "per_receiver": per_receiver},
            "response_ms": {"request_to_publisher": stats(to_pub),
                            "request_to_first_reduced_message": stats(to_first)}}


def _fmt(value: float | None, spec: str = ".1f") -> str:
    return "—" if value is None else format(value, spec)


def markdown(result: dict[str, Any]) -> str:
    """The comparison table: paper 003's numbers beside linklab's."""
    s = result["summary"]
    mw = result["settings"]["middleware"]
    lines = [f"| case | paper | linklab ({mw}) | baseline kbit/s | SFT kbit/s | "
             "latency mean base / SFT (ms) | latency median base / SFT (ms) |",
             "|---|---|---|---|---|---|---|"]

    def row(name: str, paper: float | None, change: dict[str, Any]) -> None:
        if change.get("baseline_kbit_s") is None:
            return  # a case this run left out (--overhead)
        paper_text = "—" if paper is None else f"{paper:+.1f} %"
        ours = change.get("change_pct")
        ours_text = "—" if ours is None else f"{ours:+.1f} %"
        lines.append(f"| {name} | {paper_text} | {ours_text} | "
                     f"{_fmt(change.get('baseline_kbit_s'))} | {_fmt(change.get('sft_kbit_s'))} | "
                     f"{_fmt(change.get('baseline_latency_ms'), '.2f')} / "
                     f"{_fmt(change.get('sft_latency_ms'), '.2f')} | "
                     f"{_fmt(change.get('baseline_latency_median_ms'), '.2f')} / "
                     f"{_fmt(change.get('sft_latency_median_ms'), '.2f')} |")

    row("parametric, all", PAPER_TABLE1["all"], s["table1"]["all"])
    for key, paper in PAPER_TABLE1.items():
        if key != "all" and key in s["table1"]:
            row(f"parametric, FRP {float(key):.0%}", paper, s["table1"][key])
    names = {"laserscan": "Nav2 LaserScan w/o intensities",
             "battery": "Nav2 BatteryState `current` only",
             "grid": "Nav2 OccupancyGrid, all fields"}
    for kind, paper in PAPER_NAV2.items():
        row(names[kind], paper, s["nav2"][kind])
    row("PointCloud2, 3 receivers (aggregate)", PAPER_POINTCLOUD, s["pointcloud2"]["aggregate"])
    for index, receiver in enumerate(s["pointcloud2"]["per_receiver"]):
        row(f"  PointCloud2 receiver {index + 1} (mask {receiver['mask']})", None, receiver)
    response = s["response_ms"]
    pub, first = response["request_to_publisher"], response["request_to_first_reduced_message"]
    lines.append("")
    lines.append(f"Mask response time, request emitted → applied by the publisher: mean "
                 f"{_fmt(pub['mean'], '.2f')} ms, median {_fmt(pub['median'], '.2f')} ms, "
                 f"p95 {_fmt(pub['p95'], '.2f')} ms (n={pub['n']}; paper: "
                 f"{PAPER_RESPONSE_MS} ms mean).  Request → first reduced message received: "
                 f"mean {_fmt(first['mean'], '.1f')} ms, median {_fmt(first['median'], '.1f')} "
                 f"ms (n={first['n']}; bounded by the 100 ms publish period).")
    if s.get("overhead"):
        lines += ["", "CPU and memory per endpoint process over each trial's measured window "
                  "(mean SFT − baseline; docs/metrics.md, \"SFT endpoint overhead\"):", "",
                  overhead.markdown(s["overhead"], mw)]
    if s.get("fastdds"):
        lines += ["", "Table I's Fast DDS reference (full messages, `Bytes` of the same "
                  "serialized size, same star and windows):", "",
                  overhead.fastdds_markdown(s["fastdds"], mw)]
    return "\n".join(lines)
