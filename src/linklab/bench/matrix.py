"""Scenario axes -> the list of cells to run, in a fixed order.

The link is the outermost loop (tables group by it), then its swept fields
(link.loss ...), the topology, middleware, profile, history, type, rate, QoS, payload,
endpoints, trial. The order, and so every cell's id, depends only on the scenario: a
resumed run finds the same ids.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from linklab.bench.fields import MAX_CELLS, RATE_MAX, Located, rate_fraction
from linklab.bench.links import LinkChoice
from linklab.bench.spec import Scenario
from linklab.bench.topics import Topic, resolve_topics
from linklab.units import size_label

# Outer to inner (link.FIELD axes come right after link, in the file's order).
LOOP_ORDER = ("link", "topology", "hosts", "flow", "cpu_load", "cpu_load_on", "cpu_quota",
              "cpu_quota_on", "middleware", "broker_host", "profile", "history", "depth",
              "durability", "type", "rate", "qos", "payload", "subscribers", "pairs",
              "count", "duration", "warmup", "outage_start", "outage_length", "grace")

# Seconds a cell costs beyond publishing: link up, discovery, probe start/stop, tear-down.
SETUP_S = 8.0


@dataclass(frozen=True)
class Cell:
    """One run of a cell's publishers and subscribers under one combination of settings.

    The scalar fields describe the cell as a row; ``topics`` are its endpoints (one topic,
    robot -> edge, unless the scenario says otherwise). A single-topic cell's payload,
    rate, QoS and count are its topic's; a traffic mix shows its first topic's.
    """

    index: int
    cell_id: str
    middleware: str
    profile: str
    link: str                 # the link's label (preset, preset+overrides, or its name)
    payload_bytes: int
    rate_hz: float            # 0.0 while a searched rate (max / N %) is not known
    qos: str
    history: str
    type: str
    count: int | None
    duration_s: float | None
    warmup_s: float
    outage_start_s: float
    outage_length_s: float | None
    grace_s: float | None
    trial: int
    topology: str = "pair"
    hosts: int | None = None
    flow: str | None = None   # paper 001's deployment flow (cluster topologies)
    durability: str | None = None
    rate: float | str = 0.0   # as asked: Hz, "max" or "75%"
    link_choice: LinkChoice | None = None
    topics: tuple[Topic, ...] = ()
    # CPU contention (bench/cpu.py), as asked: competitors and the probes' quota, and the
    # hosts each applies to ("robot,edge"; None: the cell's endpoint hosts)
    cpu_load: str = "none"
    cpu_load_on: str | None = None
    cpu_quota: str = "none"
    cpu_quota_on: str | None = None
    # the host MQTT's broker / Zenoh's router runs on (None: edge; bench/broker_host.py)
    broker_host: str | None = None
    # (axis, index of this cell's value in the scenario's list): errors about a value
    # name its line (bench.checks.located)
    choices: tuple[tuple[str, int], ...] = field(default=(), compare=False, repr=False)

    @property
    def search(self) -> bool:
        return self.rate == RATE_MAX

    @property
    def rate_fraction(self) -> float | None:
        return rate_fraction(self.rate)

    @property
    def interval_s(self) -> float:
        return 1.0 / self.rate_hz if self.rate_hz else 0.0

    @property
    def messages(self) -> int:
        """Messages the (first) publisher sends (count, or rate x duration)."""
        if self.topics:
            return self.topics[0].messages
        if self.count is not None:
            return self.count
        return int(round(self.rate_hz * (self.duration_s or 0.0)))

    @property
    def publish_s(self) -> float:
        """How long the cell publishes: its longest topic."""
        if self.topics:
            return max(t.publish_s for t in self.topics)
        if self.count is not None and self.rate_hz:
            return self.count / self.rate_hz
        return self.duration_s or 0.0

    @property
    def streams(self) -> int:
        """Subscriber endpoints of the cell (each receives one topic)."""
        return sum(len(t.subscribers) for t in self.topics)

    def with_rate(self, rate_hz: float, count: int | None = None) -> Cell:
        """The cell at a known rate (a search trial, or N % of a found maximum)."""
        topics = tuple(t.with_rate(rate_hz, count) for t in self.topics)
        return replace(self, rate_hz=rate_hz, topics=topics,
                       count=count if count is not None else self.count)

    def axes(self) -> dict[str, Any]:
        """The cell's settings as row columns."""
        choice = self.link_choice or LinkChoice(self.link)
        return {
            "cell_id": self.cell_id, "middleware": self.middleware, "profile": self.profile,
            "link": self.link, "link_preset": choice.preset,
            "link_overrides": json.dumps(choice.overrides_dict(), default=str)
            if choice.overrides else None,
            "topology": self.topology, "hosts": self.hosts, "flow": self.flow,
            "payload_bytes": self.payload_bytes, "rate_hz": self.rate_hz,
            "rate_asked": str(self.rate), "qos": self.qos, "history": self.history,
            "durability": self.durability, "type": self.type, "count": self.count,
            "duration_s": self.duration_s, "warmup_s": self.warmup_s,
            "outage_start_s": self.outage_start_s, "outage_length_s": self.outage_length_s,
            "grace_s": self.grace_s, "trial": self.trial,
            "topics": len(self.topics), "subscribers": self.streams,
            "endpoints": "; ".join(t.describe() for t in self.topics),
            "cpu_load": self.cpu_load, "cpu_load_on": self.cpu_load_on,
            "cpu_quota": self.cpu_quota, "cpu_quota_on": self.cpu_quota_on,
            "broker_host": self.broker_host,
        }


def slug(value: Any, key: str) -> str:
    if isinstance(value, LinkChoice):
        text = value.label
    elif key.startswith("link."):
        text = f"{key[5:]}{value}"
    elif key == "payload":
        text = size_label(value)
    elif key == "rate":
        text = f"{value:g}Hz" if not isinstance(value, str) else f"rate{value}"
    elif key in ("duration", "warmup", "outage_start", "outage_length", "grace"):
        text = f"{key}{value:g}s"
    elif key == "count":
        text = f"n{value}"
    elif key in ("subscribers", "pairs", "hosts", "depth"):
        text = f"{key}{value}"
    elif key == "profile" and str(value).endswith((".xml", ".json5")):
        text = Path(value).stem
    elif key == "history":
        text = "h-" + str(value).replace("keep_last:", "last")
    elif key in ("cpu_load", "cpu_quota"):
        what = key[4:]
        text = f"no{what}" if value == "none" else \
            f"{what}{str(value).replace('/core', '-per-core')}"
    elif key == "broker_host":
        text = f"broker-on-{value}"
    elif key in ("cpu_load_on", "cpu_quota_on"):
        text = f"{key[4:-3]}-on-" + ("endpoints" if value is None
                                     else str(value).replace(",", "."))
    else:
        text = str(value)
    text = text.replace("%", "pct")
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)


def ordered_keys(scenario: Scenario) -> list[str]:
    link_fields = [k for k in scenario.axes if k.startswith("link.")]
    keys = []
    for key in LOOP_ORDER:
        if key in scenario.axes:
            keys.append(key)
        if key == "link":
            keys.extend(link_fields)
    if "link" not in scenario.axes:
        keys = link_fields + [k for k in keys if k not in link_fields]
    return keys


def matrix_size(scenario: Scenario) -> int:
    """How many cells the scenario has: the product of its axes' lengths x trials."""
    return math.prod(len(v) for v in scenario.axes.values()) * scenario.trials


def check_size(scenario: Scenario) -> None:
    """Refuse a matrix of more than MAX_CELLS cells before expanding it."""
    size = matrix_size(scenario)
    if size <= MAX_CELLS:
        return
    factors = [f"{len(v)} {k}" for k, v in scenario.axes.items() if len(v) > 1]
    factors += [f"{scenario.trials} trials"] if scenario.trials > 1 else []
    raise Located(scenario.path, 1, "").error(
        f"the matrix has {size} cells ({' x '.join(factors)}); a run takes at most "
        f"{MAX_CELLS} cells: use fewer axis values or trials (--repeat), or split it into "
        "several scenarios")


def expand(scenario: Scenario) -> list[Cell]:
    """All cells of a scenario, outer axis first (see LOOP_ORDER)."""
    check_size(scenario)
    keys = ordered_keys(scenario)
    cells: list[Cell] = []
    value_lists = [scenario.axes[k] for k in keys] + [list(range(1, scenario.trials + 1))]
    where = Located(scenario.path, 1, "")
    for picks in itertools.product(*(range(len(v)) for v in value_lists)):
        combo = [axis[i] for axis, i in zip(value_lists, picks, strict=True)]
        values = dict(scenario.fixed)
        values.update(zip(keys, combo[:-1], strict=True))
        trial = combo[-1]
        parts = [slug(values[k], k) for k in keys]
        if scenario.trials > 1:
            parts.append(f"t{trial}")
        cell_id = "-".join(parts) or "cell"
        choice: LinkChoice = values["link"]
        for key in [k for k in values if k.startswith("link.")]:
            choice = choice.with_field(key[5:], values[key])
        topics, hosts = resolve_topics(values, values.get("topics"), where, scenario.places)
        first = topics[0]
        cells.append(Cell(
            index=len(cells), cell_id=cell_id,
            middleware=values["middleware"], profile=values["profile"], link=choice.label,
            payload_bytes=first.payload_bytes, rate_hz=first.rate_hz, qos=first.qos,
            history=first.history, type=first.type, count=first.count,
            duration_s=first.duration_s, warmup_s=values["warmup"],
            outage_start_s=values["outage_start"], outage_length_s=values.get("outage_length"),
            grace_s=values.get("grace"), trial=trial, topology=values["topology"],
            hosts=hosts, flow=values.get("flow"), durability=first.durability,
            rate=first.rate,
            link_choice=choice, topics=topics,
            cpu_load=values.get("cpu_load", "none"), cpu_load_on=values.get("cpu_load_on"),
            cpu_quota=values.get("cpu_quota", "none"),
            cpu_quota_on=values.get("cpu_quota_on"),
            broker_host=values.get("broker_host"),
            choices=tuple(zip(keys, picks[:-1], strict=True)),
        ))
    if len({c.cell_id for c in cells}) != len(cells):
        raise where.error("two cells get the same id; give inline links a name: "
                          "{name: ..., rate: ...}")
    return cells


def deadline_s(cell: Cell, outage_s: float = 0.0) -> float:
    """How long after the publishers start a cell may take before it counts as not
    completed.

    Publishing time, plus any outage, plus a grace: the cell's ``grace`` or
    max(10 s, 25 % of the publishing time, 100 publish intervals of its slowest topic) —
    a sample later than 100 intervals already marks the cell failed (seed 000, Table II
    caption).
    """
    slowest = max((t.interval_s for t in cell.topics), default=cell.interval_s)
    grace = cell.grace_s if cell.grace_s is not None else max(
        10.0, 0.25 * cell.publish_s, 100 * slowest)
    return cell.publish_s + outage_s + grace


def estimate_s(cell: Cell, outage_s: float = 0.0, search_s: float = 0.0) -> float:
    """Expected wall time of a cell: setup, warm-up and publishing (plus an outage), and
    ``search_s`` for a searched rate (bench.runner.cell_estimates_s: 0 when the cell
    reuses a search of its run)."""
    if outage_s and cell.outage_length_s:
        outage_s = cell.outage_length_s
    if cell.search:
        return SETUP_S + search_s
    publishing = cell.publish_s if cell.rate_fraction is None else (cell.duration_s or 10.0)
    # The publisher goes on through an outage: it lengthens a cell only where it ends
    # after publishing does (what the backlog's delivery adds is left to the run's pace:
    # bench.runner.observed_pace).
    beyond = max(0.0, (cell.outage_start_s or 0.0) + outage_s - publishing)
    return SETUP_S + search_s + cell.warmup_s + publishing + beyond + 2.0
