"""The command-line side of ``linklab tune --verify`` (CLI layer: it runs linklab.bench
through its public API -- spec.parse_scenario, matrix.expand, environment.
LinklabEnvironment, store.RunStore, runner.run_cells -- and is imported only by
cli/tune.py). What is run and how a cell is judged: tune/verify.py.
"""

from __future__ import annotations

import math
import os
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from linklab.errors import UsageError
from linklab.model.completion import completion
from linklab.model.wire_traffic import repair_datagram_packets, sample_ip_packets
from linklab.output import err_console
from linklab.tune import TuningResult
from linklab.tune.predict import predict_wire, tuned_profile
from linklab.tune.verify import MIDDLEWARES, Verdict, judge, recovery_s, scenario_text
from linklab.units import parse_duration

MAX_VERIFY_SECONDS = 600.0


@dataclass(frozen=True)
class VerifyOptions:
    outage_s: float | None
    seconds: float
    middlewares: tuple[str, ...]


def check_verify_options(verify: bool, outage: str | None, seconds: str,
                         middlewares: list[str] | None) -> VerifyOptions:
    """All --verify* options checked before anything is written or run."""
    if not verify:
        given = "--verify-outage" if outage is not None else "--verify-middleware"
        raise UsageError("needs --verify", argument=given)
    outage_s = None if outage is None else parse_duration(outage, "--verify-outage")
    if outage_s is not None and not 0 < outage_s <= MAX_VERIFY_SECONDS:
        raise UsageError(f"{outage!r} is outside (0, {MAX_VERIFY_SECONDS:g}] s; e.g. 5s",
                         argument="--verify-outage")
    secs = parse_duration(seconds, "--verify-seconds")
    if not 1 <= secs <= MAX_VERIFY_SECONDS:
        raise UsageError(f"{seconds!r} is outside 1s .. {MAX_VERIFY_SECONDS:g}s; e.g. 10s",
                         argument="--verify-seconds")
    chosen = tuple(dict.fromkeys(middlewares or MIDDLEWARES))
    for mw in chosen:
        if mw not in MIDDLEWARES:
            raise UsageError(f"{mw!r} is not one of {', '.join(MIDDLEWARES)}",
                             argument="--verify-middleware")
    if os.geteuid() != 0:
        raise UsageError("needs root (it builds network namespaces)", argument="--verify")
    return VerifyOptions(outage_s, secs, chosen)


def writer_cpu_ms(middleware: str, t, wire_amplification: float) -> float:
    """The model's CPU per sample of the writer (model.cpu), in ms."""
    from linklab.model.cpu import CPU_COST

    cost = CPU_COST.get((middleware, "pub"))
    if cost is None or not math.isfinite(wire_amplification):
        return math.nan
    return cost.per_sample_s(t.payload_bytes * wire_amplification) * 1000


def predicted_latency_ms(middleware: str, result: TuningResult) -> float:
    """The latency model's mean one-way latency of the verify cell (model.latency), ms;
    NaN where it does not complete."""
    from linklab.tune.latencycheck import for_tuning

    mean = for_tuning(result.inputs, result.settings, middleware).mean_s
    return mean * 1000 if math.isfinite(mean) else math.nan


def run_verify(result: TuningResult, paths: dict[str, Path], options: VerifyOptions,
               out_dir: Path) -> list[Verdict]:
    """Run one bench scenario per middleware; a Verdict per cell."""
    from linklab.bench.matrix import estimate_s, expand
    from linklab.bench.namespace_environment import LinklabEnvironment
    from linklab.bench.runner import run_cells
    from linklab.bench.spec import parse_scenario
    from linklab.rundir import RunStore

    t, s = result.inputs, result.settings
    per = s.sizing_per
    verdicts: list[Verdict] = []
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    for middleware in options.middlewares:
        profile = tuned_profile(middleware, s)
        wire = predict_wire(profile, "optimized", t.payload_bytes, t.rate_hz, per,
                            t.link_bits_per_s, t.mtu).amplification
        # inf and why where the link cannot carry it (model/completion.py, C1)
        model = completion(wire, t.payload_bytes, t.rate_hz, t.link_bits_per_s, per,
                           sample_ip_packets(profile, t.payload_bytes, t.mtu),
                           repair_datagram_packets(profile, t.payload_bytes, t.mtu))
        predicted = model.amplification
        latency_ms = predicted_latency_ms(middleware, result)
        recovery = recovery_s(t, s, options.outage_s, predicted) if options.outage_s else 0.0
        text = scenario_text(t, s, middleware, str(paths[middleware]), per, options.seconds,
                             options.outage_s, recovery)
        scenario = parse_scenario(text, f"<tune --verify {middleware}>")
        cells = expand(scenario)
        env = LinklabEnvironment(scenario.presets)
        env.check_ready(cells)
        root = Path(out_dir) / f"{scenario.name}-{stamp}"
        store = RunStore.create(root, scenario=dict(scenario.to_dict(), text=text),
                                options={"verify": True},
                                planned=[c.cell_id for c in cells],
                                estimated_s=sum(estimate_s(c, env.outage_s(c)) for c in cells))
        err_console.print(f"verify: {middleware}: {len(cells)} cell(s) into {root}")
        run_tag = f"v{os.getpid() % 100000}{secrets.token_hex(1)}"
        rows = run_cells(store, cells, env, run_tag=run_tag)
        for row in rows:
            outage = options.outage_s if "outage" in str(row.get("cell_id")) else None
            verdicts.append(judge(row, rate_hz=t.rate_hz, predicted_wire=predicted,
                                  outage_s=outage, covers_outage=(
                                      outage is not None and s.history_depth
                                      >= t.rate_hz * outage),
                                  recovery=recovery, model_note=model.reason,
                                  predicted_cpu_ms=writer_cpu_ms(middleware, t, wire),
                                  predicted_latency_ms=latency_ms))
    return verdicts
