"""Bytes and packets on every interface of every host during each cell (``interfaces``
of cells.parquet: the link's counters before and after the cell), for the HTML page and
``--json``; the terminal has the cell's sum (wire bytes / published) in its tables."""

from __future__ import annotations

from typing import Any

from linklab.report.view import Section, count


def interfaces_section(rows: list[dict[str, Any]]) -> Section | None:
    found = [(r, r.get("interfaces")) for r in rows]
    found = [(r, list(i)) for r, i in found if isinstance(i, (list, tuple)) and len(i)]
    if not found:
        return None
    section = Section(
        "interfaces", "Wire bytes per interface",
        ["Cell", "Host", "Interface", "rx bytes", "tx bytes", "rx packets", "tx packets"],
        legend="Counted by the kernel on each interface of each host during the cell "
               "(data, retransmissions, discovery, acks, headers). wire_bytes of a cell is "
               "rx + tx of its publishers' hosts.", right=(3, 4, 5, 6),
        outputs=("html", "json"))
    for row, interfaces in found:
        for entry in interfaces:
            if not isinstance(entry, dict):
                continue
            section.add(str(row["cell_id"]), str(entry.get("host")),
                        str(entry.get("interface")), count(entry.get("rx_bytes")),
                        count(entry.get("tx_bytes")), count(entry.get("rx_packets")),
                        count(entry.get("tx_packets")))
            section.records.append(dict(entry, cell_id=row["cell_id"]))
    return section
