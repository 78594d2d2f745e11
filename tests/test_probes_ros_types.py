"""ROS 2's Image, PointCloud2, String and UInt8MultiArray in every probe (paper 000 §V-A).

Unit part: the Zenoh probe's CDR encoder (linklab.probes.ros_types) and the MQTT probe's
(probes/common/ros_types.cpp) produce byte for byte what Fast DDS 2.9 serializes
(linklab-check-cdr), each reads the other's samples back, and every probe refuses a size
a type cannot carry with one line. Integration part: every type from Fast DDS and Cyclone
DDS publishers to Fast DDS and Cyclone DDS subscribers (the same vendor and across
vendors: the DDS type names and layouts must agree) across a namespace pair, and through
the Zenoh and MQTT probes; all samples arrive with the --size payload, their seqs and
their publisher's send times. The four types run at once on four topics of one pair.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import BUILD, require_root, require_tool
from linklab.brokers import MosquittoConfig, start_mosquitto
from linklab.errors import UsageError
from linklab.probes import ProbeCommand, ProbeProcess, binary_path, read_records
from linklab.probes.ros_types import OVERHEAD, ROS_TYPES, CdrSample, image_geometry, read
from linklab.probes.types import TYPES, dds_type_name, payload_bytes
from linklab.probes.zenoh_probe import ProbeUsageError, parse_options
from middleware_pair import MQTT_PROBE, ZENOH_PROBE, finish, namespace_pair, start, wait_for_line
from probes_netns import link_pair

CHECK_CDR = BUILD / "probes" / "checks" / "linklab-check-cdr"
WARMUP, END = 1 << 63, (1 << 64) - 1
# odd sizes on purpose: Image rows with padding, a String of 100 003 characters
SIZES = {"Image": 65537, "PointCloud2": 32768 + 16, "String": 100003, "UInt8MultiArray": 70001}


def check_cdr(type_name: str, size: int, seq: int, t: int) -> dict:
    if not CHECK_CDR.exists():
        pytest.fail(f"{CHECK_CDR} is not built: run scripts/setup.sh")
    out = subprocess.run([CHECK_CDR, type_name, str(size), str(seq), str(t)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


@pytest.mark.native
@pytest.mark.parametrize("type_name,size", [
    ("Image", 0), ("Image", 2), ("Image", 101), ("Image", 3 * 640 * 480), ("Image", 65536),
    ("PointCloud2", 0), ("PointCloud2", 48), ("PointCloud2", 4096),
    ("String", 32), ("String", 33), ("String", 1001),
    ("UInt8MultiArray", 16), ("UInt8MultiArray", 17), ("UInt8MultiArray", 1000)])
@pytest.mark.parametrize("seq,t", [(0, 1), (41, 987_654_321_123_456_789), (WARMUP | 3, 5),
                                   (END, 2**31 * 10**9 - 1)])
def test_encoders_write_what_fastdds_serializes(type_name, size, seq, t):
    got = check_cdr(type_name, size, seq, t)
    sample = CdrSample(type_name, size)
    sample.stamp(seq, t)
    # the Zenoh probe (Python), the MQTT probe (C++) and Fast DDS: the same bytes
    assert got["fastdds"] == got["common"] == sample.buffer.hex()
    assert len(sample.buffer) == 4 + OVERHEAD[type_name] + size
    want = {"seq": seq, "t_send_ns": t, "bytes": size, "valid": True}
    assert got["common_reads_fastdds"] == want and got["fastdds_reads_common"] == want
    assert read(type_name, bytes.fromhex(got["fastdds"])) == (seq, t, size)


def test_image_rows_hold_exactly_the_payload():
    for n in itertools.chain(range(0, 3000), (32768, 65536, 524288, 921600, 10**6 + 1)):
        height, width, step = image_geometry(n)
        assert height * step == n and 3 * width <= step < 3 * width + 3, n
    assert image_geometry(65536) == (128, 170, 512)
    assert image_geometry(524288) == (256, 682, 2048)


def test_a_sample_without_a_linklab_seq_is_not_read():
    sample = CdrSample("Image", 64)
    assert read("Image", bytes(sample.buffer[:-1])) is None  # truncated
    broken = bytearray(sample.buffer)
    broken[4 + 12:4 + 14] = b"zz"  # frame_id is not hex
    assert read("Image", bytes(broken)) is None
    assert read("String", b"\x00\x01\x00\x00" + (3).to_bytes(4, "little") + b"ab\0") is None
    assert read("UInt8MultiArray", b"\x00\x00\x00\x00" + bytes(60)) is None  # big-endian


def test_types_and_sizes_in_python():
    assert {t: dds_type_name(t) for t in ROS_TYPES} == {
        "Image": "sensor_msgs::msg::dds_::Image_",
        "PointCloud2": "sensor_msgs::msg::dds_::PointCloud2_",
        "String": "std_msgs::msg::dds_::String_",
        "UInt8MultiArray": "std_msgs::msg::dds_::UInt8MultiArray_"}
    assert set(ROS_TYPES) <= set(TYPES)
    assert payload_bytes("Image", 12345) == 12345
    for type_name, size, words in (("PointCloud2", 100, "multiple of 16"),
                                   ("String", 31, "at least 32"),
                                   ("UInt8MultiArray", 15, "at least 16"),
                                   ("Image", None, "needs a payload size")):
        with pytest.raises(UsageError, match=words):
            payload_bytes(type_name, size)
    with pytest.raises(ProbeUsageError, match="--size: PointCloud2 carries whole 16-byte"):
        parse_options(["pub", "--topic", "t", "--type", "PointCloud2", "--size", "100",
                       "--rate", "1", "--count", "1", "--records", "x.bin"])
    with pytest.raises(ProbeUsageError, match="--size is required with --type String"):
        parse_options(["pub", "--topic", "t", "--type", "String", "--rate", "1", "--count", "1",
                       "--records", "x.bin"])
    assert parse_options(["sub", "--topic", "t", "--type", "Image",
                          "--records", "x.bin"]).type == "Image"
    # a subscriber's command line has no --size; a publisher's has the one asked
    cmd = ProbeCommand("fastdds", "pub", "t", Path("p.bin"), type="String", size=64,
                       rate_hz=1, count=1)
    assert cmd.argv(Path("probe"))[-6:] == ["--size", "64", "--rate", "1", "--count", "1"]


@pytest.mark.native
@pytest.mark.parametrize("middleware", ["fastdds", "cyclonedds", "mqtt"])
def test_native_probes_refuse_a_size_the_type_cannot_carry(middleware, tmp_path):
    exe = binary_path(middleware)
    for type_name, size, words in (("PointCloud2", "100", "multiple of 16"),
                                   ("String", "31", "at least 32"),
                                   ("UInt8MultiArray", "8", "at least 16")):
        done = subprocess.run([exe, "pub", "--topic", "t", "--type", type_name, "--size", size,
                               "--rate", "1", "--count", "1", "--records", tmp_path / "x.bin"],
                              capture_output=True, text=True, timeout=10)
        assert done.returncode == 2 and done.stdout == ""
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"linklab-probe-{middleware}: error: "
                                                       "--size: ") and words in lines[0]
    done = subprocess.run([exe, "pub", "--topic", "t", "--type", "Image", "--rate", "1",
                           "--count", "1", "--records", tmp_path / "x.bin"],
                          capture_output=True, text=True, timeout=10)
    assert done.returncode == 2 and "--size is required with --type Image" in done.stderr


# ---- across a namespace pair ------------------------------------------------------------

_RUNS = itertools.count()
COUNT, RATE = 20, 50


def check_delivery(type_name: str, pub: dict, sub: dict, pub_file: Path, sub_file: Path,
                   size: int) -> None:
    """Every sample once with the asked payload, its seq and its publisher's send time."""
    assert pub["errors"] == [] and sub["errors"] == [], (type_name, pub, sub)
    assert pub["type"] == sub["type"] == dds_type_name(type_name)
    assert pub["size"] == size and sub["malformed_samples"] == 0
    sent, received = read_records(pub_file).records, read_records(sub_file).records
    assert sent["seq"].tolist() == list(range(COUNT)), type_name
    assert sorted(received["seq"].tolist()) == list(range(COUNT)), type_name
    assert set(received["bytes"].tolist()) == {size}, type_name
    t_sent = dict(zip(sent["seq"].tolist(), sent["t_send_ns"].tolist(), strict=True))
    for seq, t_send, t_recv in zip(received["seq"].tolist(), received["t_send_ns"].tolist(),
                                   received["t_recv_ns"].tolist(), strict=True):
        assert t_send == t_sent[seq] and 0 < t_recv - t_send < 2_000_000_000, type_name


@pytest.fixture
def dds_pair():
    require_root()
    require_tool("ip")
    for mw in ("fastdds", "cyclonedds"):
        binary_path(mw)
    with link_pair(f"rt{os.getpid() % 100000}x{next(_RUNS)}") as pair:
        yield pair


@pytest.mark.integration
@pytest.mark.parametrize("publisher,subscriber", [
    ("fastdds", "fastdds"), ("cyclonedds", "cyclonedds"),
    ("fastdds", "cyclonedds"), ("cyclonedds", "fastdds")])
def test_dds_pub_to_sub_of_every_ros2_type(dds_pair, tmp_path, publisher, subscriber):
    pair = dds_pair
    subs, pubs = {}, {}
    try:
        for type_name in ROS_TYPES:
            sub = ProbeCommand(subscriber, "sub", f"rt_{type_name}", tmp_path / f"{type_name}.s",
                               type=type_name, count=COUNT, idle_timeout_s=20)
            subs[type_name] = ProbeProcess(sub, prefix=pair.prefix(pair.edge))
        time.sleep(0.3)
        for type_name, size in SIZES.items():
            pub = ProbeCommand(publisher, "pub", f"rt_{type_name}", tmp_path / f"{type_name}.p",
                               type=type_name, size=size, rate_hz=RATE, count=COUNT)
            pubs[type_name] = ProbeProcess(pub, prefix=pair.prefix(pair.robot))
        results = {t: (pubs[t].wait(60), subs[t].wait(60)) for t in ROS_TYPES}
    finally:
        for process in (*pubs.values(), *subs.values()):
            if process.running:
                process.stop()
    for type_name, (rp, rs) in results.items():
        assert rp.returncode == 0 and rs.returncode == 0, (rp.stderr[-2000:], rs.stderr[-2000:])
        check_delivery(type_name, rp.summary.raw, rs.summary.raw, tmp_path / f"{type_name}.p",
                       tmp_path / f"{type_name}.s", SIZES[type_name])


def _run_four(pair, tmp_path: Path, sub_argv, pub_argv) -> None:
    """Subscribers of the four types on edge, then their publishers on robot."""
    subs, pubs = {}, {}
    for type_name in ROS_TYPES:
        subs[type_name] = start(pair.edge, [*sub_argv(type_name), "--topic", f"rt_{type_name}",
                                            "--type", type_name, "--count", COUNT,
                                            "--duration", 40, "--records",
                                            tmp_path / f"{type_name}.s"])
    for sub in subs.values():
        wait_for_line(sub, "subscribed")
    for type_name, size in SIZES.items():
        pubs[type_name] = start(pair.robot, [*pub_argv(type_name), "--topic", f"rt_{type_name}",
                                             "--type", type_name, "--size", size, "--count",
                                             COUNT, "--rate", RATE, "--records",
                                             tmp_path / f"{type_name}.p"])
    for type_name in ROS_TYPES:
        pub, sub = finish(pubs[type_name]), finish(subs[type_name])
        check_delivery(type_name, pub, sub, tmp_path / f"{type_name}.p",
                       tmp_path / f"{type_name}.s", SIZES[type_name])


@pytest.mark.integration
def test_zenoh_probe_carries_every_ros2_type(tmp_path):
    require_root()
    with namespace_pair("zt") as pair:
        ports = {t: 7450 + i for i, t in enumerate(ROS_TYPES)}
        _run_four(pair, tmp_path,
                  lambda t: [*ZENOH_PROBE, "sub", "--listen", f"tcp/{pair.edge_addr}:{ports[t]}"],
                  lambda t: [*ZENOH_PROBE, "pub", "--peer", f"tcp/{pair.edge_addr}:{ports[t]}"])


@pytest.mark.integration
def test_mqtt_probe_carries_every_ros2_type(tmp_path):
    require_root()
    require_tool("mosquitto")
    if not MQTT_PROBE.exists():
        pytest.fail(f"{MQTT_PROBE} is not built: run scripts/setup.sh")
    with namespace_pair("mt") as pair:
        broker = start_mosquitto(MosquittoConfig(address=pair.edge_addr), tmp_path,
                                 netns=pair.edge)
        try:
            peer = ["--peer", f"{pair.edge_addr}:{broker.port}"]
            _run_four(pair, tmp_path, lambda t: [MQTT_PROBE, "sub", *peer],
                      lambda t: [MQTT_PROBE, "pub", *peer])
        finally:
            broker.stop()
