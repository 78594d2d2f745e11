"""Targeted transmission across network namespaces, and the bytes it saves on the link.

Hosts come from ``linklab.link.testbed`` (star topology: receivers robot1..N behind an
access-point bridge, the publisher on edge; a clean link); bytes are read from each
receiver's interface.
"""

from __future__ import annotations

import pytest

from conftest import require_root, require_tool
from linklab.sft.bench import Settings, Testbed
from linklab.sft.schema import synthetic_type

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(("middleware", "link"), [("cyclonedds", "clean"), ("zenoh", "clean"),
                                                  ("cyclonedds", None)])
def test_each_variant_reaches_only_its_reader(middleware: str, link: str | None) -> None:
    """link None: sft's own namespace star (what ``sft-bench`` uses without --link)."""
    require_root()
    require_tool("ip")
    bed = Testbed(middleware, 2, f"td{middleware[0]}", link=link)
    try:
        settings = Settings(warmup=10, count=10)
        run = bed.trial({"kind": "battery"}, "sft",
                        [{"fields": ["current"], "reads": ["current"]},
                         {"fields": None, "reads": ["current", "voltage"]}], settings)
        reduced, full = run["subs"]
        assert reduced["mask"] == "18:00020" and full["mask"] is None
        # after the warm-up the reduced reader only got the 8-byte variant,
        # the stock reader only full messages (139 B, padded to 140 by Cyclone)
        assert reduced["sizes"] == [8]
        assert full["sizes"] and min(full["sizes"]) >= 139
        assert reduced["received"] == full["received"] == 20
        # and the link to the reduced reader carried fewer bytes
        assert run["bytes"][0] < run["bytes"][1]
    finally:
        bed.close()


@pytest.mark.parametrize("middleware", ["cyclonedds", "zenoh"])
def test_bandwidth_reduction_on_the_link(middleware: str) -> None:
    """Paper 003 §V-C in small: 5 fields x 512 B, the reader uses 2 (recorded by ARR)."""
    require_root()
    bed = Testbed(middleware, 1, f"bw{middleware[0]}", link="clean")
    try:
        synthetic_type(5, 512)
        workload = {"kind": "synthetic", "fields": 5, "size": 512}
        settings = Settings(warmup=15, count=20)
        reads = ["f1", "f3"]
        base = bed.trial(workload, "baseline", [{"reads": reads}], settings)
        sft = bed.trial(workload, "sft", [{"reads": reads, "record": True}], settings)
        assert sft["subs"][0]["mask"] == "5:0a"
        assert sft["subs"][0]["sizes"] == [4 + 2 * 512]
        change = (sft["bytes"][0] - base["bytes"][0]) / base["bytes"][0]
        # 3 of 5 payload fields dropped; headers and acks stay: expect about -50 %
        assert -0.65 < change < -0.35, (base["bytes"], sft["bytes"])
        assert sft["subs"][0]["received"] == base["subs"][0]["received"] == 35
    finally:
        bed.close()
