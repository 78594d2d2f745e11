"""Seed 004's tables from bench runs of scenarios/paper-004-middlewares.yaml (and
-security.yaml), with the paper's values beside ours.

    linklab report RUN_DIR [--with RUN_DIR ...] [--markdown]
    python -m linklab.report.paper_004 RUN_DIR [RUN_DIR ...]     # the same, Markdown

``linklab report`` shows these tables instead of seed 000's Table II layout when the run
is a seed 004 study (:func:`is_study`: judged by its cells' middlewares and message
types, not by the scenario's name).

- Table 2: mean one-way latency (ms) per link, message and middleware;
- Fig. 6: throughput (KB/s = received payload bytes per second / 1000);
- Table 3: CPU (% of one core) of publisher, subscriber and broker/router processes;
- Table 4 (a run with secured middlewares): security off/on; a run of the security
  study alone (Array1k only) has Table 4 only.
Every table ends with a "delivered" column: received/expected per middleware, in the
columns' order. A link with no cells (its preset not available yet) is reported as
pending, never filled in; a failed cell is "—" (seed 004 Table 2 prints "-" for the runs
that did not complete); a cell linklab could not measure is "error". The paper's values
apply to the paper's links as shipped (``ethernet-1g``, ``wifi``, ``4g`` without
overrides) and, beside its own tables, to a preset that stands for one of them on
another kind of link (``wifi-n-medium``: the paper's Wi-Fi on the shared 802.11 medium);
cells on other links get their own tables, paper "n/a".
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from linklab.report.outcome import delivered_text, is_error
from linklab.report.paper_tables import paper_tables
from linklab.report.view import Section, to_markdown

MESSAGES = ("Array1k", "Array4k", "Array16k", "Array64k", "Array256k", "Array1m", "Array2m",
            "PointCloud512k", "PointCloud1m", "PointCloud2m")
# ours -> the paper's column (seed 004 Table 2). The two MQTT columns are where the broker
# ran (bench.broker_host, README "Middlewares"): MQTT-nobroker on an endpoint's host (the
# default, edge), MQTT-broker on a host of its own, the paper's third machine.
COLUMNS = {"fastdds": "FastDDS", "cyclonedds": "CycloneDDS", "zenoh-peer": "Zenoh-TCP",
           "zenoh-router": "Zenoh-broker", "mqtt-nobroker": "MQTT-nobroker",
           "mqtt": "MQTT-broker"}
# seed 004's Zenoh and MQTT as its §3.1 ran them: DDS on each host only, bridged between
# hosts (middlewares zenoh-bridge, zenoh-router-bridge, mqtt-bridge). Shown after the
# native columns when a run has bridged cells, with the paper's values of the same
# column beside them: column -> (label, the paper's column)
BRIDGED = {"zenoh-bridge": ("Zenoh-TCP (bridged)", "zenoh-peer"),
           "zenoh-router-bridge": ("Zenoh-broker (bridged)", "zenoh-router"),
           "mqtt-bridge-nobroker": ("MQTT-nobroker (bridged)", "mqtt-nobroker"),
           "mqtt-bridge": ("MQTT-broker (bridged)", "mqtt")}
LINKS = {"ethernet-1g": "ethernet", "wifi": "wifi", "4g": "4g"}


def paper_table2() -> dict[str, dict[str, tuple]]:
    """seed 004 Table 2 (a) Ethernet, (b) Wi-Fi, (c) 4G: mean latency in ms, columns as
    COLUMNS (paper_004.yaml; read when a report first needs it, not at start-up)."""
    return paper_tables("paper_004")["table2"]


def paper_table3() -> dict[str, tuple]:
    """seed 004 Table 3: CPU % of Host 1 (Ethernet, Wi-Fi, 4G), columns as COLUMNS."""
    return paper_tables("paper_004")["table3"]


LINK_INDEX = {"ethernet": 0, "wifi": 1, "4g": 2}
# Presets that stand for one of the paper's networks on another kind of link: their own
# tables, with that network's paper values beside them (README "A shared Wi-Fi medium")
PAPER_NETWORK_OF = {"wifi-n-medium": "wifi"}


def paper_network(key: str) -> str | None:
    """The paper's network whose values go beside a table of ``key`` (link_key), if any."""
    return key if key in LINK_INDEX else PAPER_NETWORK_OF.get(key)
# seed 004 Table 4 (Array1k; the paper does not say which middleware or link -- its
# "without security" latency equals Table 2's Zenoh-TCP over 4G, 72.11 ms)
TABLE4 = {"with": (77.35, 9701, 0.06), "without": (72.11, 9804, 0.06)}
SECURED_PAIRS = (("fastdds", "fastdds-secure"), ("cyclonedds", "cyclonedds-secure"),
                 ("zenoh-peer", "zenoh-peer-tls"), ("zenoh-router", "zenoh-router-tls"),
                 ("mqtt", "mqtt-tls"))


SECURED = tuple(s for _, s in SECURED_PAIRS)
PAPER_MIDDLEWARES = (frozenset(COLUMNS) - {"mqtt-nobroker"} | frozenset(SECURED)
                     | {"mqtt-bridge", "zenoh-bridge", "zenoh-router-bridge"})
PAPER_RATE_HZ = 10.0


def is_study(rows: list[dict[str, Any]]) -> bool:
    """A seed 004 study: every cell runs one of the paper's message types on one of its
    middlewares (or their secured variants), and the cells compare two or more."""
    return (bool(rows)
            and all(r.get("type") in MESSAGES and r.get("middleware") in PAPER_MIDDLEWARES
                    for r in rows)
            and len({r.get("middleware") for r in rows}) >= 2)


def link_key(row: dict[str, Any]) -> str:
    """The paper's link name when the cell ran on that preset exactly, else its label."""
    link = str(row.get("link"))
    overrides = row.get("link_overrides")
    preset = row.get("link_preset", link)
    exact = (overrides is None or overrides != overrides) and preset in (link, None)
    return LINKS[link] if exact and link in LINKS else link


def with_reports(rows: list[dict[str, Any]], cell_dir: Callable[[str], Path] | None
                 ) -> list[dict[str, Any]]:
    """Copies of the rows, each with its probe reports (records/<cell>/{pub,sub}.json;
    empty without ``cell_dir``)."""
    out = []
    for row in rows:
        row = dict(row)
        for role in ("pub", "sub"):
            row[f"_{role}"] = {}
            if cell_dir is None:
                continue
            path = cell_dir(str(row["cell_id"])) / f"{role}.json"
            try:
                row[f"_{role}"] = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError):
                pass
        out.append(row)
    return out


def load_rows(run_dirs: list[Path]) -> list[dict[str, Any]]:
    """Cell rows of the runs, each with its probe reports; a later run's cell replaces an
    earlier one with the same id."""
    from linklab.rundir import RunStore

    rows: dict[str, dict[str, Any]] = {}
    for run_dir in run_dirs:
        store = RunStore.open(Path(run_dir))
        for row in with_reports(store.rows, lambda c, d=store.root: d / "records" / c):
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


Cells = dict[tuple[str, str, str], list[dict[str, Any]]]


def endpoint_hosts(row: dict[str, Any]) -> set[str]:
    """The hosts of a row's endpoints, from its ``endpoints`` text ("t: robot->edge ...;
    ..."; bench.topics.Topic.describe); a row without it (written before topics) ran on
    the pair, robot -> edge."""
    if not row.get("endpoints"):
        return {"robot", "edge"}
    hosts: set[str] = set()
    for topic in str(row.get("endpoints") or "").split("; "):
        match = re.match(r"[^:]+: (\S+)->(\S+) ", topic)
        if match:
            hosts |= {match[1], *match[2].split(",")}
    return hosts


ROUTER_ON_ENDPOINT = "zenoh-router@endpoint"


def column_of(row: dict[str, Any]) -> str:
    """The paper's column a row belongs to (COLUMNS): its middleware, but MQTT with the
    broker on an endpoint's host is "mqtt-nobroker", and a Zenoh router on an endpoint's
    host stands in the Zenoh-broker column only where no cell ran it on a host of its
    own, as the paper did (:func:`_each`)."""
    middleware = str(row["middleware"])
    on_endpoint = (row.get("broker_host") or "edge") in endpoint_hosts(row)
    if middleware in ("mqtt", "mqtt-bridge") and on_endpoint:
        return "mqtt-nobroker" if middleware == "mqtt" else "mqtt-bridge-nobroker"
    if middleware == "zenoh-router" and on_endpoint:
        return ROUTER_ON_ENDPOINT
    return middleware


def _index(rows: list[dict[str, Any]],
           key: Callable[[dict[str, Any]], str] = column_of) -> Cells:
    """(link, message, column) -> its cells, one per trial in trial order: a cell run
    several times (trials, --repeat) shows every trial, never only the last."""
    out: Cells = {}
    for row in sorted(rows, key=lambda r: r.get("trial") or 1):
        out.setdefault((link_key(row), row["type"], key(row)), []).append(row)
    return out


def columns_of(rows: list[dict[str, Any]]) -> dict[str, str]:
    """The tables' columns (key -> label): the paper's (COLUMNS), then the bridged ones
    the rows have (BRIDGED)."""
    present = {column_of(r) for r in rows}
    return {**COLUMNS, **{k: label for k, (label, _) in BRIDGED.items() if k in present}}


def paper_index(column: str) -> int:
    """The paper's column (its tables' index) a column is compared with."""
    return list(COLUMNS).index(BRIDGED[column][1] if column in BRIDGED else column)


def _each(cells: Cells, key: tuple[str, str, str]) -> list[dict[str, Any] | None]:
    """The trials of a cell, or [None] when it did not run (the Zenoh-broker column: the
    router on a host of its own, else on an endpoint's host)."""
    found = cells.get(key)
    if not found and key[2] == "zenoh-router":
        found = cells.get((key[0], key[1], ROUTER_ON_ENDPOINT))
    return found or [None]


TRIALS = "several trials of a cell: one value each, in trial order, joined by ' · '"


def _links(rows: list[dict[str, Any]]) -> list[str]:
    """The paper's links (pending when absent), then any other link the cells ran on."""
    present = list(dict.fromkeys(link_key(r) for r in rows))
    return list(LINKS.values()) + [k for k in present if k not in LINKS.values()]


def _delivered(cells: Cells, link: str, message: str, middlewares) -> str:
    out = []
    for middleware in middlewares:
        out.append(",".join("not run" if row is None else delivered_text(row)
                            for row in _each(cells, (link, message, middleware))))
    return " · ".join(out)


def _pending(key: str, title: str, link: str) -> Section:
    return Section(key, title, [], md_heading="####",
                   notes=[f"_{link}: pending — needs the `{link}` preset (delay stage); "
                          "not run._"])


def delivered_label(columns: dict[str, str]) -> str:
    return "delivered (" + " · ".join(columns.values()) + ")"


def _link_table(rows: list[dict[str, Any]], link: str, key: str, title: str,
                columns: list[str], **options: Any) -> tuple[Cells, Section, bool]:
    """The cells by (link, message, middleware) and a link's table with these columns;
    the table is pending (the bool: True) when no cell ran on the link."""
    cells = _index(rows)
    if not any(k[0] == link for k in cells):
        return cells, _pending(key, title, link), True
    section = Section(key, title, columns, md_heading="####", **options)
    if any(len(trials) > 1 for k, trials in cells.items() if k[0] == link):
        section.notes.append(f"_{TRIALS}._")
    return cells, section, False


def _fill(section: Section, cells: Cells, link: str, columns: dict[str, str],
          text: Callable[[dict[str, Any] | None], str],
          paper: Callable[[int, str], str] = lambda _i, _message: "") -> None:
    """One row per message: ``text(row)`` of each column's cell (row None: not run),
    every trial's joined by " · ", then ``paper(i, message)`` (i: the paper's column,
    paper_index), then the delivered column."""
    for message in MESSAGES:
        out = [" · ".join(text(row) for row in _each(cells, (link, message, column)))
               + paper(paper_index(column), message) for column in columns]
        section.add(message, *out, _delivered(cells, link, message, columns))


def table2(rows: list[dict[str, Any]], link: str) -> Section:
    columns = columns_of(rows)
    cells, section, pending = _link_table(
        rows, link, f"paper-004-table2-{link}",
        f"Table 2 ({link}): mean latency, ms — ours / paper",
        ["message"] + [f"{c} ours / paper" for c in columns.values()]
        + [delivered_label(columns)],
        legend="— = the cell did not complete (not every sample published and delivered in "
               "time); [x] = mean latency of the samples that did arrive; error = linklab "
               "could not measure the cell; delivered = received/expected per middleware.")
    if pending:
        return section

    def text(row: dict[str, Any] | None) -> str:
        if row is None:
            return "not run"
        if is_error(row):
            return "error"
        if _ok(row):
            return _fmt(row.get("latency_mean_ms"))
        # did not complete: "—", with the mean of what did arrive, if anything
        arrived = row.get("latency_mean_ms")
        return "—" if arrived is None or math.isnan(arrived) else f"— [{arrived:.2f}]"

    network = paper_network(link)

    def paper(i: int, message: str) -> str:
        return " / " + (_fmt(paper_table2()[network][message][i])
                        if network in paper_table2() else "n/a")

    _fill(section, cells, link, columns, text, paper)
    section.records += [{"link": link, "message": message, "ours": {
        m: [(row or {}).get("latency_mean_ms") for row in _each(cells, (link, message, m))]
        for m in columns}} for message in MESSAGES]
    return section


def throughput(rows: list[dict[str, Any]], link: str) -> Section:
    columns = columns_of(rows)
    cells, section, pending = _link_table(
        rows, link, f"paper-004-fig6-{link}", f"Fig. 6 ({link}): throughput, KB/s (ours)",
        ["message"] + list(columns.values()) + [delivered_label(columns)])
    if pending:
        return section

    def text(row: dict[str, Any] | None) -> str:
        goodput = row.get("goodput_bit_s") if _ok(row) else None
        return ("not run" if row is None else "error" if is_error(row)
                else _fmt(goodput / 8 / 1000 if goodput else None, 1))

    _fill(section, cells, link, columns, text)
    return section


def _process_pct(row: dict[str, Any], column: str) -> float | None:
    """``column`` (broker_cpu_s, bridge_cpu_s) as % of one core over the subscriber's
    wall time; None when the cell ran no such process."""
    seconds = row.get(column)
    wall = (row.get("_sub") or {}).get("wall_s")
    if seconds is None or not wall or (isinstance(seconds, float) and math.isnan(seconds)):
        return None
    return 100 * seconds / wall


def _cpu_text(row: dict[str, Any]) -> str:
    """CPU % of one core of the publisher / subscriber / broker (n/a: no broker), and
    "+ bridges N" for a bridged cell (its bridges on both hosts, summed)."""
    broker = _process_pct(row, "broker_cpu_s")
    bridges = _process_pct(row, "bridge_cpu_s")
    return (f"{_fmt(cpu_percent(row.get('_pub') or {}))} / "
            f"{_fmt(cpu_percent(row.get('_sub') or {}))} / "
            f"{_fmt(broker) if broker is not None else 'n/a'}"
            + (f" + bridges {_fmt(bridges)}" if bridges is not None else ""))


def table3(rows: list[dict[str, Any]], link: str) -> Section:
    columns = columns_of(rows)
    cells, section, pending = _link_table(
        rows, link, f"paper-004-table3-{link}",
        f"Table 3 ({link}): CPU % of one core — ours pub / sub / broker (paper, Host 1)",
        ["message"] + [f"{c} pub / sub / broker (paper)" for c in columns.values()]
        + [delivered_label(columns)])
    if pending:
        return section

    def text(row: dict[str, Any] | None) -> str:
        if row is None:
            return "not run"
        if is_error(row):
            return "error"
        return _cpu_text(row) if _ok(row) else "—"

    network = paper_network(link)

    def paper(i: int, message: str) -> str:
        return (f" ({paper_table3()[message][i][LINK_INDEX[network]]:.2f})"
                if network in LINK_INDEX else " (n/a)")

    _fill(section, cells, link, columns, text, paper)
    return section


def _table4_row(section: Section, link: str, plain: str, security: str,
                row: dict[str, Any], several: bool) -> None:
    """One cell (one trial) of Table 4; with several trials the security column names
    the trial."""
    label = f"{security} (trial {row.get('trial') or 1})" if several else security
    if not _ok(row):
        mark = "error" if is_error(row) else "—"
        section.add(link, plain, label, mark, mark, mark, delivered_text(row))
        return
    goodput = row.get("goodput_bit_s") or math.nan
    section.add(link, plain, label, _fmt(row.get("latency_mean_ms")),
                _fmt(goodput / 8, 0), _cpu_text(row), delivered_text(row))


def table4(rows: list[dict[str, Any]]) -> Section:
    """Security on/off per middleware and link: mean latency, throughput, CPU."""
    cells = _index(rows, key=lambda row: str(row["middleware"]))
    section = Section("paper-004-table4", "Table 4: security on/off, Array1k at 10 Hz",
                      ["link", "middleware", "security", "mean latency (ms)",
                       "throughput (B/s)", "CPU % pub / sub / broker", "delivered"],
                      md_heading="####")
    for link in _links(rows):
        for plain, secured in SECURED_PAIRS:
            for name, security in ((plain, "off"), (secured, "on")):
                trials = cells.get((link, "Array1k", name)) or []
                for row in trials:
                    _table4_row(section, link, plain, security, row, len(trials) > 1)
    w, wo = TABLE4["with"], TABLE4["without"]
    section.add("paper", "(Table 4)", "on", f"{w[0]:.2f}", str(w[1]), f"{w[2]:.2f}", "")
    section.add("paper", "(Table 4)", "off", f"{wo[0]:.2f}", str(wo[1]), f"{wo[2]:.2f}", "")
    return section


def sections(rows: list[dict[str, Any]]) -> list[Section]:
    """Every seed 004 table of the rows (which carry their probe reports, with_reports)."""
    rates = sorted({float(r["rate_hz"]) for r in rows
                    if isinstance(r.get("rate_hz"), (int, float)) and r["rate_hz"] == r["rate_hz"]
                    and float(r["rate_hz"]) != PAPER_RATE_HZ})
    out: list[Section] = []
    secured = any(r["middleware"] in SECURED for r in rows)
    if secured:
        out.append(table4(rows))
    # Tables 2-3 and Fig. 6 for the middleware study: not for a security study alone
    # (Array1k only), whose plain middlewares are Table 4's "off" rows
    if not secured or any(r.get("type") != "Array1k" for r in rows):
        for link in _links(rows):
            out += [table2(rows, link), throughput(rows, link), table3(rows, link)]
    if rates:
        out[0].notes.append(f"The paper published at {PAPER_RATE_HZ:g} Hz; cells of this run "
                            f"ran at {', '.join(f'{r:g}' for r in rates)} Hz.")
    return out


def render(rows: list[dict[str, Any]]) -> str:
    """The tables as Markdown (rows with their probe reports, as load_rows gives them)."""
    return "\n".join(to_markdown(s) for s in sections(rows))


def main(argv: list[str] | None = None) -> int:
    from linklab.errors import LinklabError

    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m linklab.report.paper_004 RUN_DIR [RUN_DIR ...]\n"
              "(the same as: linklab report RUN_DIR --with RUN_DIR ... --markdown)",
              file=sys.stderr)
        return 2
    try:
        rows = load_rows([Path(a) for a in args])
    except LinklabError as error:
        print(f"linklab: error: {error}", file=sys.stderr)
        return error.exit_code
    print(render(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
