"""Field mode without a network: host locations, scenario hosts:, the statistics of a path
measurement (checked against simulations of the processes they describe), the clock
exchange against known offsets, presets that load, record re-clocking, refusals."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pytest

from linklab.bench.host_address import parse_host, parse_hosts
from linklab.bench.matrix import expand
from linklab.bench.spec import parse_scenario
from linklab.errors import UsageError
from linklab.field import clock as C
from linklab.field import fit, preflight, sync
from linklab.field.compare import compare
from linklab.field.host_environment import FieldEnvironment, path_inputs
from linklab.field.measure import Direction, Measurement
from linklab.field.preset_out import LOSS_BEFORE_RATE, preset_fields, write_preset
from linklab.field.records import to_reference
from linklab.link.preset_file import read_preset_file
from linklab.link.spec import build_spec
from linklab.probes.records import HEADER, MAGIC, RECORD_DTYPE, read_records

# --- where hosts are ------------------------------------------------------------------


@pytest.mark.parametrize("text, kind, target, port", [
    ("ssh://ubuntu@robot.local", "ssh", "ubuntu@robot.local", None),
    ("ssh://robot:2222", "ssh", "robot", 2222),
    ("ssh://[fe80::1]:22", "ssh", "fe80::1", 22),
    ("local", "local", "", None),
    ("netns:linklab-demo-robot", "netns", "linklab-demo-robot", None),
    ("link:demo/edge", "netns", "linklab-demo-edge", None),
])
def test_host_locations(text, kind, target, port):
    spec = parse_host("robot", text)
    assert (spec.kind, spec.target, spec.port) == (kind, target, port)


@pytest.mark.parametrize("value, message", [
    ("http://robot", "only ssh:// is supported"),
    ("robot.local", "is not a host location"),
    ("ssh://robot:99999", "outside 1..65535"),
    ({"at": "local", "address": "224.0.0.1"}, "cannot be a host's address"),
    ({"at": "local", "port": 22}, "unknown key 'port'"),
    ({"address": "10.0.0.1"}, "missing at:"),
    ({"at": "local", "clock": "ntp"}, "expected auto"),
])
def test_bad_host_locations_are_one_line_errors(value, message):
    with pytest.raises(UsageError) as info:
        parse_host("robot", value)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert str(info.value).startswith("hosts.robot")


def test_two_local_hosts_are_refused():
    with pytest.raises(UsageError, match="both local"):
        parse_hosts({"robot": "local", "edge": "local"})


FIELD = textwrap.dedent("""\
    name: field-demo
    hosts:
      robot: ssh://ubuntu@robot.local
      edge: {at: local, address: 192.168.8.2}
    fixed: {payload: 4KiB, rate: 50Hz, count: 100}
    """)


def test_a_scenario_names_real_hosts_and_its_link_is_the_path():
    scenario = parse_scenario(FIELD, "s.yaml")
    assert scenario.hosts == {"robot": {"at": "ssh://ubuntu@robot.local"},
                              "edge": {"at": "local", "address": "192.168.8.2"}}
    cells = expand(scenario)
    assert [c.link for c in cells] == ["field"]
    assert scenario.to_dict()["hosts"] == scenario.hosts
    # without hosts: nothing changes for emulated scenarios
    plain = parse_scenario("fixed: {link: wifi-mild, payload: 4KiB, rate: 5Hz, count: 5}\n",
                           "p.yaml")
    assert plain.hosts == {} and "hosts" not in plain.to_dict()


@pytest.mark.parametrize("hosts, line, message", [
    ("hosts: 4", 2, "expected a mapping of host names"),
    ("hosts:\n  robot: local\n  edge: ftp://x", 4, "hosts.edge: 'ftp://x': only ssh://"),
])
def test_scenario_host_errors_name_the_line(hosts, line, message):
    text = f"name: x\n{hosts}\nfixed: {{payload: 4KiB, rate: 5Hz, count: 5}}\n"
    with pytest.raises(UsageError) as info:
        parse_scenario(text, "s.yaml")
    assert str(info.value).startswith(f"s.yaml:{line}:") and message in str(info.value)


def refusal(text: str) -> str:
    scenario = parse_scenario(textwrap.dedent(text), "s.yaml")
    with pytest.raises(UsageError) as info:
        FieldEnvironment(scenario).refuse(expand(scenario))
    return str(info.value)


def test_what_a_real_path_cannot_take_is_refused_before_connecting():
    head = "hosts: {robot: ssh://robot, edge: local}\n"
    assert "cannot be given link fields" in refusal(
        head + "fixed: {link: {preset: wifi-mild, loss: 5%}, payload: 4KiB, rate: 5Hz, "
               "count: 5}\n")
    assert "an outage cannot be applied" in refusal(
        head + "fixed: {link: wifi-outage, payload: 4KiB, rate: 5Hz, count: 5}\n")
    assert "field runs take fastdds and cyclonedds" in refusal(
        head + "fixed: {middleware: mqtt, payload: 4KiB, rate: 5Hz, count: 5}\n")
    assert "measure it (linklab link measure" in refusal(
        head + "fixed: {profile: optimized, payload: 4KiB, rate: 5Hz, count: 5}\n")
    assert "no cell runs an endpoint on base" in refusal(
        "hosts: {robot: ssh://robot, edge: local, base: ssh://base}\n"
        "fixed: {payload: 4KiB, rate: 5Hz, count: 5}\n")
    assert "which hosts: does not name" in refusal(
        "hosts: {robot: ssh://robot}\nfixed: {payload: 4KiB, rate: 5Hz, count: 5}\n")


# --- loss: the Gilbert fit and its standard errors ------------------------------------

def gilbert(n: int, p: float, r: float, rng: np.random.Generator) -> np.ndarray:
    """A simple Gilbert chain's received flags (stationary start), built from its runs:
    good runs ~ Geometric(p), bad runs ~ Geometric(r)."""
    out, total = [], 0
    bad = rng.random() < p / (p + r)
    while total < n:
        length = int(rng.geometric(r if bad else p))
        out.append(np.full(length, not bad))
        total += length
        bad = not bad
    return np.concatenate(out)[:n]


@pytest.mark.slow
def test_the_fit_recovers_the_chain_and_its_standard_errors_are_right():
    """Over 400 simulated measurements, the estimates scatter as se_loss and se_burst say
    (the bounds the replay test uses are built on them)."""
    rng = np.random.default_rng(16)
    p, r, n = 0.0278, 2 / 3, 20000
    fits = [fit.fit_gilbert(gilbert(n, p, r, rng)) for _ in range(400)]
    loss = np.array([f.mean_loss for f in fits])
    burst = np.array([f.mean_burst for f in fits])
    want_loss, want_burst = fit.expected_burst_loss(p, r)
    assert abs(loss.mean() - want_loss) < 4 * loss.std() / math.sqrt(len(fits))
    assert abs(burst.mean() - want_burst) < 4 * burst.std() / math.sqrt(len(fits))
    # the predicted standard errors match the spread (within the sampling error of a
    # standard deviation from 400 draws: +-3.5 % at 1 sigma; 15 % is > 4 sigma)
    assert np.mean([f.se_loss for f in fits]) == pytest.approx(loss.std(), rel=0.15)
    assert np.mean([f.se_burst for f in fits]) == pytest.approx(burst.std(), rel=0.15)
    one = fits[0]
    assert one.p / (one.p + one.r) == pytest.approx(one.mean_loss, rel=0.01)
    assert 1 / one.r == pytest.approx(one.mean_burst, rel=0.01)


def test_fit_edge_cases():
    clean = fit.fit_gilbert(np.ones(100, dtype=bool))
    assert (clean.lost, clean.mean_loss, clean.bursts) == (0, 0.0, 0)
    got = np.array([1, 0, 0, 1, 1, 0, 1, 0, 0, 0], dtype=bool)
    f = fit.fit_gilbert(got)
    assert (f.lost, f.bursts, f.mean_burst) == (6, 3, 2.0)
    assert list(fit.burst_lengths(~got)) == [2, 1, 3]


def test_rtt_stats_and_the_median_error():
    rng = np.random.default_rng(1)
    medians = [fit.rtt_stats(rng.normal(20, 1, 4000)).p50_ms for _ in range(300)]
    se = fit.rtt_stats(rng.normal(20, 1, 4000)).se_median_ms
    assert np.std(medians) <= se <= 1.3 * np.std(medians)   # conservative, not loose


def test_the_bottleneck_rate_follows_where_the_replay_loses():
    carried = 9.5e6
    assert fit.bottleneck_rate(carried, 1400, 0.05, True) == pytest.approx(
        carried * 1414 / 1400)
    assert fit.bottleneck_rate(carried, 1400, 0.05, False) == pytest.approx(
        carried * 1414 / 1400 / 0.95)
    assert LOSS_BEFORE_RATE == {"up": True, "down": False}
    assert fit.saturated(10e6, 7e6, 0.05) and not fit.saturated(10e6, 9.4e6, 0.05)
    assert fit.saturated(10e6, None, 0.0)


# --- the clock ------------------------------------------------------------------------

def exchanges(offset_ns: float, up_ms, down_ms, turnaround_ns=50_000):
    """[t1, t2, t3, t4] for a clock B = A + offset and the given one-way delays."""
    out, t = [], 1_000_000_000
    for up, down in zip(up_ms, down_ms, strict=True):
        t1 = t
        t2 = t1 + up * 1e6 + offset_ns
        t3 = t2 + turnaround_ns
        t4 = t3 - offset_ns + down * 1e6
        out.append([t1, int(t2), int(t3), int(t4)])
        t += 5_000_000
    return out


def test_the_exchange_bounds_the_true_offset_even_on_an_asymmetric_path():
    rng = np.random.default_rng(3)
    for truth in (0.0, 123_456_789.0, -5e9):
        up = 8 + rng.exponential(2, 48)       # 8 ms one way, 2 ms the other: asymmetric
        down = 2 + rng.exponential(2, 48)
        got = C.from_exchange(exchanges(truth, up, down))
        assert got.contains(truth), (truth, got)
        assert got.method == "exchange"
        # no better than half the smallest round trip, as the module says
        assert got.uncertainty_ns <= (up + down).min() * 1e6 / 2 + 1
        assert got.uncertainty_ns >= 0


def test_drift_interpolates_and_the_basis_rule():
    d = C.drift(0, C.Offset(1000.0, 10.0, 0, 0, 1, "exchange"), 1_000_000_000,
                C.Offset(3000.0, 20.0, 0, 0, 1, "exchange"))
    assert d.at(500_000_000) == pytest.approx(2000.0) and d.ppm == pytest.approx(2.0)
    assert d.uncertainty_ns == 20.0
    assert C.basis(0.0, math.nan) == "one-way"
    assert C.basis(0.5e6, 10e6) == "one-way" and C.basis(2e6, 10e6) == "round-trip"


def write_records(path: Path, role: int, rows) -> None:
    with open(path, "wb") as out:
        out.write(HEADER.pack(MAGIC, RECORD_DTYPE.itemsize, role))
        out.write(np.array(rows, dtype=RECORD_DTYPE).tobytes())


def test_records_go_on_the_reference_clock_and_the_originals_are_kept(tmp_path):
    sub = tmp_path / "sub.bin"
    write_records(sub, 0, [(1, 1000, 5000, 10), (2, 2000, 6000, 10)])
    to_reference(sub, "sub", own=lambda t: 0 * t + 700, sender=lambda t: 0 * t - 300)
    got = read_records(sub).records
    assert list(got["t_send_ns"]) == [700, 1700] and list(got["t_recv_ns"]) == [5700, 6700]
    kept = read_records(tmp_path / "field" / "sub.bin").records
    assert list(kept["t_recv_ns"]) == [5000, 6000]
    pub = tmp_path / "pub.bin"
    write_records(pub, 1, [(1, 1000, 0, 10)])
    to_reference(pub, "pub", own=lambda t: 0 * t + 5, sender=lambda t: 0 * t + 5)
    assert read_records(pub).records["t_recv_ns"][0] == 0   # a publisher has none


# --- presets out, comparisons ---------------------------------------------------------

def measurement(loss_up=0.04, burst_up=1.5, carried_up=19.8e6, rtt=20.0) -> Measurement:
    def direction(loss, burst, carried):
        r = 1 / burst
        p = loss * r / (1 - loss)
        lf = fit.LossFit(40000, int(40000 * loss), loss, p, r, int(40000 * loss / burst), burst,
                         0.0012, 0.03)
        return Direction(lf, reordered=0.0, pmtu=1400, carried_bps=carried,
                         carried_se_bps=carried * 0.01, ramp_packet_bytes=1400)
    stats = fit.RttStats(40000, rtt - 0.1, rtt - 0.05, rtt - 0.02, rtt, rtt + 0.02, rtt + 0.05,
                         rtt + 0.3, rtt + 5, rtt + 0.01, 0.03, 0.0002)
    return Measurement(a={"name": "robot", "at": "ssh://robot", "address": "10.0.0.1"},
                       b={"name": "edge", "at": "local", "address": "10.0.0.2"},
                       started_utc="2026-11-23T12:00:00Z",
                       settings={"duration_s": 10.0, "probe_rate_hz": 4000.0,
                                 "ramp_step_s": 0.5},
                       rtt=stats, up=direction(loss_up, burst_up, carried_up),
                       down=direction(0.03, 1.5, 9.55e6), clock={"offset_ns": 0.0})


def test_a_measured_preset_loads_like_any_user_preset(tmp_path):
    m = measurement()
    path = write_preset(tmp_path / "path.yaml", "robot-edge", m)
    preset = read_preset_file(path)["robot-edge"]
    spec = build_spec("robot-edge", preset.fields, {})
    assert spec.mtu == 1400 and spec.up.delay_s == pytest.approx(0.010)
    assert spec.up.burst_loss.p / (spec.up.burst_loss.p + spec.up.burst_loss.r) == \
        pytest.approx(0.04, rel=1e-3)
    assert 1 / spec.down.burst_loss.r == pytest.approx(1.5, rel=1e-3)
    assert spec.up.rate_bps == pytest.approx(19.8e6 * 1414 / 1400, rel=1e-3)
    assert spec.down.rate_bps == pytest.approx(9.55e6 * 1414 / 1400 / 0.97, rel=1e-3)
    assert "measured between robot (ssh://robot) and edge (local) on 2026-11-23" == \
        preset.fields["description"]
    assert "Not replayed: reordering" in preset.fields["source"]
    assert path_inputs(spec)[1] == pytest.approx(0.04, rel=1e-3)   # the tuner's PER
    # a measurement that is the same as itself passes; a shifted one does not
    assert all(row.within for row in compare(m, m))
    rows = {(r.quantity, r.direction): r for r in compare(m, measurement(loss_up=0.055))}
    assert not rows[("loss", "up")].within and rows[("loss", "down")].within
    assert rows[("loss", "up")].enough    # 40000 packets are enough for 1 point


def test_no_jitter_field_for_a_steady_round_trip_and_rate_left_out_when_not_saturated():
    m = measurement()
    m.up.carried_bound = "sender-limited"
    fields = preset_fields(m)
    assert "jitter" not in fields and "rate" not in fields["up"]
    assert "its replay is not rate-limited" in fields["source"]
    # and the JSON sidecar round-trips
    again = Measurement.from_dict(json.loads(json.dumps(m.to_dict())))
    assert again.up.loss == m.up.loss and again.rtt == m.rtt


# --- preflight and time sync parsing --------------------------------------------------

def test_profile_numbers():
    tuned = ("<transport_descriptor><maxMessageSize>1372</maxMessageSize><sendBufferSize>"
             "4194304</sendBufferSize><receiveBufferSize>4194304</receiveBufferSize>")
    assert preflight.profile_numbers(tuned, "fastdds") == (4194304, 1372)
    assert preflight.profile_numbers(None, "fastdds") == (None, 65500)
    assert preflight.profile_numbers(None, "cyclonedds") == (None, 14720)
    cyclone = ('<General><MaxMessageSize>1372B</MaxMessageSize></General><Internal>'
               '<SocketReceiveBufferSize min="4MiB"/></Internal>')
    assert preflight.profile_numbers(cyclone, "cyclonedds") == (4 * 2**20, 1372)


def test_time_sync_state_sentences():
    line = ("A9FEA97B,169.254.169.123,4,1700000000.1,-0.000012,0.000001,0.000010,-2.1,0.0,"
            "0.01,0.000300,0.000050,64.2,Normal")
    text = sync.parse(f"== chrony\n{line}\n== timedatectl\nNTPSynchronized=yes\n")
    assert text[0].startswith("chrony: synchronised to 169.254.169.123 (stratum 4), "
                              "system time -12 us")
    assert text[1] == "systemd: NTP synchronised: yes"
    assert sync.parse("") == ["no chrony, ptp4l or timedatectl: time sync unknown"]
    assert "not synchronised" in sync.parse_chrony(line.replace("Normal", "Not synchronised"))
