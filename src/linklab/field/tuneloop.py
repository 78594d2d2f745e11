"""Measure -> tune -> verify: ``linklab field tune A B --rate R --payload U``.

1. measure the path A -> B (measure.py) and write it as a preset (preset_out.py);
2. tune for it with linklab.tune's public API: ``tune(TuningInput(rate, payload,
   link_bits_per_s, per, mtu))`` with the preset's robot -> edge rate, its mean loss and
   its MTU (environment.path_inputs -- the same inputs the bench's ``optimized`` profile
   gets, so what is printed is what is verified);
3. verify with the real middleware on that path: a bench run (the bench's public API:
   parse_scenario, expand, RunStore, run_cells with the field environment) of two cells,
   ``default`` and ``optimized``, on A (publisher) and B (subscriber), in a run directory
   ``linklab report`` reads;
4. the before/after table (rows of the run).
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from linklab.bench.host_address import HostSpec
from linklab.field.measure import Measurement, MeasureSettings, measure_path
from linklab.field.preset_out import write_preset

TABLE = (("status", "status"), ("delivered", "delivery_ratio"),
         ("reception rate (Hz)", "reception_rate_hz"), ("latency p50 (ms)", "latency_p50_ms"),
         ("latency p95 (ms)", "latency_p95_ms"), ("latency max (ms)", "latency_max_ms"),
         ("jitter (ms)", "jitter_ms"), ("wire / published", "wire_amplification"))


@dataclass(frozen=True)
class Verify:
    middleware: str = "fastdds"
    rate_hz: float = 30.0
    payload_bytes: int = 256 * 1024
    count: int = 300
    qos: str = "reliable"


@dataclass
class LoopResult:
    measurement: Measurement
    preset_file: Path
    preset_name: str
    tuning: Any                      # linklab.tune.TuningResult
    run_dir: Path
    rows: list[dict[str, Any]] = field(default_factory=list)


def scenario_text(a: HostSpec, b: HostSpec, preset_file: Path, preset: str,
                  verify: Verify) -> str:
    """The verification scenario: default vs optimized, A -> B, on the measured path."""
    def host(spec: HostSpec) -> str:
        return json.dumps(spec.to_dict() if spec.address or spec.clock != "auto"
                          else spec.text)

    return (f"name: field-tune-{preset}\n"
            f"title: measure, tune, verify -- {a.text} -> {b.text}\n"
            f"source: linklab field tune ({datetime.now(UTC):%Y-%m-%d})\n"
            f"presets: {json.dumps(str(preset_file))}\n"
            f"hosts:\n  robot: {host(a)}\n  edge: {host(b)}\n"
            f"fixed:\n  link: {preset}\n  middleware: {verify.middleware}\n"
            f"  payload: {verify.payload_bytes}B\n  rate: {verify.rate_hz:g}Hz\n"
            f"  count: {verify.count}\n  qos: {verify.qos}\n  history: profile\n"
            f"axes:\n  profile: [default, optimized]\n")


def run(a: HostSpec, b: HostSpec, settings: MeasureSettings, verify: Verify, out: Path,
        progress: Callable[[str], None] = lambda _: None, command: str = "") -> LoopResult:
    from linklab.bench.matrix import estimate_s, expand
    from linklab.bench.runner import run_cells
    from linklab.bench.spec import parse_scenario
    from linklab.field.host_environment import FieldEnvironment, path_inputs, tuned_for_path
    from linklab.rundir import RunStore

    out.mkdir(parents=True, exist_ok=True)
    a = HostSpec("robot", a.kind, a.target, a.port, a.address, a.text, a.clock)
    b = HostSpec("edge", b.kind, b.target, b.port, b.address, b.text, b.clock)
    measurement = measure_path(a, b, settings, progress=progress, command=command)
    preset = "measured-path"
    preset_file = write_preset(out / "path.yaml", preset, measurement)
    (out / "path.measure.json").write_text(json.dumps(measurement.to_dict(), indent=1) + "\n")

    text = scenario_text(a, b, preset_file.resolve(), preset, verify)
    scenario_path = out / "verify.yaml"
    scenario_path.write_text(text)
    scenario = parse_scenario(text, str(scenario_path))
    cells = expand(scenario)
    env = FieldEnvironment(scenario)
    try:
        link_bits, per, mtu = path_inputs(env.links.spec(cells[0].link_choice))
        tuning = tuned_for_path(verify.rate_hz, verify.payload_bytes, link_bits, per, mtu)
        progress(f"tuned for {link_bits / 1e6:.4g} Mbit/s, PER {100 * per:.2f} %, MTU {mtu}: "
                 f"{tuning.verdict}")
        progress("verifying: default vs optimized with the real middleware on the path")
        env.check_ready(cells)
        for line in env.notes():
            progress(line)
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        store = RunStore.create(out / f"{scenario.name}-{stamp}",
                                scenario=dict(scenario.to_dict(), text=scenario.text),
                                options={"quick": False, "repeat": None, "gates": []},
                                planned=[c.cell_id for c in cells],
                                estimated_s=sum(estimate_s(c, 0.0, 0.0) for c in cells))
        done = [0]

        def on_progress(p: Any) -> None:
            if p.done_cells > done[0]:
                done[0] = p.done_cells
                progress(f"  cell {p.done_cells}/{p.total_cells}: {p.last_status}")

        run_cells(store, cells, env, run_tag=f"t{os.getpid() % 100000}{secrets.token_hex(1)}",
                  on_progress=on_progress)
    finally:
        env.close()
    return LoopResult(measurement, preset_file, preset, tuning, store.root, list(store.rows))


def table(rows: list[dict[str, Any]]) -> list[list[str]]:
    """[[label, default, optimized], ...] from the run's rows (before / after)."""
    by_profile = {r.get("profile"): r for r in rows}
    order = [p for p in ("default", "optimized") if p in by_profile]
    out = [["profile", *order]]
    for label, key in TABLE:
        cells = []
        for profile in order:
            value = by_profile[profile].get(key)
            if key == "delivery_ratio" and value is not None:
                row = by_profile[profile]
                cells.append(f"{row.get('received')}/{row.get('expected')}")
            elif isinstance(value, float):
                cells.append("-" if value != value else f"{value:.4g}")
            else:
                cells.append("-" if value is None else str(value))
        out.append([label, *cells])
    return out
