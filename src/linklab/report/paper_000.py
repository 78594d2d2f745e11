"""Seed 000's Table II, as printed (../shared/seeds/000_10b8b18b6f5db8a8.txt §V-C; the
values are in paper_000.yaml).

Values per condition and profile for payloads 32, 64, 128, 256, 512 KB at 30 Hz,
RELIABLE, KEEP_ALL, 1000 messages, averaged over five message types x five trials on
two laptops over 802.11ac (433 Mbit/s). ``None`` is the paper's "—" (not completed, or
mean latency above 100 intervals = 3300 ms). The paper writes KB; linklab's scenario
uses KiB for these columns (the paper's sizes are nominal message sizes).
"""

from __future__ import annotations

from linklab.report.paper_tables import paper_tables

PAYLOADS_KB = (32, 64, 128, 256, 512)
PROFILES = ("default", "large_data", "optimized")
CONDITIONS = ("ideal", "mild", "severe", "outage")
CONDITION_TITLES = dict(zip(CONDITIONS, ("(a) Ideal link", "(b) Mild loss, PER 1 %",
                                          "(c) Severe loss, PER 20 %",
                                          "(d) Link outage, 20 s"), strict=True))
# Which link presets are the paper's conditions (linklab.link presets): the delay-free
# ones (wifi-ideal, ...), and the calibrated 802.11ac ones (wifi-ac-ideal, ...;
# presets-emu.yaml: the same injected loss and outage on a link with Wi-Fi's delay and
# residual loss, fitted to this very table).
# On the shared 802.11 medium (wifi-ac-medium, the clean channel, and its -mild, -severe,
# -outage: the paper's tc loss and outage on that medium) they are the same conditions.
PRESET_CONDITION = {f"{family}-{condition}": condition
                    for family in ("wifi", "wifi-ac", "wifi-ac-medium") for condition in CONDITIONS}
PRESET_CONDITION["wifi-ac-medium"] = PRESET_CONDITION.pop("wifi-ac-medium-ideal")


def condition_of(row: dict) -> str | None:
    """The paper's condition a cell ran under: only when its link is exactly one of the
    presets above, with no field written over it (``link_overrides`` null). A preset with
    overrides ("wifi-severe+loss=10%"), or an inline link that merely carries a preset's
    name, is not the paper's condition. Rows of runs made before ``link_overrides`` and
    ``link_preset`` existed name the preset in ``link``."""
    link = row.get("link")
    overrides = row.get("link_overrides")
    if overrides is not None and overrides == overrides and overrides not in ("", "{}"):
        return None
    if row.get("link_preset", link) != link:
        return None
    return PRESET_CONDITION.get(link)


def table_ii() -> dict[str, dict[str, tuple[tuple, tuple, tuple]]]:
    """condition -> profile -> (reception rate Hz, avg latency ms, jitter ms), each 5
    payloads (paper_000.yaml; read when a report first needs it, not at start-up)."""
    return paper_tables("paper_000")


def paper_value(condition: str, profile: str, payload_bytes: int,
                metric: str) -> tuple[bool, float | None]:
    """(the paper has this cell, its value or None for "—").

    ``metric`` is one of reception_rate_hz, latency_mean_ms, jitter_ms. A payload matches
    when it is 32..512 KiB or KB exactly.
    """
    by_profile = table_ii().get(condition, {}).get(profile)
    if by_profile is None:
        return False, None
    kb = None
    for unit in (1024, 1000):
        if payload_bytes % unit == 0 and payload_bytes // unit in PAYLOADS_KB:
            kb = payload_bytes // unit
    if kb is None:
        return False, None
    row = {"reception_rate_hz": 0, "latency_mean_ms": 1, "jitter_ms": 2}[metric]
    return True, by_profile[row][PAYLOADS_KB.index(kb)]
