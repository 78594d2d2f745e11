"""A scenario's cells for a cluster: the bench's matrix, with ``flow`` placed here.

The bench parses ``flow:`` (bench.fields.FLOWS) but its topics resolver refuses it until
the emulated cluster topologies exist (bench.topics). On a real cluster every flow but
bare-metal is a placement (placement.py), so this module expands the scenario without
the flow and gives every cell each of its flows, with the flow's slug in the cell id
where bench.matrix puts an axis (LOOP_ORDER: after hosts, before middleware). A cell
without a flow is placed by node roles.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from linklab.bench.matrix import LOOP_ORDER, Cell, expand, ordered_keys, slug
from linklab.bench.spec import Scenario


def expand_with_flows(scenario: Scenario) -> list[Cell]:
    flows = scenario.axes.get("flow")
    fixed_flow = scenario.fixed.get("flow")
    if not flows:
        base = replace(scenario, fixed={**scenario.fixed, "flow": None})
        return [replace(c, flow=fixed_flow) for c in expand(base)]
    keys = ordered_keys(scenario)
    axes = {k: v for k, v in scenario.axes.items() if k != "flow"}
    base = replace(scenario, axes=axes, fixed={**scenario.fixed, "flow": None})
    cells_by_combo = expand(base)
    rest_keys = [k for k in keys if k != "flow"]
    value_lists = [base.axes[k] for k in rest_keys] + [list(range(1, base.trials + 1))]
    combos = list(itertools.product(*value_lists))
    assert len(combos) == len(cells_by_combo)
    flow_at = keys.index("flow")
    cells: list[Cell] = []
    # flow is an outer axis before middleware (LOOP_ORDER), so it loops outside them
    outer = [k for k in rest_keys if LOOP_ORDER.index(_order_key(k)) <
             LOOP_ORDER.index("flow")]
    groups: list[list[int]] = []  # product() order: equal outer prefixes are adjacent
    for i in range(len(combos)):
        if groups and combos[groups[-1][0]][:len(outer)] == combos[i][:len(outer)]:
            groups[-1].append(i)
        else:
            groups.append([i])
    for indices in groups:
        for flow in flows:
            for i in indices:
                combo = combos[i]
                values = dict(zip(rest_keys, combo[:-1], strict=True))
                parts = [slug(values[k], k) for k in rest_keys]
                parts.insert(flow_at, slug(flow, "flow"))
                if base.trials > 1:
                    parts.append(f"t{combo[-1]}")
                cell = cells_by_combo[i]
                cells.append(replace(cell, index=len(cells), cell_id="-".join(parts),
                                     flow=flow))
    return cells


def _order_key(key: str) -> str:
    return "link" if key.startswith("link.") else key
