"""The page's "Setup" section: the scenario, links (with what each stage passed and
dropped during this run's cells), versions and every profile file verbatim."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from linklab.report.html_parts import e, read_json, value_html
from linklab.report.run import Run
from linklab.report.settings import format_setting

SCENARIO_UNITS = {"rate": "rate_hz", "payload": "payload_bytes", "count": "count",
                  "duration": "duration_s", "warmup": "warmup_s",
                  "outage_start": "outage_start_s", "outage_length": "outage_length_s",
                  "grace": "grace_s"}


def _scenario_value(key: str, value: Any) -> str:
    column = SCENARIO_UNITS.get(key)
    if column is None:
        return value_html(value)
    values = value if isinstance(value, list) else [value]
    return e(", ".join(format_setting(column, v) for v in values))


def _sessions_html(sessions: list[Any]) -> str:
    """The bench sessions that measured the run (run.json ``sessions``), when more than one:
    a study resumed on other days, machines or commits."""
    sessions = [s for s in sessions if isinstance(s, dict)]
    if len(sessions) < 2:
        return ""
    body = "".join(
        f"<tr><td>{e(s.get('started_utc') or '?')}</td><td>{e(s.get('ended_utc') or '—')}"
        f"</td><td>{e(s.get('host') or '?')}</td><td><code>"
        f"{e(str((s.get('versions') or {}).get('git_commit') or '?')[:10])}</code></td>"
        f"<td>{e(s.get('cells_measured', '?'))}</td></tr>" for s in sessions)
    return ("<h3>Sessions</h3><table class=plain id=sessions><tr><th>started (UTC)</th>"
            "<th>ended</th><th>machine</th><th>commit</th><th>cells measured</th></tr>"
            f"{body}</table>")


def setup_html(run: Run) -> str:
    info, rows = run.info, run.rows
    scenario = info.get("scenario", {})
    fixed = scenario.get("fixed", {})
    axes = scenario.get("axes", {})
    table = "".join(f"<tr><th>{e(k)}</th><td>{_scenario_value(k, v)}</td><td class=dim>"
                    "fixed</td></tr>" for k, v in fixed.items() if v is not None)
    table += "".join(f"<tr><th>{e(k)}</th><td>{_scenario_value(k, v)}</td><td>axis</td>"
                     "</tr>" for k, v in axes.items())
    options = {k: v for k, v in info.get("options", {}).items() if v not in (None, False)}
    table += (f"<tr><th>trials</th><td>{e(scenario.get('trials', 1))}</td><td></td></tr>"
              f"<tr><th>options</th><td>{value_html(options)}</td><td></td></tr>")
    scenario_html = f"<h3>Scenario</h3><table class=plain id=scenario>{table}</table>"
    if scenario.get("text"):
        scenario_html += (f"<details><summary>Scenario file <code>"
                          f"{e(scenario.get('path', ''))}</code></summary>"
                          f"<pre>{e(scenario['text'])}</pre></details>")

    links_html = ["<h3>Links</h3>"]
    links: dict[str, Any] = {}
    for store in run.stores or []:
        links.update(store.info.get("links") or {})
    links = links or dict(info.get("links") or {})
    used = list(dict.fromkeys(str(r.get("link")) for r in rows))
    for name in list(links) + [u for u in used if u not in links]:
        links_html.append(_link_html(run.cell_dir, name, links.get(name), rows))
    if not links and not used:
        links_html.append("<p class=dim>no link recorded</p>")

    versions = info.get("versions", {})
    rows_html = "".join(f"<tr><th>{e(k)}</th><td>{value_html(v)}</td></tr>"
                        for k, v in versions.items())
    versions_html = f"<h3>Versions</h3><table class=plain id=versions>{rows_html}</table>"
    versions_html += _sessions_html(info.get("sessions") or [])

    profiles_html = ["<h3>Profiles</h3>"]
    profiles: dict[str, dict[str, Any]] = {}
    where: dict[str, Path] = {}
    for root, meta_of in [(s.root, s.info.get("profiles") or {}) for s in run.stores] or [
            (run.root, info.get("profiles") or {})]:
        directory = root / "profiles"
        names = dict(meta_of)
        if directory.is_dir():
            for path in sorted(directory.iterdir()):
                if path.is_file() and not path.name.startswith("."):
                    names.setdefault(path.name, {})
        for name, meta in names.items():
            profiles.setdefault(name, meta)
            where.setdefault(name, directory)
    if not profiles:
        profiles_html.append("<p class=dim>no profile file (the middleware's defaults)</p>")
    for file_name, meta in profiles.items():
        path = where[file_name] / file_name
        cells = meta.get("cell_ids", [])
        text = path.read_text(errors="replace") if path.is_file() else None
        extra = {k: v for k, v in meta.items() if k not in ("cell_ids", "profile")}
        body = f"<pre class=profile>{e(text)}</pre>" if text is not None else \
            f"<p class=warn>profiles/{e(file_name)} is missing from the run directory</p>"
        profiles_html.append(
            f"<details class=profile data-file='{e(file_name)}'><summary><code>"
            f"{e(file_name)}</code> — {e(meta.get('profile', '?'))}, used by {len(cells)} "
            f"cell{'s' if len(cells) != 1 else ''}</summary>"
            f"{value_html(extra) if extra else ''}{body}</details>")
    return (f"<section id=setup><h2>Setup</h2><div class=columns><div>{scenario_html}"
            f"{versions_html}</div><div>{''.join(links_html)}</div></div>"
            f"{''.join(profiles_html)}</section>")


DIRECTION_KEYS = ("up", "down")


def _stage_totals(cell_dir: Callable[[str], Path], link: str,
                  rows: list[dict[str, Any]]) -> list[dict]:
    """The link's stages (from the cells' counters.json) with the packets each passed and
    dropped during this run's cells on that link (after - before, summed)."""
    stages: dict[tuple, dict] = {}
    for row in rows:
        if row.get("link") != link:
            continue
        counters = read_json(cell_dir(str(row["cell_id"])) / "counters.json")
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


def _link_html(cell_dir: Callable[[str], Path], name: str, description: Any,
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
            f"<td>{value_html(p.get(k, ''))}</td>" for k in keys) + "</tr>"
            for d, p in directions.items())
        parts.append(f"<table class=plain><tr><th>direction</th>{head}</tr>{body}</table>")
    facts = {k: spec.get(k) for k in ("mtu", "source") if spec.get(k) is not None}
    if description.get("outage") is not None:
        facts["outage"] = description["outage"]
    if facts:
        parts.append(value_html(facts))
    stages = _stage_totals(cell_dir, name, rows)
    if stages:
        parts.append("<p class=legend>Stages, with the packets each passed and dropped "
                     "during this run's cells (link counters):</p>" + value_html(stages))
    elif isinstance(description.get("stages"), list):
        parts.append("<p class=legend>Stages:</p>" + value_html(description["stages"]))
    parts.append(f"<details><summary>full description (run.json)</summary>"
                 f"{value_html(description)}</details></div>")
    return "".join(parts)
