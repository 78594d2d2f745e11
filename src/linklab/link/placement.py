"""Where a link's relay and its endpoints run: the relay on a core of its own, the
commands of ``linklab link exec`` on the others (issue 44: unpinned, the relay shared the
workload's core and forwarded ~30 kpps against 107 kpps pinned).

``linklab link up`` pins by default (``--relay-cpu auto``: the highest CPU this process
may use); a bench run does not (its probes keep every CPU, as its results were measured).
With one CPU there is nothing to separate: nothing is pinned, and status says so.
Pure, but for ``allowed_cpus``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from linklab.errors import UsageError

RELAY_CPU_FORMS = "auto (a CPU of its own), none, or a CPU number"


@dataclass(frozen=True)
class Placement:
    relay_cpu: int
    endpoint_cpus: tuple[int, ...]

    def describe(self) -> dict[str, object]:
        return {"relay_cpu": self.relay_cpu, "endpoint_cpus": list(self.endpoint_cpus)}

    def cpu_list(self) -> str:
        """The endpoints' CPUs as taskset -c takes them."""
        return ",".join(str(c) for c in self.endpoint_cpus)


def allowed_cpus() -> set[int]:
    return set(os.sched_getaffinity(0))


def plan_placement(choice: str | None, allowed: set[int],
                   argument: str = "--relay-cpu") -> Placement | None:
    """``choice``: auto, none (or None), or a CPU number among ``allowed``."""
    text = "none" if choice is None else str(choice).strip().lower()
    if text == "none":
        return None
    if text == "auto":
        if len(allowed) < 2:
            return None
        relay = max(allowed)
    else:
        if not text.isdigit():
            raise UsageError(f"expected {RELAY_CPU_FORMS}, got {choice!r}", argument=argument)
        relay = int(text)
        if relay not in allowed:
            raise UsageError(f"CPU {relay} is not one this process may use "
                             f"({', '.join(map(str, sorted(allowed)))})", argument=argument)
        if len(allowed) < 2:
            raise UsageError("with one CPU the relay cannot have one of its own; "
                             "use --relay-cpu none", argument=argument)
    return Placement(relay, tuple(sorted(allowed - {relay})))


def from_state(state: dict) -> Placement | None:
    raw = state.get("placement")
    if not raw:
        return None
    return Placement(int(raw["relay_cpu"]), tuple(int(c) for c in raw["endpoint_cpus"]))
