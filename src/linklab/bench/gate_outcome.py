"""A finished run's gates judged against its rows and kept in its gates.json (linklab
bench, linklab k8s run)."""

from __future__ import annotations

import json
from typing import Any

from linklab.bench.gates import Gate, Miss, evaluate


def judge_gates(store: Any, gates: list[Gate]) -> list[Miss]:
    """The gates ``store``'s run missed; gates.json in its directory holds the gates and the
    misses."""
    misses = evaluate(gates, store.rows, store.streams)
    (store.root / "gates.json").write_text(json.dumps(
        {"gates": [g.to_dict() for g in gates], "missed": [m.to_dict() for m in misses]},
        indent=1) + "\n")
    return misses
