"""Every middleware a scenario may name, one frozen :class:`Middleware` each.

An entry says all that linklab decides by the middleware: the probe family that runs it
(linklab.middleware.families: QoS, tuner, wire model, discovery gate, model limits), the
profiles it takes and the one-line refusal of the rest, the broker or router it needs,
its security variant. Adding a middleware is adding an entry here (and its probe).

Security on/off (seed 004 Table 4, seed 002 §IV-B) is the secured variant of a
middleware, as a value of the same ``middleware`` axis: ``fastdds-secure`` and
``cyclonedds-secure`` (DDS-Security: PKI-DH, Permissions, AES-GCM-GMAC), ``zenoh-peer-tls``,
``zenoh-router-tls`` and ``mqtt-tls`` (mutual TLS); linklab.brokers.bench_adapter makes
the keystore and passes the enclave's profile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from linklab.middleware.families import CYCLONEDDS, FASTDDS, MQTT, ZENOH, ProbeFamily

TUNED_PROFILES = ("optimized", "optimized-paced")


@dataclass(frozen=True)
class ProfileRule:
    """What a cell's ``profile:`` may be. A name in ``named`` is taken as it is; with
    ``shipped`` any other name is a Fast DDS file shipped in linklab/profiles/ (which
    refuses an unknown one); else another name is refused with ``not_named``. A
    scenario's own file (a name ending .xml or .json5) must end ``own_suffix`` and, for
    XML, have one of ``own_roots`` as its root element; else ``not_own``. The refusals
    are one line, ``{profile}`` and ``{middleware}`` filled in."""

    named: tuple[str, ...]
    not_named: str
    not_own: str
    shipped: bool = False
    own_suffix: str | None = None
    own_roots: tuple[str, ...] = ()
    paced: bool = False  # optimized-paced: a Fast DDS writer paced at T*omega


_FASTDDS_PROFILES = ProfileRule(
    named=TUNED_PROFILES, shipped=True, paced=True, own_suffix=".xml",
    own_roots=("dds", "profiles"),
    not_named="unknown profile {profile!r}",  # shipped_profile() lists the shipped ones
    not_own="{profile} is not a Fast DDS XML profile (<dds> or <profiles>)")
_CYCLONEDDS_PROFILES = ProfileRule(
    named=("default", "optimized"), own_suffix=".xml", own_roots=("CycloneDDS",),
    not_named="profile {profile!r} is a Fast DDS profile; Cyclone DDS takes default, "
              "optimized or a <CycloneDDS> file of your own",
    not_own="{profile} is not a Cyclone DDS configuration (<CycloneDDS>)")
_ZENOH_NOT_NAMED = ("profile {profile!r} is not for Zenoh; Zenoh takes default or a .json5 "
                    "configuration of your own")
_ZENOH_PROFILES = ProfileRule(named=("default",), own_suffix=".json5",
                              not_named=_ZENOH_NOT_NAMED, not_own=_ZENOH_NOT_NAMED)
_MQTT_NOT_NAMED = ("profile {profile!r}: MQTT takes default only (mosquitto's and "
                   "libmosquitto's settings)")
_MQTT_PROFILES = ProfileRule(named=("default",), not_named=_MQTT_NOT_NAMED,
                             not_own=_MQTT_NOT_NAMED)


@dataclass(frozen=True)
class Middleware:
    name: str                  # as a scenario names it, e.g. mqtt-tls
    probe: ProbeFamily         # the probe that runs it
    profiles: ProfileRule
    # the broker or router on the edge host every endpoint is a client of
    # ("mosquitto" | "zenoh-router"); None: the endpoints reach each other
    broker: str | None = None
    # zenoh-peer: each subscriber listens on its own host, its publisher connects to it
    listening_subscribers: bool = False
    plain: str | None = None   # a secured variant: the middleware it secures
    # a secured variant's security: "dds-security" (Fast DDS: linklab's default.xml plus
    # DDS-Security for the enclave; Cyclone: the enclave's Security section alone) |
    # "tls" (the enclave's <probe>_profile, mutual TLS)
    security: str | None = None
    # a secured variant that takes its profile from security only: why no other
    only_default: str | None = None
    # seed 004's bridged architecture (§3.1): the endpoints are DDS probes whose domain
    # stays on their own host (127.0.0.1: "Localhost Only"), and a bridge on each
    # endpoint host carries the serialized samples between hosts over the broker
    # ("mqtt": linklab-bridge-mqtt and mosquitto; "zenoh": linklab-bridge-zenoh, peer to
    # peer or through the router); None: the endpoints speak on the link
    bridge: str | None = None

    @property
    def base(self) -> str:
        """The middleware without its security variant (mqtt-tls -> mqtt)."""
        return self.plain or self.name

    @property
    def secured(self) -> bool:
        return self.plain is not None

    @property
    def brokered(self) -> bool:
        return self.broker is not None

    @property
    def bridged(self) -> bool:
        """DDS endpoints on their own host, bridged between hosts (``bridge``)."""
        return self.bridge is not None

    @property
    def adapted(self) -> bool:
        """Needs more than each other's address (a probe that is not DDS: a broker or
        listening subscribers; a keystore; bridges): linklab.brokers.bench_adapter runs
        it."""
        return self.secured or self.bridged or not self.probe.dds

    def refusal(self, kind: str, **values: str) -> str:
        """The one-line refusal ``kind`` (not_named | not_own | only_default) filled in."""
        text = self.only_default if kind == "only_default" else getattr(self.profiles, kind)
        return text.format(middleware=self.name, **values)


def _secured(plain: Middleware, name: str, security: str, only_default: str) -> Middleware:
    return replace(plain, name=name, plain=plain.name, security=security,
                   only_default=only_default)


_TLS_ONLY = ("{middleware} brings its own TLS configuration; another profile cannot be "
             "combined with it")
_FASTDDS = Middleware("fastdds", FASTDDS, _FASTDDS_PROFILES)
_CYCLONEDDS = Middleware("cyclonedds", CYCLONEDDS, _CYCLONEDDS_PROFILES)
_ZENOH_PEER = Middleware("zenoh-peer", ZENOH, _ZENOH_PROFILES, listening_subscribers=True)
_ZENOH_ROUTER = Middleware("zenoh-router", ZENOH, _ZENOH_PROFILES, broker="zenoh-router")
_MQTT = Middleware("mqtt", MQTT, _MQTT_PROFILES, broker="mosquitto")
# seed 004's "MQTT" as its §3.1 ran it: Cyclone DDS endpoints localhost only, a DDS <-> MQTT
# bridge on each endpoint host, mosquitto where broker_host says (edge by default)
_MQTT_BRIDGE = Middleware("mqtt-bridge", CYCLONEDDS, _CYCLONEDDS_PROFILES, broker="mosquitto",
                          bridge="mqtt")
# and its Zenoh: the subscribers' bridges listen, the publisher's connects to them
# ("Zenoh-TCP"), or every bridge is a client of the router ("Zenoh-broker")
_ZENOH_BRIDGE = Middleware("zenoh-bridge", CYCLONEDDS, _CYCLONEDDS_PROFILES, bridge="zenoh")
_ZENOH_ROUTER_BRIDGE = Middleware("zenoh-router-bridge", CYCLONEDDS, _CYCLONEDDS_PROFILES,
                                  broker="zenoh-router", bridge="zenoh")

MIDDLEWARES: Mapping[str, Middleware] = MappingProxyType({m.name: m for m in (
    _FASTDDS,
    _CYCLONEDDS,
    _MQTT,
    _ZENOH_PEER,
    _ZENOH_ROUTER,
    _secured(_FASTDDS, "fastdds-secure", "dds-security",
             "fastdds-secure runs linklab's default profile with DDS-Security; another "
             "profile cannot be combined with it"),
    _secured(_MQTT, "mqtt-tls", "tls", _TLS_ONLY),
    _secured(_ZENOH_PEER, "zenoh-peer-tls", "tls", _TLS_ONLY),
    _secured(_ZENOH_ROUTER, "zenoh-router-tls", "tls", _TLS_ONLY),
    _secured(_CYCLONEDDS, "cyclonedds-secure", "dds-security",
             "cyclonedds-secure runs Cyclone's defaults with DDS-Security; another "
             "profile cannot be combined with it"),
    _MQTT_BRIDGE,
    _ZENOH_BRIDGE,
    _ZENOH_ROUTER_BRIDGE,
)})
# The values of a scenario's ``middleware`` axis, in the order its errors list them.
NAMES: tuple[str, ...] = tuple(MIDDLEWARES)
