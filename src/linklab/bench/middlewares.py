"""The middleware names a scenario may use, reduced to the probe family that runs them.

A leaf module (no linklab imports) so that the runner, a cell's run and its endpoints can
ask it without importing the environment (which imports the runner).
"""

from __future__ import annotations

DDS_BASES = {"fastdds": "fastdds", "fastdds-secure": "fastdds", "cyclonedds": "cyclonedds"}


def base_middleware(middleware: str) -> str:
    """fastdds-secure -> fastdds, mqtt-tls -> mqtt, zenoh-peer-tls -> zenoh, ..."""
    if middleware in DDS_BASES:
        return DDS_BASES[middleware]
    return "zenoh" if middleware.startswith("zenoh") else "mqtt"
