"""A moving node (``link.motion``, linklab.link.radio, or the 802.11 medium's ``motion``
key, linklab.link.medium): loss per stretch of the cell.

A cell whose robots move away from the edge during the cell (paper 002's medium, ns-3
moving them; or the relay's medium, its channel stepping with the robot's distance) has
one loss over the whole cell that hides the change. This table splits
each subscriber's samples, in the order they were published, into WINDOWS equal stretches
and gives the share of each stretch that never arrived: with the robot moving out at
constant speed, a stretch is a stretch of distance, so the row rises where the distance
crosses the medium's loss edge (25 m for 60-byte packets on paper 002's 802.11a, Fig. 4;
about 70 m for 802.11ac over 80 MHz, linklab.model.wifi_channel). From the cell's records
(pub*.bin, sub*.bin); cells without motion are not shown.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from linklab.errors import UsageError
from linklab.link.medium import parse_given
from linklab.probes.records import RecordFileError, read_records
from linklab.report.distance import link_overrides
from linklab.report.view import Section

WINDOWS = 5


def loss_per_window(sent: np.ndarray, received: np.ndarray,
                    windows: int = WINDOWS) -> list[float]:
    """The share of each of ``windows`` equal stretches of the sent sequence numbers (in
    order) that is not among ``received``."""
    order = np.sort(np.unique(sent))
    got = np.isin(order, received)
    return [float(1 - part.mean()) for part in np.array_split(got, windows) if len(part)]


def moving(row: dict[str, Any]) -> tuple[str, str] | None:
    """(distance, motion) as the cell's link wrote them: the radio's fields, or the
    medium's keys; None for a cell that does not move."""
    link = link_overrides(row)
    if link.get("motion") is not None:
        return str(link.get("distance", "")), str(link["motion"])
    try:
        medium = parse_given(link["medium"], None) if link.get("medium") else {}
    except UsageError:
        return None
    if medium.get("motion") is None:
        return None
    return str(medium.get("distance", "")), str(medium["motion"])


def _streams(cell_dir: Path) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    """(published sequence numbers, subscriber file stem -> received ones), or None."""
    pubs, subs = sorted(cell_dir.glob("pub*.bin")), sorted(cell_dir.glob("sub*.bin"))
    if len(pubs) != 1 or not subs:
        return None
    try:
        sent = read_records(pubs[0]).records["seq"]
        return sent, {p.stem: read_records(p).records["seq"] for p in subs}
    except RecordFileError:
        return None


def motion_section(rows: list[dict[str, Any]],
                   cell_dir: Callable[[str], Path]) -> Section | None:
    walks = [(r, found) for r in rows if (found := moving(r)) is not None]
    if not walks:
        return None
    stretches = [f"{k + 1}/{WINDOWS}" for k in range(WINDOWS)]
    section = Section(
        "motion", "Moving node: loss per stretch of the cell (link.motion)",
        ["Cell", "Subscriber", "Distance", "Motion", *stretches],
        legend=f"Each subscriber's samples in publishing order, cut into {WINDOWS} equal "
               "stretches; the share of each that never arrived. The robots move at "
               "constant speed from the distance to the motion's distance, from when the "
               "medium came up (a little before the first sample), then stay.",
        right=tuple(range(4, 4 + WINDOWS)))
    for row, (distance, motion) in walks:
        found = _streams(cell_dir(row["cell_id"]))
        if found is None:
            section.add(row["cell_id"], "no records", "", "", *[""] * WINDOWS)
            continue
        sent, subs = found
        for stem, received in subs.items():
            losses = loss_per_window(sent, received)
            section.add(row["cell_id"], stem, distance, motion,
                        *[f"{v:.0%}" for v in losses])
            section.records.append({"cell_id": row["cell_id"], "subscriber": stem,
                                    "loss_per_window": losses})
    return section
