"""What ``linklab link status`` and ``linklab link presets`` print: text and Markdown
views of a link's status and of the preset catalogue."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rich.console import Group

from linklab.output import console, markdown_table, print_text
from linklab.units import format_bitrate


def _settings(fields: dict[str, Any]) -> str:
    """{rate: 5Mbit/s, loss: {up: 1%}, up: {delay: 3ms}} -> 'rate 5Mbit/s, loss up=1%;
    up: delay 3ms'."""
    def one(key: str, value: Any) -> str:
        if isinstance(value, dict):
            value = ",".join(f"{k}={v}" for k, v in value.items())
        return f"{key} {value}"

    parts = [", ".join(one(k, v) for k, v in fields.items() if k not in ("up", "down"))]
    parts += [f"{d}: " + ", ".join(one(k, v) for k, v in fields[d].items())
              for d in ("up", "down") if fields.get(d)]
    return "; ".join(p for p in parts if p) or "a clean link"


def print_presets(entries: list[dict[str, Any]]) -> None:
    def line(text: str) -> None:  # user text: no markup, no wrapping inside paths
        console.print(text, markup=False, highlight=False, soft_wrap=True)

    for entry in entries:
        where = (f"{Path(entry['file']).name}:{entry['line']} (shipped)" if entry["shipped"]
                 else f"{entry['file']}:{entry['line']}")
        line(f"{entry['name']:<14} {entry['description']}".rstrip())
        line(f"    {_settings(entry['fields'])}")
        if entry["source"]:
            line(f"    source: {' '.join(entry['source'].split())}")
        line(f"    from: {where}")


def _fmt(value: Any) -> str:
    return "-" if value is None else str(value)


def _host_rows(status: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(name, host["netns"], ", ".join(host["addresses"]) or "(bridge only)")
            for name, host in status["hosts"].items()]


def _link_text(link: dict[str, Any]) -> str:
    return (f"{link['name']} ({link['wire']}): {link['robot_side']} <-> {link['edge_side']}"
            + ("" if link.get("state", "up") == "up" else f"  LINK {link['state']}"))


STAGE_COLUMNS = ("link", "direction", "kind", "settings", "passed packets", "passed bytes",
                 "dropped packets")


def _stage_rows(status: dict[str, Any]) -> list[tuple[str, ...]]:
    rows = []
    for st in status["counters"]["stages"]:
        params = st["params"].get("text") or st["params"].get("schedule") or st["params"]
        rows.append((st["link"], st["direction"], st["kind"], str(params),
                     _fmt(st.get("passed_packets")), _fmt(st.get("passed_bytes")),
                     _fmt(st.get("dropped_packets"))))
    return rows


def _ms(ns: Any) -> str:
    return "-" if ns is None else f"{ns / 1e6:.3f} ms"


def _station_line(name: str, counters: list[dict[str, Any]]) -> str:
    """One station's counters (or several background stations' summed)."""
    def total(key: str) -> int:
        return sum(int(c.get(key) or 0) for c in counters)

    delivered = [c for c in counters if c.get("delivered_frames")]
    means = [float(c.get("mac_delay_mean_ns") or 0) for c in delivered]
    mean = sum(means) / len(means) if means else None   # (of the stations: unweighted)
    p95 = max((c.get("mac_delay_p95_ns") or 0 for c in delivered), default=None)
    return (f"medium {name}: offered {total('offered_frames')}, delivered "
            f"{total('delivered_frames')}, dropped {total('drops_retry')} at the retry limit "
            f"and {total('drops_queue')} at a full queue; {total('collisions')} of "
            f"{total('transmissions')} transmissions collided; MAC delay mean {_ms(mean)}, "
            f"p95 {_ms(p95)}")


def _late_turns(figures: dict[str, Any]) -> str:
    """', N relay turns over 1 ms late' (emu/src/medium/lag.rs), or nothing from a relay
    that does not count them."""
    turns = figures.get("lag_late_turns")
    if turns is None:
        return ""
    return f", {turns} relay turns over {_ms(figures.get('lag_late_ns'))} late"


def _medium_lines(status: dict[str, Any]) -> list[str]:
    """The 802.11 medium's figures (a medium stage's counters carry them): the lag, the
    totals, each real station and the background stations together."""
    figures = next((st["medium"] for st in status["counters"]["stages"]
                    if isinstance(st.get("medium"), dict)), None)
    if figures is None:
        return []
    lines = [f"medium: {format_bitrate(float(figures.get('throughput_bps') or 0))} delivered, "
             f"{float(figures.get('collision_probability') or 0):.1%} of transmissions "
             f"collided, {float(figures.get('mean_ampdu_frames') or 0):.1f} MPDUs per "
             f"A-MPDU, busy {float(figures.get('busy_fraction') or 0):.1%}; lag (how late the "
             f"relay handled its events) max {_ms(figures.get('lag_max_ns'))}, p99 "
             f"{_ms(figures.get('lag_p99_ns'))}{_late_turns(figures)}"]
    link = figures.get("link")
    if isinstance(link, dict):   # a moving robot (emu/src/medium/steps.rs)
        lines.append(f"medium robot-AP channel now: MCS {link.get('mcs')}, PER "
                     f"{float(link.get('per') or 0):.2%} (step {link.get('steps_applied')} of "
                     f"{link.get('steps')} of its motion)")
    stations = figures.get("stations") or {}
    robots = [name for name in stations if re.fullmatch(r"a\d*", name)]
    for name in robots:   # a pair's robot, or a star's robot1 (a), robot2 (a2), ...
        role = "robot" if len(robots) == 1 else f"robot{name[1:] or 1}"
        lines.append(_station_line(f"station {name} ({role})", [stations[name]]))
    if "b" in stations:
        lines.append(_station_line("station b (AP)", [stations["b"]]))
    background = [c for name, c in stations.items() if name not in robots and name != "b"]
    if background:
        lines.append(_station_line(f"{len(background)} background stations", background))
    return lines


def _notes(status: dict[str, Any]) -> list[str]:
    """The lines after the stages: the medium, outage, socket buffers, congestion control,
    notes."""
    lines = _medium_lines(status)
    if status.get("outage"):
        outage = status["outage"]
        if outage["t0_ns"] is None:
            lines.append(f"outage {outage['schedule']}: not armed yet")
        else:
            done = ", ".join(f"{e['edge']} at +{(e['after_ns'] - outage['t0_ns']) / 1e9:.3f} s"
                             for e in outage["events"]) or "no switch yet"
            lines.append(f"outage {outage['schedule']}: t0 = {outage['t0_ns']} ns "
                         f"(CLOCK_MONOTONIC); {done}")
    sample = next(iter(status["socket_buffers"].values()), {})
    if sample:
        parts = [f"{k.split('.')[-1]}={v['effective']}" + ("" if v["applied"] else "*")
                 for k, v in sample.items()]
        lines.append("socket buffers: " + ", ".join(parts)
                     + ("  (* read-only in a child namespace on this kernel: host value)"
                        if any(not v["applied"] for v in sample.values()) else ""))
    placement = status.get("placement")
    if placement:
        lines.append(f"relay on CPU {placement['relay_cpu']}; link exec on CPU(s) "
                     f"{','.join(map(str, placement['endpoint_cpus']))}")
    congestion = next(iter((status.get("tcp_congestion") or {}).values()), None)
    if congestion:
        lines.append(f"TCP congestion control: {congestion['effective']} "
                     f"({congestion['source']})")
    lines += [f"note: {note}" for note in status.get("notes", [])]
    return lines


def _cluster_text(cluster: dict[str, Any]) -> str:
    mtus = ", ".join(f"{k} {v}" for k, v in cluster["mtu"].items())
    return (f"cluster: overlay {cluster['overlay']}, encryption {cluster['encryption']}, "
            f"datapath {cluster['datapath']}; MTU {mtus}; a pod's second container is "
            "<pod>c2")


def print_status(status: dict[str, Any]) -> None:
    spec = status["spec"]
    lines = [f"[bold]link {status['name']}[/bold]  topology {status['topology']}  "
             f"preset {spec['preset'] or '(none)'}  mtu {spec['mtu']}"]
    if spec.get("source"):
        lines.append(f"  source: {spec['source']}")
    lines.append("  hosts:")
    lines += [f"    {name:<12} {netns:<28} {addresses}"
              for name, netns, addresses in _host_rows(status)]
    if status.get("cluster"):
        lines.append(f"  {_cluster_text(status['cluster'])}")
    lines += [f"  link {_link_text(link)}" for link in status["links"]]
    lines.append("  stages (packets/bytes passed, dropped):")
    if not status["counters"]["stages"]:
        lines.append("    none (a clean link; offloads off, MTU set)")
    for link, direction, kind, params, packets, size, dropped in _stage_rows(status):
        lines.append(f"    {link:<10} {direction:<4} {kind:<7} {params:<14} passed {packets} "
                     f"pkt / {size} B, dropped {dropped} pkt")
    lines += [f"  {line}" for line in _notes(status)]
    print_text(Group(*(console.render_str(line) for line in lines)))  # markup, highlighting


def status_markdown(status: dict[str, Any]) -> str:
    """:func:`print_status` as Markdown: the hosts and the stages as tables."""
    spec = status["spec"]
    lines = [f"**link {status['name']}**: topology {status['topology']}, preset "
             f"{spec['preset'] or '(none)'}, mtu {spec['mtu']}", ""]
    if spec.get("source"):
        lines += [f"source: {spec['source']}", ""]
    lines += markdown_table(("host", "namespace", "addresses"), _host_rows(status)) + [""]
    if status.get("cluster"):
        lines += [_cluster_text(status["cluster"]), ""]
    lines += [f"- link {_link_text(link)}" for link in status["links"]] + [""]
    if status["counters"]["stages"]:
        lines += markdown_table(STAGE_COLUMNS, _stage_rows(status), (4, 5, 6)) + [""]
    else:
        lines += ["stages: none (a clean link; offloads off, MTU set)", ""]
    lines += [f"- {line}" for line in _notes(status)]
    return "\n".join(lines).rstrip() + "\n"
