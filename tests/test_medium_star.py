"""A star of robots on one 802.11 medium (issue 43): one relay carries every robot link,
the robots and the AP contend for one channel, and the AP hands each frame to the robot
it is for -- a group frame once, to every robot.

802.11a at 54 Mbit/s (DCF): one saturated station carries ~29.6 Mbit/s of 1428-byte IP
packets (linklab.model.dcf with n = 1) and three about as much between them, so one robot
at 20 Mbit/s passes without loss, and three at 20 Mbit/s each (60 offered) overflow their
1000-frame queues within the 3 s: on separate channels (a relay per link) they would
carry all 60 Mbit/s and lose nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_root
from linklab.emu.relay import relay_binary
from linklab.link import testbed as link_testbed

# alone (make test runs it after the others, one at a time): it loads the relay's medium
pytestmark = [pytest.mark.integration, pytest.mark.alone]

PY = sys.executable
DATAGRAM = 1400                  # UDP payload; 1428 B IP packets
SECONDS = 3.0
ROBOTS = ("robot1", "robot2", "robot3")
GROUP = "239.7.7.7"

# A receiver that joins GROUP on its host's one interface and counts datagrams until
# idle; prints the count.
GROUP_RECEIVER = """
import socket, struct, sys
port, address = int(sys.argv[1]), sys.argv[2]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("", port))
s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
             struct.pack("4s4s", socket.inet_aton(sys.argv[3]), socket.inet_aton(address)))
print("ready", file=sys.stderr, flush=True)
s.settimeout(10.0)
n = 0
try:
    while True:
        s.recv(4096)
        n += 1
        s.settimeout(1.5)
except socket.timeout:
    pass
print(n)
"""


def receiver(bed, host: str, port: int) -> subprocess.Popen:
    proc = bed.popen(host, [PY, "-m", "linklab.link.udpflow", "recv", "--port", str(port),
                            "--idle", "1.5"],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr.readline().strip() == "ready"
    return proc


def sender(bed, host: str, to: str, port: int, mbit_s: float, seconds: float,
           size: int = DATAGRAM) -> subprocess.Popen:
    pps = mbit_s * 1e6 / (8 * (size + 28))
    return bed.popen(host, [PY, "-m", "linklab.link.udpflow", "send", "--to", to, "--port",
                            str(port), "--pps", f"{pps:.1f}", "--seconds", str(seconds),
                            "--size", str(size), "--gaps", "exponential", "--seed",
                            str(port)],
                     stdout=subprocess.PIPE, text=True)


def flows(bed, senders: dict[str, float], port: int) -> dict[str, dict[str, float]]:
    """Each robot in ``senders`` sends its Mbit/s of 1400-byte datagrams (Poisson) to the
    edge for SECONDS, all at once: sent, received, loss and the Mbit/s of IP packets that
    arrived between the first and the last (the receiver's goodput) per robot."""
    edge = bed.hosts["edge"].address
    receivers = {r: receiver(bed, "edge", port + k) for k, r in enumerate(senders)}
    sending = {r: sender(bed, r, edge, port + k, mbit, SECONDS)
               for k, (r, mbit) in enumerate(senders.items())}
    out = {}
    for r, proc in sending.items():
        sent = json.loads(proc.communicate(timeout=60)[0].splitlines()[-1])["sent"]
        got = json.loads(receivers[r].communicate(timeout=60)[0].splitlines()[-1])
        out[r] = {"sent": sent, "received": got["packets"],
                  "loss": 1 - got["packets"] / sent,
                  "mbit_s": got["goodput_bps"] * (DATAGRAM + 28) / DATAGRAM / 1e6}
    return out


def medium_stage(bed, link: str, direction: str) -> dict:
    return next(s for s in bed.counters()["stages"]
                if s["kind"] == "medium" and s["link"] == link and s["direction"] == direction)


def test_the_robots_of_a_star_share_one_channel(tmp_path: Path):
    require_root()
    relay_binary()
    with link_testbed(None, topology="star", hosts=3, name=f"mst{os.getpid()}",
                      medium="standard=a") as bed:
        alone = flows(bed, {"robot1": 20}, 9301)
        before = medium_stage(bed, "robot1-ap", "up")["medium"]
        crowd = flows(bed, {r: 20 for r in ROBOTS}, 9311)
        after = medium_stage(bed, "robot2-ap", "up")
    print()
    for label, result in (("robot1 alone", alone), ("three robots", crowd)):
        for r, f in result.items():
            print(f"{label:<13} {r}: sent {f['sent']:>5} loss {f['loss']:6.1%} "
                  f"received {f['mbit_s']:5.1f} Mbit/s")
    medium = after["medium"]
    print("stations:", {k: (v["offered_frames"], v["drops_queue"])
                        for k, v in medium["stations"].items()},
          "collisions", medium["collision_probability"])
    assert alone["robot1"]["loss"] < 0.01
    # 60 Mbit/s offered on one 54 Mbit/s channel: every robot loses, and together they
    # carry what one channel can (Bianchi with n = 3: 29.9 Mbit/s), not 60
    for r in ROBOTS:
        assert crowd[r]["loss"] > 0.1, crowd
        assert crowd[r]["mbit_s"] > 6, crowd    # each gets its share (DCF is fair)
    assert sum(f["mbit_s"] for f in crowd.values()) < 36, crowd
    # one medium: the robots are its stations a, a2, a3 (and the AP b), they collided
    # with each other, which one robot alone did not
    assert {"a", "a2", "a3", "b"} <= set(medium["stations"])
    for station in ("a", "a2", "a3"):
        assert medium["stations"][station]["drops_queue"] > 0
    assert before["collision_probability"] == 0 < medium["collision_probability"]
    # link 2's up direction is station a2's: what it delivered to the AP
    assert after["passed_packets"] == medium["stations"]["a2"]["delivered_frames"] > 0


def test_the_ap_hands_each_frame_to_its_robot_and_a_group_frame_once_to_all(tmp_path: Path):
    require_root()
    relay_binary()
    with link_testbed(None, topology="star", hosts=3, name=f"msu{os.getpid()}",
                      medium="standard=a") as bed:
        hosts = bed.hosts
        start = medium_stage(bed, "robot2-ap", "down")["medium"]["stations"]["b"]
        # unicast from the edge to robot2, and from robot1 to robot3 (through the AP)
        to2, to3 = receiver(bed, "robot2", 9401), receiver(bed, "robot3", 9402)
        s1 = sender(bed, "edge", hosts["robot2"].address, 9401, 1, 1.0, size=200)
        s2 = sender(bed, "robot1", hosts["robot3"].address, 9402, 1, 1.0, size=200)
        sent_2 = json.loads(s1.communicate(timeout=60)[0].splitlines()[-1])["sent"]
        sent_3 = json.loads(s2.communicate(timeout=60)[0].splitlines()[-1])["sent"]
        got_2 = json.loads(to2.communicate(timeout=60)[0].splitlines()[-1])["packets"]
        got_3 = json.loads(to3.communicate(timeout=60)[0].splitlines()[-1])["packets"]
        middle = medium_stage(bed, "robot2-ap", "down")["medium"]["stations"]["b"]
        # a group frame from the edge: every robot that joined receives it
        group = {r: bed.popen(r, [PY, "-c", GROUP_RECEIVER, "9403", hosts[r].address, GROUP],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for r in ROBOTS}
        for proc in group.values():
            assert proc.stderr.readline().strip() == "ready"
        s3 = sender(bed, "edge", GROUP, 9403, 0.16, 1.0, size=200)
        sent_g = json.loads(s3.communicate(timeout=60)[0].splitlines()[-1])["sent"]
        got_g = {r: int(p.communicate(timeout=60)[0].split()[-1]) for r, p in group.items()}
        down2 = medium_stage(bed, "robot2-ap", "down")
        ap = down2["medium"]["stations"]["b"]
    print(f"\nunicast: {got_2}/{sent_2} to robot2, {got_3}/{sent_3} robot1 -> robot3; "
          f"group: {got_g} of {sent_g}")
    print("AP:", {k: ap[k] for k in ("delivered_to", "dropped_to", "multicast_merged",
                                     "transmissions")})
    assert sent_2 > 50 and got_2 == sent_2 and got_3 == sent_3
    delivered = [m - s for m, s in zip(middle["delivered_to"], start["delivered_to"], strict=True)]
    # robot2's frames went to robot2 and robot1's to robot3 (a second crossing, down
    # from the AP); robot1 got none of them (a few stray frames at most: IGMP, none here)
    assert delivered[1] >= sent_2 and delivered[2] >= sent_3 and delivered[0] <= 5, delivered
    # the bridge gave the AP each group frame once per robot port; it sent it once (the
    # bridge floods to every port in one pass, so the relay reads the copies in one turn,
    # before the AP's backoff can end: none goes on the air alone)
    assert all(n == sent_g for n in got_g.values()), (got_g, sent_g)
    merged = ap["multicast_merged"] - middle["multicast_merged"]
    assert merged >= 2 * sent_g, (merged, sent_g)
    # and link robot2-ap's down direction counts what the AP handed robot2
    assert down2["passed_packets"] == ap["delivered_to"][1]
