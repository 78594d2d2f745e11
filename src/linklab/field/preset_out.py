"""A measurement -> a link preset that replays it (the user preset file format).

What each field replays (per direction; up is A -> B):
- ``rate``: the bottleneck that carries what the ramp measured: the carried IP rate in
  Ethernet frames, and, where the replay's burst loss comes after its rate stage, divided
  by (1 - loss) (fit.bottleneck_rate, LOSS_BEFORE_RATE). Left out when the ramp found no
  limit (sender-limited or --max-rate): the replay is then not rate-limited, and the
  source says so.
- ``delay``: half the median round trip, each way. The split between the directions is
  not observable without a common clock (clock.py), so the replay is symmetric.
- ``jitter`` (normal): the round trip's robust spread / sqrt(2) per direction, when it is
  more than 2 % of the delay (and 50 us); smaller spreads are the hosts' own noise.
- ``burst_loss``: the Gilbert fit {p, r} (fit.py): mean loss p/(p+r), mean burst 1/r.
- ``mtu``: the smaller of the two path MTUs.
Not replayed, and said so in ``source``: reordering (presets keep packet order), the
asymmetry of delays, loss that depends on the traffic's rate.
"""

from __future__ import annotations

import math
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from linklab.errors import UsageError
from linklab.field import fit
from linklab.field.measure import Direction, Measurement
from linklab.link.preset_file import NAME, NAME_FORMS, read_preset_file
from linklab.link.spec import MAX_MTU, MIN_MTU
from linklab.units import format_fixed

JITTER_SHARE, JITTER_FLOOR_MS = 0.02, 0.05
# Where a replay (linklab link up with this preset: the emu wire, burst loss in the relay)
# puts its loss relative to its rate stage, per direction (link/impairments/rate.py RateStage,
# link/topology.py PathView): up is shaped on the edge port's ingress (an ifb), after the
# relay; down on the edge port's egress, before it. Measured on such a link: up carries
# rate x IP/frame whatever the loss, down rate x IP/frame x (1 - loss).
LOSS_BEFORE_RATE = {"up": True, "down": False}
_pct = partial(format_fixed, unit="%", scale=100)


def _rate_text(bps: float) -> str:
    return f"{bps / 1e6:.4g}Mbit/s"


def _ms(value: float) -> str:
    return f"{value:.4g}ms"


def direction_fields(name: str, d: Direction) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if d.carried_bound == "saturated" and d.carried_bps and d.ramp_packet_bytes:
        loss = 0.0 if math.isnan(d.loss.mean_loss) else d.loss.mean_loss
        out["rate"] = _rate_text(fit.bottleneck_rate(d.carried_bps, d.ramp_packet_bytes, loss,
                                                     LOSS_BEFORE_RATE[name]))
    if d.loss.lost:
        out["burst_loss"] = {"p": round(d.loss.p, 6), "r": round(d.loss.r, 6)}
    return out


def preset_fields(m: Measurement) -> dict[str, Any]:
    a, b = m.a, m.b
    fields: dict[str, Any] = {
        "description": f"measured between {a['name']} ({a['at']}) and {b['name']} "
                       f"({b['at']}) on {m.started_utc[:10]}",
        "source": source_text(m),
    }
    mtus = [d.pmtu for d in (m.up, m.down) if d.pmtu]
    if mtus:
        fields["mtu"] = max(MIN_MTU, min(MAX_MTU, min(mtus)))
    if m.rtt.count:
        delay = m.rtt.p50_ms / 2
        fields["delay"] = _ms(delay)
        jitter = m.rtt.sigma_ms / math.sqrt(2)
        if jitter >= max(JITTER_FLOOR_MS, JITTER_SHARE * delay):
            fields["jitter"] = _ms(jitter)
            fields["jitter_distribution"] = "normal"
    for name in ("up", "down"):
        sub = direction_fields(name, m.direction(name))
        if sub:
            fields[name] = sub
    return fields


def _direction_text(name: str, d: Direction) -> str:
    parts = [f"loss {_pct(d.loss.mean_loss)} (se {_pct(d.loss.se_loss)}) of "
             f"{d.loss.packets} probes"]
    if d.loss.bursts:
        parts.append(f"mean burst {d.loss.mean_burst:.3g} packets (se {d.loss.se_burst:.2g}, "
                     f"{d.loss.bursts} bursts)")
    if not math.isnan(d.reordered):
        parts.append(f"reordered {_pct(d.reordered)}")
    if d.duplicates:
        parts.append(f"{d.duplicates} duplicates")
    if d.pmtu:
        parts.append(f"path MTU {d.pmtu}")
    if d.carried_bps:
        what = {"saturated": "carried", "sender-limited": "carried at least (sender-limited)",
                "max-rate": "carried at least (--max-rate)"}[d.carried_bound]
        parts.append(f"{what} {d.carried_bps / 1e6:.4g} Mbit/s of IP in "
                     f"{d.ramp_packet_bytes} B packets")
    return f"{name}: " + ", ".join(parts)


def source_text(m: Measurement) -> str:
    s = m.settings
    r = m.rtt
    text = [f"linklab link measure {m.a['at']} {m.b['at']} ({m.command or 'from Python'}), "
            f"{m.started_utc}: {s['duration_s']:g} s of probes at {s['probe_rate_hz']:g} Hz, "
            f"a UDP ramp ({s['ramp_step_s']:g} s steps) and DF probes per direction."]
    if r.count:
        text.append(f"RTT median {r.p50_ms:.4g} ms (p5 {r.p5_ms:.4g}, p95 {r.p95_ms:.4g}, "
                    f"p99 {r.p99_ms:.4g}, robust sigma {r.sigma_ms:.3g}) of {r.count} probes.")
    text += [_direction_text("up", m.up) + ";", _direction_text("down", m.down) + "."]
    text.append("Not replayed: reordering (presets keep packet order) and any asymmetry of "
                "the delays (each direction gets half the round trip).")
    for direction in (m.up, m.down):
        if direction.carried_bound != "saturated":
            text.append("A direction without rate was not saturated by the ramp; its replay is "
                        "not rate-limited.")
            break
    return " ".join(text)


def preset_yaml(name: str, m: Measurement) -> str:
    if not NAME.match(name):
        raise UsageError(f"{name!r} is not a preset name; use {NAME_FORMS}", argument="--name")
    header = (f"# A link preset measured by linklab ({m.started_utc}); replay it with\n"
              f"#   linklab link up {name} --presets FILE\n"
              f"# or name it in a scenario (presets: FILE, link: {name}).\n")
    body = yaml.safe_dump({name: preset_fields(m)}, sort_keys=False, width=88,
                          allow_unicode=True)
    return header + body


def write_preset(path: Path, name: str, m: Measurement) -> Path:
    """Write the preset file and check it loads as ``linklab link up --presets`` would."""
    path.write_text(preset_yaml(name, m))
    read_preset_file(path)
    return path
