"""Running linklab as a normal user, inside an unprivileged user namespace."""

from __future__ import annotations

import os

from linklab.errors import PrivilegeError


def should_delegate() -> bool:
    if os.geteuid() == 0:
        return False
    raise PrivilegeError("linklab link needs CAP_NET_ADMIN: run it as root")
