"""Fast DDS XML profiles shipped with linklab (package data).

* ``default.xml``: what a ROS 2 Humble user gets from Fast DDS, written out: UDPv4 only
  (maxMessageSize 65500), RELIABLE, KEEP_ALL, heartbeat 3 s, ASYNCHRONOUS publish mode.
* ``large_data.xml``: the paper's LARGE_DATA baseline for Fast DDS 2.9 (which lacks the
  switch): UDPv4 for discovery, TCPv4 (port 7700) for user data, same writer/reader QoS.

Both mark their participant, data_writer and data_reader profiles
``is_default_profile="true"``, as ROS 2 expects of FASTRTPS_DEFAULT_PROFILES_FILE.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from linklab.errors import UsageError

PROFILES = ("default", "large_data")


def profile_path(name: str) -> Path:
    """The shipped profile file ``<name>.xml``."""
    if name not in PROFILES:
        raise UsageError(f"unknown profile {name!r}; shipped: {', '.join(PROFILES)}",
                         argument="--profile")
    return Path(str(resources.files(__name__).joinpath(f"{name}.xml")))
