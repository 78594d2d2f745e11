"""Emulator configuration, parsing and models: no root, no namespaces."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from linklab.emu import Delay, GilbertElliott, Loss, Rate, RelayConfig, relay_binary
from linklab.emu.directives import FourStateLoss, OnOff, Outage, Trace
from linklab.emu.models import (
    burst_lengths,
    four_state_loss_rate,
    ge_loss_rate,
    ge_mean_burst_length,
    jitter_samples,
    loss_runs,
    trace_capacity_bps,
)
from linklab.emu.parse import (
    gemodel_fields,
    parse_loss_model,
    parse_on_off,
    parse_outage_windows,
    parse_trace_pair,
    split_directions,
)
from linklab.errors import UsageError


def test_loss_model_forms_and_netem_defaults():
    assert parse_loss_model("bernoulli:1%") == Loss(0.01)
    assert parse_loss_model("gemodel:1%,30%,100%,0%") == GilbertElliott(0.01, 0.3, 1.0, 0.0)
    assert parse_loss_model("gemodel:0.02") == GilbertElliott(0.02, 0.98, 1.0, 0.0)
    four = parse_loss_model("state:1%")
    assert four == FourStateLoss(0.01, 0.99, 0.0, 1.0, 0.0)
    for bad in ("gemodel", "gemodel:2", "burst:1%", "gemodel:1%,2%,3%,4%,5%",
                "state:60%,1,1,1,60%"):
        with pytest.raises(UsageError, match="--loss-model"):
            parse_loss_model(bad)


def test_per_direction_values_may_hold_commas():
    assert split_directions("30ms", "--delay") == "30ms"
    assert split_directions("up=30ms,down=20ms", "--delay") == {"up": "30ms", "down": "20ms"}
    assert split_directions("up=gemodel:1%,30%,down=gemodel:2%", "--loss-model") == {
        "up": "gemodel:1%,30%", "down": "gemodel:2%"}
    for bad in ("x,up=1ms", "up=,down=1ms", "up=1ms,up=2ms"):
        with pytest.raises(UsageError, match="--delay"):
            split_directions(bad, "--delay")
    assert gemodel_fields("gemodel:1%,30%,90%,1%") == {
        "p": 0.01, "r": 0.3, "loss_bad": 0.9, "loss_good": 0.01}
    assert parse_on_off("5s,500ms") == OnOff(5.0, 0.5)
    assert parse_outage_windows("30s+2s,10s+5s") == ((10.0, 5.0), (30.0, 2.0))


def test_bad_input_names_the_argument(tmp_path):
    with pytest.raises(UsageError, match="--on-off"):
        parse_on_off("5s")
    with pytest.raises(UsageError, match="--outage"):
        parse_outage_windows("10s")
    bad = tmp_path / "bad.trace"
    bad.write_text("3\n2\n")
    with pytest.raises(UsageError, match="must not decrease"):
        parse_trace_pair(str(bad))
    with pytest.raises(UsageError, match="cannot read"):
        parse_trace_pair(str(tmp_path / "missing.trace"))


@pytest.mark.native
def test_config_text_is_what_the_relay_accepts(tmp_path):
    trace = tmp_path / "t.trace"
    trace.write_text("1\n1\n3\n")
    config = RelayConfig(
        tap_a="llx-a", tap_b="llx-b", netns_a="ns-a", netns_b="ns-b", seed=9,
        ab=(Delay(0.02, 0.005, "paretonormal"), GilbertElliott(0.01, 0.3), Rate(10e6, 50),
            Trace(trace)),
        ba=(parse_loss_model("state:1%,30%,10%,50%,1%"), Outage(((1.0, 0.5),), 10.0)),
        stats_path=tmp_path / "s.json")
    text = config.text()
    assert "stage ab delay delay_ns=20000000 jitter_ns=5000000 dist=paretonormal" in text
    assert "tap a llx-a netns ns-a" in text
    path = tmp_path / "emu.conf"
    path.write_text(text)
    result = subprocess.run([str(relay_binary()), "--config", str(path), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "4 stage(s) a->b, 2 stage(s) b->a" in result.stdout


@pytest.mark.native
def test_relay_rejects_a_bad_config_with_the_line(tmp_path):
    path = tmp_path / "emu.conf"
    path.write_text("tap a x\ntap b y\nstage ab loss model=gemodel p=1.5\n")
    result = subprocess.run([str(relay_binary()), "--config", str(path), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert "line 3" in result.stderr and "p" in result.stderr
    path.write_text("tap a x\ntap b y\nstage ab delay delay_ns=5 colour=red\n")
    result = subprocess.run([str(relay_binary()), "--config", str(path), "--check"],
                            capture_output=True, text=True)
    assert "colour" in result.stderr and result.returncode == 1


def test_gilbert_elliott_model_values():
    # simple Gilbert (1-h = 1, 1-k = 0): loss p/(p+r), bursts 1/r
    simple = GilbertElliott(0.01, 0.25)
    assert ge_loss_rate(simple) == pytest.approx(0.01 / 0.26)
    assert ge_mean_burst_length(simple) == pytest.approx(4.0)
    # general case against a direct simulation of the same chain
    model = GilbertElliott(0.02, 0.25, 0.8, 0.005)
    rng = np.random.default_rng(1)
    bad, lost = False, np.zeros(400_000, bool)
    u = rng.random((len(lost), 2))
    for i in range(len(lost)):
        lost[i] = u[i, 0] < (model.one_minus_h if bad else model.one_minus_k)
        bad = (u[i, 1] >= model.r) if bad else (u[i, 1] < model.p)
    assert lost.mean() == pytest.approx(ge_loss_rate(model), rel=0.05)
    assert burst_lengths(lost).mean() == pytest.approx(ge_mean_burst_length(model), rel=0.05)


def test_four_state_and_trace_models():
    # p14 only: isolated losses, each followed by a reception: loss = p14 / (1 + p14)
    assert four_state_loss_rate(FourStateLoss(0.0, 1.0, 0.0, 1.0, 0.1)) == pytest.approx(0.1 / 1.1)
    assert trace_capacity_bps(np.array([1, 1, 2])) == pytest.approx(3 * 1504 * 8 / 0.002)
    assert loss_runs(np.array([0, 1, 1, 0, 1])) == [(1, 2), (4, 4)]


def test_jitter_samples_have_netem_shapes():
    rng = np.random.default_rng(0)
    uniform = jitter_samples("uniform", 100_000, rng)
    assert uniform.min() >= -1 and uniform.max() < 1
    normal = jitter_samples("normal", 100_000, rng)
    assert normal.std() == pytest.approx(1.0, rel=0.02)
    pn = jitter_samples("paretonormal", 100_000, rng)
    assert np.median(pn) < 0 < pn.mean() + 0.2  # right-skewed, heavy tail
    assert pn.max() <= 4.0
