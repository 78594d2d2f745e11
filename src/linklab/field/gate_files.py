"""The discovery gate's files for probes on field hosts (bench/discovery_gate.py).

On a real lossy path the two halves of DDS discovery finish apart exactly as on an
emulated one: a robot's writer matched the edge's reader within 40 ms while the reader,
whose copy of the writer's announcement was lost, matched it 4 s later -- after the 1 s
settle and 1 s warm-up of an ungated start, so half the best-effort samples were dropped
by the reader and counted as link loss (a field bench on a path with 4 % burst loss). So
field cells are gated too.

A remote probe writes its ready file, and looks for the start file, in its own work
directory on its host (FieldBed.spawn rewrites the paths, as it does ``--records``); the
gate reads and creates them through the host's agent (agent.py ``exists``/``touch``), one
call per host per poll. Probes on this machine keep their local paths.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class HostFiles:
    """``bench.discovery_gate.GateFiles`` for a field bed: local paths, some of which
    stand for files on remote hosts."""

    def __init__(self) -> None:
        self.remote: dict[Path, list[tuple[Any, str]]] = {}

    def place(self, local: Path, item: Any, remote: str) -> None:
        """The probe on host ``item`` uses ``remote`` where the runner said ``local``."""
        self.remote.setdefault(local, []).append((item, remote))

    def _by_host(self, paths: list[Path]) -> dict[str, tuple[Any, list[tuple[Path, str]]]]:
        hosts: dict[str, tuple[Any, list[tuple[Path, str]]]] = {}
        for path in paths:
            for item, remote in self.remote.get(path, ()):
                hosts.setdefault(item.name, (item, []))[1].append((path, remote))
        return hosts

    def ready(self, paths: list[Path]) -> set[Path]:
        found = {path for path in paths if path not in self.remote and path.exists()}
        for item, pairs in self._by_host(paths).values():
            there = set(item.agent.call("exists", paths=[r for _, r in pairs])["exists"])
            found |= {path for path, remote in pairs if remote in there}
        return found

    def create(self, path: Path) -> None:
        path.touch()   # probes on this machine
        for item, pairs in self._by_host([path]).values():
            item.agent.call("touch", paths=[r for _, r in pairs])
