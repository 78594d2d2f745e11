"""The one JSON line a probe prints at exit."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from linklab.errors import LinklabError


@dataclass(frozen=True)
class ProbeSummary:
    probe: str
    role: str
    samples: int
    applied: dict[str, Any]
    errors: list[str]
    end_reason: str
    raw: dict[str, Any] = field(repr=False)

    @property
    def ok(self) -> bool:
        return not self.errors


def parse_summary(stdout: str) -> ProbeSummary:
    """The last JSON object line of ``stdout`` (a probe prints exactly one)."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LinklabError(f"probe summary is not valid JSON: {exc}") from None
        missing = [k for k in ("probe", "role", "applied", "samples", "errors") if k not in raw]
        if missing:
            raise LinklabError(f"probe summary lacks {', '.join(missing)}")
        return ProbeSummary(probe=raw["probe"], role=raw["role"], samples=int(raw["samples"]),
                            applied=raw["applied"], errors=list(raw["errors"]),
                            end_reason=str(raw.get("end_reason", "")), raw=raw)
    raise LinklabError("the probe printed no JSON summary")
