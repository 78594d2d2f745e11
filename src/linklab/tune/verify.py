"""``linklab tune --verify``: the bench scenario that tries the written profiles over the
stated link, and the pass/fail of each cell beside the model's prediction. Pure: the
command line (cli/tune.py) runs the scenario with linklab.bench and prints these lines.

A cell passes when the profile did what it promises on that link:

* steady (rate, PER, delay of the link): every published sample arrived, at >= 95 % of
  the publish rate, the bench's own failure rules not hit (mean latency under 100 publish
  intervals, no crash, the publisher wrote everything);
* outage (``--verify-outage D``): from the predicted recovery time + 2 s after the link
  returns until the publisher stops, the stream averages >= 80 % of the publish rate,
  and, when the history covers the outage, every sample arrived. Predicted recovery:
  the backlog the writer owes, min(N_HC, r*D) samples at the predicted wire bytes per
  sample, over what the live stream leaves of the writer's pacing ceiling.

The measured wire bytes per payload byte are printed beside model.wire_traffic's prediction
("∞" and the reason where the model says the stream cannot complete on that link:
model/completion.py); they inform, they do not decide. Each row names its middleware and
the profile file it ran (both middlewares run a cell named after the link).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import PurePath

import yaml

from linklab.middleware import DDS_FAMILIES
from linklab.tune.inputs import TuningInput
from linklab.tune.settings import TunedSettings

MIDDLEWARES = DDS_FAMILIES  # the DDS probe families (linklab.middleware)
STEADY_RATE_SHARE = 0.95
RECOVERED_RATE_SHARE = 0.8
RECOVERY_SLACK_S = 2.0
MIN_COUNT = 60


@dataclass(frozen=True)
class VerifyPlan:
    middleware: str
    scenario_text: str
    outage_s: float | None


def verify_count(rate_hz: float, seconds: float) -> int:
    return max(MIN_COUNT, math.ceil(rate_hz * seconds))


def link_fields(t: TuningInput, per: float) -> dict:
    """The stated link as a bench inline link: rate, loss, delay."""
    link = {"name": "verify", "rate": f"{t.link_bits_per_s:g}bit/s", "loss": f"{per * 100:g}%",
            "mtu": t.mtu}
    if t.delay_s > 0:
        link["delay"] = f"{t.delay_s * 1000:g}ms"
    return link


def recovery_s(t: TuningInput, s: TunedSettings, outage_s: float, wire: float) -> float:
    """Predicted time to repay the backlog of an outage (module docstring); inf if the
    live stream leaves nothing of the pacing ceiling."""
    backlog = min(s.history_depth, math.ceil(t.rate_hz * outage_s))
    per_sample = t.payload_bytes * t.subscribers * wire
    spare = s.pacing_bytes_per_s - t.rate_hz * per_sample
    return backlog * per_sample / spare if spare > 0 else math.inf


def scenario_text(t: TuningInput, s: TunedSettings, middleware: str, profile_path: str,
                  per: float, seconds: float, outage_s: float | None,
                  recovery: float = 0.0) -> str:
    """One bench scenario: the written profile of ``middleware`` over the stated link,
    steady, and (with ``outage_s``) once more with an outage after 1 s of samples,
    published long enough to see the predicted recovery."""
    extra = (outage_s or 0.0) + (min(recovery, 60.0) + RECOVERY_SLACK_S if outage_s else 0.0)
    count = verify_count(t.rate_hz, seconds + extra)
    links = [link_fields(t, per)]
    if outage_s:
        links.append({**link_fields(t, per), "name": "verify-outage",
                      "outage": f"0s+{outage_s:g}s"})
    data = {
        "name": f"tune-verify-{middleware}",
        "title": f"linklab tune --verify: {middleware} with the written profile",
        "source": "linklab tune --verify",
        "fixed": {
            "middleware": middleware, "profile": profile_path,
            "payload": f"{t.payload_bytes}B", "rate": f"{t.rate_hz:g}Hz",
            "qos": "reliable", "history": f"keep_last:{s.history_depth}",
            "type": "Bytes", "count": count, "warmup": "1s", "outage_start": "1s",
        },
        "axes": {"link": links},
    }
    # the CPU contention the profile was tuned for, applied to the run (bench/cpu.py):
    # competitors beside the probes, or the middleware's share as a quota on the writer
    if t.cpu_competitors is not None and round(t.cpu_competitors) > 0:
        data["fixed"]["cpu_load"] = str(round(t.cpu_competitors))
    elif t.cpu_share is not None:
        data["fixed"]["cpu_quota"] = f"{t.cpu_share:g}cores"
        data["fixed"]["cpu_quota_on"] = ["robot"]
    return yaml.safe_dump(data, sort_keys=False)


@dataclass(frozen=True)
class Verdict:
    cell_id: str
    middleware: str
    kind: str  # steady | outage
    passed: bool
    why: str
    measured_wire: float
    predicted_wire: float
    reception_rate_hz: float
    delivered: str
    latency_mean_ms: float
    profile: str = ""  # the profile file the cell ran (its name)
    model_note: str | None = None  # why the model says it cannot complete (wire: inf)
    # the writer's CPU per sample: measured (its CPU seconds over every sample it wrote,
    # warm-up included, so with the fixed cost of its life) and the model's (model.cpu)
    cpu_ms_per_sample: float = math.nan
    predicted_cpu_ms_per_sample: float = math.nan
    # one-way latency, mean: the model's (model.latency; steady cells only)
    predicted_latency_mean_ms: float = math.nan


def _num(row: dict, key: str) -> float:
    value = row.get(key)
    try:
        return float(value) if value is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def judge(row: dict, *, rate_hz: float, predicted_wire: float, outage_s: float | None,
          covers_outage: bool, recovery: float, model_note: str | None = None,
          predicted_cpu_ms: float = math.nan,
          predicted_latency_ms: float = math.nan) -> Verdict:
    """Pass/fail of one bench row (see the module docstring). ``predicted_wire``: inf with
    ``model_note`` when the model says the stream cannot complete."""
    kind = "outage" if outage_s else "steady"
    received, published = row.get("received") or 0, row.get("published") or 0
    rate = _num(row, "reception_rate_hz")
    reasons: list[str] = []
    if row.get("status") != "ok":
        reasons.append(f"bench: {row.get('status')}: {row.get('failure_reason')}")
    if kind == "steady":
        if published == 0 or received < published:
            reasons.append(f"{received}/{published} samples arrived")
        if not rate >= STEADY_RATE_SHARE * rate_hz:
            reasons.append(f"{rate:.3g} Hz < {STEADY_RATE_SHARE:.0%} of {rate_hz:g} Hz")
    else:
        bins = list(row.get("rate_bins_hz") or [])
        start = _num(row, "outage_at_s")
        if math.isnan(start):
            reasons.append("the outage did not happen (no outage_at_s)")
        else:
            back = start + outage_s
            if not math.isfinite(recovery):
                reasons.append("the live stream leaves nothing of the pacing ceiling to "
                               "repay the backlog (predicted)")
            deadline = back + (recovery if math.isfinite(recovery) else 0.0) + RECOVERY_SLACK_S
            publish_end = published / rate_hz if rate_hz else 0.0
            window = bins[math.ceil(deadline):max(math.ceil(deadline) + 1, int(publish_end))]
            if not window or sum(window) / len(window) < RECOVERED_RATE_SHARE * rate_hz:
                reasons.append(f"not back at {RECOVERED_RATE_SHARE:.0%} of {rate_hz:g} Hz "
                               f"{deadline - back:.3g} s after the link returned")
            if covers_outage and received < published:
                reasons.append(f"the history covers the outage but {received}/{published} "
                               "samples arrived")
    return Verdict(
        cell_id=str(row.get("cell_id")), middleware=str(row.get("middleware")), kind=kind,
        passed=not reasons, why="; ".join(reasons) or "ok",
        measured_wire=_num(row, "wire_amplification"), predicted_wire=predicted_wire,
        reception_rate_hz=rate, delivered=f"{received}/{published}",
        latency_mean_ms=_num(row, "latency_mean_ms"),
        profile=PurePath(str(row.get("profile") or "")).name, model_note=model_note,
        cpu_ms_per_sample=cpu_ms_per_sample(row), predicted_cpu_ms_per_sample=predicted_cpu_ms,
        predicted_latency_mean_ms=predicted_latency_ms if kind == "steady" else math.nan)


def _ms(value: float) -> str:
    return f"{value:>7.1f}ms" if math.isfinite(value) else f"{'—':>9}"


def cpu_ms_per_sample(row: dict) -> float:
    """The writer's CPU seconds over every sample it wrote (warm-up included), in ms."""
    samples = (row.get("published") or 0) + (row.get("warmup_samples") or 0)
    cpu = _num(row, "pub_cpu_s")
    return cpu / samples * 1000 if samples and not math.isnan(cpu) else math.nan


def render(verdicts: list[Verdict]) -> list[str]:
    """One row per cell, labelled with its middleware and profile file; why it failed and
    why the model says it cannot complete under it."""
    mw = max([10] + [len(v.middleware) for v in verdicts])
    pw = max([7] + [len(v.profile) for v in verdicts])
    cw = max([13] + [len(v.cell_id) for v in verdicts])
    lines = ["", "Verify (linklab bench over the stated link, the written profiles):",
             f"  {'middleware':<{mw}} {'profile':<{pw}} {'cell':<{cw}} {'result':<6} "
             f"{'Hz':>6} {'delivered':>10} {'latency':>9} {'model':>9} {'wire':>6} "
             f"{'model':>6} {'CPU ms/sample':>13} {'model':>6}"]
    for v in verdicts:
        model = f"{v.predicted_wire:>6.3g}" if math.isfinite(v.predicted_wire) else \
            f"{'∞':>6}"
        lines.append(f"  {v.middleware:<{mw}} {v.profile:<{pw}} {v.cell_id:<{cw}} "
                     f"{'PASS' if v.passed else 'FAIL':<6} "
                     f"{v.reception_rate_hz:>6.2f} {v.delivered:>10} "
                     f"{v.latency_mean_ms:>7.1f}ms {_ms(v.predicted_latency_mean_ms)} "
                     f"{v.measured_wire:>6.3g} {model} "
                     f"{v.cpu_ms_per_sample:>13.3g} {v.predicted_cpu_ms_per_sample:>6.3g}")
        if not v.passed:
            lines.append(f"      {v.why}")
        if v.model_note:
            lines.append(f"      model: {v.model_note}")
    return lines
