"""The middleware registry: one frozen object per middleware a scenario may name.

``middleware("mqtt-tls")`` is everything linklab decides by a middleware -- the probe
family that runs it (its binary, the QoS it can and cannot apply, the discovery gate,
the model's limits), the profiles it takes and the one-line refusal of the rest, its
broker or router, its security variant -- so that the rest of linklab looks a capability
up here instead of comparing names. Declarative data just above the core, below the
model: the model, probes, tuner, brokers, bench, field, k8s and drive read it. Adding a
middleware is one entry in ``registry.py`` (plus its probe; a new probe family one in
``families.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

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
T = TypeVar("T")


def _entry(table: Mapping[str, T], name: str, what: str) -> T:
    if name in table:
        return table[name]
    raise UsageError(f"unknown {what} {name!r}; expected one of {', '.join(table)}",
                     argument=what)


def middleware(name: str) -> Middleware:
    """The registry's entry for a scenario's middleware value."""
    return _entry(MIDDLEWARES, name, "middleware")


def family(name: str) -> ProbeFamily:
    """The probe family ``name`` (fastdds | cyclonedds | mqtt | zenoh)."""
    return _entry(FAMILIES, name, "probe")


def family_of(name: str) -> ProbeFamily:
    """The probe family of a scenario's middleware, or of a family named itself
    (fastdds-secure -> fastdds, zenoh-router-tls -> zenoh, zenoh -> zenoh)."""
    return FAMILIES[name] if name in FAMILIES else middleware(name).probe
