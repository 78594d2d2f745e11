"""A cell of a DDS-Security middleware (fastdds-secure, cyclonedds-secure) measures secured
participants, or it says so: every probe reads its participant's security back
(applied.participant.security: the authentication, access-control and cryptography
plugins the created participant holds) and a probe that holds fewer than the three fails
the cell. Numbers of a plain participant never stand under a secured name."""

from __future__ import annotations

from typing import Any

from linklab.middleware import middleware as registry_entry

ROLES = ("authentication", "access_control", "cryptography")


def unapplied_security(middleware: str, reports: dict[str, Any]) -> str | None:
    """Why the cell's DDS-Security is not in effect (probe names and what they hold), or
    None when it is or the middleware asks for none. ``reports``: probe name ->
    ProbeReport (its ``security`` read back; probes that left no summary are judged by
    their own failure)."""
    entry = registry_entry(middleware)
    if entry.security != "dds-security":
        return None
    missing = []
    for name, report in sorted(reports.items()):
        if not report.summarised:
            continue
        held = report.security if isinstance(report.security, dict) else {}
        lacking = [role for role in ROLES if not held.get(role)]
        if lacking:
            missing.append(f"{name} holds no {'/'.join(lacking)} plugin"
                           if held else f"{name} reports no DDS-Security")
    if not missing:
        return None
    return f"{middleware} asked for DDS-Security but " + "; ".join(missing)
