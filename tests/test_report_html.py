"""`linklab report RUN_DIR --html`: one self-contained page from hand-made run directories
(real record files in the documented format, failed cells, an outage run), its tables
checked against cells.parquet and against the terminal, opened in headless Chromium."""

from __future__ import annotations

import html
import json
import math
import re
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from headless_chromium import open_page
from linklab.report.paper_000 import paper_value
from report_checks import check_table_ii, linklab, parse
from report_rundirs import outage_run, table_run


@pytest.fixture(scope="module")
def table_dir(tmp_path_factory) -> Path:
    return table_run(tmp_path_factory.mktemp("runs") / "table", trials=2)


@pytest.fixture(scope="module")
def outage_dir(tmp_path_factory) -> Path:
    return outage_run(tmp_path_factory.mktemp("runs") / "outage")


@pytest.fixture(scope="module")
def table_page(table_dir) -> tuple[Path, str, str]:
    out = table_dir.parent / "table.html"
    result = linklab("report", table_dir, "--html", out)
    assert result.returncode == 0, result.stderr
    assert f"wrote {out}" in result.stderr
    return out, out.read_text(), result.stdout


def stored_rows(run_dir: Path) -> list[dict]:
    return pq.read_table(run_dir / "cells.parquet").to_pylist()


def finite(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


@pytest.mark.slow
def test_table_ii_cells_match_cells_parquet_and_the_paper(table_dir, table_page):
    _, page, _ = table_page
    ours = [c for c in parse(page).cells if "ours" in c.get("class", "").split()]
    assert len(ours) == 2 * 4 * 3  # 2 links x (2 profiles x 2 payloads) x 3 metrics
    assert all(len(c["data-cells"].split()) == 2 for c in ours)  # two trials per column
    numbers, dashes = check_table_ii(page, stored_rows(table_dir))
    assert (numbers, dashes) == (2 * 4 * 3 - 6, 6)  # wifi-severe default: — throughout
    # the paper's values sit under ours, for Fast DDS / 30 Hz / RELIABLE cells
    paper_cells = [c for c in parse(page).cells if c.get("class") == "paper"]
    assert paper_cells
    texts = [c["_text"] for c in paper_cells]
    assert f"{paper_value('ideal', 'default', 65536, 'latency_mean_ms')[1]:.2f}" in texts
    assert f"{paper_value('severe', 'optimized', 262144, 'reception_rate_hz')[1]:.2f}" in texts
    # and the difference is highlighted: our ideal-link latency beats the paper's
    diffs = [c for c in parse(page).cells if c.get("class") in ("better", "worse", "close")]
    assert any(c["class"] == "better" for c in diffs)
    assert any(c["class"] == "worse" for c in diffs)  # our "—" where the paper has a value


def test_every_cell_table_holds_the_stored_values_of_every_cell(table_dir, table_page):
    _, page, _ = table_page
    rows = stored_rows(table_dir)
    cells = parse(page).cells
    by_metric: dict[str, list[str]] = {}
    for c in cells:
        if c.get("data-metric") and c["_tag"] == "td" and "ours" not in c.get("class", "") \
                and c.get("class") != "paper":
            by_metric.setdefault(c["data-metric"], []).append(c["_text"])
    for metric, digits in (("latency_p99_ms", 2), ("delivery_ratio", 3), ("pub_cpu_s", 2),
                           ("received", 0)):
        shown = by_metric[metric]
        assert len(shown) == len(rows)
        for text, row in zip(shown, rows, strict=True):
            if finite(row[metric]):
                assert float(text) == pytest.approx(row[metric], abs=0.6 * 10 ** -digits)
            else:
                assert text == "—"


def test_html_never_contradicts_the_terminal(table_page):
    _, page, terminal = table_page
    ours = [c["_text"] for c in parse(page).cells
            if c.get("class", "").split()[:1] in (["ours"], ["amplification"])]
    assert len(ours) == 2 * 4 * 5  # 3 metrics + wire and model amplification per column
    for text in ours:
        if text != "—":
            assert text in terminal, f"{text} is in the HTML table but not in the terminal"


def test_failed_cells_are_shown_failed_with_what_they_measured(table_dir, table_page):
    _, page, _ = table_page
    failed = [r for r in stored_rows(table_dir) if r["status"] != "ok"]
    assert len(failed) == 4
    for row in failed:
        start = page.index(f"id='failed-{row['cell_id']}'")
        article = page[start:page.index("</article>", start)]
        assert html.escape(row["failure_reason"]) in article
        assert f"<dt>published</dt><dd>{row['published']}</dd>" in article
        assert f"<dt>received</dt><dd>{row['received']}</dd>" in article
        assert "pub.log" in article  # the probe's log tail, collapsible
    crashed = [r for r in failed if r["failure_reason"].startswith("crashed:")]
    assert crashed and "signal 11" in crashed[0]["failure_reason"]
    # the column header says failed too
    assert page.count("✗ failed") == 2


def test_setup_profiles_verbatim_and_versions(table_dir, table_page):
    _, page, _ = table_page
    info = json.loads((table_dir / "run.json").read_text())
    for file_name in info["profiles"]:
        xml = (table_dir / "profiles" / file_name).read_text()
        start = page.index(f"data-file='{file_name}'")
        block = page[start:page.index("</details>", start)]
        pre = re.search(r"<pre class=profile>(.*?)</pre>", block, re.S).group(1)
        assert html.unescape(pre) == xml  # verbatim, inside a collapsible <details>
    assert "6.18.0-test" in page and "2.9.1+ds-1" in page
    # the link's stages with what they dropped: 20 % on wifi-severe
    start = page.index("id='link-wifi-severe'")
    link = page[start:page.index("<details>", start)]
    assert "<td>kernel</td>" in link and "<td>loss</td>" in link and "<td>20.0</td>" in link
    assert html.escape(info["scenario"]["text"]) in page  # the scenario file as read


def test_page_is_self_contained(table_page):
    _, page, _ = table_page
    parsed = parse(page)
    assert len(parsed.images) == 4  # CDF, payload sweep, amplification, CPU
    assert all(src.startswith("data:image/png;base64,") for src in parsed.images)
    assert all(ref.startswith("data:") or ref.startswith("#") for ref in parsed.refs)
    assert "url(" not in page.split("<style>")[1].split("</style>")[0]  # no CSS fetches


@pytest.mark.native
def test_outage_run_has_the_rate_trace(outage_dir, artifacts_dir):
    out = outage_dir.parent / "outage.html"
    result = linklab("report", outage_dir, "--html", out)
    assert result.returncode == 0, result.stderr
    page = out.read_text()
    assert "id=fig-rate_over_time" in page and "outage window" in page
    assert "nftables ingress" in page  # a flat link description's stages
    check = open_page(out, artifacts_dir / "report-outage.png", height=2000)
    assert check.problems == []
    assert check.marker["data-images-ok"] == check.marker["data-images-total"] != "0"


@pytest.mark.slow
def test_html_alone_writes_run_dir_report_html(outage_dir):
    target = outage_dir / "report.html"
    target.unlink(missing_ok=True)
    result = linklab("report", outage_dir, "--html", "--json")
    assert result.returncode == 0, result.stderr
    assert target.is_file() and json.loads(result.stdout)["run"]["format_version"] == 2


@pytest.mark.native
def test_chromium_loads_the_page_without_errors_and_every_figure_decodes(
        table_page, artifacts_dir):
    out, page, _ = table_page
    shutil.copy(out, artifacts_dir / "report-handmade.html")
    check = open_page(out, artifacts_dir / "report-handmade.png")
    assert check.problems == []
    assert len(check.images) == 4
    assert all(i["complete"] and i["naturalWidth"] > 500 for i in check.images)
    assert check.marker["data-images-ok"] == "4" and check.marker["data-images-total"] == "4"
    assert (artifacts_dir / "report-handmade.png").stat().st_size > 50_000


@pytest.mark.native
def test_the_browser_check_itself_catches_broken_pages(tmp_path):
    """The checks above can fail: a page with a bad image, a console error, an
    exception and a network request is reported on every count."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><p id=image-check></p>"
                   "<img src='data:image/png;base64,AAAA'>"
                   "<script>console.error('boom'); missing();</script></body></html>")
    check = open_page(bad)
    assert any("boom" in p for p in check.console_errors)
    assert any("missing" in p for p in check.exceptions)
    assert check.images[0]["naturalWidth"] == 0


def test_a_reception_rate_above_the_publish_rate_is_not_better():
    from linklab.report.html import better_or_worse

    # a burst after a stall (seen in a real run: 199.95 Hz at 30 Hz) is not "better"
    assert better_or_worse("reception_rate_hz", 199.95, 30.07, 30.0) == "worse"
    assert better_or_worse("reception_rate_hz", 29.9, 12.91, 30.0) == "better"
    assert better_or_worse("latency_mean_ms", 5.0, 9.0, 30.0) == "better"
    assert better_or_worse("jitter_ms", 12.0, 9.0, 30.0) == "worse"


@pytest.mark.slow
def test_a_run_measured_in_several_sessions_names_each(table_dir, tmp_path):
    """A study resumed on other machines and commits: the header names every commit,
    the setup lists the sessions (run.json sessions)."""
    run = tmp_path / "resumed"
    shutil.copytree(table_dir, run)
    info = json.loads((run / "run.json").read_text())
    info["sessions"] = [
        {"started_utc": "2026-11-26T16:33:37+00:00", "ended_utc": "2026-11-26T19:00:00+00:00",
         "host": "machine-a", "cells_before": 0, "cells_measured": 5,
         "versions": {"git_commit": "a2333dd0000000"}},
        {"started_utc": "2026-11-27T09:00:00+00:00", "ended_utc": "2026-11-27T11:00:00+00:00",
         "host": "machine-b", "cells_before": 5, "cells_measured": 7,
         "versions": {"git_commit": "beef000000000"}}]
    (run / "run.json").write_text(json.dumps(info))
    out = tmp_path / "page.html"
    result = linklab("report", run, "--html", out)
    assert result.returncode == 0, result.stderr
    page = out.read_text()
    assert "commits a2333dd000, beef000000 (2 sessions, 2 machines)" in page
    assert "commits a2333dd000, beef000000 (2 sessions, 2 machines)" in result.stdout
    sessions = page[page.index("id=sessions"):]
    sessions = sessions[:sessions.index("</table>")]
    assert "machine-a" in sessions and "<td>7</td>" in sessions and "beef000000" in sessions
