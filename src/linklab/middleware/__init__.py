"""The middleware registry: one frozen object per middleware a scenario may name.

``middleware("mqtt-tls")`` is everything linklab decides by a middleware -- the probe
family that runs it (its binary, the QoS it can and cannot apply, the discovery gate,
the model's limits), the profiles it takes and the one-line refusal of the rest, its
broker or router, its security variant -- so that the rest of linklab looks a capability
up here instead of comparing names. Declarative data at the model layer: the probes,
tuner, security, brokers and bench all read it. Adding a middleware is one entry in
``registry.py`` (plus its probe; a new probe family one in ``families.py``).
"""

from __future__ import annotations

from linklab.errors import UsageError
from linklab.middleware.families import (
    BUILT_PROBES,
    DDS_FAMILIES,
    FAMILIES,
    ProbeFamily,
)
from linklab.middleware.registry import (
    MIDDLEWARES,
    NAMES,
    TUNED_PROFILES,
    Middleware,
    ProfileRule,
)

__all__ = [
    "BUILT_PROBES", "DDS_FAMILIES", "FAMILIES", "MIDDLEWARES", "NAMES", "TUNED_PROFILES",
    "Middleware", "ProbeFamily", "ProfileRule", "family", "family_of", "middleware",
]


def middleware(name: str) -> Middleware:
    """The registry's entry for a scenario's middleware value."""
    try:
        return MIDDLEWARES[name]
    except KeyError:
        raise UsageError(f"unknown middleware {name!r}; expected one of {', '.join(NAMES)}",
                         argument="middleware") from None


def family(name: str) -> ProbeFamily:
    """The probe family ``name`` (fastdds | cyclonedds | mqtt | zenoh)."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise UsageError(f"unknown probe {name!r}; expected one of {', '.join(FAMILIES)}",
                         argument="probe") from None


def family_of(name: str) -> ProbeFamily:
    """The probe family of a scenario's middleware, or of a family named itself
    (fastdds-secure -> fastdds, zenoh-router-tls -> zenoh, zenoh -> zenoh)."""
    return FAMILIES[name] if name in FAMILIES else middleware(name).probe
