"""ROS 2 QoS requests and the probe flags that carry them (pure: no I/O, no processes).

A :class:`QosRequest` names the four ROS 2 policies the probes take (reliability,
history, depth, durability) and whether unset ones are left to the middleware
(``system_default``, rclcpp's ``SystemDefaultsQoS``). :data:`ROS2_PROFILES` holds
rclcpp's named profiles exactly as rmw defines them. :func:`probe_qos_args` turns a
request into one probe's flags (``--qos``, ``--history``, ``--durability``,
``--system-default``) and refuses, with a one-line :class:`UsageError`, what that probe
cannot take. :func:`unsupported_policies` says which policies a middleware has no such
thing as, in the same sentences the probe's summary puts under
``applied.ros_qos.unsupported``.

What each probe does with the flags (and reads back) is in the ``linklab.probes``
docstring.
"""

from __future__ import annotations

from dataclasses import dataclass

from linklab.errors import UsageError
from linklab.middleware import FAMILIES

POLICIES = ("reliability", "history", "depth", "durability")
PROBES = tuple(FAMILIES)  # fastdds, cyclonedds, mqtt, zenoh
RELIABILITY = ("reliable", "best_effort")
HISTORY = ("keep_last", "keep_all")
DURABILITY = ("volatile", "transient_local")


@dataclass(frozen=True)
class QosRequest:
    """The ROS 2 policies asked for; ``None`` means "not set".

    ``depth`` goes with ``history="keep_last"`` (and only with it). ``system_default``:
    unset policies take the middleware's own defaults (or its --profile file) instead of
    ROS 2's default profile (RELIABLE, KEEP_LAST 10, VOLATILE), which the probes apply
    otherwise.
    """

    reliability: str | None = None  # "reliable" | "best_effort"
    history: str | None = None  # "keep_last" | "keep_all"
    depth: int | None = None  # with keep_last
    durability: str | None = None  # "volatile" | "transient_local"
    system_default: bool = False

    def __post_init__(self) -> None:
        for name, value, accepted in (("reliability", self.reliability, RELIABILITY),
                                      ("history", self.history, HISTORY),
                                      ("durability", self.durability, DURABILITY)):
            if value is not None and value not in accepted:
                raise UsageError(f"expected {' or '.join(accepted)}, got {value!r}",
                                 argument=name)
        if self.history == "keep_last":
            if (not isinstance(self.depth, int) or isinstance(self.depth, bool)
                    or not 1 <= self.depth <= 1_000_000):
                raise UsageError(f"keep_last needs a depth 1..1000000, got {self.depth!r}",
                                 argument="depth")
        elif self.depth is not None:
            raise UsageError(f"a depth goes with history keep_last, not {self.history!r}",
                             argument="depth")


# rclcpp's named profiles, exactly as ros2/rmw rmw/include/rmw/qos_profiles.h defines them
# (rmw_qos_profile_default, _sensor_data, _parameters, _services_default, _system_default;
# https://github.com/ros2/rmw/blob/rolling/rmw/include/rmw/qos_profiles.h). Deadline,
# lifespan and liveliness are left at their defaults there and are not probe policies.
ROS2_PROFILES: dict[str, QosRequest] = {
    "default": QosRequest("reliable", "keep_last", 10, "volatile"),
    "sensor_data": QosRequest("best_effort", "keep_last", 5, "volatile"),
    "parameters": QosRequest("reliable", "keep_last", 1000, "volatile"),
    "services_default": QosRequest("reliable", "keep_last", 10, "volatile"),
    # every policy RMW_QOS_POLICY_*_SYSTEM_DEFAULT, depth RMW_QOS_POLICY_DEPTH_SYSTEM_DEFAULT
    "system_default": QosRequest(system_default=True),
}

# What a probe cannot take is its family's (linklab.middleware.families: unsupported,
# unsupported_sub, refused); the C++ MQTT probe prints the same sentences
# (probes/mqtt/probe_mqtt.cpp, kUnsupported); a test compares.


def _check_probe(probe: str) -> None:
    if probe not in PROBES:
        raise UsageError(f"unknown probe {probe!r}; expected one of {', '.join(PROBES)}",
                         argument="probe")


def unsupported_policies(probe: str, role: str | None = None) -> dict[str, str]:
    """Policies ``probe`` has no such thing as: policy -> one sentence why.

    Empty for the DDS probes. ``role`` ("pub" | "sub") gives that end's; ``None`` what
    either end lacks (the zenoh subscriber has no reliability setting, its publisher has).
    The probe's summary has the same under ``applied.ros_qos.unsupported``, and null for
    those policies' values.
    """
    _check_probe(probe)
    if role not in (None, "pub", "sub"):
        raise UsageError(f"expected pub or sub, got {role!r}", argument="role")
    family = FAMILIES[probe]
    out = dict(family.unsupported)
    if role != "pub":
        out = {**family.unsupported_sub, **out}
    return out


def refusal(probe: str, policy: str, value: str) -> str | None:
    """Why ``probe`` cannot take ``policy=value`` (``None``: it can)."""
    _check_probe(probe)
    return FAMILIES[probe].refused.get((policy, value))


def ros2_profile(name: str) -> QosRequest:
    """rclcpp's named profile ``name`` (a key of :data:`ROS2_PROFILES`)."""
    try:
        return ROS2_PROFILES[name]
    except KeyError:
        raise UsageError(f"unknown ROS 2 QoS profile {name!r}; expected one of "
                         f"{', '.join(ROS2_PROFILES)}", argument="qos profile") from None


def probe_qos_args(request: QosRequest, probe: str,
                   explicit: frozenset[str] = frozenset()) -> list[str]:
    """The flags that give ``probe`` (fastdds | cyclonedds | mqtt | zenoh) ``request``.

    ``explicit`` names the policies (of :data:`POLICIES`) the user set explicitly; the
    others came from a named profile. On MQTT and Zenoh, history and depth from a named
    profile are not passed (the summary's ``unsupported`` says why); an explicit one
    raises :class:`UsageError` naming the policy, the middleware and why. Durability
    transient_local on MQTT / Zenoh always raises: it cannot be left out without changing
    what a late-joining subscriber gets. The same flags go to publisher and subscriber.
    """
    _check_probe(probe)
    unknown = sorted(set(explicit) - set(POLICIES))
    if unknown:
        raise UsageError(f"unknown QoS policy {unknown[0]!r}; expected one of "
                         f"{', '.join(POLICIES)}", argument="explicit")
    unset = sorted(p for p in explicit if getattr(request, p) is None)
    if unset:
        raise UsageError(f"{unset[0]} is named explicit but the request does not set it",
                         argument="explicit")
    args: list[str] = []
    if request.reliability is not None:
        args += ["--qos", request.reliability]
    if request.history is not None:
        why = refusal(probe, "history", request.history)
        if why is None:
            args += ["--history", request.history if request.history == "keep_all"
                     else f"keep_last:{request.depth}"]
        elif explicit & {"history", "depth"}:
            policy = "history" if "history" in explicit else "depth"
            raise UsageError(f"{probe} cannot take it: {why}", argument=policy)
    if request.durability is not None:
        why = refusal(probe, "durability", request.durability)
        if why is not None:
            raise UsageError(f"{request.durability} on {probe}: {why}", argument="durability")
        args += ["--durability", request.durability]
    if request.system_default:
        args.append("--system-default")
    return args
