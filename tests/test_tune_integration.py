"""Generated profiles load into the real libraries, and the values they apply are the tuned ones.

Fast DDS 2.9.1 (Debian libfastrtps-dev) through build/probes/checks/linklab-check-fastdds-profile:
participant, DataWriter and DataReader are created from the profiles and their QoS read
back. Cyclone DDS through the cyclonedds Python package (libddsc 11) and through
Debian's ddsperf (0.10.2, the series ROS 2 Humble/Jazzy ship), with Cyclone's own
config trace read back. A deliberately broken file must be rejected by each, so these
tests can fail.
"""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import BUILD, require_root, require_tool
from linklab.tune import TuningInput, tune, write_profiles

pytestmark = pytest.mark.integration

CHECKER = BUILD / "probes" / "checks" / "linklab-check-fastdds-profile"
KIB = 1024
CASES = {
    "paper": TuningInput(rate_hz=30, payload_bytes=256 * KIB, link_bits_per_s=433e6),
    "vxlan-3subs-jazzy": TuningInput(rate_hz=10, payload_bytes=1024 * KIB,
                                     link_bits_per_s=1e9, overlay="vxlan", subscribers=3,
                                     ros="jazzy", utilization=0.5),
    "small-fast": TuningInput(rate_hz=1000, payload_bytes=1 * KIB, link_bits_per_s=54e6,
                              mtu=1400, peers=("127.0.0.1",), outage_tolerance_s=7.5),
}


def domain_id() -> int:
    return 100 + os.getpid() % 100  # other engineers' tests run at the same time


def check_fastdds(path: Path) -> tuple[int, dict | None, str]:
    if not CHECKER.is_file():
        pytest.fail(f"{CHECKER} is missing: run scripts/setup.sh (builds probes/checks)")
    proc = subprocess.run([str(CHECKER), str(path), "--domain", str(domain_id())],
                          capture_output=True, text=True, timeout=60)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc.returncode, (json.loads(lines[-1]) if lines else None), proc.stderr


@pytest.mark.parametrize("case", list(CASES))
def test_fastdds_profile_creates_entities_with_the_tuned_values(case, tmp_path):
    result = tune(CASES[case])
    s = result.settings
    paths = write_profiles(result, tmp_path)
    code, data, stderr = check_fastdds(paths["fastdds"])
    assert code == 0 and data is not None, stderr
    assert data["errors"] == []
    (transport,) = data["participant"]["transports"]
    assert transport["type"] == "UDPv4"
    assert transport["max_message_size"] == s.max_message_size
    assert transport["receive_buffer_size"] == s.socket_buffer_bytes
    assert data["participant"]["use_builtin_transports"] is False
    defaults = data["defaults"]
    # the lease outlasts the outage tolerance (000 V-D: 20 s outage = default 20 s lease)
    assert data["participant"]["lease_duration_ns"] == s.lease_duration_ns
    assert data["participant"]["lease_announcement_ns"] == s.lease_announcement_ns
    assert defaults["participant"]["lease_duration_ns"] == s.lease_duration_ns
    writer, reader = data["writer"], data["reader"]
    assert writer["heartbeat_period_ns"] == s.heartbeat_period_ns
    for entity in (writer, reader):
        assert entity["reliability"] == "RELIABLE"
        assert entity["history_kind"] == "KEEP_LAST"
        assert entity["history_depth"] == s.history_depth
    assert writer["max_samples"] == s.max_samples
    assert writer["max_samples_per_instance"] == s.max_samples_per_instance
    # the reader has room for every sample the writer may owe after a stall
    assert reader["max_samples"] == reader["max_samples_per_instance"] == 2 * s.history_depth + 1
    assert writer["publish_mode"] == "ASYNCHRONOUS"
    # is_default_profile="true" reached the defaults rmw_fastrtps uses for unnamed topics
    defaults = data["defaults"]
    assert defaults["participant"]["transports"][0]["max_message_size"] == s.max_message_size
    assert defaults["writer"]["heartbeat_period_ns"] == s.heartbeat_period_ns
    assert defaults["writer"]["history_depth"] == s.history_depth
    assert defaults["reader"]["history_depth"] == s.history_depth


def test_fastdds_checker_fails_on_a_broken_profile(tmp_path):
    paths = write_profiles(tune(CASES["paper"]), tmp_path)
    broken = tmp_path / "broken.xml"
    broken.write_text(paths["fastdds"].read_text().replace("heartbeatPeriod", "heartbeatPeriodX"))
    code, data, stderr = check_fastdds(broken)
    assert code == 1, (code, stderr[-2000:])  # the checker's "rejected" status, not a crash
    assert data is not None and data["load_ok"] is False
    assert "load_XML_profiles_file failed" in data["errors"]


def udp_out_datagrams(ns: str) -> int:
    snmp = subprocess.run(["ip", "netns", "exec", ns, "cat", "/proc/net/snmp"],
                          capture_output=True, text=True, check=True).stdout
    header, values = [line.split() for line in snmp.splitlines() if line.startswith("Udp:")][:2]
    return int(values[header.index("OutDatagrams")])


def test_fastdds_profile_carries_large_samples_in_one_packet_messages(tmp_path):
    """Data really flows with the tuned profile, cut into maxMessageSize datagrams.

    In a fresh namespace (only loopback, so the UDP counters are ours), a second
    participant receives 20 samples of 256 KiB over the tuned UDP transport
    (intra-process delivery off). Two readers match the writer, so at least
    20 * 2 * ceil(262144 / 1472) datagrams must leave; with Fast DDS's default 65500 B
    messages it would be about 20 * 2 * 5.
    """
    require_root()
    result = tune(CASES["paper"])
    paths = write_profiles(result, tmp_path)
    ns = f"linklab-mt{os.getpid()}-chk"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        before = udp_out_datagrams(ns)
        proc = subprocess.run(["ip", "netns", "exec", ns, str(CHECKER), str(paths["fastdds"]),
                               "--exchange", "20", "--size", str(256 * KIB)],
                              capture_output=True, text=True, timeout=90)
        sent = udp_out_datagrams(ns) - before
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
    data = json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])
    assert proc.returncode == 0, (data["errors"], proc.stderr[-1000:])
    assert data["exchange"]["received"] == 20
    per_sample = -(-256 * KIB // result.settings.max_message_size)
    assert sent >= 20 * 2 * per_sample


CYCLONE_SCRIPT = textwrap.dedent("""
    from dataclasses import dataclass
    from cyclonedds.domain import DomainParticipant
    from cyclonedds.idl import IdlStruct
    from cyclonedds.idl.types import sequence, uint8
    from cyclonedds.pub import DataWriter
    from cyclonedds.sub import DataReader
    from cyclonedds.topic import Topic

    @dataclass
    class Bytes_(IdlStruct, typename="linklab::msg::dds_::Bytes_"):
        data: sequence[uint8]

    participant = DomainParticipant({domain})
    topic = Topic(participant, "rt/linklab_check", Bytes_)
    DataWriter(participant, topic)
    DataReader(participant, topic)
    print("created")
""")

UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3,
         "ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def cyclone_trace_values(trace: Path) -> dict[str, int]:
    """Cyclone's config trace lines 'config: Domain/General/MaxMessageSize/#text: 1472 B {1}'
    (numbers without a unit, e.g. DefragReliableMaxSamples, are counts)."""
    values = {}
    for line in trace.read_text(errors="replace").splitlines():
        m = re.search(r"config: Domain/([\w/]+?)/#text: ([\d.]+)(?: (\w+))? \{1\}", line)
        if m:
            values[m.group(1)] = round(float(m.group(2)) * UNITS.get(m.group(3) or "B", 1))
    return values


def cyclone_uri(config: Path, trace: Path) -> str:
    return (f"file://{config},<Tracing><Verbosity>config</Verbosity>"
            f"<OutputFile>{trace}</OutputFile></Tracing>")


def expected_cyclone(s) -> dict[str, int]:
    return {
        "General/MaxMessageSize": s.max_message_size,
        "General/FragmentSize": s.cyclone_fragment_size,
        "Internal/HeartbeatInterval": round(s.cyclone_heartbeat_ns / 1000) * 1000,
        "Internal/NackDelay": round(s.cyclone_nack_delay_ns / 1000) * 1000,
        "Internal/DefragReliableMaxSamples": s.cyclone_defrag_max_samples,
        "Internal/MaxQueuedRexmitBytes": s.cyclone_rexmit_bytes,
        "Internal/MaxQueuedRexmitMessages": s.cyclone_rexmit_messages,
        "Internal/Watermarks/WhcHigh": s.cyclone_whc_high_bytes,
        "Discovery/LeaseDuration": s.lease_duration_ns,
        "Discovery/SPDPInterval": s.lease_announcement_ns,
    }


def run_cyclone_python(config: Path, trace: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "CYCLONEDDS_URI": cyclone_uri(config, trace)}
    return subprocess.run([sys.executable, "-c", CYCLONE_SCRIPT.format(domain=domain_id())],
                          env=env, capture_output=True, text=True, timeout=60)


def run_ddsperf(config: Path, trace: Path) -> subprocess.CompletedProcess:
    ddsperf = require_tool("ddsperf")
    env = {**os.environ, "CYCLONEDDS_URI": cyclone_uri(config, trace)}
    return subprocess.run([ddsperf, "-D", "1", "-i", str(domain_id()), "pub", "size", "1k"],
                          env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("runner", [run_cyclone_python, run_ddsperf],
                         ids=["cyclonedds-python-11", "ddsperf-0.10"])
def test_cyclone_config_is_accepted_and_applied(case, runner, tmp_path):
    s = tune(CASES[case]).settings
    paths = write_profiles(tune(CASES[case]), tmp_path)
    trace = tmp_path / "trace.log"
    proc = runner(paths["cyclonedds"], trace)
    assert proc.returncode == 0, proc.stderr[-2000:]
    values = cyclone_trace_values(trace)
    for key, want in expected_cyclone(s).items():
        assert values.get(key) == want, (key, values.get(key), want)


# How each program says the participant was refused (the config error's consequence).
REJECTED_BY = {
    run_cyclone_python: "DDSException: [DDS_RETCODE_ERROR] Non specific error. Occurred upon "
                        "initialisation of a cyclonedds.domain.DomainParticipant",
    run_ddsperf: "dds_create_participant(domain",
}


@pytest.mark.parametrize("runner", [run_cyclone_python, run_ddsperf],
                         ids=["cyclonedds-python-11", "ddsperf-0.10"])
def test_cyclone_rejects_a_broken_config(runner, tmp_path):
    paths = write_profiles(tune(CASES["paper"]), tmp_path)
    broken = tmp_path / "broken.xml"
    broken.write_text(paths["cyclonedds"].read_text().replace("WhcHigh>", "WhcHighX>"))
    proc = runner(broken, tmp_path / "trace.log")
    # a rejection: the library names the element and the program ends with an error
    # status -- not a crash (killed by a signal: negative status), not any other failure
    assert proc.returncode > 0, (proc.returncode, proc.stderr[-2000:])
    assert "Watermarks: WhcHighX: unknown element" in proc.stderr, proc.stderr[-2000:]
    assert REJECTED_BY[runner] in proc.stdout + proc.stderr, proc.stdout + proc.stderr
