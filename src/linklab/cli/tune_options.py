"""The options only ``linklab tune`` takes (cli/tune.py; those it shares with linklab
model are in cli/options.py)."""

from __future__ import annotations

from pathlib import Path

import typer

from linklab.model.scenario import DEFAULT_UTILIZATION
from linklab.tune.inputs import DEFAULT_OUTAGE_TOLERANCE_S

DEFAULT_OUT = "linklab-profiles"

UTILIZATION = typer.Option(str(DEFAULT_UTILIZATION), "--utilization",
                           help="Share of the link DDS may use, in (0, 1]; "
                                "0.6-0.7 for a link nothing else uses.")
MTU = typer.Option("1500", "--mtu", help="Largest IP packet on the physical "
                   "link, in bytes.")
ROS = typer.Option("humble", "--ros", help="ROS 2 distribution the profiles "
                   "are for: humble or jazzy.")
PER = typer.Option(None, "--per",
                   help="Packet error rate to explain the profiles for, e.g. "
                        "5%. Default: 1% and 20%, the losses paper 000 "
                        "evaluates.")
PEER = typer.Option(None, "--peer",
                    help="A peer to reach by unicast (Cyclone DDS; turns "
                         "multicast discovery off): an IP address or host "
                         "name, optionally with :port. Repeatable.")
OUTAGE_TOLERANCE = typer.Option(
    f"{DEFAULT_OUTAGE_TOLERANCE_S:g}s", "--outage-tolerance",
    help="Longest link outage the session must survive, e.g. 60s or 2min: a peer "
         "is given up after 1.5 times this, and announces itself every sixth of "
         "that.")
DELAY = typer.Option("0s", "--delay",
                     help="One-way delay of the link, e.g. 3ms (Cyclone DDS "
                          "waits this long before repairing; also the link "
                          "--verify emulates).")
HISTORY_MEMORY = typer.Option(
    "256MiB", "--history-memory",
    help="Most memory the history may take to keep samples through an outage "
         "(--outage-tolerance).")
HISTORY_DEPTH = typer.Option(
    None, "--history-depth",
    help="Keep exactly this many samples in the history (readers' limits follow). "
         "Default: enough to cover --outage-tolerance where the link share and "
         "--history-memory allow (paper 000, Eq. 6).")
CPU_LOAD = typer.Option(
    None, "--cpu-load",
    help="CPU-bound work beside the middleware on the publishing machine, per core "
         "(e.g. 2/core) or a number of tasks (e.g. 4): the tuner then says whether "
         "the writer gets the CPU it needs and whether Cyclone DDS's repair loop "
         "keeps up (exit 3 if no middleware does). Default: no CPU verdict.")
CPU_SHARE = typer.Option(
    None, "--cpu-share",
    help="Instead of --cpu-load: the CPU the middleware can count on, a share of "
         "one core (50%) or cores (1.5cores). Default: no CPU verdict.")
CPU_CORES = typer.Option(
    None, "--cpu-cores",
    help="Cores of the publishing machine, for --cpu-load. Default: this "
         "machine's.")
MIDDLEWARE = typer.Option(
    None, "--middleware",
    help="Middleware to write a profile for: fastdds and/or cyclonedds "
         "(repeatable). Default: both. The CPU verdict (exit 3) asks whether one of "
         "them holds; --verify runs these unless --verify-middleware says "
         "otherwise.")
VERIFY = typer.Option(
    False, "--verify",
    help="Then run the written profiles through a short benchmark with the real "
         "middlewares over an emulated link as stated (--link, --per or else 20%, "
         "--delay) and print pass/fail beside the prediction. Needs root. Exit 4 if "
         "one fails.")
VERIFY_OUTAGE = typer.Option(
    None, "--verify-outage",
    help="With --verify: also cut the link for this long, 1 s into each run, "
         "e.g. 5s. Default: no outage.")
VERIFY_SECONDS = typer.Option(None, "--verify-seconds",
                              help="With --verify: how long each run "
                                   "publishes. Default: 10s.")
VERIFY_MIDDLEWARE = typer.Option(
    None, "--verify-middleware",
    help="With --verify: fastdds and/or cyclonedds (repeatable). Default: those of "
         "--middleware.")
VERIFY_OUT = typer.Option(None, "--verify-out",
                          help="With --verify: where its run directories go. "
                               "Default: OUT/verify.")
OUT = typer.Option(Path(DEFAULT_OUT), "--out",
                   help="Directory to write fastdds.xml and cyclonedds.xml "
                        "into.")
STRICT = typer.Option(False, "--strict",
                      help="Exit 3, writing nothing, when the topic needs more "
                           "than the link share DDS may use.")
