"""The kernel wire: a veth pair created directly inside the two host namespaces."""

from __future__ import annotations

from typing import ClassVar

from linklab.link.impairments import Impairment
from linklab.link.netops import NetOps
from linklab.link.topology import LinkPlan
from linklab.link.wires import Wire


class VethWire(Wire):
    name: ClassVar[str] = "veth"
    executes: ClassVar[frozenset[str]] = frozenset()
    priority: ClassVar[int] = 0

    def build(self, net: NetOps, link: LinkPlan, relay_stages: dict[str, list[Impairment]]) -> None:
        net.veth(link.a, link.b)
