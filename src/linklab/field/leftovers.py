"""Local temporary directories of field sessions, and those a killed session left.

A field session makes two kinds of directories under the temporary directory here: the
SSH control socket's (``llssh.*``) and the agent's work directory of a ``local`` or
``netns:`` host (``linklab-field.*``). Each holds an ``owner`` file: the pid and start time
of the linklab process that made it. A session removes its own when it ends; one killed
with SIGKILL cannot, so the next session removes every such directory whose owner is gone
(a pid whose start time differs is another process: its directory is stale too) -- and
nothing else: no directory without that file, none of another user.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from linklab import procfs

PREFIXES = ("llssh.", "linklab-field.")
OWNER = "owner"


def make(prefix: str) -> str:
    """A fresh 0700 directory with this process as its owner."""
    path = tempfile.mkdtemp(prefix=prefix)
    Path(path, OWNER).write_text(f"{os.getpid()} {procfs.start_time(os.getpid())}\n")
    return path


def sweep() -> list[str]:
    """Remove the directories of field sessions that no longer run; return them."""
    removed = []
    base = Path(tempfile.gettempdir())
    for path in base.iterdir():
        if not path.name.startswith(PREFIXES) or path.is_symlink() or not path.is_dir():
            continue
        try:
            if path.stat().st_uid != os.getuid():
                continue
            pid_text, start = Path(path, OWNER).read_text().split()
        except (OSError, ValueError):
            continue
        if procfs.start_time(int(pid_text)) != start:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(str(path))
    return removed
