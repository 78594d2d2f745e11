"""The probes against the real Fast DDS 2.9 and Cyclone DDS 0.10, across a namespace pair.

Each test builds its own veth pair of namespaces (names carry the pid and a tag), runs
the subscriber on "edge" and the publisher on "robot", and checks what a user would:
every sample arrives, latency is sane, the record files parse and agree, the summary
says what the middleware applied, and loss breaks the default profile but not a tuned one.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import require_root, require_tool
from linklab.bench import discovery_gate
from linklab.probes import ProbeCommand, ProbeProcess, binary_path, parse_summary, read_records
from linklab.probes.upstream import FASTDDS_TCP_NEGOTIATION, recognise
from linklab.profiles import profile_path
from probes_netns import Pair, link_pair

pytestmark = pytest.mark.integration

# seed 000's optimisation for 30 Hz: RTPS messages that fit one Ethernet frame
# (maxMessageSize 1472), heartbeat period 1/(2r) = 16.7 ms, a deep history.
TUNED_XML = """<?xml version="1.0" encoding="UTF-8"?>
<profiles xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
  <transport_descriptors>
    <transport_descriptor>
      <transport_id>udp1472</transport_id>
      <type>UDPv4</type>
      <maxMessageSize>1472</maxMessageSize>
    </transport_descriptor>
  </transport_descriptors>
  <participant profile_name="tuned" is_default_profile="true">
    <rtps>
      <useBuiltinTransports>false</useBuiltinTransports>
      <userTransports><transport_id>udp1472</transport_id></userTransports>
    </rtps>
  </participant>
  <data_writer profile_name="tuned_writer" is_default_profile="true">
    <topic><historyQos><kind>KEEP_LAST</kind><depth>200</depth></historyQos></topic>
    <qos><reliability><kind>RELIABLE</kind></reliability></qos>
    <times><heartbeatPeriod><sec>0</sec><nanosec>16666667</nanosec></heartbeatPeriod></times>
  </data_writer>
  <data_reader profile_name="tuned_reader" is_default_profile="true">
    <topic><historyQos><kind>KEEP_LAST</kind><depth>200</depth></historyQos></topic>
    <qos><reliability><kind>RELIABLE</kind></reliability></qos>
  </data_reader>
</profiles>
"""


@pytest.fixture
def pair(request):
    require_root()
    require_tool("ip")
    require_tool("nft")
    for mw in ("fastdds", "cyclonedds"):
        binary_path(mw)  # fails naming scripts/setup.sh when not built
    with link_pair(run_name(request)) as p:
        yield p


_RUNS = itertools.count()


def run_name(request) -> str:
    """Unique per test and process: tests of several engineers run at the same time."""
    return f"pr{os.getpid() % 100000}x{next(_RUNS)}"


def run(pair: Pair, tmp: Path, pub: dict, sub: dict, topic: str = "probe_test",
        settle_s: float = 0.3, timeout_s: float = 60, gate_s: float | None = None):
    """Subscriber on edge, then publisher on robot; both results.

    With ``gate_s`` the two take part in bench's discovery gate: the publisher's first
    sample waits until the subscriber's reader has matched too (or ``gate_s`` passed).
    Under loss the writer can match the reader long before the reader matches the writer,
    and samples sent in between are dropped by the reader's side (bench.discovery_gate)."""
    if gate_s is not None:
        discovery_gate.clear(tmp)
        sub = sub | {"extra": ("--ready-file", str(discovery_gate.ready_path(tmp, "sub")))}
        pub = pub | {"extra": ("--ready-file", str(discovery_gate.ready_path(tmp, "pub")),
                               "--start-file", str(discovery_gate.start_path(tmp)))}
        # the subscriber's idle clock runs from its reader's match, and the gate may hold
        # the first sample up to gate_s after it, until the writer has matched too: as the
        # bench does (bench/cellrun.py), the idle time counts from the go. (A 4 s idle
        # timeout once ended a subscriber whose writer had not matched yet under 20 % loss;
        # its end opened the gate and the publisher, unmatched at the go, failed.)
        if "idle_timeout_s" in sub:
            sub = sub | {"idle_timeout_s": sub["idle_timeout_s"] + gate_s}
    sub_cmd = ProbeCommand(sub.pop("middleware"), "sub", topic, tmp / "sub.bin", **sub)
    pub_cmd = ProbeCommand(pub.pop("middleware"), "pub", topic, tmp / "pub.bin", **pub)
    with ProbeProcess(sub_cmd, prefix=pair.prefix(pair.edge)) as s:
        time.sleep(settle_s)
        with ProbeProcess(pub_cmd, prefix=pair.prefix(pair.robot)) as p:
            if gate_s is not None:
                discovery_gate.open_when_ready(
                    tmp, ["sub", "pub"], gate_s,
                    gave_up=lambda: not (s.running and p.running))
            rp = p.wait(timeout_s)
        rs = s.wait(timeout_s)
    return rp, rs


def assert_all_delivered(tmp: Path, rp, rs, n: int, size: int, max_median_ms: float = 50):
    assert rp.returncode == 0, rp.stderr[-2000:]
    assert rs.returncode == 0, rs.stderr[-2000:]
    assert rp.summary.samples == n and rs.summary.samples == n, (rp.summary.raw, rs.summary.raw)
    pub_rec, sub_rec = read_records(tmp / "pub.bin"), read_records(tmp / "sub.bin")
    assert (pub_rec.role, sub_rec.role) == ("pub", "sub")
    assert sorted(sub_rec.records["seq"].tolist()) == list(range(n))
    assert set(sub_rec.records["bytes"].tolist()) == {size}
    # the sample carries the publisher's t_send: the subscriber's copy must match
    sent = dict(zip(pub_rec.records["seq"].tolist(), pub_rec.records["t_send_ns"].tolist(),
                    strict=True))
    assert all(sent[q] == t for q, t in zip(sub_rec.records["seq"].tolist(),
                                            sub_rec.records["t_send_ns"].tolist(), strict=True))
    latency_ms = sub_rec.latency_ns / 1e6
    assert latency_ms.min() > 0
    assert np.median(latency_ms) < max_median_ms, np.median(latency_ms)
    return latency_ms


def test_fastdds_pub_to_sub_across_the_pair(pair: Pair, tmp_path: Path) -> None:
    rx0 = pair.rx_bytes(pair.edge)
    rp, rs = run(pair, tmp_path,
                 pub={"middleware": "fastdds", "type": "Bytes", "size": 65536, "rate_hz": 100,
                      "count": 100},
                 sub={"middleware": "fastdds", "type": "Bytes", "count": 100})
    assert_all_delivered(tmp_path, rp, rs, 100, 65536)
    # the samples crossed the veth (not shared memory): >= 100 x 64 KiB received there
    assert pair.rx_bytes(pair.edge) - rx0 > 100 * 65536
    assert rs.summary.end_reason in ("count", "end_of_stream")
    assert rp.summary.raw["type"] == "linklab_msgs::msg::dds_::Bytes_"
    assert rp.summary.raw["topic"] == "rt/probe_test"
    w = rp.summary.applied["writer"]
    assert (w["reliability"], w["history"], w["depth"]) == ("RELIABLE", "KEEP_LAST", 10)


def test_cyclonedds_pub_to_sub_across_the_pair(pair: Pair, tmp_path: Path) -> None:
    rp, rs = run(pair, tmp_path,
                 pub={"middleware": "cyclonedds", "type": "Array64k", "rate_hz": 100,
                      "count": 100, "history": "keep_all", "domain": 7},
                 sub={"middleware": "cyclonedds", "type": "Array64k", "count": 100,
                      "history": "keep_all", "domain": 7})
    assert_all_delivered(tmp_path, rp, rs, 100, 65536)
    assert rp.summary.applied["participant"]["domain"] == 7
    assert rs.summary.raw["type"] == "performance_test_msgs::msg::dds_::Array64k_"
    w = rp.summary.applied["writer"]
    assert (w["reliability"], w["history"]) == ("RELIABLE", "KEEP_ALL")


@pytest.mark.parametrize("middleware", ["fastdds", "cyclonedds"])
def test_best_effort_keep_last_is_applied_and_delivers_on_a_clean_link(
        pair: Pair, tmp_path: Path, middleware: str) -> None:
    qos = {"reliable": False, "history": "keep_last:5"}
    rp, rs = run(pair, tmp_path,
                 pub={"middleware": middleware, "type": "Array16k", "rate_hz": 100, "count": 50,
                      "warmup_s": 0.3, **qos},
                 sub={"middleware": middleware, "type": "Array16k", "count": 50, **qos})
    assert_all_delivered(tmp_path, rp, rs, 50, 16384)
    for applied in (rp.summary.applied.get("writer"), rs.summary.applied.get("reader")):
        assert (applied["reliability"], applied["history"], applied["depth"]) == (
            "BEST_EFFORT", "KEEP_LAST", 5)


# A Fast DDS reader whose UDP socket can hold a whole 512 KiB burst (4 MiB, this host's
# rmem_max): Cyclone's writer sends a sample's ~40 IP-fragmented 14720 B messages at memory
# speed, which overflows the default 212 kB receive buffer on an unlimited veth (measured:
# 4513 RcvbufErrors for 30 samples); every lost fragment then waits for Cyclone's next
# heartbeat (100 ms) to be repaired, and the median latency was ~110 ms instead of < 1 ms.
BIG_RECEIVE_BUFFER_XML = """<?xml version="1.0" encoding="UTF-8"?>
<profiles xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
  <transport_descriptors>
    <transport_descriptor>
      <transport_id>udp_4m</transport_id>
      <type>UDPv4</type>
      <receiveBufferSize>4194304</receiveBufferSize>
    </transport_descriptor>
  </transport_descriptors>
  <participant profile_name="big_receive_buffer" is_default_profile="true">
    <rtps>
      <useBuiltinTransports>false</useBuiltinTransports>
      <userTransports><transport_id>udp_4m</transport_id></userTransports>
      <listenSocketBufferSize>4194304</listenSocketBufferSize>
    </rtps>
  </participant>
</profiles>
"""


def udp_counter(pair: Pair, host, name: str) -> int:
    from linklab.bench.namespace_environment import parse_udp_counters

    return parse_udp_counters(pair.run(host, "cat", "/proc/net/snmp").stdout)[name]


@pytest.mark.parametrize("pub_mw, sub_mw, type_name, size, big_buffer", [
    ("fastdds", "cyclonedds", "Array4k", 4096, False),
    ("cyclonedds", "fastdds", "PointCloud512k", 524288, True),
])
def test_fastdds_and_cyclonedds_interoperate_with_ros2_names(
        pair: Pair, tmp_path: Path, pub_mw: str, sub_mw: str, type_name: str, size: int,
        big_buffer: bool) -> None:
    sub = {"middleware": sub_mw, "type": type_name, "count": 30, "history": "keep_all"}
    if big_buffer:
        profile = tmp_path / "big_receive_buffer.xml"
        profile.write_text(BIG_RECEIVE_BUFFER_XML)
        sub["profile"] = profile
    overflows = udp_counter(pair, pair.edge, "RcvbufErrors")
    rp, rs = run(pair, tmp_path,
                 pub={"middleware": pub_mw, "type": type_name, "rate_hz": 10, "count": 30,
                      "warmup_s": 0.5, "history": "keep_all"},
                 sub=sub)
    assert udp_counter(pair, pair.edge, "RcvbufErrors") == overflows  # nothing repaired late
    assert_all_delivered(tmp_path, rp, rs, 30, size)
    assert rp.summary.raw["type"] == rs.summary.raw["type"] == (
        f"performance_test_msgs::msg::dds_::{type_name}_")
    assert rs.summary.raw["warmup_samples"] > 0  # seen, not counted
    if big_buffer:
        transports = rs.summary.applied["participant"]["transports"]
        assert [t["receive_buffer_size"] for t in transports] == [4194304]


@pytest.mark.parametrize("middleware", ["fastdds", "cyclonedds"])
def test_unicast_peers_discover_without_multicast(pair: Pair, tmp_path: Path,
                                                  middleware: str) -> None:
    for host in (pair.robot, pair.edge):  # multicast gone: only the peers can work
        pair.run(host, "ip", "route", "del", "224.0.0.0/4")
        assert "224.0.0.0" not in pair.run(host, "ip", "route").stdout
    rp, rs = run(pair, tmp_path,
                 pub={"middleware": middleware, "type": "Array1k", "rate_hz": 100, "count": 30,
                      "peers": (pair.edge.address,), "interface": pair.robot.ifname},
                 sub={"middleware": middleware, "type": "Array1k", "count": 30,
                      "peers": (pair.robot.address,), "interface": pair.edge.address})
    assert_all_delivered(tmp_path, rp, rs, 30, 1024)
    part = rp.summary.applied["participant"]
    if middleware == "fastdds":
        assert part["discovery"]["multicast_discovery"] is False
        assert part["discovery"]["metatraffic_multicast"] == []
        assert part["discovery"]["initial_peers"] == [f"udpv4:{pair.edge.address}:0"]
        assert part["transports"][0]["interface_whitelist"] == [pair.robot.address]
    else:
        assert part["multicast_discovery"] is False
        assert "<AllowMulticast>false</AllowMulticast>" in part["config"]["uri"]
        assert f'<Peer address="{pair.edge.address}"/>' in part["config"]["uri"]


def tcp_in_segments(pair: Pair) -> int:
    lines = pair.run(pair.edge, "cat", "/proc/net/snmp").stdout.splitlines()
    tcp = [line.split() for line in lines if line.startswith("Tcp:")]
    return int(tcp[1][tcp[0].index("InSegs")])


def _summary_dict(result) -> dict | None:
    """A probe's summary line as a dict, or None if it printed none."""
    try:
        return json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def test_profiles_are_applied_and_large_data_carries_user_data_over_tcp(
        pair: Pair, tmp_path: Path, artifacts_dir: Path) -> None:
    (tmp_path / "default").mkdir()
    rp, rs = run(pair, tmp_path / "default",
                 pub={"middleware": "fastdds", "type": "Bytes", "size": 100000, "rate_hz": 50,
                      "count": 20, "profile": profile_path("default")},
                 sub={"middleware": "fastdds", "type": "Bytes", "count": 20,
                      "profile": profile_path("default")})
    assert_all_delivered(tmp_path / "default", rp, rs, 20, 100000)
    part, w = rp.summary.applied["participant"], rp.summary.applied["writer"]
    assert part["use_builtin_transports"] is False
    assert [t["kind"] for t in part["transports"]] == ["UDPv4"]
    assert part["max_message_size"] == 65500
    assert (w["reliability"], w["history"], w["heartbeat_period_s"], w["publish_mode"]) == (
        "RELIABLE", "KEEP_ALL", 3, "SYNCHRONOUS")
    assert rs.summary.applied["reader"]["history"] == "KEEP_ALL"

    (tmp_path / "large").mkdir()
    # Fast DDS 2.9.1's TCP transport sometimes loses its logical-port negotiation when
    # both sides connect at once: nothing arrives although the writer reports every
    # sample acknowledged (6 % of runs; docs/RESULTS.md). That failure, recognised by its
    # signature in the probes' logs, and nothing else, gets a second run.
    attempts = []
    for attempt in range(2):
        tcp0 = tcp_in_segments(pair)
        rp, rs = run(pair, tmp_path / "large", topic=f"large{attempt}",
                     pub={"middleware": "fastdds", "type": "Bytes", "size": 100000,
                          "rate_hz": 50, "count": 20, "profile": profile_path("large_data")},
                     sub={"middleware": "fastdds", "type": "Bytes", "count": 20,
                          "profile": profile_path("large_data"), "idle_timeout_s": 5})
        # what the two probes said of themselves (the evidence when an attempt fails)
        said = {side: {k: (summary or {}).get(k) for k in (
                    "samples", "unique_samples", "max_matched", "match_wait_s", "end_reason",
                    "acknowledged", "write_failures", "errors")}
                for side, summary in (("pub", _summary_dict(rp)), ("sub", _summary_dict(rs)))}
        attempts.append((rp.returncode, rs.returncode, said, rp.stderr[-1500:],
                         rs.stderr[-1500:]))
        if rs.returncode == 0 and rs.stdout and rs.summary.samples == 20:
            break
        known = recognise([rp.stderr, rs.stderr])
        if known is not FASTDDS_TCP_NEGOTIATION:
            # an unknown way to come up short (seen once in ~95 runs, 2026-11-28, cause not
            # named): keep everything both probes said, whole, for the next one to read
            evidence = artifacts_dir / "large_data_tcp_short.json"
            evidence.write_text(json.dumps({"pub_stderr": rp.stderr, "sub_stderr": rs.stderr,
                                            "said": said, "pub_stdout": rp.stdout,
                                            "sub_stdout": rs.stdout}, indent=1, default=str))
        assert known is FASTDDS_TCP_NEGOTIATION, (
            f"came up short without the known TCP negotiation signature: sub said "
            f"{said['sub']}; pub said {said['pub']}; everything in {evidence}", attempts)
    assert rs.returncode == 0 and rs.summary.samples == 20, attempts
    assert_all_delivered(tmp_path / "large", rp, rs, 20, 100000)
    part = rp.summary.applied["participant"]
    assert [t["kind"] for t in part["transports"]] == ["UDPv4", "TCPv4"]
    assert part["default_unicast_locators"] == ["tcpv4:0.0.0.0:7700"]
    # 20 x 100 kB of user data arrived as TCP segments (at most 64 KiB each)
    assert tcp_in_segments(pair) - tcp0 >= 20 * 2


def test_default_profile_fails_and_a_tuned_one_delivers_under_20_percent_loss(
        request, tmp_path: Path) -> None:
    """256 KiB at 30 Hz, RELIABLE, PER 20 % both ways (seed 000, Table IIc's condition)."""
    require_root()
    tuned = tmp_path / "tuned.xml"
    tuned.write_text(TUNED_XML)
    with link_pair(run_name(request), loss="20%") as pair:
        loss_default_vs_tuned(pair, tmp_path, tuned)


def loss_default_vs_tuned(pair: Pair, tmp_path: Path, tuned: Path) -> None:
    n = 60
    delivered: dict[str, int] = {}
    outcome: dict[str, dict] = {}
    for name, profile in (("default", profile_path("default")), ("tuned", tuned)):
        (tmp_path / name).mkdir()
        rp, rs = run(pair, tmp_path / name, topic=f"loss_{name}",
                     pub={"middleware": "fastdds", "type": "Bytes", "size": 262144,
                          "rate_hz": 30, "count": n, "profile": profile,
                          # discovery itself crosses the 20 % loss: give it time
                          "match_timeout_s": 90,
                          # waits only until all is acknowledged; the default never is
                          "linger_s": 20 if name == "tuned" else 2},
                     sub={"middleware": "fastdds", "type": "Bytes", "count": n,
                          "profile": profile, "idle_timeout_s": 8 if name == "tuned" else 4,
                          "match_timeout_s": 90},
                     timeout_s=150, gate_s=90)
        assert rp.returncode == 0 and rs.returncode == 0, (rp.stderr[-1000:], rs.stderr[-1000:])
        assert rp.summary.samples == n
        delivered[name] = rs.summary.samples
        outcome[name] = {k: rp.summary.raw.get(k) for k in (
            "write_failures", "skipped_deadlines", "acknowledged", "wall_s")} | {
            "sub_end": rs.summary.end_reason}
        applied = rp.summary.applied
        if name == "tuned":
            assert applied["participant"]["max_message_size"] == 1472
            assert applied["writer"]["heartbeat_period_s"] == pytest.approx(1 / 60, abs=1e-6)
            assert (applied["writer"]["history"], applied["writer"]["depth"]) == ("KEEP_LAST", 200)
        else:
            assert applied["participant"]["max_message_size"] == 65500
    # a 256 KiB sample in 64 KB datagrams is ~180 IP fragments: at 20 % loss none arrives
    # whole; 1472-byte messages are retransmitted one by one
    assert delivered["default"] <= n // 4, (delivered, outcome)
    assert delivered["tuned"] == n, (delivered, outcome)
    # ... and at the publish rate, in time: each of a sample's 178 messages is lost with
    # p = 0.2 per try and repaired every heartbeat (1/60 s), so after k rounds
    # 178 * 0.2^k < 1 for k >= 4 (~67 ms); ten heartbeat periods (167 ms) bound the median
    records = read_records(tmp_path / "tuned" / "sub.bin").records
    span_s = (int(records["t_recv_ns"].max()) - int(records["t_recv_ns"].min())) / 1e9
    rate_hz = len(records) / span_s
    latency_ms = (records["t_recv_ns"] - records["t_send_ns"]) / 1e6
    median_ms = float(np.median(latency_ms))
    print(f"tuned at PER 20 %: {rate_hz:.2f} Hz, median latency {median_ms:.1f} ms")
    # the reception span is the publishing span ((n - 1) / 30 s) give or take the latency
    # spread (samples held back for repairs at the start arrive in a burst)
    spread_s = float(latency_ms.max() - latency_ms.min()) / 1000
    publish_s = (n - 1) / 30
    assert n / (publish_s + spread_s) <= rate_hz <= n / max(publish_s - spread_s, 1e-3), (
        rate_hz, spread_s, outcome)
    assert median_ms < 10 * 1000 / 60, (median_ms, outcome)


def probe(middleware: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary_path(middleware)), *args], capture_output=True, text=True,
                          timeout=30)


@pytest.mark.parametrize("middleware", ["fastdds", "cyclonedds"])
@pytest.mark.parametrize("args, message", [
    ([], "missing role"),
    (["publish", "--topic", "t"], "role: expected 'pub' or 'sub'"),
    (["pub", "--topic", "t", "--type", "Array3k", "--rate", "30", "--count", "1"],
     "--type: unknown type 'Array3k'"),
    (["pub", "--topic", "t", "--type", "Bytes", "--size", "lots", "--rate", "30"],
     "--size: expected a payload size"),
    (["pub", "--topic", "t", "--type", "Array64k", "--size", "1000", "--rate", "30",
      "--count", "1"], "--size: Array64k carries exactly 65536 bytes"),
    (["pub", "--topic", "t", "--type", "Bytes", "--size", "10", "--rate", "0", "--count", "1"],
     "--rate: expected a publish rate in Hz"),
    (["pub", "--topic", "t", "--type", "Bytes", "--size", "10", "--rate", "30"],
     "pub needs --count N or --duration S"),
    (["sub", "--topic", "t", "--type", "Bytes", "--qos", "sometimes", "--records", "x"],
     "--qos: expected 'reliable' or 'best_effort'"),
    (["sub", "--topic", "t", "--type", "Bytes", "--history", "keep_last:0", "--records", "x"],
     "--history: expected keep_all or keep_last:N"),
    (["sub", "--topic", "t", "--type", "Bytes", "--peer", "robot", "--records", "x"],
     "--peer: expected an IPv4 address"),
    (["sub", "--topic", "t", "--type", "Bytes", "--interface", "nosuch0", "--records", "x"],
     "--interface: 'nosuch0'"),
    (["sub", "--topic", "t", "--type", "Bytes"], "--records FILE.bin is required"),
    (["sub", "--topic", "t", "--type", "Bytes", "--records", "x", "--bogus", "1"],
     "unknown argument '--bogus'"),
    (["sub", "--topic", "t", "--type", "Bytes", "--records", "x", "--profile", "/nonexistent"],
     "--profile: cannot read '/nonexistent'"),
])
def test_bad_arguments_give_one_line_and_status_2(middleware: str, args: list[str],
                                                   message: str) -> None:
    result = probe(middleware, *args)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"linklab-probe-{middleware}: error: ")
    assert message in lines[0]


def failed_summary(result: subprocess.CompletedProcess):
    assert result.returncode == 1, result.stderr[-1000:]
    assert len([line for line in result.stdout.splitlines() if line.startswith("{")]) == 1
    summary = parse_summary(result.stdout)
    assert summary.end_reason == "error"
    return summary


def test_a_profile_fast_dds_rejects_is_an_error_not_silent_defaults(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    # one unknown element: Fast DDS's parser rejects the whole file
    bad.write_text(profile_path("default").read_text().replace(
        "<maxMessageSize>65500</maxMessageSize>",
        "<maxMessageSize>65500</maxMessageSize><maxMessageSizes>1</maxMessageSizes>"))
    args = ["sub", "--topic", "t", "--type", "Bytes", "--records", str(tmp_path / "s.bin")]
    s = failed_summary(probe("fastdds", *args, "--profile", str(bad)))
    assert "rejected the XML profile file" in s.errors[0]
    s = failed_summary(probe("fastdds", *args, "--profile", str(profile_path("default")),
                             "--profile-name", "nope"))
    assert "no participant profile named 'nope'" in s.errors[0]
    # the shipped profiles name all three parts alike, so --profile-name selects them
    ok = probe("fastdds", *args, "--profile", str(profile_path("large_data")),
               "--profile-name", "linklab_large_data", "--match-timeout", "0.2")
    applied = parse_summary(ok.stdout).applied
    assert [t["kind"] for t in applied["participant"]["transports"]] == ["UDPv4", "TCPv4"]
    assert applied["reader"]["history"] == "KEEP_ALL"


def test_cyclone_configuration_file_is_applied_or_rejected(tmp_path: Path) -> None:
    args = ["sub", "--topic", "t", "--type", "Bytes", "--records", str(tmp_path / "s.bin"),
            "--match-timeout", "0.2"]
    good = tmp_path / "cyclone.xml"
    good.write_text('<CycloneDDS><Domain id="any"><General><MaxMessageSize>1472B'
                    "</MaxMessageSize></General></Domain></CycloneDDS>")
    applied = parse_summary(probe("cyclonedds", *args, "--profile", str(good)).stdout).applied
    config = applied["participant"]["config"]
    assert config["uri"] == f"file://{good}" and config["source"] == "probe"
    assert config["settings"] == {"MaxMessageSize": "1472B"}
    bad = tmp_path / "bad.xml"
    bad.write_text(good.read_text().replace("MaxMessageSize", "MaxMessageSizes"))
    s = failed_summary(probe("cyclonedds", *args, "--profile", str(bad)))
    assert "Cyclone DDS rejected the configuration" in s.errors[0]


@pytest.mark.parametrize("middleware", ["fastdds", "cyclonedds"])
def test_sigint_ends_a_probe_with_its_summary_and_records(pair: Pair, tmp_path: Path,
                                                         middleware: str) -> None:
    sub = ProbeCommand(middleware, "sub", "sig", tmp_path / "sub.bin", type="Array1k")
    pub = ProbeCommand(middleware, "pub", "sig", tmp_path / "pub.bin", type="Array1k",
                       rate_hz=100, count=100000)
    with ProbeProcess(sub, prefix=pair.prefix(pair.edge)) as s, \
            ProbeProcess(pub, prefix=pair.prefix(pair.robot)) as p:
        _wait_for_records(tmp_path / "sub.bin", 50)
        rp, rs = _interrupt(p, s)
    for result, role in ((rp, "pub"), (rs, "sub")):
        assert result.returncode == 0, result.stderr[-1000:]
        summary = result.summary
        assert summary.end_reason == "signal" and summary.raw["signal"] in (2, 15)
        assert summary.samples >= 50
        assert len(read_records(tmp_path / f"{role}.bin")) == summary.samples


def _interrupt(pub: ProbeProcess, sub: ProbeProcess):
    """SIGINT to the publisher, then (after its exit) SIGTERM to the subscriber: both
    results."""
    pub.popen.send_signal(signal.SIGINT)
    rp = pub.wait(60)
    time.sleep(0.3)
    sub.popen.send_signal(signal.SIGTERM)
    return rp, sub.wait(60)


def _wait_for_records(path: Path, samples: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s  # discovery is slow on a loaded 2-core machine
    while time.monotonic() < deadline and (
            not path.exists() or path.stat().st_size < 16 + 28 * samples):
        time.sleep(0.1)


@pytest.mark.parametrize("middleware", ["fastdds", "cyclonedds"])
def test_the_writer_counts_readers_lost_and_matched_while_it_publishes(
        pair: Pair, tmp_path: Path, middleware: str) -> None:
    """A reader that leaves and one that joins mid-run: the publisher's summary says so
    (DDS total_count against current_count at the go and at the last sample). A cell's
    row names a lost reader in its failure reason (bench.metrics.failure_reason): under
    seed 000's 20 s outage the default 20 s discovery lease expires and the writer drops
    its reader with every sample it had not acknowledged."""
    first = ProbeCommand(middleware, "sub", "leave", tmp_path / "first.bin", type="Array1k",
                         count=20)
    later = ProbeCommand(middleware, "sub", "leave", tmp_path / "later.bin", type="Array1k")
    pub = ProbeCommand(middleware, "pub", "leave", tmp_path / "pub.bin", type="Array1k",
                       rate_hz=100, count=100000)
    with ProbeProcess(first, prefix=pair.prefix(pair.edge)) as s1, \
            ProbeProcess(pub, prefix=pair.prefix(pair.robot)) as p:
        r1 = s1.wait(60)  # leaves after its 20 samples: its participant says goodbye
        with ProbeProcess(later, prefix=pair.prefix(pair.edge)) as s2:
            _wait_for_records(tmp_path / "later.bin", 20)
            rp, r2 = _interrupt(p, s2)
    assert r1.returncode == 0 and r1.summary.end_reason == "count", r1.stderr[-1000:]
    assert r2.returncode == 0 and r2.summary.samples >= 20, r2.stderr[-1000:]
    assert rp.returncode == 0 and rp.summary.end_reason == "signal", rp.stderr[-1000:]
    assert rp.summary.raw["matched_readers"] == 1
    assert rp.summary.raw["readers_unmatched_while_publishing"] == 1, rp.summary.raw
    assert rp.summary.raw["readers_matched_while_publishing"] == 1, rp.summary.raw
