"""Fast DDS XML profiles shipped with linklab (package data).

* ``default.xml``: what a ROS 2 Humble user gets from Fast DDS, written out: UDPv4 only
  (maxMessageSize 65500), RELIABLE, KEEP_ALL, heartbeat 3 s, SYNCHRONOUS publish mode
  (rmw_fastrtps's default in Humble, see the file).
* ``large_data.xml``: the paper's LARGE_DATA baseline for Fast DDS 2.9 (which lacks the
  switch): UDPv4 for discovery, TCPv4 (port 7700) for user data, same writer/reader QoS.
* ``step1.xml``, ``step1-2.xml``: default.xml with paper 000's step 1 alone (maxMessageSize
  1472 B, Fig. 4) and steps 1 and 2 (plus heartbeat 1/(2r) for 30 Hz, Fig. 6); generated
  by linklab.tune.steps.partial_profile (a test keeps them equal).

Both mark their participant, data_writer and data_reader profiles
``is_default_profile="true"``, as ROS 2 expects of FASTRTPS_DEFAULT_PROFILES_FILE.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from linklab.errors import UsageError

PROFILES = ("default", "large_data", "step1", "step1-2")


def profile_path(name: str) -> Path:
    """The shipped profile file ``<name>.xml``."""
    if name not in PROFILES:
        raise UsageError(f"unknown profile {name!r}; shipped: {', '.join(PROFILES)}",
                         argument="--profile")
    return Path(str(resources.files(__name__).joinpath(f"{name}.xml")))
