"""The middleware names a scenario may use, reduced to the probe family that runs them
(the registry: linklab.middleware).

A leaf of bench (it imports only the registry) so that the runner, a cell's run and its
endpoints can ask it without importing the environment (which imports the runner).
"""

from __future__ import annotations

from linklab.middleware import family_of


def base_middleware(middleware: str) -> str:
    """fastdds-secure -> fastdds, mqtt-tls -> mqtt, zenoh-peer-tls -> zenoh, ..."""
    return family_of(middleware).name
