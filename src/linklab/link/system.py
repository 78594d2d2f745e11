"""Running the system's network tools (ip, tc, nft, ethtool, sysctl) for a run.

Every command linklab runs on the network goes through :class:`Shell`. A shell has a
*prefix*: empty when we are root in the initial user namespace, or
``nsenter --target <holder> --user --mount`` when a normal user runs linklab inside an
unprivileged user namespace held open by a holder process (see ``userns.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from linklab.errors import EnvironmentProblem, LinklabError

TOOLS = ("ip", "tc", "nft", "ethtool", "nsenter")
NETNS_DIR = Path("/run/netns")


class CommandFailed(LinklabError):
    """A network command failed; the message carries the command and its stderr."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str):
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr.strip()
        first = self.stderr.splitlines()[0] if self.stderr else f"exit status {returncode}"
        super().__init__(f"'{' '.join(self.argv)}' failed: {first}")


def require_tools(names: Sequence[str] = TOOLS) -> None:
    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        raise EnvironmentProblem(
            f"{', '.join(missing)} not found on PATH: run scripts/setup.sh "
            "(packages iproute2, nftables, ethtool, util-linux)")


@dataclass(frozen=True)
class Shell:
    """Runs argv lists, in the root namespace or inside a host namespace."""

    prefix: tuple[str, ...] = field(default=())

    def argv_in(self, netns: str | None, argv: Sequence[str]) -> list[str]:
        """The full command line that runs ``argv`` inside ``netns`` (None: current)."""
        inner = list(argv)
        if netns is not None:
            inner = ["nsenter", f"--net={NETNS_DIR / netns}", "--", *inner]
        return [*self.prefix, *inner]

    def run(self, argv: Sequence[str], netns: str | None = None, *,
            input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        full = self.argv_in(netns, argv)
        # its own session: a Ctrl-C at the terminal goes to the terminal's foreground
        # process group, and would kill an `ip`/`tc`/`nft` of a teardown that holds that
        # signal until it is done (held_signals.py); linklab alone decides when to stop
        result = subprocess.run(full, input=input, capture_output=True, text=True,
                                env={**os.environ, "LC_ALL": "C"}, check=False,
                                start_new_session=True)
        if check and result.returncode != 0:
            raise CommandFailed(full, result.returncode, result.stderr)
        return result

    def exec_argv(self, netns: str, argv: Sequence[str]) -> list[str]:
        """Command line for a user's program inside a host (``ip netns exec`` view of /sys)."""
        return [*self.prefix, "ip", "netns", "exec", netns, *argv]


def netns_exists(shell: Shell, name: str) -> bool:
    return name in list_netns(shell)


def list_netns(shell: Shell) -> list[str]:
    result = shell.run(["ip", "-j", "netns", "list"], check=False)
    if result.returncode != 0 or not result.stdout.strip():
        return []
    import json

    return [entry["name"] for entry in json.loads(result.stdout)]
