"""Link specs, presets, topologies and wire choice: pure, no root needed."""

from __future__ import annotations

import pytest

from linklab.errors import EnvironmentProblem, UsageError
from linklab.link import design
from linklab.link.direction_spec import Outage
from linklab.link.impairments import LossStage, OutageStage, RateStage
from linklab.link.impairments.outage_window import parse_outage
from linklab.link.names import parse_netns_name, run_tag
from linklab.link.presets import load_presets
from linklab.link.topology import plan_topology
from linklab.link.wires import Wire, choose_wire, wire_classes


def test_every_preset_cites_a_source_and_builds():
    presets = load_presets()
    for name in ("wifi-ideal", "wifi-mild", "wifi-severe", "wifi-outage", "ethernet-1g",
                 "lan-2.5g"):
        assert name in presets
        assert presets[name]["source"].strip(), name
        design(name, name="t")  # parses and plans


def test_presets_carry_the_papers_conditions():
    assert design("wifi-mild", name="t").spec.up.loss == pytest.approx(0.01)
    severe = design("wifi-severe", name="t").spec
    assert severe.up.loss == severe.down.loss == pytest.approx(0.20)
    outage = design("wifi-outage", name="t").spec.up.outage
    assert outage is not None and outage.length_s == 20.0
    assert design("ethernet-1g", name="t").spec.up.rate_bps == 1e9
    assert design("lan-2.5g", name="t").spec.down.rate_bps == 2.5e9
    ideal = design("wifi-ideal", name="t").spec.up.rate_bps
    assert ideal is not None and ideal < 433e6  # effective rate, below the PHY rate


def test_overrides_replace_preset_values_per_direction():
    spec = design("wifi-severe", name="t", loss="up=1%,down=5%", rate="100Mbit/s").spec
    assert (spec.up.loss, spec.down.loss) == (pytest.approx(0.01), pytest.approx(0.05))
    assert spec.up.rate_bps == spec.down.rate_bps == 100e6


@pytest.mark.parametrize(("kwargs", "argument"), [
    ({"preset": "wifi-nope"}, "PRESET"),
    ({"loss": "150%"}, "--loss"),
    ({"loss": "100%"}, "--loss"),
    ({"rate": "-5Mbit/s"}, "--rate"),
    ({"rate": "100"}, "--rate"),
    ({"outage": "10s"}, "--outage"),
    ({"outage": "10s+"}, "--outage"),
    ({"outage": "5s+10s/3s"}, "--outage"),
    ({"mtu": "100"}, "--mtu"),
    ({"tcp_congestion": "Cubic!"}, "--tcp-congestion"),
    ({"tcp_congestion": ""}, "--tcp-congestion"),
    ({"topology": "ring"}, "--topology"),
    ({"name": "Bad Name"}, "--name"),
])
def test_bad_input_names_the_argument(kwargs, argument):
    preset = kwargs.pop("preset", None)
    kwargs.setdefault("name", "t")
    with pytest.raises(UsageError) as error:
        design(preset, **kwargs)
    assert str(error.value).startswith(argument)
    assert "\n" not in str(error.value)


def test_outage_schedule_windows():
    once = parse_outage("10s+20s")
    assert once == Outage(10.0, 20.0, None)
    assert once.windows(100) == [(10.0, 30.0)]
    assert once.active(10.0) and once.active(29.9) and not once.active(30.0)
    repeating = parse_outage("5s+2s/30s")
    assert repeating.windows(70) == [(5, 7), (35, 37), (65, 67)]
    assert repeating.active(36) and not repeating.active(40)
    assert parse_outage("500ms+1.5s").text() == "500ms+1500ms"


def test_pipeline_per_direction_and_where_rate_sits_in_a_star():
    bed = design(None, topology="star", hosts=3, name="t", loss="2%", rate="50Mbit/s",
                 outage="1s+1s")
    assert [h.name for h in bed.plan.hosts] == ["robot1", "robot2", "robot3", "ap", "edge"]
    robot_link = bed.stages["robot2-ap"]["up"]
    assert [type(s) for s in robot_link] == [OutageStage, LossStage]
    assert [type(s) for s in bed.stages["ap-edge"]["down"]] == [RateStage]  # shared channel
    assert bed.plan.host("robot2").address == "10.77.0.2"
    assert bed.plan.host("edge").address == "10.77.0.100"


def test_addresses_are_stable_and_chain_routes_through_ap():
    chain = plan_topology("chain", "t")
    assert [(h.name, h.address) for h in chain.hosts] == [
        ("robot", "10.77.1.1"), ("ap", "10.77.1.254"), ("edge", "10.77.2.100")]
    assert chain.host("ap").forwarding
    pair = plan_topology("pair", "other-run")
    assert (pair.host("robot").address, pair.host("edge").address) == ("10.77.0.1",
                                                                       "10.77.0.100")


def test_names_carry_the_run_prefix_and_fit_interface_limits():
    plan = plan_topology("star", "a-long-run-name_with-parts", hosts=32)
    tag = run_tag("a-long-run-name_with-parts")
    for link in plan.links:
        for port in (link.a, link.b):
            assert port.ifname.startswith(tag + "-") and len(port.ifname) <= 15
            assert port.netns.startswith("linklab-a-long-run-name_with-parts-")
            assert parse_netns_name(port.netns) == ("a-long-run-name_with-parts", port.host)
    assert parse_netns_name("linklab-x-robot7") == ("x", "robot7")
    assert parse_netns_name("linklab-x-notahost") is None
    assert parse_netns_name("other-x-edge") is None


def test_a_stage_no_wire_can_run_is_a_clear_error_not_a_silent_drop(monkeypatch):
    # Make every wire that could carry delay/jitter unavailable (as on a machine where
    # linklab-emu is not built): the stages must be refused, never silently dropped.
    for wire in wire_classes().values():
        if "delay" in wire.executes:
            monkeypatch.setattr(wire, "unavailable", classmethod(lambda cls: "not built"))
    with pytest.raises(EnvironmentProblem, match="delay, jitter .*not usable.*not built"):
        design(None, name="t", delay="20ms", jitter="5ms")


def test_a_relay_wire_added_as_a_subclass_is_chosen_for_its_stages():
    class FakeRelay(Wire):
        name = "fake-relay-for-test"
        executes = frozenset({"delay", "jitter"})
        priority = 5

        @classmethod
        def unavailable(cls):
            return "not built (test)"

    try:
        with pytest.raises(EnvironmentProblem, match="not built"):
            # requested by name: the real emu wire (linklab/link/wires/tap_relay.py)
            # would otherwise carry the delay
            choose_wire({"delay"}, "fake-relay-for-test")
        FakeRelay.unavailable = classmethod(lambda cls: None)  # type: ignore[method-assign]
        assert choose_wire({"delay"}) is FakeRelay
        assert choose_wire(set()).name == "veth"  # no userspace stage: the kernel wire
        assert choose_wire(set(), "fake-relay-for-test") is FakeRelay
    finally:
        FakeRelay.name = ""  # unregister: wire_classes() skips nameless classes


@pytest.mark.parametrize("loss", ["0.005%", "0.015%", "0.0001%", "12.3456%", "1e-4"])
def test_a_small_loss_is_applied_at_its_value(loss):
    """0.005 % (paper 001's far-field residual loss) was 0 in steps of 0.01 %: no loss."""
    (stage,) = [s for s in design(loss=loss, name="t").stages["robot-edge"]["up"]
                if isinstance(s, LossStage)]
    expected = float(loss.rstrip("%")) / (100 if loss.endswith("%") else 1)
    assert stage.threshold / 1_000_000 == pytest.approx(expected, rel=1e-9)
    assert stage.threshold > 0


@pytest.mark.parametrize("loss", ["0.00015%", "0.00005%", "1e-9"])
def test_a_loss_the_stage_cannot_draw_is_refused_not_rounded(loss):
    with pytest.raises(UsageError, match="--loss: .*steps of 0.0001 %"):
        design(loss=loss, name="t")


# --- TCP congestion control (link-wide) ---------------------------------------------------

def test_a_pinned_congestion_control_is_part_of_the_spec_and_its_description():
    spec = design("wifi-severe", name="t", tcp_congestion="cubic").spec
    assert spec.tcp_congestion == "cubic"
    assert spec.describe()["tcp_congestion"] == "cubic"
    assert design("wifi-severe", name="t").spec.tcp_congestion is None
    assert "tcp_congestion" not in design("wifi-severe", name="t").spec.describe()


def test_a_congestion_control_the_kernel_lacks_is_refused_naming_what_it_has():
    from linklab.link.spec_checks import check_tcp_congestion

    spec = design(None, name="t", tcp_congestion="vegas").spec
    with pytest.raises(UsageError) as error:
        check_tcp_congestion(spec, available=["reno", "cubic"])
    message = str(error.value)
    assert message.startswith("--tcp-congestion: 'vegas' is not available")
    assert "reno, cubic" in message and "\n" not in message
    check_tcp_congestion(design(None, name="t", tcp_congestion="reno").spec,
                         available=["reno", "cubic"], allowed=["reno", "bbr"])
    check_tcp_congestion(design(None, name="t").spec, available=[])  # no pin: nothing asked


def test_a_congestion_control_the_host_does_not_allow_namespaces_is_refused_with_the_fix():
    # the kernel lets a child namespace default only to an allowed algorithm (EPERM else)
    from linklab.link.spec_checks import check_tcp_congestion

    spec = design(None, name="t", tcp_congestion="cubic").spec
    with pytest.raises(UsageError) as error:
        check_tcp_congestion(spec, available=["reno", "bbr", "cubic"], allowed=["reno", "bbr"])
    assert str(error.value) == (
        "--tcp-congestion: 'cubic' is available but a network namespace may only use the "
        "host's allowed ones (reno bbr); allow it on the host first: sysctl -w "
        "net.ipv4.tcp_allowed_congestion_control='reno bbr cubic'")
