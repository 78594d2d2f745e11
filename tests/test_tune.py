"""The tuner: settings from the paper's framework (000 IV-F), explanation, files."""

import xml.etree.ElementTree as ET

import pytest

from linklab.errors import UsageError
from linklab.tune import TuningInput, tune, write_profiles

KIB = 1024
PAPER = TuningInput(rate_hz=30, payload_bytes=256 * KIB, link_bits_per_s=433e6)
FASTDDS_NS = "{http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles}"
CYCLONE_NS = "{https://cdds.io/config}"


def test_paper_example_settings():
    s = tune(PAPER).settings
    assert s.max_message_size == 1472  # Step 1: 1500 - 20 - 8
    assert s.heartbeat_hz == 60  # Step 2: n = 2r
    assert s.heartbeat_period_ns == 16_666_667
    assert s.history_depth == 135  # Step 3: ceil(433e6/8 * 0.65 / 262144)
    assert (s.max_samples, s.max_samples_per_instance) == (135, 135)
    assert s.reliability == "RELIABLE"
    assert s.cyclone_whc_high_bytes == 135 * 256 * KIB
    # default --outage-tolerance 60 s: lease = 60 s + 2 announcement periods, period lease/6
    assert (s.lease_duration_ns, s.lease_announcement_ns) == (90 * 10**9, 15 * 10**9)


def test_lease_outlasts_the_outage_tolerance():
    for outage in (1.0, 20.0, 45.5, 600.0):
        s = tune(TuningInput(rate_hz=30, payload_bytes=256 * KIB, link_bits_per_s=433e6,
                             outage_tolerance_s=outage)).settings
        # the lease holds the outage plus two announcement periods (last one before the cut
        # may be a period old, the first one after it may be lost)
        assert s.lease_duration_ns >= outage * 1e9 + 2 * s.lease_announcement_ns
        assert s.lease_duration_ns == 6 * s.lease_announcement_ns
    # the paper's 20 s outage is longer than Fast DDS's 20 s default lease minus a period
    assert tune(TuningInput(rate_hz=30, payload_bytes=256 * KIB, link_bits_per_s=433e6,
                            outage_tolerance_s=20)).settings.lease_duration_ns == 30 * 10**9


def test_omega_is_applied_as_eq6_says():
    half = tune(TuningInput(rate_hz=30, payload_bytes=256 * KIB, link_bits_per_s=433e6,
                            utilization=0.325)).settings
    full = tune(TuningInput(rate_hz=30, payload_bytes=256 * KIB, link_bits_per_s=433e6,
                            utilization=1.0)).settings
    assert (half.history_depth, full.history_depth) == (68, 207)


@pytest.mark.parametrize(("mtu", "overlay", "expected"),
                         [(1500, "none", 1472), (1500, "vxlan", 1422),
                          (1500, "wireguard", 1412), (9000, "none", 8972), (1450, "none", 1422)])
def test_max_message_size_fits_one_packet(mtu, overlay, expected):
    result = tune(TuningInput(rate_hz=30, payload_bytes=256 * KIB, link_bits_per_s=433e6,
                              mtu=mtu, overlay=overlay))
    assert result.settings.max_message_size == expected
    assert result.settings.cyclone_fragment_size == expected - 128


def test_explanation_names_the_three_causes_and_before_after_numbers():
    e = tune(PAPER).explanation
    causes = " ".join(s.cause for s in e.settings)
    for cause in ("IP fragmentation", "retransmission timing", "buffer burst"):
        assert cause in causes
    assert [c.per for c in e.conditions] == [0.01, 0.20]  # the paper's mild and severe loss
    severe = e.conditions[1]
    assert severe.before.n_ip == 44 and severe.after.n_ip == 1
    assert severe.before.verdict == "fails" and severe.after.verdict == "feasible"
    assert severe.after.r_dds_bytes_per_s < severe.before.r_dds_bytes_per_s / 2
    assert severe.after.burst_bytes < severe.before.burst_bytes / 100
    assert e.verdict == "feasible"
    assert e.outage_burst_before_bytes == 400 * 256 * KIB
    assert e.outage_burst_after_bytes == 135 * 256 * KIB


def test_publish_rate_above_link_share_is_called_infeasible_with_what_fits():
    # 512 KiB at 30 Hz = 125.8 Mbit/s; over 100 Mbit/s with omega 0.65 -> 65 Mbit/s share
    r = tune(TuningInput(rate_hz=30, payload_bytes=512 * KIB, link_bits_per_s=100e6))
    e = r.explanation
    assert r.verdict == "infeasible"
    assert e.max_rate_hz == pytest.approx(100e6 / 8 * 0.65 / (512 * KIB))
    assert e.max_payload_bytes == int(100e6 / 8 * 0.65 / 30)
    assert "INFEASIBLE" in e.summary and "15.4 Hz" in e.summary and "264.5 KiB" in e.summary


def test_subscribers_share_the_budget():
    r = tune(TuningInput(rate_hz=30, payload_bytes=256 * KIB, link_bits_per_s=433e6,
                         subscribers=4))
    assert r.settings.history_depth == 34  # ceil(135 / 4)
    assert any("4 unicast subscribers" in n for n in r.explanation.notes)
    assert tune(TuningInput(rate_hz=30, payload_bytes=256 * KIB, link_bits_per_s=433e6,
                            subscribers=5)).verdict == "infeasible"


def test_fastdds_xml_carries_the_settings_under_rmw_fastrtps_profile_names():
    root = ET.fromstring(tune(PAPER).fastdds_xml)
    ns = FASTDDS_NS
    assert root.findtext(f".//{ns}transport_descriptor/{ns}maxMessageSize") == "1472"
    assert root.findtext(f".//{ns}useBuiltinTransports") == "false"
    for tag in ("participant", "data_writer", "data_reader"):
        assert root.find(f".//{ns}{tag}").get("is_default_profile") == "true"
    writer = root.find(f".//{ns}data_writer")
    assert writer.findtext(f"{ns}times/{ns}heartbeatPeriod/{ns}nanosec") == "16666667"
    assert writer.findtext(f"{ns}topic/{ns}historyQos/{ns}depth") == "135"
    assert writer.findtext(f"{ns}qos/{ns}reliability/{ns}kind") == "RELIABLE"
    assert writer.findtext(f"{ns}qos/{ns}publishMode/{ns}kind") == "ASYNCHRONOUS"
    disc = root.find(f".//{ns}participant/{ns}rtps/{ns}builtin/{ns}discovery_config")
    assert disc.findtext(f"{ns}leaseDuration/{ns}sec") == "90"
    assert disc.findtext(f"{ns}leaseAnnouncement/{ns}sec") == "15"


def test_cyclone_xml_and_unicast_peers():
    root = ET.fromstring(tune(PAPER).cyclonedds_xml)
    ns = CYCLONE_NS
    assert root.findtext(f".//{ns}General/{ns}MaxMessageSize") == "1472B"
    # sized for the paper's worst condition, PER 20 %: faster than 1/(2r) (test below)
    assert root.findtext(f".//{ns}Internal/{ns}HeartbeatInterval") == "3399us"
    assert root.findtext(f".//{ns}Internal/{ns}DefragReliableMaxSamples") == str(2 * 135 + 1)
    assert root.findtext(f".//{ns}Watermarks/{ns}WhcHigh") == f"{135 * 256 * KIB}B"
    assert root.find(f".//{ns}Peers") is None
    assert root.findtext(f".//{ns}Discovery/{ns}LeaseDuration") == "90000000us"
    assert root.findtext(f".//{ns}Discovery/{ns}SPDPInterval") == "15000000us"
    peered = ET.fromstring(tune(TuningInput(rate_hz=30, payload_bytes=256 * KIB,
                                            link_bits_per_s=433e6,
                                            peers=("10.0.0.2", "robot.local"))).cyclonedds_xml)
    assert peered.findtext(f".//{ns}AllowMulticast") == "false"
    assert [p.get("Address") for p in peered.iter(f"{ns}Peer")] == ["10.0.0.2", "robot.local"]
    assert len(peered.findall(f".//{ns}Discovery")) == 1  # peers and lease share one element
    assert peered.findtext(f".//{ns}Discovery/{ns}LeaseDuration") == "90000000us"


@pytest.mark.parametrize(("change", "argument"), [
    ({"rate_hz": 0}, "--rate"), ({"rate_hz": -1}, "--rate"), ({"rate_hz": 1e9}, "--rate"),
    ({"payload_bytes": 0}, "--payload"), ({"link_bits_per_s": 0}, "--link"),
    ({"utilization": 0}, "--utilization"), ({"utilization": 1.2}, "--utilization"),
    ({"mtu": 100}, "--mtu"), ({"overlay": "gre"}, "--overlay"), ({"subscribers": 0},
                                                                  "--subscribers"),
    ({"ros": "iron"}, "--ros"), ({"per": 1.0}, "--per"),
    ({"payload_bytes": 100 * 1024**2, "link_bits_per_s": 100e6}, "--payload"),
    ({"peers": ("bad peer",)}, "--peer"),
    ({"outage_tolerance_s": 0.5}, "--outage-tolerance"),
    ({"outage_tolerance_s": 7 * 86400}, "--outage-tolerance"),
])
def test_bad_input_names_the_argument(change, argument):
    fields = {"rate_hz": 30, "payload_bytes": 256 * KIB, "link_bits_per_s": 433e6, **change}
    with pytest.raises(UsageError) as err:
        tune(TuningInput(**fields))
    assert err.value.argument == argument
    assert "\n" not in str(err.value)


def test_write_profiles_writes_both_files(tmp_path):
    result = tune(PAPER)
    paths = write_profiles(result, tmp_path / "profiles")
    assert set(paths) == {"fastdds", "cyclonedds"}
    assert paths["fastdds"].read_text() == result.fastdds_xml
    assert paths["cyclonedds"].read_text() == result.cyclonedds_xml
    assert sorted(p.name for p in (tmp_path / "profiles").iterdir()) == [
        "cyclonedds.xml", "fastdds.xml"]


def test_write_profiles_refuses_a_file_as_directory(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(UsageError):
        write_profiles(tune(PAPER), target)
