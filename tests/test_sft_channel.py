"""Request channel (join, change, leave) and ARR end to end, over both middlewares.

Publisher and subscribers run in this process and talk over loopback with unicast
only (Cyclone: peers 127.0.0.1, no multicast; Zenoh: explicit endpoints, no
scouting), on a domain/port unique to this test run.
"""

from __future__ import annotations

import os
import time

import pytest

from linklab import sft
from linklab.sft import samples
from linklab.sft.masks import mask_for_paths

pytestmark = pytest.mark.integration
TYPE = "sensor_msgs/msg/BatteryState"


def configs(middleware: str) -> tuple[sft.TransportConfig, sft.TransportConfig]:
    tag = os.getpid() % 1000
    if middleware == "zenoh":
        port = 21000 + tag
        return (sft.TransportConfig("zenoh", listen=(f"tcp/127.0.0.1:{port}",)),
                sft.TransportConfig("zenoh", peers=(f"tcp/127.0.0.1:{port}",)))
    domain = 100 + tag % 100
    # zenoh_port only makes the two configs differ -> two participants, as two nodes
    return (sft.TransportConfig("cyclonedds", domain=domain, interface="lo",
                                peers=("127.0.0.1",), zenoh_port=1),
            sft.TransportConfig("cyclonedds", domain=domain, interface="lo",
                                peers=("127.0.0.1",), zenoh_port=2))


def wait_for(condition, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def publish_until(pub, condition, timeout: float = 6.0, period: float = 0.05) -> bool:
    message = samples.battery_state()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pub.publish(message)
        time.sleep(period)
        if condition():
            return True
    return False


@pytest.mark.parametrize("middleware", ["cyclonedds", "zenoh"])
def test_join_change_leave(middleware: str) -> None:
    pub_cfg, sub_cfg = configs(middleware)
    sch = sft.schema(TYPE)
    current = mask_for_paths(sch, ["current"])
    with sft.Publisher("sftchan/battery", TYPE, config=pub_cfg) as pub:
        plain: list = []
        wanted: list = []
        with sft.Subscriber("sftchan/battery", TYPE, lambda m, i: plain.append(i.size),
                            config=sub_cfg, with_info=True, sft=False) as _stock, \
             sft.Subscriber("sftchan/battery", TYPE, lambda m, i: wanted.append((m, i)),
                            fields=["current"], config=sub_cfg, with_info=True) as sub:
            # join: the publisher learns the mask; the reader then gets reduced messages
            assert wait_for(lambda: sub.reader_id in pub.masks())
            assert pub.masks()[sub.reader_id] == current
            assert publish_until(pub, lambda: wanted and wanted[-1][1].mask == current)
            message, info = wanted[-1]
            assert info.size == 8 and message.current == pytest.approx(-1.7)
            assert message.voltage == 0.0  # omitted -> default
            # a stock reader still gets full messages (139 B; Cyclone pads to 140)
            assert plain and set(plain) <= {139, 140}
            # change: a new request with a higher sequence number replaces the mask
            sub.set_fields(["current", "voltage"])
            assert wait_for(lambda: pub.masks()[sub.reader_id].count() == 2)
            assert publish_until(pub, lambda: wanted[-1][1].size == 12)
            assert wanted[-1][0].voltage == pytest.approx(24.1)
            assert pub.stats.changes[-1].seq == 2
        # leave: closing the subscriber drops its mask at the publisher
        assert wait_for(lambda: not pub.masks(), timeout=8.0)
        assert pub.stats.leaves >= 1


@pytest.mark.parametrize("middleware", ["cyclonedds", "zenoh"])
def test_arr_records_then_widens_on_a_miss(middleware: str) -> None:
    pub_cfg, sub_cfg = configs(middleware)
    sch = sft.schema(TYPE)
    seen: list = []
    state = {"need_serial": False}

    def callback(message, info) -> None:
        value = message.current
        serial = message.serial_number if state["need_serial"] else None
        seen.append((info.size, value, serial))

    misses: list = []
    with sft.Publisher("sftchan/arr", TYPE, config=pub_cfg) as pub, \
         sft.Subscriber("sftchan/arr", TYPE, callback, record=True, config=sub_cfg,
                        with_info=True, miss_callback=lambda m, p: misses.append(p)) as sub:
        # first message is full (no request yet: 139 B, Cyclone pads to 140); ARR then
        # announces {current}, what the callback read
        assert publish_until(pub, lambda: seen)
        assert seen[0][0] in (139, 140), seen[0]
        assert publish_until(pub, lambda: sub.mask == mask_for_paths(sch, ["current"]))
        assert publish_until(pub, lambda: seen and seen[-1][0] == 8)
        # the callback starts reading a field it did not read before: a miss
        state["need_serial"] = True
        assert publish_until(pub, lambda: misses)
        assert misses[0] == ["serial_number"]
        assert sub.stats.misses >= 1
        assert sub.mask == mask_for_paths(sch, ["current", "serial_number"])
        # the mask was widened at once: the following messages carry the serial number
        assert publish_until(pub, lambda: seen[-1][2] == "BAT-000123")
        assert pub.masks()[sub.reader_id] == mask_for_paths(sch, ["current", "serial_number"])
