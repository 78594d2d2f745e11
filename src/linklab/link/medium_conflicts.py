"""What a link with the 802.11 medium (linklab.link.medium) cannot take besides it:
refused with the reason, never dropped (linklab.link.spec checks it)."""

from __future__ import annotations

from linklab.link.medium import MediumSpec
from linklab.link.radio import MAX_RADIO_MTU

# Link fields a medium link cannot take: the medium makes its own rate (airtime) and
# queues; a trace would replace it. delay, jitter, outage and the IP-level losses stay:
# burst_loss drops in the relay before the medium, loss (nft) at the receiver's input, as
# paper 000 (V-B) dropped packets "at the NIC level using Linux traffic control tools"
# on its real Wi-Fi link. The medium's own loss is per, retries and queue overflow.
EXCLUSIVE_OF_MEDIUM = ("rate", "trace", "queue", "queue_limit")


def conflicts(medium: MediumSpec | None, stage_fields: set[str], mtu: int,
              radio: bool) -> list[tuple[str, str]]:
    """(field, message) for settings a medium link cannot apply (refused, never dropped)."""
    if medium is None:
        return []
    out = []
    if radio:
        out.append(("medium", "a link has one medium: the relay's 802.11 medium or the "
                              "distance-based radio (radio, distance, ...), not both"))
    for name in EXCLUSIVE_OF_MEDIUM:
        if name in stage_fields:
            why = ("its station queues are medium.queue and medium.queue_bytes"
                   if name.startswith("queue") else
                   "its rate (airtime) comes from the 802.11 medium")
            out.append((name, f"a medium link cannot take {name}: {why}; leave {name} out "
                              "(delay, jitter, outage, loss and burst_loss stay)"))
    if mtu > MAX_RADIO_MTU:
        out.append(("mtu", f"{mtu} B is above 802.11's largest frame body "
                           f"({MAX_RADIO_MTU} B, 802.11-2016 §9.2.4.7)"))
    return out
