"""Paper 001's header model against the byte counters of a real cluster path.

001 §V-A: RTPS 56 B (best effort), UDP 8, IPv4 20, VXLAN 50, WireGuard 32 (+ its own
IPv4/UDP and padding, model/overhead.py). For each overlay/encryption, real Cyclone DDS
samples (best effort, multicast off) cross from robotpod1 to edgepod1; the bytes the
robot node's underlay port sends, and those the pod's eth0 sends, must be the model's
within 2 %. Discovery and its ICMP replies cost the same in every run, so a run of
N_SMALL samples is taken from a run of N_LARGE: what is left is N_LARGE - N_SMALL
samples' data and nothing else. (Byte counters are not timing: the machine's load does
not change them.)
"""

from __future__ import annotations

import os

import pytest

from cluster_traffic import cyclone_flow
from conftest import require_root, require_tool
from linklab.link import testbed as open_testbed
from linklab.model.overhead import CDR_ENCAPSULATION, path_bytes

pytestmark = pytest.mark.integration

N_SMALL, N_LARGE = 40, 340
CYCLONE_MAX_MESSAGE = 14720     # Cyclone DDS 0.10 General/MaxMessageSize (probe summary)
BYTES_TYPE_FIELDS = 8 + 8 + 4   # linklab_msgs Bytes_: seq, t_send_ns, sequence length
TOLERANCE = 0.02


@pytest.fixture(autouse=True)
def _needs(monkeypatch, tmp_path):
    require_root()
    for tool in ("ip", "tc", "nft", "wireguard-go", "wg", "iptables-nft-restore"):
        require_tool(tool)
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))


@pytest.mark.parametrize(("overlay", "encryption"), [("vxlan", "none"), ("none", "none"),
                                                     ("vxlan", "wireguard"),
                                                     ("none", "wireguard")])
def test_header_model_matches_the_wire_counters(overlay, encryption, tmp_path):
    name = f"m{os.getpid()}{overlay[0]}{encryption[0]}"
    with open_testbed(None, topology="cluster", name=name, overlay=overlay,
                 encryption=encryption) as bed:
        cluster = bed.plan.cluster
        underlay = cluster.node("robot").underlay_if
        assert cluster.options.overlay == overlay and cluster.options.encryption == encryption
        assert cluster.mtu["pod"] == {("vxlan", "none"): 1450, ("none", "none"): 1500}.get(
            (overlay, encryption), 1380)
        for size in (256, 1024, 16384):
            sent = {}
            for count in (N_SMALL, N_LARGE):
                run_dir = tmp_path / f"{size}-{count}"
                run_dir.mkdir()
                flow = cyclone_flow(bed, "robotpod1", "edgepod1", run_dir, size=size,
                                    count=count, rate=1000, qos="best_effort")
                assert flow.published == count
                sent[count] = (flow.delta("robot", underlay), flow.delta("robotpod1", "eth0"),
                               flow.delta("robot", underlay, "tx_packets"))
            samples = N_LARGE - N_SMALL
            serialized = CDR_ENCAPSULATION + BYTES_TYPE_FIELDS + size
            model_under, frames = path_bytes(
                serialized, CYCLONE_MAX_MESSAGE, pod_mtu=cluster.mtu["pod"],
                vxlan=overlay == "vxlan", wireguard_mtu=cluster.mtu.get("wireguard"))
            model_pod, _ = path_bytes(serialized, CYCLONE_MAX_MESSAGE,
                                      pod_mtu=cluster.mtu["pod"])
            wire_under = sent[N_LARGE][0] - sent[N_SMALL][0]
            wire_pod = sent[N_LARGE][1] - sent[N_SMALL][1]
            print(f"{overlay}/{encryption} {size} B: underlay {wire_under / samples:.1f} B "
                  f"per sample, model {model_under} ({frames} frames, measured "
                  f"{(sent[N_LARGE][2] - sent[N_SMALL][2]) / samples:.2f}); pod "
                  f"{wire_pod / samples:.1f}, model {model_pod}")
            assert wire_under == pytest.approx(model_under * samples, rel=TOLERANCE)
            assert wire_pod == pytest.approx(model_pod * samples, rel=TOLERANCE)
