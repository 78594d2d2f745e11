"""The options only ``linklab tune`` takes (cli/tune.py; those it shares with linklab
model are in cli/topic_options.py)."""

from __future__ import annotations

from pathlib import Path

from linklab.cli.options import options_from
from linklab.model.scenario import DEFAULT_UTILIZATION
from linklab.tune.inputs import DEFAULT_OUTAGE_TOLERANCE_S

DEFAULT_OUT = "linklab-profiles"

# Each option's help, as --help shows it.
OPTION_HELP = {
    "--utilization": "Share of the link DDS may use, in (0, 1]; 0.6-0.7 for a link nothing else "
                     "uses.",
    "--mtu": "Largest IP packet on the physical link, in bytes.",
    "--ros": "ROS 2 distribution the profiles are for: humble or jazzy.",
    "--per": "Packet error rate to explain the profiles for, e.g. 5%. Default: 1% and 20%, the "
             "losses paper 000 evaluates.",
    "--peer": "A peer to reach by unicast (Cyclone DDS; turns multicast discovery off): an IP "
              "address or host name, optionally with :port. Repeatable.",
    "--outage-tolerance": "Longest link outage the session must survive, e.g. 60s or 2min: a peer "
                          "is given up after 1.5 times this, and announces itself every sixth of "
                          "that.",
    "--delay": "One-way delay of the link, e.g. 3ms (Cyclone DDS waits this long before "
               "repairing; also the link --verify emulates).",
    "--history-memory": "Most memory the history may take to keep samples through an outage "
                        "(--outage-tolerance).",
    "--history-depth": "Keep exactly this many samples in the history (readers' limits follow). "
                       "Default: enough to cover --outage-tolerance where the link share and "
                       "--history-memory allow (paper 000, Eq. 6).",
    "--cpu-load": "CPU-bound work beside the middleware on the publishing machine, per core (e.g. "
                  "2/core) or a number of tasks (e.g. 4): the tuner then says whether the writer "
                  "gets the CPU it needs and whether Cyclone DDS's repair loop keeps up (exit 3 "
                  "if no middleware does). Default: no CPU verdict.",
    "--cpu-share": "Instead of --cpu-load: the CPU the middleware can count on, a share of one "
                   "core (50%) or cores (1.5cores). Default: no CPU verdict.",
    "--cpu-cores": "Cores of the publishing machine, for --cpu-load. Default: this machine's.",
    "--middleware": "Middleware to write a profile for: fastdds and/or cyclonedds (repeatable). "
                    "Default: both. The CPU verdict (exit 3) asks whether one of them holds; "
                    "--verify runs these unless --verify-middleware says otherwise.",
    "--verify": "Then run the written profiles through a short benchmark with the real "
                "middlewares over an emulated link as stated (--link, --per or else 20%, --delay) "
                "and print pass/fail beside the prediction. Needs root. Exit 4 if one fails.",
    "--verify-outage": "With --verify: also cut the link for this long, 1 s into each run, e.g. "
                       "5s. Default: no outage.",
    "--verify-seconds": "With --verify: how long each run publishes. Default: 10s.",
    "--verify-middleware": "With --verify: fastdds and/or cyclonedds (repeatable). Default: those "
                           "of --middleware.",
    "--verify-out": "With --verify: where its run directories go. Default: OUT/verify.",
    "--out": "Directory to write fastdds.xml and cyclonedds.xml into.",
    "--strict": "Exit 3, writing nothing, when the topic needs more than the link share DDS may "
                "use.",
}
_option = options_from(OPTION_HELP)

UTILIZATION = _option(str(DEFAULT_UTILIZATION), "--utilization")
MTU = _option("1500", "--mtu")
ROS = _option("humble", "--ros")
PER = _option(None, "--per")
PEER = _option(None, "--peer")
OUTAGE_TOLERANCE = _option(f"{DEFAULT_OUTAGE_TOLERANCE_S:g}s", "--outage-tolerance")
DELAY = _option("0s", "--delay")
HISTORY_MEMORY = _option("256MiB", "--history-memory")
HISTORY_DEPTH = _option(None, "--history-depth")
CPU_LOAD = _option(None, "--cpu-load")
CPU_SHARE = _option(None, "--cpu-share")
CPU_CORES = _option(None, "--cpu-cores")
MIDDLEWARE = _option(None, "--middleware")
VERIFY = _option(False, "--verify")
VERIFY_OUTAGE = _option(None, "--verify-outage")
VERIFY_SECONDS = _option(None, "--verify-seconds")
VERIFY_MIDDLEWARE = _option(None, "--verify-middleware")
VERIFY_OUT = _option(None, "--verify-out")
OUT = _option(Path(DEFAULT_OUT), "--out")
STRICT = _option(False, "--strict")
