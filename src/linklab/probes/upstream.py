"""Known failures of the middlewares themselves, recognised by their signature.

A cell that fails for one of these is not the link's fault and not linklab's: the runner
marks it (``known_failure``), the report says so, and nothing is retried blindly. Each
entry names the evidence in docs/RESULTS.md.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KnownFailure:
    name: str
    signature: str      # text a probe's log carries when it happened
    evidence: str       # where docs/RESULTS.md measured it

    def describe(self) -> str:
        return f"{self.name} ({self.evidence})"


# Fast DDS 2.9.1's TCP transport loses its RTCP logical-port negotiation when both sides
# connect at once: nothing arrives although the writer reports every sample acknowledged
# (5 of 80 runs of the large_data profile).
FASTDDS_TCP_NEGOTIATION = KnownFailure(
    "Fast DDS 2.9.1 TCP logical-port negotiation race",
    "add_logical_port_response, but the transaction id wasn't registered",
    "docs/RESULTS.md, 'Fast DDS 2.9 over TCP'")

KNOWN_FAILURES = (FASTDDS_TCP_NEGOTIATION,)


def recognise(logs: list[str]) -> KnownFailure | None:
    """The known failure whose signature is in one of the probes' logs (stderr). Ask only
    about a run that came up short: a run that delivered everything needs no excuse."""
    for failure in KNOWN_FAILURES:
        if any(failure.signature in text for text in logs):
            return failure
    return None
