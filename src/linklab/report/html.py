"""``linklab report RUN_DIR --html [OUT.html]``: one self-contained HTML page of a run.

Everything comes from the run directory (format: linklab.rundir), so an old run can
be re-reported: run.json (setup, versions, links, profiles), cells.parquet (metrics),
streams.parquet (per subscriber) and records/ (per-sample latencies, probe summaries,
logs, search trials), profiles/ (the XML verbatim). The page has no external reference:
CSS inline, figures as base64 PNG, one small inline script that checks every figure
decoded. Its tables are those of the terminal (linklab.report.table.build_blocks,
linklab.report.sections), so the page adds to the terminal and never contradicts it.
"""

from __future__ import annotations

import base64
import math
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typer.core import TyperCommand

from linklab.errors import UsageError
from linklab.report import outcome
from linklab.report.html_cells import all_cells, errors_html, failed_html
from linklab.report.html_parts import e, fmt
from linklab.report.html_setup import setup_html
from linklab.report.html_style import CHECK_SCRIPT, STYLE
from linklab.report.interface_counters import model_text, run_links, with_model_verdicts
from linklab.report.run import Run
from linklab.report.sections import Report
from linklab.report.table import METRICS, Block, Column, build_blocks, model_notes
from linklab.report.view import to_html
from linklab.rundir import measured_with, num
from linklab.units import size_label

if TYPE_CHECKING:  # plots imports matplotlib: only when a page is written
    from linklab.report.plots import Plot

__all__ = ["e", "fmt", "OptionalValueCommand", "output_path", "write_report", "render",
           "better_or_worse"]
DEFAULT_NAME = "report.html"
# Difference to the paper within this fraction of the paper's value is "close".
CLOSE_FRACTION = 0.10
HIGHER_IS_BETTER = {"reception_rate_hz": True, "latency_mean_ms": False, "jitter_ms": False}


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


def write_report(run: Run, report: Report, out: Path, comparison: Any = None) -> Path:
    from linklab.report.figures import all_plots

    # the model's figure only where it is a steady state, in the figures too
    # (report/interface_counters.py)
    checked = replace(run, rows=with_model_verdicts(run.rows, run_links(run)))
    page = render(run, report, all_plots(checked), comparison)
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        tmp.write_text(page, encoding="utf-8")
        tmp.replace(out)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"cannot write {out}: {error.strerror or error} (give another "
                         "place: --html OUT.html)", argument="--html") from None
    return out


# --- sections -------------------------------------------------------------------------------

def _header(run: Run) -> str:
    info, rows = run.info, run.rows
    scenario = info.get("scenario", {})
    versions = info.get("versions", {})
    planned = len(run.planned)
    failed = sum(1 for r in rows if r.get("status") == "failed")
    errors = len(run.errors)
    title = scenario.get("title") or scenario.get("name") or "bench run"
    state = "finished" if run.finished else (
        "interrupted" if info.get("interrupted") else "not finished")
    meta = [f"scenario <b>{e(scenario.get('name', '?'))}</b>",
            f"run directory <code>{e(run.root)}</code>",
            f"created {e(info.get('created_utc', '?'))}, updated {e(info.get('updated_utc', '?'))}"]
    meta += [f"with <code>{e(s.root)}</code>" for s in run.stores[1:]]
    error_text = (f", <span class=error>{errors} error{'s' if errors != 1 else ''} (not "
                  "measured)</span>" if errors else "")
    summary = (f"<span id=cells-summary data-done={len(rows)} data-planned={planned} "
               f"data-failed={failed} data-errors={errors}>cells: {len(rows)}/{planned} "
               f"done, {failed} failed{error_text} ({state})</span>; Fast DDS "
               f"{e(versions.get('libfastrtps-dev') or '?')}, "
               f"kernel {e(versions.get('kernel', '?'))}, {e(measured_with(info))}")
    source = (f"<p class=meta>source: {e(scenario['source'])}</p>"
              if scenario.get("source") else "")
    old = outcome.format1_note(rows)
    old_html = f"<p class=meta id=format1>{e(old)}</p>" if old else ""
    return (f"<header><h1>{e(title)}</h1>{source}<p class=meta>{' · '.join(meta)}</p>"
            f"<p class=summary>{summary}</p>{old_html}<p id=image-check class=dim>figures: "
            f"checking…</p></header>")


def _problems(run: Run, plots: list[Plot]) -> str:
    """What is missing from this run, said plainly (a partial run still gets a report)."""
    items = []
    rows = run.rows
    done = {r["cell_id"] for r in rows}
    missing = [c for c in run.planned if c not in done]
    if missing:
        why = ("the run was interrupted" if run.info.get("interrupted")
               else "the run has not finished (or was killed)")
        listed = []
        for cell_id in missing:
            in_flight = run.cell_dir(cell_id).is_dir()
            note = " — in flight when the run stopped: records exist, no result" \
                if in_flight else ""
            listed.append(f"<li><code>{e(cell_id)}</code>{e(note)}</li>")
        items.append(f"<p><b>{len(missing)} of {len(run.planned)} planned cells "
                     f"have no result</b> ({why}; <code>linklab bench --resume "
                     f"{e(run.root)}</code> runs them):</p><ul id=missing-cells>"
                     f"{''.join(listed)}</ul>")
    if run.errors:
        items.append(f"<p><b>{len(run.errors)} cell{'s' if len(run.errors) != 1 else ''} "
                     "could not be measured</b> (linklab errors, not link results): see "
                     "<a href='#errors'>Errors</a>.</p>")
    if not rows:
        items.append("<p><b>No cell has finished yet</b>: there are no tables or figures.</p>")
    notes = [n for p in plots for n in p.notes]
    if notes:
        items.append("<p>Not drawn (records missing or unreadable):</p><ul>"
                     + "".join(f"<li>{e(n)}</li>" for n in notes) + "</ul>")
    if not items:
        return ""
    return f"<section id=problems class=warn><h2>What is missing</h2>{''.join(items)}</section>"


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
        reasons = "; ".join(col.reasons) or col.state
        tag = "⚠ error" if col.error else "✗ failed"
        mark = f"<br><span class=failtag title='{e(reasons)}'>{tag}</span>"
    return (f"<th class='{col.state if col.failed else ''}' data-profile='{e(col.profile)}' "
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
            klass = c.state if c.failed else ""
            cells.append(f"<td class='ours {klass}' data-metric={metric} "
                         f"data-profile='{e(c.profile)}' data-payload={c.payload_bytes} "
                         f"data-cells='{e(' '.join(r['cell_id'] for r in c.rows))}'>"
                         f"{e(c.text(metric))}</td>")
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
        delivered.append(f"<td class='{c.state if c.failed else ''}' data-metric=delivered>"
                         f"{e(c.delivered_text())}</td>")
    body.append(f"<tr><th>Delivered</th>{''.join(delivered)}</tr>")
    values = "".join(f"<td class=amplification data-metric=wire_amplification>"
                     f"{fmt(c.measured('wire_amplification'))}</td>" for c in columns)
    body.append(f"<tr class=amplification><th>Wire / published</th>{values}</tr>")
    body.append("<tr class=amplification><th>model R_DDS/R_pub</th>"
                f"{''.join(_model_cell(c) for c in columns)}</tr>")
    condition = f" data-condition='{e(block.condition)}'" if block.condition else ""
    notes = "".join(f"<p class='legend model-note'>∞ {e(c.profile)} "
                    f"{e(size_label(c.payload_bytes))}: {e(note)}</p>"
                    for c, note in model_notes(columns))
    return (f"<table class=t2 id=block-{index} data-link='{e(block.key['link'])}'{condition}>"
            f"<caption>{e(block.title)}</caption><thead>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>{notes}")


def _model_cell(col: Column) -> str:
    """The model's figure, or "∞" with why the cell cannot complete as its tooltip (and
    under the table): report/interface_counters.py."""
    text, note = model_text(col.rows)
    tip = f" title='{e(note)}'" if note else ""
    return (f"<td class=amplification data-metric=model_amplification{tip}>"
            f"{e(text)}</td>")


def _tables(report: Report) -> str:
    if report.paper_004 is not None:
        tables = "".join(to_html(s, level=3) for s in report.paper_004)
        return (f"<section id=tables><h2>Results (seed 004's tables)</h2><p class=legend>"
                f"This run is a seed 004 study (its middlewares and message types): ours "
                f"and the paper's values.</p>{tables}</section>")
    blocks = build_blocks(with_model_verdicts(report.run.rows, run_links(report.run)),
                          report.run.pool)
    if not blocks:
        return ""
    any_paper = any(b.paper(c, "reception_rate_hz")[0] for b in blocks for c in b.columns)
    legend = ("<p class=legend>Layout of seed 000's Table II. “—” as in the paper: a cell "
              "that did not complete shows — throughout; one whose mean latency exceeds "
              "100 publish intervals keeps its reception rate. With trials, the mean over "
              "trials (— if any trial failed). <span class=error>error</span>: linklab could "
              "not measure the cell (not a link result). Delivered: received/expected.")
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


def _views(report: Report, keys: tuple[str, ...], section_id: str, title: str) -> str:
    shown = [s for s in report.shown("html") if s.key in keys]
    if not shown:
        return ""
    return (f"<section id={section_id}><h2>{e(title)}</h2>"
            f"{''.join(to_html(s) for s in shown)}</section>")


def render(run: Run, report: Report, plots: list[Plot], comparison: Any = None) -> str:
    # the rows' model figures as the tables show them (report/interface_counters.py)
    checked = replace(run, rows=with_model_verdicts(run.rows, run_links(run)))
    scenario = run.info.get("scenario", {})
    compared = ""
    if comparison is not None:
        from linklab.report.compare import comparison_html

        compared = comparison_html(comparison)
    # results first (what a reader came for), then how they were made
    sections = [_header(run), _problems(run, plots), compared, _tables(report),
                _views(report, ("searches", "shares", "search-trials"), "throughput",
                       "Throughput"),
                _views(report, ("subscribers", "topics", "fanout"), "streams",
                       "Subscribers and topics"),
                _views(report, ("gates",), "gates-section", "Gates"),
                _plots(plots), errors_html(checked), failed_html(checked),
                setup_html(run), _views(report, ("interfaces",), "wire", "Wire"),
                all_cells(checked.rows)]
    nav_items = [("comparison", "Comparison"), ("tables", "Tables"),
                 ("throughput", "Throughput"), ("streams", "Subscribers"),
                 ("gates-section", "Gates"), ("figures", "Figures"), ("errors", "Errors"),
                 ("failed", "Failed cells"), ("setup", "Setup"), ("wire", "Wire"),
                 ("cells", "Every cell")]
    body = "".join(sections)
    nav = "".join(f"<a href='#{k}'>{v}</a>" for k, v in nav_items if f"id={k}>" in body)
    title = scenario.get("title") or scenario.get("name") or "bench run"
    extra = "".join(f" --with {e(s.root)}" for s in run.stores[1:])
    return (f"<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
            f"<meta name=viewport content='width=device-width, initial-scale=1'>"
            f"<meta name=generator content='linklab report'>"
            f"<title>linklab report — {e(title)}</title><style>{STYLE}</style></head>"
            f"<body><nav>{nav}</nav>{body}<footer class=dim><p>Made by <code>linklab "
            f"report {e(run.root)}{extra} --html</code> from the run directory alone.</p>"
            f"</footer><script>{CHECK_SCRIPT}</script></body></html>\n")
