"""What the tuner writes beyond the paper's three steps, and the history vs the outage."""

import xml.etree.ElementTree as ET

import pytest

from linklab.errors import UsageError
from linklab.tune import TuningInput, tune

KIB = 1024
MIB = 1024 * KIB
FASTDDS_NS = "{http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles}"
CYCLONE_NS = "{https://cdds.io/config}"
SEVERE_512 = TuningInput(rate_hz=30, payload_bytes=512 * KIB, link_bits_per_s=300e6, per=0.2)


def test_fastdds_reader_has_room_for_every_owed_sample_and_writer_is_paced():
    result = tune(SEVERE_512)
    s = result.settings
    assert s.history_depth == 47  # Eq. 6: ceil(300e6/8 * 0.65 / 512 KiB)
    ns = FASTDDS_NS
    root = ET.fromstring(result.fastdds_xml)
    writer = root.find(f".//{ns}data_writer")
    reader = root.find(f".//{ns}data_reader")
    assert writer.findtext(f"{ns}topic/{ns}resourceLimitsQos/{ns}max_samples") == "47"
    assert reader.findtext(f"{ns}topic/{ns}historyQos/{ns}depth") == "47"
    assert reader.findtext(f"{ns}topic/{ns}resourceLimitsQos/{ns}max_samples") == "95"
    assert reader.findtext(
        f"{ns}topic/{ns}resourceLimitsQos/{ns}max_samples_per_instance") == "95"
    assert writer.findtext(f"{ns}qos/{ns}disable_heartbeat_piggyback") == "true"
    # 0.9 x 300 Mbit/s = 33.75 MB/s in 5 ms periods: no CPU contention declared
    assert writer.findtext(f"{ns}throughputController/{ns}bytesPerPeriod") == "168750"
    assert writer.findtext(f"{ns}throughputController/{ns}periodMillisecs") == "5"
    # the XML schema's order: times, throughputController, historyMemoryPolicy
    tags = [child.tag.removeprefix(ns) for child in writer if isinstance(child.tag, str)]
    assert tags[-3:] == ["times", "throughputController", "historyMemoryPolicy"]


@pytest.mark.parametrize("competitors, fitting", [
    (0, ["fastdds", "cyclonedds"]), (4, ["fastdds", "cyclonedds"]), (6, []), (8, [])])
def test_the_cpu_verdict_follows_the_busy_robot_study(competitors, fitting):
    """Issue 38 (docs/RESULTS.md "A busy robot"): the tuned profiles at 512 KiB / 30 Hz
    over PER 20 % delivered every sample in 10 of 10 trials each at 1 and 2 CPU-bound
    competitors per core; at 3 Fast DDS did in 6 of 10 (its writer used 63 % of its share),
    Cyclone reached 29 Hz in 3 of 10 (its serial repair loop wakes late); at 4 neither
    held. The writer plans on half the share the scheduler leaves it."""
    from dataclasses import replace

    result = tune(replace(SEVERE_512, cpu_competitors=competitors, cpu_cores=2))
    assert result.explanation.cpu.fitting == fitting
    assert result.verdict == ("feasible" if fitting else "infeasible")


@pytest.mark.parametrize("competitors, period_ms", [(0, 5), (4, 7), (6, 10), (8, 13)])
def test_the_pacing_period_grows_with_the_cpu_contention_declared(competitors, period_ms):
    """Issue 38: each period of the throughputController starts late by the scheduler's
    wake-up on a busy CPU; the period is long enough that the late ceiling still carries
    the stream (at 3 competitors per core 5 ms delivered every sample in 1 of 10 trials,
    10 ms in 4 of 4, docs/RESULTS.md)."""
    from dataclasses import replace

    from linklab.tune.settings import PACING_HEADROOM, tolerated_lateness_s

    s = tune(replace(SEVERE_512, cpu_competitors=competitors, cpu_cores=2)).settings
    assert s.pacing_period_ms == period_ms
    tolerated = tolerated_lateness_s(s.pacing_bytes_per_s, s.pacing_demand_bytes_per_s,
                                     s.pacing_period_ms / 1000)
    assert tolerated >= s.wakeup_lateness_s  # the late ceiling carries the stream
    late_rate = s.pacing_bytes_per_s * period_ms / (period_ms + s.wakeup_lateness_s * 1000)
    assert late_rate >= PACING_HEADROOM * s.pacing_demand_bytes_per_s


def test_a_writer_that_does_not_get_its_cpu_is_infeasible_with_what_would_fit():
    from dataclasses import replace

    busy = tune(replace(SEVERE_512, cpu_competitors=16, cpu_cores=2))
    assert busy.verdict == "infeasible"
    assert busy.explanation.summary.startswith("INFEASIBLE on this CPU: the CPU leaves the "
                                               "writer 0.118 cores")
    # half of 0.118 cores carries 12 Hz of Cyclone's writer (its loop completes 15.05)
    assert "the largest rate is 12 Hz (Cyclone DDS)" in busy.explanation.summary
    assert "the largest payload is 136 KiB (Fast DDS)" in busy.explanation.summary
    # 4 per core: Fast DDS's writer needs 0.18 of the 0.22 cores it gets (81 %, more than
    # the half it plans on); Cyclone's 0.147 too, and its loop does not keep up
    busy4 = tune(replace(SEVERE_512, cpu_competitors=8, cpu_cores=2))
    assert busy4.verdict == "infeasible" and busy4.explanation.cpu.fitting == []
    assert "of which it may plan on 50% = 0.111" in busy4.explanation.summary
    assert "the largest rate is 22.6 Hz (Cyclone DDS)" in busy4.explanation.summary
    # the verdict is for the middlewares asked: each summary names only its own
    fastdds = tune(replace(SEVERE_512, cpu_competitors=6, cpu_cores=2,
                           middlewares=("fastdds",)))
    assert fastdds.verdict == "infeasible" and "Cyclone" not in fastdds.explanation.summary
    cyclone = tune(replace(SEVERE_512, cpu_competitors=6, cpu_cores=2,
                           middlewares=("cyclonedds",)))
    assert cyclone.verdict == "infeasible" and "Fast DDS" not in cyclone.explanation.summary
    # Cyclone's loop alone: at PER 1 % on 0.25 cores its CPU fits, Fast DDS's does not
    loop = tune(replace(SEVERE_512, per=0.01, cpu_share=0.25))
    assert loop.explanation.cpu.fitting == ["cyclonedds"]
    # at PER 5 % Cyclone's loop keeps up on 0.3 cores (half: 0.15); Fast DDS needs 0.154
    only = tune(replace(SEVERE_512, per=0.05, cpu_share=0.3))
    assert only.explanation.cpu.fitting == ["cyclonedds"]
    assert "use Cyclone DDS" in only.explanation.summary


def test_pacing_period_grows_on_a_slow_link_so_a_period_holds_two_messages():
    s = tune(TuningInput(rate_hz=1, payload_bytes=4 * KIB, link_bits_per_s=1e6)).settings
    assert s.pacing_bytes_per_period >= 2 * s.max_message_size
    assert s.pacing_period_ms > 5
    assert s.pacing_bytes_per_s == pytest.approx(0.9 * 1e6 / 8)


def test_cyclone_loop_follows_the_repair_model():
    severe = tune(SEVERE_512).settings
    mild = tune(TuningInput(rate_hz=30, payload_bytes=512 * KIB, link_bits_per_s=300e6,
                            per=0.01)).settings
    clean = tune(TuningInput(rate_hz=30, payload_bytes=512 * KIB, link_bits_per_s=300e6,
                             per=0.0)).settings
    # one sample per NACK: 30 Hz x 5.6 rounds x 2 -> ~3 ms (measured: 4 ms works, 16.7 not)
    assert 2.5e6 < severe.cyclone_heartbeat_ns < 3.5e6
    assert clean.cyclone_heartbeat_ns == 16_666_667  # 1/(2r): nothing to repair
    assert 15e6 < mild.cyclone_heartbeat_ns <= 16_666_667  # ~1 round per sample at PER 1 %
    # NackDelay covers sending one round's repairs: 20 % of 391 fragments at 300 Mbit/s
    assert severe.cyclone_nack_delay_ns >= severe.cyclone_heartbeat_ns
    slow = tune(TuningInput(rate_hz=30, payload_bytes=512 * KIB, link_bits_per_s=300e6,
                            per=0.2, delay_s=0.004)).settings
    assert slow.cyclone_nack_delay_ns >= 8_000_000  # a repair's round trip: 2 x 4 ms
    assert slow.cyclone_nack_delay_ns <= 16_666_667


def test_cyclone_limits_hold_the_whole_history():
    result = tune(SEVERE_512)
    s = result.settings
    ns = CYCLONE_NS
    root = ET.fromstring(result.cyclonedds_xml)
    assert root.findtext(f".//{ns}Internal/{ns}DefragReliableMaxSamples") == "95"
    assert root.findtext(f".//{ns}Internal/{ns}MaxQueuedRexmitBytes") == f"{47 * 512 * KIB}B"
    # 391 one-fragment messages per sample
    assert root.findtext(f".//{ns}Internal/{ns}MaxQueuedRexmitMessages") == str(47 * 391)
    assert root.findtext(f".//{ns}Internal/{ns}NackDelay") == \
        f"{round(s.cyclone_nack_delay_ns / 1000)}us"
    # Cyclone's own limits stay when they are larger (16 samples, 512 kB, 200 messages)
    small = tune(TuningInput(rate_hz=10, payload_bytes=1 * KIB, link_bits_per_s=64e3, per=0.0,
                             outage_tolerance_s=1)).settings
    assert small.history_depth == 6  # ceil(8000 B/s x 0.65 / 1 KiB)
    assert (small.cyclone_rexmit_bytes, small.cyclone_rexmit_messages,
            small.cyclone_defrag_max_samples) == (512_000, 200, 16)


def test_history_covers_the_outage_when_the_budget_allows():
    # 64 KiB at 30 Hz over 300 Mbit/s: Eq. 6 keeps 372; 20 s = 600 samples, 37.5 MiB,
    # drains in ~2 s through what the live stream leaves of T*omega
    s = tune(TuningInput(rate_hz=30, payload_bytes=64 * KIB, link_bits_per_s=300e6, per=0.0,
                         outage_tolerance_s=20)).settings
    plan = s.history
    assert plan.eq6_depth == 372
    assert plan.covers_outage and s.history_depth == plan.outage_depth == 600
    assert plan.burst_bytes == 600 * 64 * KIB
    assert 1 < plan.drain_s < 3
    assert s.reader_max_samples == 2 * 600 + 1
    assert s.cyclone_whc_high_bytes == 600 * 64 * KIB
    # Eq. 6 already covers a short outage
    short = tune(TuningInput(rate_hz=30, payload_bytes=64 * KIB, link_bits_per_s=300e6,
                             per=0.0, outage_tolerance_s=5)).settings.history
    assert short.depth == 372 and short.covers_outage and "Eq. 6" in short.reason


def test_history_says_why_it_cannot_cover_the_outage():
    # PER 20 % at 512 KiB: the live stream with its repairs fills T*omega
    severe = tune(TuningInput(rate_hz=30, payload_bytes=512 * KIB, link_bits_per_s=300e6,
                              per=0.2, outage_tolerance_s=20)).settings.history
    assert not severe.covers_outage
    assert "drain" in severe.reason or "fills" in severe.reason
    assert severe.depth == severe.eq6_depth == 47
    # 256 KiB, clean: the budget would allow it, the memory cap does not
    big = tune(TuningInput(rate_hz=30, payload_bytes=256 * KIB, link_bits_per_s=300e6,
                           per=0.0, outage_tolerance_s=60)).settings.history
    assert not big.covers_outage and "--history-memory" in big.reason
    bigger = tune(TuningInput(rate_hz=30, payload_bytes=256 * KIB, link_bits_per_s=300e6,
                              per=0.0, outage_tolerance_s=60,
                              history_memory_bytes=1024 * MIB)).settings.history
    assert bigger.covers_outage and bigger.depth == 1800


def test_history_floor_keeps_a_sample_until_it_is_repaired():
    # 512 KiB at 1 Hz over a link whose Eq. 6 keeps 2 samples: 405 fragments at PER 20 %
    # take ~13 heartbeat rounds of 0.5 s: the floor keeps more than Eq. 6
    s = tune(TuningInput(rate_hz=1, payload_bytes=512 * KIB, link_bits_per_s=10e6,
                         per=0.2, outage_tolerance_s=1)).settings
    assert s.history.eq6_depth == 2
    assert s.history_depth == s.history.floor_depth > 2
    assert "repaired" in s.history.reason


@pytest.mark.parametrize(("change", "argument"), [
    ({"delay_s": -0.001}, "--delay"), ({"delay_s": 11.0}, "--delay"),
    ({"history_memory_bytes": 1024}, "--history-memory"),
])
def test_new_inputs_are_checked(change, argument):
    with pytest.raises(UsageError) as err:
        tune(TuningInput(rate_hz=30, payload_bytes=256 * KIB, link_bits_per_s=433e6, **change))
    assert err.value.argument == argument


def test_cyclone_capacity_note_when_the_round_trip_limits_serial_repair():
    # one sample per NACK: 5.6 rounds of >= 2 x 3 ms + sending -> < 30 samples/s
    slow = tune(TuningInput(rate_hz=30, payload_bytes=512 * KIB, link_bits_per_s=300e6,
                            per=0.2, delay_s=0.003)).explanation
    assert any("Cyclone DDS repairs one sample per NACK" in n for n in slow.notes)
    assert "Cyclone DDS cannot keep up" in slow.summary
    fast = tune(SEVERE_512).explanation
    assert not any("Cyclone DDS repairs one sample" in n for n in fast.notes)


def test_pacing_is_divided_by_the_unicast_subscribers():
    # Fast DDS's flow controller counts a message once however many readers get it
    one = tune(TuningInput(rate_hz=10, payload_bytes=64 * KIB, link_bits_per_s=300e6,
                           per=0.0)).settings
    four = tune(TuningInput(rate_hz=10, payload_bytes=64 * KIB, link_bits_per_s=300e6,
                            per=0.0, subscribers=4)).settings
    assert four.pacing_bytes_per_s == pytest.approx(one.pacing_bytes_per_s / 4)


def test_a_forced_history_keeps_the_reader_limits_in_step():
    s = tune(TuningInput(rate_hz=30, payload_bytes=512 * KIB, link_bits_per_s=300e6, per=0.2,
                         history_depth=200)).settings
    assert s.history_depth == s.max_samples == 200
    assert s.reader_max_samples == s.cyclone_defrag_max_samples == 401
    assert s.cyclone_whc_high_bytes == 200 * 512 * KIB
    assert "--history-depth" in s.history.reason
    with pytest.raises(UsageError):
        tune(TuningInput(rate_hz=30, payload_bytes=512 * KIB, link_bits_per_s=300e6,
                         history_depth=0))


def test_set_pacing_replaces_the_one_controller():
    from linklab.tune.fastdds import set_pacing

    xml = set_pacing(tune(SEVERE_512).fastdds_xml, 195e6 / 8)
    root = ET.fromstring(xml)
    ns = FASTDDS_NS
    (controller,) = root.findall(f".//{ns}data_writer/{ns}throughputController")
    assert controller.findtext(f"{ns}bytesPerPeriod") == str(int(195e6 / 8 * 0.005))
    with pytest.raises(ValueError):
        set_pacing("<dds/>", 1e6)
