"""The userspace link emulator, seen from Python.

``linklab-emu`` (the Rust relay in ``emu/``) owns one TAP device per side of a link
and forwards frames through a pipeline of stages per direction. This package turns
stage descriptions into the relay's configuration (``directives``, ``config``), parses
what users type (``parse``), starts and stops the relay and reads its counters
(``relay``), and holds the analytic expectations the tests check against
(``models``).
"""

from linklab.emu.config import RelayConfig
from linklab.emu.directives import (
    Corrupt,
    Delay,
    Duplicate,
    FourStateLoss,
    GilbertElliott,
    Loss,
    OnOff,
    Outage,
    Rate,
    Stage,
    Trace,
)
from linklab.emu.relay import Relay, RelayStats, relay_binary

__all__ = [
    "Corrupt", "Delay", "Duplicate", "FourStateLoss", "GilbertElliott", "Loss", "OnOff",
    "Outage", "Rate", "Relay", "RelayConfig", "RelayStats", "Stage", "Trace", "relay_binary",
]
