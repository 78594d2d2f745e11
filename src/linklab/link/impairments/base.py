"""What every impairment class has: its fields, its two backends, its counters.

An impairment is one class (a subclass of :class:`Impairment`, one per module of this
package) that carries everything linklab knows about it:

* ``FIELDS``   -- the preset / ``linklab link up`` fields it reads, each with its
                  :class:`Field` (the ``DirectionSpec`` attribute it fills, the parser that
                  validates a user's value with a one-line error, how ``status`` shows it);
* ``from_flag(text, flag)`` -- a ``linklab link up`` flag's value, checked, as an override;
* ``from_direction(spec, trace_start)`` -- the stage(s) a direction's settings make;
* ``kind``     -- what it does ("loss", "rate", "outage", "delay", ...);
* ``runs_in``  -- ``"kernel"`` (installed on the interfaces the wire produced, with
                  nft/tc/ip) or ``"relay"`` (run by a userspace wire, the emu TAP relay);
* ``params()`` -- what it applies, as plain JSON (shown by ``status``);
* ``install(net, path)`` -- the kernel backend: make it so, through the journaled
                  ``NetOps`` (every change recorded, so ``down`` and ``clean`` undo it);
* ``relay_stage()`` -- the relay backend: the stage of the relay's configuration
                  (``linklab.emu.directives``, one ``stage`` line the Rust relay reads);
                  an impairment the relay cannot run says so there, in one line;
* ``counters(snapshot, path)`` -- packets/bytes passed and dropped, or None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from linklab.emu.directives import Stage as RelayDirective
from linklab.emu.parse import split_directions
from linklab.errors import LinklabError
from linklab.link.direction_spec import DirectionSpec
from linklab.link.netops import NetOps, Snapshot, nft_name
from linklab.link.topology import PathView

DIRECTIONS = ("up", "down")   # up: robot -> edge, down: edge -> robot


@dataclass(frozen=True)
class Field:
    """One preset field of an impairment: the ``DirectionSpec`` attribute it sets, the
    parser of a user's value (value, argument) -> parsed, and its text in ``describe``."""

    attr: str
    parse: Callable[[Any, str | None], Any]
    show: Callable[[Any], Any] = str


@dataclass
class StageCounters:
    passed_packets: int | None = None
    passed_bytes: int | None = None
    dropped_packets: int | None = None
    dropped_bytes: int | None = None

    def to_dict(self) -> dict[str, int | None]:
        return asdict(self)


class Impairment:
    """One impairment on one direction of one link. See the module docstring."""

    kind: ClassVar[str] = "stage"
    runs_in: ClassVar[str] = "kernel"
    # The kind of the relay's stage that runs (and counts) it; None: the relay cannot.
    relay_kind: ClassVar[str | None] = None
    FIELDS: ClassVar[dict[str, Field]] = {}
    # The DirectionSpec attribute whose value, when set, is the one argument of the stage
    # (from_direction's default); None: the class says itself.
    setting: ClassVar[str | None] = None

    @classmethod
    def from_direction(cls, spec: DirectionSpec,
                       trace_start: str | None) -> list[Impairment]:
        """The stage(s) of this impairment that ``spec`` asks for."""
        value = getattr(spec, cls.setting) if cls.setting else None
        return [] if value is None else [cls(value)]

    @classmethod
    def from_flag(cls, text: str, flag: str) -> Any:
        """A ``linklab link up`` flag's text -> its field's override: one value, or
        {"up": .., "down": ..} (``up=A,down=B``; A and B may hold commas)."""
        return split_directions(text, flag)

    def params(self) -> dict[str, Any]:
        raise NotImplementedError

    def install(self, net: NetOps, path: PathView) -> None:
        """Kernel stages: make the change (through ``net``). Relay stages: nothing."""

    def relay_stage(self) -> RelayDirective:
        """The relay's stage for this impairment (relay stages)."""
        raise LinklabError(f"the emu wire cannot run a {self.kind!r} stage")

    def counters(self, snapshot: Snapshot, path: PathView) -> StageCounters | None:
        if self.runs_in == "relay":
            found = snapshot.relay.get((path.link, path.direction, self.kind))
            return StageCounters(**found) if found else None
        return None

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "runs_in": self.runs_in, **self.params()}


# --- kernel stages at the receiver's ingress (nft) --------------------------------------

def chain_counter(path: PathView, kind: str, what: str) -> str:
    return f"{kind}_{what}_{nft_name(path.receiver.ifname)}"


class IngressStage(Impairment):
    """A kernel stage on the receiver's ingress (nft): its drop and pass counters,
    optionally a chain of its own, its ``ingress_rule``, then the pass counter (what it
    let through). A drop there is not reported back to the sender, like a radio error."""

    def ingress_rule(self, path: PathView) -> str:
        raise NotImplementedError

    def own_chain(self, path: PathView) -> str | None:
        return None

    def install(self, net: NetOps, path: PathView) -> None:
        family, chain = net.ingress_chain(path.receiver, path.receiver_shaped)
        ns = path.receiver.netns
        drop, passed = (chain_counter(path, self.kind, w) for w in ("drop", "pass"))
        net.nft_counter(ns, family, drop)
        net.nft_counter(ns, family, passed)
        own = self.own_chain(path)
        if own is not None:
            net.nft(ns, f"add chain {family} {net.table} {own}\n", None,
                    f"nft {self.kind} chain {ns}/{own}")
        net.nft_rule(ns, family, chain, self.ingress_rule(path))
        net.nft_rule(ns, family, chain, f"counter name \"{passed}\"")

    def counters(self, snapshot: Snapshot, path: PathView) -> StageCounters:
        passed = snapshot.nft_counter(path.receiver.netns, chain_counter(path, self.kind, "pass"))
        dropped = snapshot.nft_counter(path.receiver.netns,
                                       chain_counter(path, self.kind, "drop"))
        return StageCounters(passed[0], passed[1], dropped[0], dropped[1])
