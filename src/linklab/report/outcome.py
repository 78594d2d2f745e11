"""How each cell ended, said the same way in every table: ok, failed or error.

- **failed**: linklab measured the cell and the link (or middleware) did not deliver by
  the cell's rule (``completion_rule``); its numbers are kept and tables print "—".
- **error**: linklab could not measure the cell ("could not run: ..." -- the
  environment or input found late -- or "linklab bug: ..."). An error row holds no
  measurement and is never a link result: tables print "error", never "—", and
  ``linklab report`` exits 70 (EXIT_ERROR_ROWS) when a run has one.

Delivery is ``received/expected`` (each topic's published samples times its
subscribers); rows of runs made before ``expected`` existed, and per-subscriber rows,
use ``published``. When a publisher left no summary (``published_exact`` false:
linklab.bench.streams) the count is a lower bound and prints as "≥N" -- unless it reached
the count the publisher was told to write; a row made before
that column existed whose count is below what arrived (a publisher killed before it
flushed its records) prints "≥received".
"""

from __future__ import annotations

from typing import Any

from linklab.report.view import Cell, Section
from linklab.rundir import num

ERROR = "error"
EXIT_GATES_MISSED = 1   # as linklab bench
EXIT_ERROR_ROWS = 70    # as linklab bench: a cell linklab could not measure


def format1_note(rows: list[dict[str, Any]]) -> str | None:
    """One line for a run holding cells measured with run format 1 (before the metric
    definitions of docs/metrics.md): what was re-derived and what was not."""
    old = [r for r in rows if r.get("metrics_version") == 1 and not is_error(r)]
    if not old:
        return None
    which = "every cell" if len(old) == len(rows) else f"{len(old)} of {len(rows)} cells"
    return (f"{which} measured with run format 1: reception rate, goodput and message loss "
            "re-derived from their stored columns (today's definitions, exact); no stall "
            "measured, so a RELIABLE KEEP_LAST cell among them was judged without the "
            "stall rule (docs/metrics.md)")


def is_error(row: dict[str, Any]) -> bool:
    return row.get("status") == ERROR


def is_ok(row: dict[str, Any]) -> bool:
    return row.get("status") == "ok"


def dashed(rows: list[dict[str, Any]], metric: str) -> bool:
    """Whether the tables print "—" for ``metric`` of these rows (one cell's trials), as
    seed 000's Table II does: any failed trial hides every metric, except that a cell
    failed only by its latency keeps its reception rate. (Error rows print "error".)"""
    if all(is_ok(r) for r in rows):
        return False
    reasons = [r["failure_reason"] for r in rows if r.get("failure_reason")]
    only_latency = reasons and all(r.startswith("latency:") for r in reasons)
    return not only_latency or metric != "reception_rate_hz"


def metric_text(row: dict[str, Any], metric: str, digits: int = 2) -> str:
    """One row's ``metric`` as the tables print it: the value, "—" or "error"."""
    if is_error(row):
        return ERROR
    value = num(row.get(metric))
    return "—" if value is None or dashed([row], metric) else f"{value:.{digits}f}"


def _counts(row: dict[str, Any]) -> tuple[float | None, float | None]:
    """(received, expected) as the row has them: ``expected``, else ``published``."""
    expected = num(row.get("expected"))
    return num(row.get("received")), expected if expected is not None else num(
        row.get("published"))


def delivered(row: dict[str, Any]) -> tuple[int | None, int | None]:
    """(received, expected): ``expected`` when the row has it, else ``published``; a
    lower bound when ``expected_is_lower_bound``, never below what was received."""
    received, expected = _counts(row)
    if received is not None and expected is not None and expected_is_lower_bound(row):
        expected = max(expected, received)
    return (None if received is None else int(received),
            None if expected is None else int(expected))


def expected_is_lower_bound(row: dict[str, Any]) -> bool:
    """Whether the row's published count is only a lower bound: its publisher left no
    summary (``published_exact`` false), or -- a row made before that column -- fewer
    samples were counted published than arrived."""
    exact = row.get("published_exact")
    if exact is not None:
        return not bool(exact) and not _wrote_its_whole_count(row)
    received, expected = _counts(row)
    return received is not None and expected is not None and received > expected


def _wrote_its_whole_count(row: dict[str, Any]) -> bool:
    """A one-topic row whose publisher is known to have written every sample it was told
    to (a probe writes no more: linklab.bench.streams.holds_every_seq) -- the runner
    applies this since 2026-11-27; a row made before may still say ``published_exact``
    false for a publisher killed while it lingered after its last sample."""
    count, published = row.get("count"), row.get("published")
    return (row.get("topics") in (None, 1) and count is not None and published is not None
            and int(published) >= int(count) > 0)


def delivered_text(row: dict[str, Any]) -> str:
    if is_error(row):
        return ERROR
    return delivered_sum([row])


def delivered_sum(rows: list[dict[str, Any]]) -> str:
    """Several rows (trials, subscribers) as one "received/expected" ("≥expected" when a
    row's count is a lower bound); "error" if any is."""
    if any(is_error(r) for r in rows):
        return ERROR
    pairs = [delivered(r) for r in rows]
    got = [g for g, _ in pairs if g is not None]
    want = [w for _, w in pairs if w is not None]
    bound = "≥" if any(expected_is_lower_bound(r) for r in rows) else ""
    return f"{sum(got) if got else '—'}/{bound + str(sum(want)) if want else '—'}"


def status_cell(row: dict[str, Any]) -> Cell:
    status = str(row.get("status") or "failed")
    klass = {"ok": "", "error": "error"}.get(status, "failed")
    return Cell(status, klass, str(row.get("failure_reason") or ""))


def errors_section(rows: list[dict[str, Any]]) -> Section | None:
    """The cells linklab could not measure, apart from the failed ones."""
    errors = [r for r in rows if is_error(r)]
    if not errors:
        return None
    section = Section(
        "errors", f"Errors: {len(errors)} cell{'s' if len(errors) != 1 else ''} linklab "
        "could not measure", ["Cell", "Kind", "Message"],
        legend="Not link results: no measurement was made, so these cells are left out "
               "of every average and shown as \"error\" in the tables. \"could not run\": "
               "the environment or an input found late; \"linklab bug\": an exception in "
               "linklab, traceback in records/<cell>/error.txt. linklab report exits 70.",
        line_format="  {0}: {2}", outputs=("terminal", "markdown", "json"))
    for row in errors:
        reason = str(row.get("failure_reason") or "error (no reason recorded)")
        kind = "linklab bug" if reason.startswith("linklab bug:") else "could not run"
        section.add(Cell(str(row["cell_id"]), "error"), kind, reason)
        section.records.append({"cell_id": row["cell_id"], "kind": kind, "message": reason})
    return section


def failed_section(rows: list[dict[str, Any]]) -> Section | None:
    """The cells that were measured and failed, with delivery and the rule that decided."""
    failed = [r for r in rows if not is_ok(r) and not is_error(r)]
    if not failed:
        return None
    section = Section(
        "failed-cells", f"Failed cells ({len(failed)})",
        ["Cell", "Delivered", "Why", "Rule that decided"],
        legend="Measured, and not delivered by the cell's rule; the tables show them as "
               "— and keep what they measured (--json, --csv, the HTML's every-cell table).",
        line_format="  {0}: {2}\n      delivered {1}; rule: {3}",
        outputs=("terminal", "markdown", "json"))  # the HTML page has its own, with logs
    for row in failed:
        rule = row.get("completion_rule") or "(not recorded: run made before rules were stored)"
        reason = str(row.get("failure_reason") or "failed (no reason recorded)")
        section.add(Cell(str(row["cell_id"]), "failed"), delivered_text(row), reason,
                    str(rule))
        got, want = delivered(row)
        section.records.append({"cell_id": row["cell_id"], "received": got, "expected": want,
                                "failure_reason": reason, "completion_rule": rule})
    return section
