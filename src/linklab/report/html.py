"""``linklab report RUN_DIR --html [OUT.html]``: one self-contained HTML page of a run.

Everything comes from the run directory (format: linklab.bench.store), so an old run can
be re-reported: run.json (setup, versions, links, profiles), cells.parquet (metrics) and
records/ (per-sample latencies, probe summaries, logs), profiles/ (the XML verbatim).
The page has no external reference: CSS inline, figures as base64 PNG, one small inline
script that checks every figure decoded. The Table II numbers are those of the terminal
(linklab.report.table.build_blocks and Column.shown), so the page adds to the terminal
and never contradicts it.
"""

from __future__ import annotations

import base64
import html
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typer.core import TyperCommand

from linklab.bench.matrix import size_label
from linklab.errors import UsageError
from linklab.report.settings import format_setting, num
from linklab.report.table import METRICS, Block, Column, build_blocks

if TYPE_CHECKING:  # plots imports matplotlib: only when a page is written
    from linklab.report.plots import Plot

DEFAULT_NAME = "report.html"
# Difference to the paper within this fraction of the paper's value is "close".
CLOSE_FRACTION = 0.10
HIGHER_IS_BETTER = {"reception_rate_hz": True, "latency_mean_ms": False, "jitter_ms": False}
LOG_TAIL_LINES = 40


class OptionalValueCommand(TyperCommand):
    """Lets ``--html`` be given alone (default file) or with a value (typer cannot)."""

    optional_value = {"html_out": ""}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if param.name in self.optional_value:
                param._flag_needs_value = True  # click: a bare option takes flag_value
                param.flag_value = self.optional_value[param.name]


def output_path(run_dir: Path, value: str) -> Path:
    """Where ``--html [OUT.html]`` writes: RUN_DIR/report.html, or OUT (a file or a dir)."""
    if not value:
        return Path(run_dir) / DEFAULT_NAME
    path = Path(value)
    if path.is_dir():
        return path / DEFAULT_NAME
    if not path.parent.is_dir():
        raise UsageError(f"{path.parent} is not a directory (give OUT.html in an existing "
                         "directory, or --html alone for RUN_DIR/report.html)",
                         argument="--html")
    return path


def write_report(run_dir: Path, info: dict[str, Any], rows: list[dict[str, Any]],
                 out: Path, comparison: Any = None) -> Path:
    from linklab.report.plots import all_plots

    page = render(Path(run_dir), info, rows, all_plots(Path(run_dir), rows), comparison)
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        tmp.write_text(page, encoding="utf-8")
        tmp.replace(out)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"cannot write {out}: {error.strerror or error} (give another "
                         "place: --html OUT.html)", argument="--html") from None
    return out


# --- small helpers -------------------------------------------------------------------------

def e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def fmt(value: Any, digits: int = 2) -> str:
    value = num(value)
    return "—" if value is None else f"{value:.{digits}f}"


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str | None:
    if not path.is_file():
        return None
    text = path.read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:])


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _value_html(value: Any) -> str:
    """A run.json value as HTML: dicts as nested lists, lists of dicts as tables."""
    if isinstance(value, dict):
        if not value:
            return "<span class=dim>(none)</span>"
        items = "".join(f"<dt>{e(k)}</dt><dd>{_value_html(v)}</dd>" for k, v in value.items())
        return f"<dl class=kv>{items}</dl>"
    if isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            columns: list[str] = []
            for v in value:
                columns.extend(k for k in v if k not in columns)
            head = "".join(f"<th>{e(c)}</th>" for c in columns)
            body = "".join("<tr>" + "".join(f"<td>{_value_html(v.get(c, ''))}</td>"
                                            for c in columns) + "</tr>" for v in value)
            return f"<table class=plain><tr>{head}</tr>{body}</table>"
        return e(", ".join(str(v) for v in value)) if value else "<span class=dim>[]</span>"
    if value is None:
        return "<span class=dim>—</span>"
    return e(value)


# --- sections -------------------------------------------------------------------------------

def _header(run_dir: Path, info: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    scenario = info.get("scenario", {})
    versions = info.get("versions", {})
    planned = len(info.get("planned", []))
    failed = sum(1 for r in rows if r.get("status") != "ok")
    title = scenario.get("title") or scenario.get("name") or "bench run"
    state = "finished" if info.get("finished") else (
        "interrupted" if info.get("interrupted") else "not finished")
    meta = [f"scenario <b>{e(scenario.get('name', '?'))}</b>",
            f"run directory <code>{e(run_dir)}</code>",
            f"created {e(info.get('created_utc', '?'))}, updated {e(info.get('updated_utc', '?'))}"]
    summary = (f"<span id=cells-summary data-done={len(rows)} data-planned={planned} "
               f"data-failed={failed}>cells: {len(rows)}/{planned} done, {failed} failed "
               f"({state})</span>; Fast DDS {e(versions.get('libfastrtps-dev') or '?')}, "
               f"kernel {e(versions.get('kernel', '?'))}, commit "
               f"{e(str(versions.get('git_commit') or '?')[:10])}"
               f"{' (dirty)' if versions.get('git_dirty') else ''}")
    source = (f"<p class=meta>source: {e(scenario['source'])}</p>"
              if scenario.get("source") else "")
    return (f"<header><h1>{e(title)}</h1>{source}<p class=meta>{' · '.join(meta)}</p>"
            f"<p class=summary>{summary}</p><p id=image-check class=dim>figures: "
            f"checking…</p></header>")


def _problems(run_dir: Path, info: dict[str, Any], rows: list[dict[str, Any]],
              plots: list[Plot]) -> str:
    """What is missing from this run, said plainly (a partial run still gets a report)."""
    items = []
    done = {r["cell_id"] for r in rows}
    missing = [c for c in info.get("planned", []) if c not in done]
    if missing:
        why = ("the run was interrupted" if info.get("interrupted")
               else "the run has not finished (or was killed)")
        listed = []
        for cell_id in missing:
            in_flight = (run_dir / "records" / cell_id).is_dir()
            note = " — in flight when the run stopped: records exist, no result" \
                if in_flight else ""
            listed.append(f"<li><code>{e(cell_id)}</code>{e(note)}</li>")
        items.append(f"<p><b>{len(missing)} of {len(info.get('planned', []))} planned cells "
                     f"have no result</b> ({why}; <code>linklab bench --resume "
                     f"{e(run_dir)}</code> runs them):</p><ul id=missing-cells>"
                     f"{''.join(listed)}</ul>")
    if not rows:
        items.append("<p><b>No cell has finished yet</b>: there are no tables or figures.</p>")
    notes = [n for p in plots for n in p.notes]
    if notes:
        items.append("<p>Not drawn (records missing or unreadable):</p><ul>"
                     + "".join(f"<li>{e(n)}</li>" for n in notes) + "</ul>")
    if not items:
        return ""
    return f"<section id=problems class=warn><h2>What is missing</h2>{''.join(items)}</section>"


SCENARIO_UNITS = {"rate": "rate_hz", "payload": "payload_bytes", "count": "count",
                  "duration": "duration_s", "warmup": "warmup_s",
                  "outage_start": "outage_start_s", "outage_length": "outage_length_s",
                  "grace": "grace_s"}


def _scenario_value(key: str, value: Any) -> str:
    column = SCENARIO_UNITS.get(key)
    if column is None:
        return _value_html(value)
    values = value if isinstance(value, list) else [value]
    return e(", ".join(format_setting(column, v) for v in values))


def _setup(run_dir: Path, info: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    scenario = info.get("scenario", {})
    fixed = scenario.get("fixed", {})
    axes = scenario.get("axes", {})
    table = "".join(f"<tr><th>{e(k)}</th><td>{_scenario_value(k, v)}</td><td class=dim>"
                    "fixed</td></tr>" for k, v in fixed.items() if v is not None)
    table += "".join(f"<tr><th>{e(k)}</th><td>{_scenario_value(k, v)}</td><td>axis</td>"
                     "</tr>" for k, v in axes.items())
    options = {k: v for k, v in info.get("options", {}).items() if v not in (None, False)}
    table += (f"<tr><th>trials</th><td>{e(scenario.get('trials', 1))}</td><td></td></tr>"
              f"<tr><th>options</th><td>{_value_html(options)}</td><td></td></tr>")
    scenario_html = f"<h3>Scenario</h3><table class=plain id=scenario>{table}</table>"
    if scenario.get("text"):
        scenario_html += (f"<details><summary>Scenario file <code>"
                          f"{e(scenario.get('path', ''))}</code></summary>"
                          f"<pre>{e(scenario['text'])}</pre></details>")

    links_html = ["<h3>Links</h3>"]
    links = info.get("links", {})
    used = list(dict.fromkeys(str(r.get("link")) for r in rows))
    for name in list(links) + [u for u in used if u not in links]:
        links_html.append(_link_html(run_dir, name, links.get(name), rows))
    if not links and not used:
        links_html.append("<p class=dim>no link recorded</p>")

    versions = info.get("versions", {})
    rows_html = "".join(f"<tr><th>{e(k)}</th><td>{_value_html(v)}</td></tr>"
                        for k, v in versions.items())
    versions_html = f"<h3>Versions</h3><table class=plain id=versions>{rows_html}</table>"

    profiles_html = ["<h3>Profiles</h3>"]
    profiles = dict(info.get("profiles", {}))
    directory = run_dir / "profiles"
    if directory.is_dir():
        for path in sorted(directory.iterdir()):
            if path.is_file() and not path.name.startswith("."):
                profiles.setdefault(path.name, {})
    if not profiles:
        profiles_html.append("<p class=dim>no profile file (the middleware's defaults)</p>")
    for file_name, meta in profiles.items():
        path = directory / file_name
        cells = meta.get("cell_ids", [])
        text = path.read_text(errors="replace") if path.is_file() else None
        extra = {k: v for k, v in meta.items() if k not in ("cell_ids", "profile")}
        body = f"<pre class=profile>{e(text)}</pre>" if text is not None else \
            f"<p class=warn>profiles/{e(file_name)} is missing from the run directory</p>"
        profiles_html.append(
            f"<details class=profile data-file='{e(file_name)}'><summary><code>"
            f"{e(file_name)}</code> — {e(meta.get('profile', '?'))}, used by {len(cells)} "
            f"cell{'s' if len(cells) != 1 else ''}</summary>"
            f"{_value_html(extra) if extra else ''}{body}</details>")
    return (f"<section id=setup><h2>Setup</h2><div class=columns><div>{scenario_html}"
            f"{versions_html}</div><div>{''.join(links_html)}</div></div>"
            f"{''.join(profiles_html)}</section>")


DIRECTION_KEYS = ("up", "down")


def _stage_totals(run_dir: Path, link: str, rows: list[dict[str, Any]]) -> list[dict]:
    """The link's stages (from the cells' counters.json) with the packets each passed and
    dropped during this run's cells on that link (after - before, summed)."""
    stages: dict[tuple, dict] = {}
    for row in rows:
        if row.get("link") != link:
            continue
        counters = _read_json(run_dir / "records" / str(row["cell_id"]) / "counters.json")
        if not counters or "after" not in counters:
            continue
        before = {(s.get("link"), s.get("direction"), s.get("kind")): s for s in
                  (counters.get("before") or {}).get("link", {}).get("stages", [])}
        for stage in (counters.get("after") or {}).get("link", {}).get("stages", []):
            key = (stage.get("link"), stage.get("direction"), stage.get("kind"))
            entry = stages.setdefault(key, {
                "link": key[0], "direction": key[1], "kind": key[2],
                "runs in": stage.get("runs_in"),
                "setting": (stage.get("params") or {}).get("text", ""),
                "passed": 0, "dropped": 0})
            start = before.get(key, {})
            for what in ("passed", "dropped"):
                now, then = stage.get(f"{what}_packets"), start.get(f"{what}_packets")
                if isinstance(now, int) and isinstance(then, int):
                    entry[what] += now - then
    for entry in stages.values():
        total = entry["passed"] + entry["dropped"]
        entry["dropped %"] = f"{entry['dropped'] / total * 100:.1f}" if total else "—"
    return list(stages.values())


def _link_html(run_dir: Path, name: str, description: Any,
               rows: list[dict[str, Any]]) -> str:
    if not isinstance(description, dict):
        return (f"<div class=link id='link-{e(name)}'><h4>{e(name)}</h4><p class=dim>no "
                "description recorded in run.json</p></div>")
    spec = description.get("spec") if isinstance(description.get("spec"), dict) \
        else description
    parts = [f"<div class=link id='link-{e(name)}'><h4>{e(name)}</h4>"]
    directions = {d: spec[d] for d in DIRECTION_KEYS if isinstance(spec.get(d), dict)}
    if directions:
        keys: list[str] = []
        for params in directions.values():
            keys.extend(k for k in params if k not in keys)
        head = "".join(f"<th>{e(k)}</th>" for k in keys)
        body = "".join(f"<tr><th>{e(d)}</th>" + "".join(
            f"<td>{_value_html(p.get(k, ''))}</td>" for k in keys) + "</tr>"
            for d, p in directions.items())
        parts.append(f"<table class=plain><tr><th>direction</th>{head}</tr>{body}</table>")
    facts = {k: spec.get(k) for k in ("mtu", "source") if spec.get(k) is not None}
    if description.get("outage") is not None:
        facts["outage"] = description["outage"]
    if facts:
        parts.append(_value_html(facts))
    stages = _stage_totals(run_dir, name, rows)
    if stages:
        parts.append("<p class=legend>Stages, with the packets each passed and dropped "
                     "during this run's cells (link counters):</p>" + _value_html(stages))
    elif isinstance(description.get("stages"), list):
        parts.append("<p class=legend>Stages:</p>" + _value_html(description["stages"]))
    parts.append(f"<details><summary>full description (run.json)</summary>"
                 f"{_value_html(description)}</details></div>")
    return "".join(parts)


def better_or_worse(metric: str, ours: float, other: float,
                    publish_rate_hz: float | None) -> str:
    """"better" | "worse" than ``other``. Latency and jitter: lower is better. Reception
    rate: closer to the publish rate is better (above it is a burst after a stall)."""
    if metric == "reception_rate_hz" and publish_rate_hz:
        return "better" if abs(ours - publish_rate_hz) < abs(other - publish_rate_hz) \
            else "worse"
    return "better" if (ours > other) == HIGHER_IS_BETTER[metric] else "worse"


def _difference(metric: str, ours: float | None, paper: tuple[bool, float | None],
                publish_rate_hz: float | None = None) -> str:
    has, value = paper
    if not has:
        return "<td></td>"
    if ours is None and value is None:
        return "<td class=close>both —</td>"
    if ours is None:
        return f"<td class=worse title='the paper has a value, this run has —'>— (paper " \
               f"{value:.2f})</td>"
    if value is None:
        return "<td class=better title='the paper has —, this run has a value'>paper —</td>"
    delta = ours - value
    rel = delta / abs(value) if value else math.inf if delta else 0.0
    if abs(rel) <= CLOSE_FRACTION:
        klass = "close"
    else:
        klass = better_or_worse(metric, ours, value, publish_rate_hz)
    rel_text = "" if math.isinf(rel) else f" ({rel * 100:+.0f} %)"
    return f"<td class={klass}>{delta:+.2f}{rel_text}</td>"


def _column_head(col: Column) -> str:
    mark = ""
    if col.failed:
        reasons = "; ".join(col.reasons) or "failed"
        mark = f"<br><span class=failtag title='{e(reasons)}'>✗ failed</span>"
    return (f"<th class='{'failed' if col.failed else ''}' data-profile='{e(col.profile)}' "
            f"data-payload={col.payload_bytes}>{e(col.profile)}<br>"
            f"{e(size_label(col.payload_bytes))}{mark}</th>")


def _block_table(block: Block, index: int) -> str:
    columns = block.columns
    any_paper = any(block.paper(c, "reception_rate_hz")[0] for c in columns)
    head = "<tr><th>Profile<br>Payload</th>" + "".join(_column_head(c) for c in columns)
    body = []
    for metric, label in METRICS:
        cells = []
        for c in columns:
            shown = c.shown(metric)
            klass = "failed" if c.failed else ""
            cells.append(f"<td class='ours {klass}' data-metric={metric} "
                         f"data-profile='{e(c.profile)}' data-payload={c.payload_bytes} "
                         f"data-cells='{e(' '.join(r['cell_id'] for r in c.rows))}'>"
                         f"{fmt(shown)}</td>")
        body.append(f"<tr class=ours><th>{e(label)}</th>{''.join(cells)}</tr>")
        if any_paper:
            paper = []
            for c in columns:
                has, value = block.paper(c, metric)
                paper.append(f"<td class=paper data-metric={metric}>"
                             f"{fmt(value) if has else ''}</td>")
            body.append(f"<tr class=paper><th>paper</th>{''.join(paper)}</tr>")
            diffs = "".join(_difference(metric, c.shown(metric), block.paper(c, metric),
                                        num(c.rows[0].get("rate_hz")))
                            for c in columns)
            body.append(f"<tr class=diff><th>difference</th>{diffs}</tr>")
    delivered = []
    for c in columns:
        got, sent = c.delivered()
        delivered.append(f"<td class='{'failed' if c.failed else ''}' data-metric=delivered>"
                         f"{got}/{sent}</td>")
    body.append(f"<tr><th>Delivered</th>{''.join(delivered)}</tr>")
    for metric, label in (("wire_amplification", "Wire / published"),
                          ("model_amplification", "model R_DDS/R_pub")):
        values = "".join(f"<td class=amplification data-metric={metric}>"
                         f"{fmt(c.measured(metric))}</td>" for c in columns)
        body.append(f"<tr class=amplification><th>{label}</th>{values}</tr>")
    condition = f" data-condition='{e(block.condition)}'" if block.condition else ""
    return (f"<table class=t2 id=block-{index} data-link='{e(block.key['link'])}'{condition}>"
            f"<caption>{e(block.title)}</caption><thead>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>")


def _tables(rows: list[dict[str, Any]]) -> str:
    blocks = build_blocks(rows)
    if not blocks:
        return ""
    any_paper = any(b.paper(c, "reception_rate_hz")[0] for b in blocks for c in b.columns)
    legend = ("<p class=legend>Layout of seed 000's Table II. “—” as in the paper: a cell "
              "that did not complete shows — throughout; one whose mean latency exceeds "
              "100 publish intervals keeps its reception rate. With trials, the mean over "
              "trials (— if any trial failed).")
    if any_paper:
        legend += (" <b>paper</b>: the paper's value; <b>difference</b>: ours − paper, "
                   f"<span class=better>better</span> or <span class=worse>worse</span> "
                   f"than the paper by more than {CLOSE_FRACTION * 100:.0f} %, "
                   "<span class=close>close</span> otherwise.")
    legend += "</p>"
    tables = "".join(_block_table(b, i) for i, b in enumerate(blocks))
    return f"<section id=tables><h2>Results (Table II layout)</h2>{legend}{tables}</section>"


def _plots(plots: list[Plot]) -> str:
    if not plots:
        return ""
    figures = []
    for i, plot in enumerate(plots):
        data = base64.b64encode(plot.png).decode("ascii")
        figures.append(f"<figure id=fig-{e(plot.key)}><img alt='{e(plot.title)}' "
                       f"src='data:image/png;base64,{data}'><figcaption><b>Figure {i + 1}. "
                       f"{e(plot.title)}.</b> {e(plot.caption)}</figcaption></figure>")
    return f"<section id=figures><h2>Figures</h2>{''.join(figures)}</section>"


MEASURED = (("published", "published", 0), ("received", "received", 0),
            ("delivery_ratio", "delivery ratio", 3), ("reception_rate_hz", "reception Hz", 2),
            ("latency_mean_ms", "latency mean ms", 2), ("latency_p50_ms", "p50 ms", 2),
            ("latency_p95_ms", "p95 ms", 2), ("latency_p99_ms", "p99 ms", 2),
            ("latency_max_ms", "max ms", 2), ("jitter_ms", "jitter ms", 2),
            ("goodput_bit_s", "goodput Mbit/s", 2), ("wire_amplification", "wire ampl.", 3),
            ("model_amplification", "model ampl.", 3),
            ("link_dropped_packets", "link drops", 0),
            ("sub_udp_rcvbuf_errors", "sub rcvbuf errors", 0), ("pub_cpu_s", "pub CPU s", 2),
            ("sub_cpu_s", "sub CPU s", 2))


def _metric_text(key: str, value: Any, digits: int) -> str:
    if key == "goodput_bit_s":
        value = num(value)
        return "—" if value is None else f"{value / 1e6:.{digits}f}"
    if digits == 0:
        value = num(value)
        return "—" if value is None else f"{int(value)}"
    return fmt(value, digits)


def _probe_text(summary: dict[str, Any]) -> str:
    """One line from a probe's pub.json / sub.json: how it ended and what it did."""
    parts = []
    code = summary.get("exit_code")
    if code is not None:
        how = "stopped by the runner" if summary.get("signalled_by_runner") else (
            f"signal {-code}" if code < 0 else f"exit status {code}")
        parts.append(how)
    for key, unit in (("cpu_s", "s CPU"), ("wall_s", "s wall")):
        value = num(summary.get(key))
        if value is not None:
            parts.append(f"{value:.2f} {unit}")
    inner = summary.get("summary")
    if isinstance(inner, dict):
        if "samples" in inner:
            parts.append(f"{inner['samples']} samples")
        errors = inner.get("errors") or []
        parts.append("errors: " + ("; ".join(map(str, errors)) if errors else "none"))
    return ", ".join(parts)


def _failed(run_dir: Path, rows: list[dict[str, Any]]) -> str:
    failed = [r for r in rows if r.get("status") != "ok"]
    if not failed:
        return ""
    parts = [f"<section id=failed><h2>Failed cells ({len(failed)})</h2><p class=legend>"
             "What each measured before it failed; the tables show these cells as —.</p>"]
    for row in failed:
        cell_id = row["cell_id"]
        measured = [(label, _metric_text(k, row.get(k), d)) for k, label, d in MEASURED]
        measured = [(label, text) for label, text in measured if text != "—"]
        values = "".join(f"<dt>{e(label)}</dt><dd>{e(text)}</dd>" for label, text in measured)
        values = f"<dl class='kv measured'>{values}</dl>" if values else \
            "<p>nothing was measured</p>"
        probes = []
        cell_dir = run_dir / "records" / cell_id
        for role in ("pub", "sub"):
            summary = _read_json(cell_dir / f"{role}.json")
            if summary is not None:
                probes.append(f"<dt>{role} probe</dt><dd>{e(_probe_text(summary))}</dd>")
        probe_html = f"<dl class=kv>{''.join(probes)}</dl>" if probes else ""
        logs = []
        for name in ("error.txt", "pub.log", "sub.log"):
            tail = _tail(cell_dir / name)
            if tail:
                logs.append(f"<details><summary>{e(name)} (last {LOG_TAIL_LINES} lines)"
                            f"</summary><pre>{e(tail)}</pre></details>")
        parts.append(f"<article class=failed-cell id='failed-{e(cell_id)}'><h3>"
                     f"<code>{e(cell_id)}</code></h3><p class=reason>"
                     f"{e(row.get('failure_reason') or 'failed (no reason recorded)')}</p>"
                     f"{values}{probe_html}{''.join(logs)}</article>")
    parts.append("</section>")
    return "".join(parts)


def _all_cells(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    head = "<tr><th>#</th><th>cell</th><th>status</th>" + "".join(
        f"<th>{e(label)}</th>" for _k, label, _d in MEASURED) + "</tr>"
    body = []
    for row in rows:
        ok = row.get("status") == "ok"
        reason = row.get("failure_reason") or ""
        status = "ok" if ok else f"<span title='{e(reason)}'>failed</span>"
        if row.get("exit_note"):
            status += f" <span class=note title='{e(row['exit_note'])}'>(note)</span>"
        values = "".join(f"<td data-metric={k}>{_metric_text(k, row.get(k), d)}</td>"
                         for k, _label, d in MEASURED)
        body.append(f"<tr class='{'' if ok else 'failed'}' data-cell='{e(row['cell_id'])}'>"
                    f"<td>{e(row.get('index', ''))}</td><td><code>{e(row['cell_id'])}</code>"
                    f"</td><td>{status}</td>{values}</tr>")
    notes = "".join(f"<li><code>{e(r['cell_id'])}</code>: {e(r['exit_note'])}</li>"
                    for r in rows if r.get("exit_note"))
    notes = f"<p>Notes (not failures):</p><ul id=exit-notes>{notes}</ul>" if notes else ""
    return (f"<section id=cells><h2>Every cell</h2><p class=legend>Measured values of every "
            f"cell as stored in cells.parquet (failed cells too).</p>{notes}<div class=scroll>"
            f"<table class=cells id=all-cells><thead>{head}</thead><tbody>{''.join(body)}"
            f"</tbody></table></div></section>")


STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#111;
 max-width:1200px;margin:0 auto;padding:1em 1.5em;background:#fff}
h1{font-size:1.6em;margin:.2em 0}h2{border-bottom:2px solid #333;padding-bottom:.15em;
 margin-top:1.6em}h3{margin:1.1em 0 .4em}h4{margin:.8em 0 .3em}
.meta,.summary{margin:.2em 0}.dim{color:#666}.legend{color:#333;font-size:.92em}
code,pre{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.88em}
pre{background:#f6f6f6;border:1px solid #ddd;padding:.6em;overflow:auto;max-height:40em}
table{border-collapse:collapse;margin:.5em 0 1.2em}
th,td{border:1px solid #bbb;padding:.25em .5em;vertical-align:top}
table.t2 td{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.t2 caption,table.cells caption{text-align:left;font-weight:600;padding:.3em 0}
table.t2 tr.paper td,table.t2 tr.paper th{color:#555;font-size:.9em;border-top:none}
table.t2 tr.diff td,table.t2 tr.diff th{font-size:.85em}
table.t2 tr.amplification td,table.t2 tr.amplification th{font-size:.9em;color:#333}
table.t2 th{background:#f2f2f2;text-align:left}
td.better,span.better{background:#d9f2de;color:#0b5d1e}
td.worse,span.worse{background:#fbdada;color:#8a1111}
td.close,span.close{color:#444}
th.failed,td.failed{background:#fff0f0}.failtag{color:#B00020;font-size:.85em}
table.plain th{text-align:left;background:#f7f7f7;font-weight:600}
dl.kv{display:grid;grid-template-columns:max-content auto;gap:.1em 1em;margin:.3em 0}
dl.kv dt{font-weight:600}dl.kv dd{margin:0}
.warn{background:#fff6e0;border:1px solid #e0b040;padding:.4em 1em}
#problems{margin-top:1em}
figure{margin:1.2em 0;page-break-inside:avoid;break-inside:avoid}
figure img{max-width:100%;height:auto;border:1px solid #ddd}
figcaption{font-size:.92em;color:#222;margin-top:.3em}
article.failed-cell{border-left:4px solid #B00020;padding-left:.8em;margin:1em 0}
.reason{font-weight:600;color:#8a1111}
.scroll{overflow-x:auto}table.cells td{text-align:right;white-space:nowrap}
table.cells td:nth-child(2),table.cells td:nth-child(3){text-align:left}
tr.failed td{background:#fff0f0}
td.regression{background:#fbdada;color:#8a1111;font-weight:600}
td.improvement{background:#d9f2de;color:#0b5d1e}
nav a{margin-right:1em}
.columns{display:grid;grid-template-columns:repeat(auto-fit,minmax(340px,1fr));gap:0 2em}
dl.measured{grid-template-columns:repeat(4,max-content minmax(5em,auto))}
@media print{body{max-width:none;padding:0;font-size:11px}nav,#image-check{display:none}
 *{-webkit-print-color-adjust:exact;print-color-adjust:exact}
 td.better::after{content:" better"}td.worse::after{content:" worse"}
 details{display:block}details>summary{list-style:none}
 table,figure,article{page-break-inside:avoid;break-inside:avoid}
 .scroll{overflow:visible}pre{max-height:none;white-space:pre-wrap}}
"""

# Marks the page once loaded: how many figures decoded (a headless browser reads this).
CHECK_SCRIPT = """
window.addEventListener('load', function () {
  var images = document.images, ok = 0;
  for (var i = 0; i < images.length; i++) {
    if (images[i].complete && images[i].naturalWidth > 0) { ok++; }
  }
  var mark = document.getElementById('image-check');
  mark.setAttribute('data-images-ok', String(ok));
  mark.setAttribute('data-images-total', String(images.length));
  mark.textContent = 'figures: ' + ok + ' of ' + images.length + ' rendered';
  if (ok < images.length) { mark.className = 'warn'; }
});
"""


def render(run_dir: Path, info: dict[str, Any], rows: list[dict[str, Any]],
           plots: list[Plot], comparison: Any = None) -> str:
    scenario = info.get("scenario", {})
    compared = ""
    if comparison is not None:
        from linklab.report.compare import comparison_html

        compared = comparison_html(comparison)
    # results first (what a reader came for), then how they were made
    sections = [_header(run_dir, info, rows), _problems(run_dir, info, rows, plots),
                compared, _tables(rows), _plots(plots), _failed(run_dir, rows),
                _setup(run_dir, info, rows), _all_cells(rows)]
    nav_items = [("comparison", "Comparison"), ("tables", "Tables"), ("figures", "Figures"),
                 ("failed", "Failed cells"), ("setup", "Setup"), ("cells", "Every cell")]
    body = "".join(sections)
    nav = "".join(f"<a href='#{k}'>{v}</a>" for k, v in nav_items if f"id={k}>" in body)
    title = scenario.get("title") or scenario.get("name") or "bench run"
    return (f"<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
            f"<meta name=viewport content='width=device-width, initial-scale=1'>"
            f"<meta name=generator content='linklab report'>"
            f"<title>linklab report — {e(title)}</title><style>{STYLE}</style></head>"
            f"<body><nav>{nav}</nav>{body}<footer class=dim><p>Made by <code>linklab "
            f"report {e(run_dir)} --html</code> from the run directory alone.</p></footer>"
            f"<script>{CHECK_SCRIPT}</script></body></html>\n")
