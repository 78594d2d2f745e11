"""The page's cell lists: failed cells (what each measured, how its probes ended, log
tails), cells linklab could not measure (errors), and every cell's stored values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from linklab.report.html_parts import LOG_TAIL_LINES, e, fmt, read_json, tail
from linklab.report.outcome import delivered_text, expected_is_lower_bound, is_error
from linklab.report.run import Run
from linklab.rundir import num


def _columns(text: str) -> tuple[tuple[str, str, int], ...]:
    """(row key, column label, decimals) of each ``key | label | decimals`` line."""
    rows = (tuple(part.strip() for part in line.split("|")) for line in text.strip().splitlines())
    return tuple((key, label, int(decimals)) for key, label, decimals in rows)


# the measured values a failed cell shows: row key | column label | decimals
MEASURED = _columns("""
    published             | published             | 0
    received              | received              | 0
    delivery_ratio        | delivery ratio        | 3
    reception_rate_hz     | reception Hz          | 2
    latency_mean_ms       | latency mean ms       | 2
    latency_p50_ms        | p50 ms                | 2
    latency_p95_ms        | p95 ms                | 2
    latency_p99_ms        | p99 ms                | 2
    latency_max_ms        | max ms                | 2
    jitter_ms             | jitter ms             | 2
    goodput_bit_s         | goodput Mbit/s        | 2
    wire_amplification    | wire ampl.            | 3
    model_amplification   | model ampl.           | 3
    link_dropped_packets  | link drops            | 0
    sub_udp_rcvbuf_errors | sub rcvbuf errors     | 0
    pub_cpu_s             | pub CPU s             | 2
    sub_cpu_s             | sub CPU s             | 2
    expected              | expected              | 0
    message_loss_rate     | loss                  | 4
    gap_loss_rate         | loss (gaps)           | 4
    stall_max_s           | stall s               | 2
    stall_link_up_s       | stall with link up s  | 2
    latency_growth_ms     | latency growth ms     | 2
    cpu_fraction_max      | busiest probe CPU     | 3
    write_failures        | write failures        | 0
    polled_samples        | polled samples        | 0
    fanout_step_ms        | fan-out step ms       | 3
    model_fanout_step_ms  | model fan-out step ms | 3
    search_max_rate_hz    | max rate Hz           | 1
""")


def _row_metric_text(row: dict[str, Any], key: str, digits: int) -> str:
    """A row's metric; a published count that is a lower bound (outcome) reads "≥N"."""
    text = _metric_text(key, row.get(key), digits)
    if key in ("published", "expected") and text != "—" and expected_is_lower_bound(row):
        return "≥" + text
    return text


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


def _probe_reports(cell_dir: Path) -> list[tuple[str, dict[str, Any]]]:
    """Every probe's JSON summary of a cell: pub.json / sub.json, or one per endpoint
    (pub-<topic>.json, sub-<topic>-<host>.json) in cells with several."""
    out = []
    for path in sorted(cell_dir.glob("*.json")) if cell_dir.is_dir() else []:
        if path.stem.split("-")[0] in ("pub", "sub"):
            summary = read_json(path)
            if isinstance(summary, dict):
                out.append((path.stem, summary))
    return out


def _logs(cell_dir: Path) -> str:
    logs = []
    names = ["error.txt"] + sorted(p.name for p in cell_dir.glob("*.log")) \
        if cell_dir.is_dir() else []
    for name in names:
        text = tail(cell_dir / name)
        if text:
            logs.append(f"<details><summary>{e(name)} (last {LOG_TAIL_LINES} lines)"
                        f"</summary><pre>{e(text)}</pre></details>")
    return "".join(logs)


def errors_html(run: Run) -> str:
    """Cells linklab could not measure: the message and error.txt (the traceback)."""
    errors = run.errors
    if not errors:
        return ""
    parts = [f"<section id=errors><h2>Errors ({len(errors)})</h2><p class=legend>Cells "
             "linklab could not measure (\"could not run\": the environment or an input "
             "found late; \"linklab bug\": an exception in linklab). Not link results: "
             "no measurement was made, the tables show them as <span class=error>error"
             "</span> and <code>linklab report</code> exits 70.</p>"]
    for row in errors:
        cell_id = row["cell_id"]
        parts.append(f"<article class=error-cell id='error-{e(cell_id)}'><h3><code>"
                     f"{e(cell_id)}</code></h3><p class=reason>"
                     f"{e(row.get('failure_reason') or 'error (no reason recorded)')}</p>"
                     f"{_logs(run.cell_dir(cell_id))}</article>")
    parts.append("</section>")
    return "".join(parts)


def failed_html(run: Run) -> str:
    failed = [r for r in run.rows if r.get("status") != "ok" and not is_error(r)]
    if not failed:
        return ""
    parts = [f"<section id=failed><h2>Failed cells ({len(failed)})</h2><p class=legend>"
             "What each measured before it failed, and the rule that decided its status; "
             "the tables show these cells as —.</p>"]
    for row in failed:
        cell_id = row["cell_id"]
        measured = [(label, _row_metric_text(row, k, d)) for k, label, d in MEASURED]
        measured = [(label, text) for label, text in measured if text != "—"]
        values = "".join(f"<dt>{e(label)}</dt><dd>{e(text)}</dd>" for label, text in measured)
        values = f"<dl class='kv measured'>{values}</dl>" if values else \
            "<p>nothing was measured</p>"
        cell_dir = run.measurement_dir(cell_id)
        probes = [f"<dt>{e(name)} probe</dt><dd>{e(_probe_text(summary))}</dd>"
                  for name, summary in _probe_reports(cell_dir)]
        probe_html = f"<dl class=kv>{''.join(probes)}</dl>" if probes else ""
        rule = row.get("completion_rule") or "not recorded (a run made before rules were stored)"
        parts.append(f"<article class=failed-cell id='failed-{e(cell_id)}'><h3>"
                     f"<code>{e(cell_id)}</code></h3><p class=reason>"
                     f"{e(row.get('failure_reason') or 'failed (no reason recorded)')}</p>"
                     f"<dl class=kv><dt>delivered</dt><dd data-metric=delivered>"
                     f"{e(delivered_text(row))}</dd><dt>rule that decided</dt>"
                     f"<dd class=rule>{e(rule)}</dd></dl>"
                     f"{values}{probe_html}{_logs(cell_dir)}</article>")
    parts.append("</section>")
    return "".join(parts)


def all_cells(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    head = "<tr><th>#</th><th>cell</th><th>status</th><th>delivered</th>" + "".join(
        f"<th>{e(label)}</th>" for _k, label, _d in MEASURED) + "</tr>"
    body = []
    for row in rows:
        status_name = str(row.get("status") or "failed")
        ok = status_name == "ok"
        reason = row.get("failure_reason") or ""
        status = "ok" if ok else f"<span title='{e(reason)}'>{e(status_name)}</span>"
        if row.get("exit_note"):
            status += f" <span class=note title='{e(row['exit_note'])}'>(note)</span>"
        values = "".join(f"<td data-metric={k}>{_row_metric_text(row, k, d)}</td>"
                         for k, _label, d in MEASURED)
        klass = "" if ok else ("error" if status_name == "error" else "failed")
        body.append(f"<tr class='{klass}' data-cell='{e(row['cell_id'])}'>"
                    f"<td>{e(row.get('index', ''))}</td><td><code>{e(row['cell_id'])}</code>"
                    f"</td><td data-metric=status>{status}</td><td data-metric=delivered>"
                    f"{e(delivered_text(row))}</td>{values}</tr>")
    notes = "".join(f"<li><code>{e(r['cell_id'])}</code>: {e(r['exit_note'])}</li>"
                    for r in rows if r.get("exit_note"))
    notes = f"<p>Notes (not failures):</p><ul id=exit-notes>{notes}</ul>" if notes else ""
    return (f"<section id=cells><h2>Every cell</h2><p class=legend>Measured values of every "
            f"cell as stored in cells.parquet (failed cells too; error rows hold no "
            f"measurement).</p>{notes}<div class=scroll>"
            f"<table class=cells id=all-cells><thead>{head}</thead><tbody>{''.join(body)}"
            f"</tbody></table></div></section>")
