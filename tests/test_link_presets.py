"""Preset files (shipped and the user's): validation with FILE:LINE errors, lookup, the
preset recorded with a run. Pure or file-only: no root, no network changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from linklab.errors import UsageError
from linklab.link import design, open_run, up
from linklab.link import presets as presets_module
from linklab.link.impairments import direction_stages
from linklab.link.journal import Journal
from linklab.link.preset_file import FIELDS
from linklab.link.presets import (
    catalogue,
    check_not_shipped,
    load_preset_file,
    load_presets,
    resolve_preset,
    shipped_files,
)
from linklab.link.spec import DIRECTIONS, build_spec
from linklab.link.spec_checks import check_traces, conflicts
from linklab.link.system import Shell
from linklab.link.topology import ALL_DIRECTION_STAGES

LINKLAB = [sys.executable, "-m", "linklab.cli"]
KNOWN = ", ".join(FIELDS)
SHAPE = "a mapping of preset names to fields, e.g. 'my-wifi: {rate: 50Mbit/s, loss: 2%}'"


def write(tmp_path: Path, text: str | bytes, name: str = "mine.yaml") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def error_of(path: Path | str) -> str:
    with pytest.raises(UsageError) as info:
        load_preset_file(path)
    text = str(info.value)
    assert "\n" not in text, text
    return text


# --- the shipped presets go through the same loader -----------------------------------

@pytest.mark.native
def test_every_shipped_preset_loads_and_builds():
    shipped = load_presets()
    assert {"wifi-ideal", "wifi-mild", "wifi-severe", "wifi-outage", "ethernet-1g",
            "lan-2.5g", "4g", "wifi", "wifi-far", "cloud"} <= set(shipped)
    for name, fields in shipped.items():
        assert fields["source"].strip() and fields["description"].strip(), name
        spec = build_spec(name, fields, {})
        assert conflicts(spec) == [], name
        if spec.radio is not None:  # a radio link's stages come from its medium (radio_plan)
            stages = design(name, name="presetcheck").stages["robot-edge"]
            assert all(stages[d] or spec.radio.mode == "curve" for d in DIRECTIONS), name
            continue
        if spec.medium is not None:  # the 802.11 medium is the whole link's (medium.py)
            assert spec.medium.phy_rate_bps > 0, name
            continue
        for direction in DIRECTIONS:
            assert direction_stages(spec.direction(direction), ALL_DIRECTION_STAGES), name
    assert [p.name for p in shipped_files()][:1] == ["presets.yaml"]


def test_a_broken_shipped_file_is_a_file_line_error(tmp_path, monkeypatch):
    good = write(tmp_path, "a:\n  loss: 1%\n", "presets.yaml")
    bad = write(tmp_path, "b:\n  rate: 10\n", "presets-x.yaml")
    monkeypatch.setattr(presets_module, "shipped_files", lambda: [good, bad])
    presets_module._shipped.cache_clear()
    try:
        with pytest.raises(UsageError) as info:
            load_presets()
        assert str(info.value) == (
            f"{bad}:2: preset b: rate: 10 has no unit; expected a bit rate with a unit, "
            "e.g. 433Mbit/s, 433Mbps, 1Gbit/s, 100kbit/s")
        twice = write(tmp_path, "a:\n  loss: 2%\n", "presets-y.yaml")
        monkeypatch.setattr(presets_module, "shipped_files", lambda: [good, twice])
        presets_module._shipped.cache_clear()
        with pytest.raises(UsageError, match=rf"^{twice}:1: preset a: also defined at "
                                             rf"{good}:1; each shipped preset has one name$"):
            load_presets()
    finally:
        presets_module._shipped.cache_clear()


# --- a user's file ------------------------------------------------------------------------

@pytest.mark.native
def test_a_user_file_loads_every_form(tmp_path):
    trace = write(tmp_path, "1\n2\n3\n", "lte.trace")
    path = write(tmp_path, f"""\
# my presets
lab-wifi:
  description: the lab's access point
  source: >-
    iperf3 -u between robot and edge,
    2024-05
  rate: 50Mbit/s
  loss: 10%
  delay: 2ms
  mtu: 1400
  tcp_congestion: cubic
  up:
    loss: 20%
per-direction:
  loss: up=1%,down=2%
  rate: {{up: 5Mbit/s, down: 12Mbit/s}}
  outage: 1s+2s/10s
  jitter: 1ms
  delay: 3ms
  jitter_distribution: normal
  down:
    burst_loss: {{p: 1%, r: 30%}}
  up:
    burst_loss: gemodel:1%,30%,100%,0%
base: &base
  rate: 1Gbit/s
  loss: 0.01
merged:
  <<: *base
  loss: 5%
traced:
  trace: {trace.name}
  up: {{trace: {trace}}}
""")
    loaded = load_preset_file(path)
    assert list(loaded) == ["lab-wifi", "per-direction", "base", "merged", "traced"]
    assert loaded["lab-wifi"]["source"] == "iperf3 -u between robot and edge, 2024-05"
    assert loaded["merged"] == {"rate": "1Gbit/s", "loss": "5%"}
    assert loaded["traced"] == {"trace": str(trace), "up": {"trace": str(trace)}}
    spec = build_spec("lab-wifi", loaded["lab-wifi"], {})
    assert (spec.up.loss, spec.down.loss, spec.mtu) == (0.2, 0.1, 1400)
    assert spec.tcp_congestion == "cubic"
    assert spec.up.rate_bps == 50e6 and spec.up.delay_s == 0.002
    per = design("per-direction", preset_fields=loaded["per-direction"], name="t").spec
    assert (per.up.rate_bps, per.down.rate_bps) == (5e6, 12e6)
    assert per.down.burst_loss is not None and per.up.burst_loss is not None


def test_a_relative_trace_is_relative_to_the_file_not_the_working_directory(tmp_path):
    folder = tmp_path / "nested"
    folder.mkdir()
    write(folder, "5\n10\n", "t.trace")
    path = write(folder, "tr:\n  trace: up=t.trace,down=./t.trace\n")
    here = os.getcwd()
    os.chdir("/")
    try:
        loaded = load_preset_file(path)
    finally:
        os.chdir(here)
    assert loaded["tr"]["trace"] == {"up": str(folder / "t.trace"),
                                     "down": str(folder / "t.trace")}


@pytest.mark.parametrize(("text", "line", "where", "message"), [
    # YAML
    ("a:\n  rate: [5Mbit/s\n", 2, "",
     "invalid YAML: while parsing a flow sequence, expected ',' or ']', but got "
     f"'<stream end>'; expected {SHAPE}"),
    ("a:\n  loss: 1%\n  b\n", 3, "", None),
    ("a: {loss: 1%}\n---\nb: {loss: 2%}\n", 2, "",
     "invalid YAML: expected a single document in the stream, but found another document; "
     f"expected {SHAPE}"),
    ("a:\n  loss: 'x\x01'\n", 2, "",
     f"invalid YAML: character #x0001 is not allowed; expected {SHAPE}"),
    ("a:\n  rate: !mbit 5\n", 2, "preset a: rate: ",
     "YAML tag !mbit is not accepted; write plain values (text, numbers) and mappings"),
    ("a: !!python/object:os.system {}\n", 1, "preset a: ",
     "YAML tag !!python/object:os.system is not accepted; write plain values (text, "
     "numbers) and mappings"),
    ("a:\n  rate: 5Mbit/s\n  loss: 1%\n  rate: 6Mbit/s\n", 4, "preset a: rate: ",
     "given twice (first at line 2); give each field once"),
    ("a:\n  loss: 1%\nb:\n  loss: 1%\na:\n  loss: 2%\n", 5, "preset a: ",
     "given twice (first at line 1); give each preset once"),
    ("a:\n  up: {loss: 1%, loss: 2%}\n", 2, "preset a: up.loss: ",
     "given twice (first at line 2); give each field once"),
    # the file's shape
    ("", 1, "", f"the file holds no presets; expected {SHAPE}"),
    ("# only a comment\n\n", 1, "", f"the file holds no presets; expected {SHAPE}"),
    ("\n- a\n- b\n", 2, "", f"the top level is a list; expected {SHAPE}"),
    ("{}\n", 1, "", f"the file holds no presets; expected {SHAPE}"),
    ("just text\n", 1, "", f"the top level is text 'just text'; expected {SHAPE}"),
    ("a:\n  loss: 1%\nmy wifi:\n  loss: 2%\n", 3, "",
     "'my wifi' is not a preset name; use 1-64 letters, digits, '_', '.' or '-', "
     "starting with a letter or digit"),
    ("-x:\n  loss: 2%\n", 1, "", None),
    ("a: 5\n", 1, "preset a: ", f"the preset is 5; expected a mapping of fields ({KNOWN})"),
    ("a:\n", 1, "preset a: ", f"the preset is nothing; expected a mapping of fields ({KNOWN})"),
    ("a:\n  rate: 5Mbit/s\n  lossy: 2%\n", 3, "preset a: lossy: ",
     f"unknown field; known fields: {KNOWN}"),
    ("a:\n  up:\n    mtu: 1400\n", 3, "preset a: up.mtu: ",
     "unknown field; known fields here: loss, rate, outage, delay, jitter, "
     "jitter_distribution, burst_loss, trace, queue, queue_limit, radio, distance, positions, "
     "tx_power, motion, medium "
     "(mtu, tcp_congestion, trace_start are for both directions)"),
    ("a:\n  down:\n    tcp_congestion: reno\n", 3, "preset a: down.tcp_congestion: ", None),
    ("a:\n  tcp_congestion: {up: reno}\n", 2, "preset a: tcp_congestion: ",
     "is a mapping; expected a TCP congestion control of the kernel such as cubic, reno or "
     "bbr"),
    ("a:\n  tcp_congestion: Cubic!\n", 2, "preset a: tcp_congestion: ",
     "expected a TCP congestion control of the kernel, e.g. cubic, reno or bbr, got "
     "'Cubic!'"),
    ("a:\n  up: 5%\n", 2, "preset a: up: ", None),
    ("a:\n  description: 5\n", 2, "preset a: description: ", "is 5; expected text"),
    # values
    ("a:\n  rate: 300Mbit\n", 2, "preset a: rate: ",
     "unknown unit 'Mbit' in '300Mbit'; expected a bit rate with a unit, e.g. 433Mbit/s, "
     "433Mbps, 1Gbit/s, 100kbit/s"),
    ("a:\n  delay: 2\n", 2, "preset a: delay: ",
     "2 has no unit; expected a duration with a unit, e.g. 20s, 100ms, 1.5min"),
    ("a:\n  loss: 1%\n  up:\n    loss: 150%\n", 4, "preset a: up.loss: ",
     "'150%' is outside 0..100%; expected a fraction, e.g. 1% or 0.01 (between 0 and 1)"),
    ("a:\n  loss:\n    up: 1%\n    down: 2 %%\n", 4, "preset a: loss.down: ", None),
    ("a:\n  loss:\n    sideways: 1%\n", 3, "preset a: loss.sideways: ", None),
    ("a:\n  loss: 100%\n", 2, "preset a: loss: ",
     "'100%' would drop every packet; use --outage for a dead link"),
    ("a:\n  loss: yes\n", 2, "preset a: loss: ",
     "expected a fraction, e.g. 1% or 0.01 (between 0 and 1), got 'yes'"),
    ("a:\n  loss:\n", 2, "preset a: loss: ",
     "has no value; expected a fraction such as 1% or 0.01 (or leave the field out)"),
    ("a:\n  loss: [1%, 2%]\n", 2, "preset a: loss: ",
     "is a list; expected a fraction such as 1% or 0.01"),
    ("a:\n  mtu: 100\n", 2, "preset a: mtu: ",
     "100 is outside 576..9000 bytes (e.g. 1500, 1450 for VXLAN, 1380 for WireGuard)"),
    ("a:\n  mtu: {up: 1500}\n", 2, "preset a: mtu: ",
     "is a mapping; expected a size in bytes such as 1500"),
    ("a:\n  outage: 10s\n", 2, "preset a: outage: ", None),
    ("a:\n  jitter_distribution: gaussian\n", 2, "preset a: jitter_distribution: ",
     "expected one of uniform, normal, pareto, paretonormal, got 'gaussian'"),
    ("a:\n  up:\n    burst_loss: {p: 1%, q: 2%}\n", 3, "preset a: up.burst_loss: ",
     "'q' is not a burst loss parameter; expected p, r, loss_good, loss_bad (fractions)"),
    ("a:\n  burst_loss: gemodel:1%,300%\n", 2, "preset a: burst_loss: ", None),
    # combinations that could not be applied
    ("a:\n  delay: 5ms\n  jitter_distribution: normal\n", 3, "preset a: jitter_distribution: ",
     "set for up and down without a jitter there, so it would shape nothing; give a jitter "
     "too (e.g. 5ms) or leave the distribution out"),
    ("a:\n  outage: up=1s+1s,down=2s+1s\n", 2, "preset a: outage: ",
     "up (1s+1s) and down (2s+1s) differ, but a run has one outage schedule; give one "
     "schedule for both directions, or an outage in one direction only"),
    # a trace file that is not there
    ("a:\n  rate: 5Mbit/s\n  trace: missing.trace\n", 3, "preset a: trace: ", None),
    # a shipped preset's name
    ("mine:\n  loss: 1%\nwifi-mild:\n  loss: 2%\n", 3, "preset wifi-mild: ", None),
])
def test_a_bad_file_is_one_line_with_file_and_line(tmp_path, text, line, where, message):
    path = write(tmp_path, text)
    error = error_of(path)
    assert error.startswith(f"{path}:{line}: {where}"), error
    if message is not None:
        assert error == f"{path}:{line}: {where}{message}"
    else:
        assert ";" in error or "expected" in error, error  # says what is accepted


def test_bad_bytes_and_missing_files(tmp_path):
    path = write(tmp_path, b"a:\n  loss: 1%\n  rate: \xff\n")
    assert error_of(path) == f"{path}:3: not UTF-8 text (byte 0xff); save the file as UTF-8"
    deep = write(tmp_path, "a: " + "[" * 5000 + "]" * 5000 + "\n", "deep.yaml")
    assert error_of(deep) == f"{deep}: invalid YAML: nested too deeply; expected {SHAPE}"
    missing = tmp_path / "nope.yaml"
    accepted = f"expected a readable YAML file of presets ({SHAPE})"
    assert error_of(missing) == f"{missing}: no such file; {accepted}"
    assert error_of(tmp_path) == f"{tmp_path}: is a directory; {accepted}"
    # a file whose read fails (EIO even for root, unlike permissions)
    assert error_of("/proc/self/mem") == (
        f"/proc/self/mem: cannot read it (Input/output error); {accepted}")


def test_a_missing_trace_names_its_absolute_path(tmp_path):
    path = write(tmp_path, "a:\n  up:\n    trace: lte.trace\n")
    assert error_of(path) == (
        f"{path}:3: preset a: up.trace: cannot read trace {tmp_path / 'lte.trace'}: No such "
        "file or directory; expected a Mahimahi trace file (a path relative to the preset "
        "file, or absolute)")
    write(tmp_path, "x\n", "lte.trace")
    assert error_of(path) == (
        f"{path}:3: preset a: up.trace: {tmp_path / 'lte.trace'} line 1: expected a "
        "millisecond integer (Mahimahi trace: one delivery opportunity per line)")


def test_a_shipped_name_is_refused_naming_the_shipped_preset(tmp_path):
    path = write(tmp_path, "wifi-mild:\n  loss: 2%\n")
    shipped = Path(presets_module.__file__).with_name("presets.yaml")
    line = next(i for i, text in enumerate(shipped.read_text().splitlines(), 1)
                if text.startswith("wifi-mild:"))
    assert error_of(path) == (
        f"{path}:1: preset wifi-mild: the name of a shipped preset ({shipped}:{line}); give "
        "yours another name, e.g. wifi-mild-mine")


# --- lookup -------------------------------------------------------------------------------

def test_resolve_takes_user_files_then_shipped(tmp_path):
    one = write(tmp_path, "lab:\n  loss: 3%\n", "one.yaml")
    two = write(tmp_path, "field-test:\n  rate: 7Mbit/s\n", "two.yaml")
    assert resolve_preset("lab", [one, two]) == {"loss": "3%"}
    assert resolve_preset("field-test", [one, two]) == {"rate": "7Mbit/s"}
    assert resolve_preset("wifi-mild", [one])["loss"] == "1%"
    with pytest.raises(UsageError) as info:
        resolve_preset("lab2", [one, two])
    text = str(info.value)
    assert text.startswith("PRESET: unknown preset 'lab2'; known presets: wifi-ideal, ")
    assert text.endswith(f"; from {one}, {two}: lab, field-test")
    with pytest.raises(UsageError, match=r"^PRESET: unknown preset 'lab'; known presets: "):
        resolve_preset("lab")
    again = write(tmp_path, "x:\n  loss: 1%\nlab:\n  loss: 4%\n", "again.yaml")
    with pytest.raises(UsageError) as info:
        resolve_preset("x", [one, again])
    assert str(info.value) == (f"{again}:3: preset lab: already defined at {one}:1; give "
                               "each preset its own name")


def test_catalogue_lists_shipped_then_user_presets(tmp_path):
    path = write(tmp_path, "lab:\n  description: mine\n  source: measured\n  loss: 3%\n")
    entries = {e["name"]: e for e in catalogue([path])}
    assert entries["lab"] == {"name": "lab", "description": "mine", "source": "measured",
                              "fields": {"loss": "3%"}, "file": str(path), "line": 1,
                              "shipped": False}
    assert entries["wifi-mild"]["shipped"] and entries["wifi-mild"]["fields"]["loss"] == "1%"
    names = [e["name"] for e in catalogue([path])]
    assert names.index("lab") == len(names) - 1


# --- the preset goes with the run -----------------------------------------------------------

def test_design_records_the_preset_fields_and_refuses_settings_it_would_drop():
    fields = {"loss": "10%", "rate": "50Mbit/s", "description": "mine"}
    bed = design("lab", preset_fields=fields, name="t", mtu="1400")
    assert bed.spec.up.loss == 0.1 and bed.spec.mtu == 1400 and bed.spec.preset == "lab"
    assert json.loads(json.dumps(bed.inputs))["preset_fields"] == fields
    assert design("wifi-mild", name="t").inputs["preset_fields"]["loss"] == "1%"
    assert design(None, name="t").inputs["preset_fields"] is None
    with pytest.raises(UsageError, match=r"^--jitter-distribution: set for up and down "):
        design(None, name="t", delay="5ms", jitter_distribution="normal")
    with pytest.raises(UsageError, match=r"^--outage: up \(1s\+1s\) and down \(2s\+1s\) "):
        design(None, name="t", outage="up=1s+1s,down=2s+1s")
    with pytest.raises(UsageError, match=r"^preset 'lab': loss: "):
        design("lab", preset_fields={"loss": "1"}, name="t")
    with pytest.raises(UsageError, match=r"^preset 'lab': jitter_distribution: set for up "):
        design("lab", preset_fields={"jitter_distribution": "normal"}, name="t")


def test_up_checks_trace_files_before_anything_is_made(tmp_path):
    spec = build_spec(None, None, {"trace": {"up": str(tmp_path / "gone.trace")}})
    with pytest.raises(UsageError, match=rf"^--trace: cannot read trace {tmp_path}/gone"):
        check_traces(spec)
    write(tmp_path, "1\n", "gone.trace")
    check_traces(spec)


def test_up_refuses_other_fields_under_a_shipped_name(tmp_path, monkeypatch):
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))
    with pytest.raises(UsageError, match=r"^PRESET: 'wifi-mild' is a shipped preset "):
        up("wifi-mild", preset_fields={"loss": "5%"}, name=f"t{os.getpid()}s")
    assert not (tmp_path / "state").exists()  # refused before anything was made
    check_not_shipped("wifi-mild", resolve_preset("wifi-mild"))
    check_not_shipped("lab", {"loss": "5%"})


def test_open_run_needs_no_preset_file_and_reads_runs_recorded_before(tmp_path, monkeypatch):
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))
    user = design("lab", preset_fields={"loss": "10%", "rate": "50Mbit/s"}, name="t")
    name = f"t{os.getpid()}p"
    journal = Journal.claim(name, Shell(), inputs=user.inputs)
    try:
        bed = open_run(name)
        assert bed.spec == user.spec and bed.spec.preset == "lab"
    finally:
        journal.remove()
    # a run recorded before preset_fields existed: only the (shipped) preset's name
    old = {"preset": "wifi-mild", "topology": "pair", "hosts": 1, "wire": None,
           "overrides": {"rate": "50Mbit/s"}}
    journal = Journal.claim(name, Shell(), inputs=old)
    try:
        spec = open_run(name).spec
        assert (spec.up.loss, spec.up.rate_bps) == (0.01, 50e6)
    finally:
        journal.remove()


# --- the command line ------------------------------------------------------------------------

def cli(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LINKLAB, *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "LINKLAB_STATE_DIR": str(tmp_path / "state")})


@pytest.mark.slow
def test_cli_lists_presets_and_a_bad_file_is_one_line_exit_2(tmp_path):
    good = write(tmp_path, "lab:\n  description: my lab\n  loss: 3%\n  up: {rate: 5Mbit/s}\n",
                 "good.yaml")
    listed = cli("link", "presets", "--presets", str(good), tmp_path=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "lab            my lab\n    loss 3%; up: rate 5Mbit/s\n" in listed.stdout
    assert f"from: {good}:1" in listed.stdout and "wifi-severe" in listed.stdout
    as_json = json.loads(cli("link", "presets", "--presets", str(good), "--json",
                             tmp_path=tmp_path).stdout)
    assert as_json[-1]["name"] == "lab"
    bad = write(tmp_path, "lab:\n  rate: 5Mbit\n", "bad.yaml")
    for args in (["link", "presets", "--presets", str(good), "--presets", str(bad)],
                 ["link", "up", "lab", "--presets", str(bad), "--name", f"t{os.getpid()}b"]):
        result = cli(*args, tmp_path=tmp_path)
        assert result.returncode == 2
        assert result.stderr == (f"linklab: error: {bad}:2: preset lab: rate: unknown unit "
                                 "'Mbit' in '5Mbit'; expected a bit rate with a unit, e.g. "
                                 "433Mbit/s, 433Mbps, 1Gbit/s, 100kbit/s\n")
    alone = cli("link", "up", "--presets", str(good), "--name", f"t{os.getpid()}b",
                tmp_path=tmp_path)
    assert alone.returncode == 2 and alone.stderr.startswith(
        "linklab: error: --presets: given without a PRESET to take from it;")
    unknown = cli("link", "up", "labb", "--presets", str(good), "--name", f"t{os.getpid()}b",
                  tmp_path=tmp_path)
    assert unknown.returncode == 2 and len(unknown.stderr.splitlines()) == 1
    assert unknown.stderr.rstrip().endswith(f"; from {good}: lab")
    assert not (tmp_path / "state").exists()  # nothing was started
