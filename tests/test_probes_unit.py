"""Probe helpers without middlewares: record files, summaries, command lines."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from linklab.errors import EnvironmentProblem, LinklabError, UsageError
from linklab.probes import (
    RECORD_DTYPE,
    ProbeCommand,
    binary_path,
    dds_type_name,
    parse_summary,
    read_records,
)
from linklab.profiles import profile_path


def write_records(path: Path, role: int, rows: list[tuple[int, int, int, int]],
                  tail: bytes = b"") -> None:
    body = b"".join(struct.pack("<QqqI", *row) for row in rows)
    path.write_bytes(b"LLREC1\0\0" + struct.pack("<II", 28, role) + body + tail)


def test_record_file_round_trip(tmp_path: Path) -> None:
    rows = [(0, 1_000, 3_500, 262144), (1, 34_000, 36_000, 262144), (3, 100_000, 140_000, 7)]
    write_records(tmp_path / "s.bin", 0, rows, tail=b"\x01\x02\x03")  # a killed probe's tail
    rec = read_records(tmp_path / "s.bin")
    assert rec.role == "sub"
    assert rec.records.dtype == RECORD_DTYPE and RECORD_DTYPE.itemsize == 28
    assert rec.records["seq"].tolist() == [0, 1, 3]
    assert rec.latency_ns.tolist() == [2_500, 2_000, 40_000]
    assert rec.records["bytes"].tolist() == [262144, 262144, 7]


def test_publisher_file_and_empty_file(tmp_path: Path) -> None:
    write_records(tmp_path / "p.bin", 1, [])
    rec = read_records(tmp_path / "p.bin")
    assert rec.role == "pub" and len(rec) == 0


@pytest.mark.parametrize("content, message", [
    (b"LLREC", "shorter than its header"),
    (b"NOTREC1\0" + struct.pack("<II", 28, 0), "magic"),
    (b"LLREC1\0\0" + struct.pack("<II", 32, 0), "record size 32"),
    (b"LLREC1\0\0" + struct.pack("<II", 28, 7), "unknown role"),
])
def test_bad_record_files_say_what_is_wrong(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.bin"
    path.write_bytes(content)
    with pytest.raises(LinklabError, match=message):
        read_records(path)


def test_summary_is_the_last_json_line() -> None:
    out = ('noise from a library\n'
           '{"probe": "fastdds", "role": "sub", "applied": {"reader": {"depth": 3}}, '
           '"samples": 12, "errors": [], "end_reason": "count"}\n')
    s = parse_summary(out)
    assert (s.probe, s.role, s.samples, s.end_reason, s.ok) == ("fastdds", "sub", 12, "count", True)
    assert s.applied["reader"]["depth"] == 3
    with pytest.raises(LinklabError, match="no JSON summary"):
        parse_summary("crashed\n")
    with pytest.raises(LinklabError, match="lacks applied"):
        parse_summary('{"probe": "x", "role": "pub", "samples": 1, "errors": []}')


def test_command_line_follows_the_contract(tmp_path: Path) -> None:
    exe = tmp_path / "linklab-probe-fastdds"
    cmd = ProbeCommand("fastdds", "pub", "scan", tmp_path / "p.bin", type="Bytes", size=262144,
                       rate_hz=30, count=1000, warmup_s=1, reliable=True, history="keep_all",
                       profile=Path("/x/default.xml"), peers=("10.0.0.2",), domain=7,
                       interface="veth0")
    assert cmd.argv(exe) == [
        str(exe), "pub", "--topic", "scan", "--type", "Bytes", "--records", str(tmp_path / "p.bin"),
        "--size", "262144", "--rate", "30", "--count", "1000", "--warmup", "1",
        "--qos", "reliable", "--history", "keep_all", "--profile", "/x/default.xml",
        "--peer", "10.0.0.2", "--domain", "7", "--interface", "veth0"]
    sub = ProbeCommand("cyclonedds", "sub", "scan", tmp_path / "s.bin", type="Array64k")
    assert sub.argv(exe)[1:] == ["sub", "--topic", "scan", "--type", "Array64k", "--records",
                                 str(tmp_path / "s.bin")]


def test_command_line_rejects_what_the_probe_would() -> None:
    with pytest.raises(UsageError, match="exactly 65536 bytes"):
        ProbeCommand("fastdds", "pub", "t", Path("p.bin"), type="Array64k", size=1000,
                     rate_hz=1).argv(Path("probe"))
    with pytest.raises(UsageError, match="needs a rate"):
        ProbeCommand("fastdds", "pub", "t", Path("p.bin"), size=10).argv(Path("probe"))
    with pytest.raises(UsageError, match="unknown type"):
        dds_type_name("Array3k")
    with pytest.raises(UsageError, match="unknown probe"):
        binary_path("zenoh-c")


def test_missing_binary_names_setup(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentProblem, match="scripts/setup.sh"):
        binary_path("fastdds", build_dir=tmp_path)


def test_ros2_type_names() -> None:
    assert dds_type_name("Array64k") == "performance_test_msgs::msg::dds_::Array64k_"
    assert dds_type_name("PointCloud2m") == "performance_test_msgs::msg::dds_::PointCloud2m_"
    assert dds_type_name("Bytes") == "linklab_msgs::msg::dds_::Bytes_"


def test_shipped_profiles_are_package_data() -> None:
    default = profile_path("default").read_text()
    assert "<maxMessageSize>65500</maxMessageSize>" in default
    assert "<kind>KEEP_ALL</kind>" in default and "<sec>3</sec>" in default
    large = profile_path("large_data").read_text()
    assert "<type>TCPv4</type>" in large and "<type>UDPv4</type>" in large
    with pytest.raises(UsageError, match="shipped: default, large_data"):
        profile_path("fast")
    assert np.dtype(RECORD_DTYPE).names == ("seq", "t_send_ns", "t_recv_ns", "bytes")


def test_a_known_upstream_failure_is_recognised_by_its_signature_only():
    from linklab.probes.upstream import FASTDDS_TCP_NEGOTIATION, recognise

    log = ("2026-11-22 [TRANSPORT_TCP Error] Received add_logical_port_response, but the "
           "transaction id wasn't registered (maybe removed while negotiating?)\n")
    assert recognise(["", log]) is FASTDDS_TCP_NEGOTIATION
    assert "docs/RESULTS.md" in FASTDDS_TCP_NEGOTIATION.describe()
    assert recognise(["nothing arrived", "[RTPS_READER Warning] history full"]) is None
