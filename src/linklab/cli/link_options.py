"""The options of ``linklab link`` commands, each written once (several commands share
``--name``, ``--presets`` and ``--json``; ``up`` takes the rest)."""

from __future__ import annotations

from typing import Any

import typer


def text_option(flag: str, help: str, default: Any = None) -> Any:
    """An option whose value is text (parsed by linklab.link), None when not given."""
    return typer.Option(default, flag, help=help)


NAME_HELP = ("Name of the link, so several can be up at once (its namespaces are "
             "linklab-NAME-HOST).")
PRESETS_HELP = ("A YAML file of your own presets (format: linklab link presets --help); "
                "may be given more than once.")

NAME = text_option("--name", NAME_HELP, "default")
PRESETS = typer.Option(None, "--presets", help=PRESETS_HELP)
JSON = typer.Option(False, "--json", help="Print JSON.")

# --- linklab link up -------------------------------------------------------------------

PRESET = typer.Argument(None, help="The link to emulate: wifi-ideal, wifi-mild, "
                        "wifi-severe, wifi-outage, ethernet-1g, lan-2.5g; with the "
                        "emulator: 4g, wifi, cloud; on a shared 802.11 medium: "
                        "wifi-ac-medium (and -mild, -severe, -outage: paper 000's "
                        "conditions on it), wifi-n-medium, wifi-ax-medium; a simulated "
                        "radio (802.11a in ns-3, as in paper 002, Evaluation of ROS 2 in Lossy "
                        "Unmanned Networks): wifi-80211a, wifi-far, "
                        "wifi-80211a-curve; or one of a --presets FILE. List "
                        "them: linklab link presets. Default: a clean link with "
                        "only the options given.")
TOPOLOGY = text_option("--topology", "How the hosts are joined: "
                       "pair (robot and edge), star (--hosts robots around one "
                       "access point), chain (robot, a routing access point, "
                       "edge) or cluster (nodes and pods, as in paper 001, "
                       "ROS 2 Deployments on Kubernetes).", "pair")
HOSTS = typer.Option(1, "--hosts", help="Robots in a star topology.")
UP_JSON = typer.Option(False, "--json", help="Print the status as JSON.")

# cluster topologies (paper 001)
NODES = text_option("--nodes", "Cluster: nodes, from 2 (robot and "
                    "edge) to 8 (robot1..robot7 and edge on one switch). "
                    "Default: 2.")
PODS = text_option("--pods", "Cluster: pods per node. Default: 2.")
OVERLAY = text_option("--overlay", "Cluster: vxlan (pod MTU 1450) "
                      "or none (direct routing). Default: vxlan.")
ENCRYPTION = text_option("--encryption", "Cluster: none or "
                         "wireguard (WireGuard between nodes, pod MTU 1380). "
                         "Default: none.")
DATAPATH = text_option("--datapath", "Cluster: iptables (kube-proxy "
                       "rules, connection tracking) or ebpf (tc redirects). "
                       "Default: iptables.")

# the kernel stages and link-wide settings
LOSS = text_option("--loss", "Packet loss, e.g. 1%, or per "
                   "direction up=1%,down=20% (up: robot to edge). Default: the "
                   "preset's.")
RATE = text_option("--rate", "Rate limit, e.g. 433Mbit/s. Default: "
                   "the preset's.")
OUTAGE = text_option("--outage", "Cut the link for LENGTH, START into the run, "
                     "optionally again every PERIOD: START+LENGTH[/PERIOD], "
                     "e.g. 10s+20s or 5s+2s/30s. Default: the preset's.")
MTU = text_option("--mtu", "Largest IP packet in bytes, e.g. 1500. "
                  "Default: the preset's.")
TCP_CONGESTION = text_option(
    "--tcp-congestion", "TCP congestion control in every namespace, "
    "e.g. cubic (stock Debian/Ubuntu), reno or bbr. Default: the host's, recorded.")

# the emulator's stages (linklab.link.impairments: relay) and its relay
DELAY = text_option("--delay", "One-way delay (with the emulator), "
                    "e.g. 30ms or up=30ms,down=20ms. Default: the preset's.")
JITTER = text_option("--jitter", "Variation of the delay (with the "
                     "emulator), e.g. 5ms. Default: the preset's.")
JITTER_DISTRIBUTION = text_option(
    "--jitter-distribution",
    "Shape of the delay variation: uniform, normal, pareto or paretonormal. "
    "Default: the preset's, else uniform (as netem).")
LOSS_MODEL = text_option("--loss-model", "Loss in bursts (with the emulator), a "
                         "Gilbert-Elliott model gemodel:p,r,1-h,1-k (p: chance "
                         "to enter the bad state, r: to leave it, 1-h: loss in "
                         "the bad state, 1-k: loss in the good one), e.g. "
                         "gemodel:1%,30%,100%,0%.")
TRACE = text_option("--trace", "Replay a recorded link (with the "
                    "emulator): Mahimahi delivery traces up.trace,down.trace, "
                    "or one file for both directions.")
QUEUE = text_option("--queue", "What the queue in front of the "
                    "rate or trace does when full or slow (with the emulator): "
                    "droptail (drop the newcomer), headdrop (drop the oldest) "
                    "or codel (drop once frames wait over 5 ms), e.g. codel or "
                    "up=codel,down=droptail. Default: droptail.")
QUEUE_LIMIT = text_option("--queue-limit", "The most that queue "
                          "holds: 200packets, a size such as 1MiB, or both "
                          "(200packets+1MiB). Default: 50 ms at the rate (a "
                          "trace: 64 MiB).")
TRACE_START = text_option("--trace-start", "When a --trace starts: "
                          "first-packet (the link's first frame), now, or a "
                          "UTC time such as 2026-11-28T10:30:00Z. Default: "
                          "when the link comes up.")
RELAY_CPU = text_option("--relay-cpu", "The CPU the emulator's "
                        "relay runs on; `link exec` then runs on the others: "
                        "auto (the highest CPU; none with one CPU), none, or "
                        "a CPU number.", "auto")

# the relay's shared 802.11 medium (issue 43)
MEDIUM = text_option("--medium", "A shared 802.11 medium (with the emulator; a pair, "
                     "or a star's robots and one AP): KEY=VALUE,... over the preset's medium, e.g. "
                     "standard=ac,mcs=9,stations=8. Keys: standard (a, n, ac, ax), band, "
                     "width, streams, mcs, guard, per, multicast_per, retry_limit, "
                     "aggregation, aggregation_bytes, queue, queue_bytes, stations, "
                     "station_load, station_frame; distance (e.g. 25m: errors and MCS "
                     "from it, in place of per), tx_power, rssi (e.g. -66dBm, instead of a "
                     "distance), rate_control (best, fixed), motion (e.g. 60m over 30s: "
                     "a pair's robot moves from distance to 60 m over 30 s). "
                     "Replaces --rate; --loss stays (IP-level, at the receiver).")

# a simulated radio (paper 002)
RADIO = text_option("--radio", "Simulated radio (paper 002): ns3 "
                    "(a real-time 802.11a simulation) or curve (its measured "
                    "loss against distance, no simulator).")
DISTANCE = text_option("--distance", "Radio: each robot's distance "
                       "from the edge, e.g. 25.5m (a radio preset, or --radio "
                       "ns3).")
TX_POWER = text_option("--tx-power", "Radio: every station's "
                       "transmit power, e.g. 16.0206dBm. Default: ns-3's, "
                       "16.0206dBm.")
